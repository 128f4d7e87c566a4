"""`mkdocs-blogsvc server`: the group, and `server run`. The admin commands are in `admin_cli`.

An adapter: options are parsed here, the work is done by `create_app` and the database module.
Every refusal is one line on stderr (`Error: ...`) with exit status 1, never a traceback.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading
from types import FrameType
from urllib.parse import urlsplit

import click
from sqlalchemy import func, select
from werkzeug.serving import WSGIRequestHandler, make_server

from mkdocs_blogsvc.server import ratelimit, tables
from mkdocs_blogsvc.server.admin_cli import DB_OPTION, admin_group, open_database
from mkdocs_blogsvc.server.app import create_app
from mkdocs_blogsvc.server.clients import is_loopback_host
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from mkdocs_blogsvc.server.responses import protocol_error_body
from mkdocs_blogsvc.server.serialize import normalize_public_url
from mkdocs_blogsvc.server.wsgi import DeploymentError, serve_with_gunicorn, session_secret


@click.group()
def server() -> None:
    """Run and script the reference Blog Content Service."""


# --- server run -----------------------------------------------------------------------------


class _AccessLog(WSGIRequestHandler):
    """Access log lines without query strings (authorization requests carry codes and state), and
    the standard library's own refusals (a request line over 64 KiB: 414, a header line over
    64 KiB or more than 100 headers: 431, a malformed request line: 400) answered as JSON."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # A request refused while its line was read has no `path` (nor `command`) yet.
        path = getattr(self, "path", None)
        shown = urlsplit(path).path if path else "-"
        self.log("info", '"%s %s" %s', getattr(self, "command", None) or "-", shown, code)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The spec's Error object instead of the standard library's HTML page; the connection closes."""
        reason = message or self.responses.get(code, ("",))[0]
        body = protocol_error_body(code, reason)
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":  # a line too short to name a version:
            self.request_version = "HTTP/1.0"  # answer with a status line and headers all the same
        self.log_error("code %d, message %s", code, reason)  # not "message None"
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if getattr(self, "command", None) != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)


@server.command()
@DB_OPTION
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback --host. The service speaks plain HTTP: put a TLS proxy in front and set --public-url https://...",
)
@click.option(
    "--public-url",
    callback=lambda _ctx, _param, value: _public_url(value),
    help="Address clients use (e.g. behind a proxy), named in media URLs, /openapi.json and the home page. "
    "Default: the address each request came to.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Worker processes. 1: one process (Werkzeug, threaded). More: gunicorn with this many processes.",
)
@click.option(
    "--threads",
    default=4,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Requests each gunicorn worker serves at once (with --workers above 1).",
)
@click.option(
    "--rate-limit",
    "rate_limit",
    multiple=True,
    metavar="NAME=COUNT/SECONDS",
    callback=lambda _ctx, _param, values: _rate_limits(values),
    help="Change one rate limit, e.g. token=3000/60 (repeatable; COUNT 0 turns it off). "
    f"Names: {', '.join(ratelimit.DEFAULTS)}. Also from {ratelimit.ENV_VARIABLE} (comma-separated).",
)
@click.option(
    "--proxy-hops",
    default=0,
    show_default=True,
    type=click.IntRange(0, 10),
    help="Proxies in front whose X-Forwarded-For/-Proto to trust (the client address of the sign-in limit).",
)
def run(
    db_target: str,
    host: str,
    port: int,
    allow_remote: bool,
    public_url: str | None,
    workers: int,
    threads: int,
    rate_limit: dict[str, Limit],
    proxy_hops: int,
) -> None:
    """Serve the service until Ctrl-C or SIGTERM."""
    host = host.strip("[]")  # an IPv6 literal may be given as in a URL
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)  # a typo is named as one, not as a remote host
    except (OSError, UnicodeError) as exc:
        raise click.ClickException(
            f"cannot listen on {host}: {getattr(exc, 'strerror', None) or exc}; check --host"
        ) from None
    if not allow_remote and not is_loopback_host(host):
        raise click.ClickException(
            f"refusing to listen on {host}: the reference service speaks plain HTTP and is meant for "
            "local testing; pass --allow-remote to do it anyway"
        )
    try:
        # Bound here rather than by werkzeug, which prints its own errors and calls sys.exit.
        listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            step = (
                "stop what uses it (`mkdocs serve` listens on 127.0.0.1:8000 by default too), "
                "or pass another --port (0: any free port)"
            )
        else:
            step = "check --host and --port"
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {step}") from None
    try:
        database = open_database(db_target)
        secret = session_secret(db_target, database)
    except DeploymentError as exc:
        listener.close()
        raise click.ClickException(str(exc)) from None
    except click.ClickException:
        listener.close()
        raise
    shown_host = f"[{host}]" if ":" in host else host
    public = f", public URL {public_url}" if public_url else ""
    processes = f", {workers} worker processes" if workers > 1 else ""
    with database.session() as session:
        no_users = not session.scalar(select(func.count()).select_from(tables.User))
    if workers > 1:
        database.dispose()  # each worker opens its own connections after the fork
        click.echo(
            f"Blog Content Service on http://{shown_host}:{listener.getsockname()[1]} (database {database.shown}{public}{processes})"
        )
        if no_users:
            click.echo(
                f"No users yet: create the sample blog with `mkdocs-blogsvc server admin --db {database.argument} seed`.",
                err=True,
            )
        serve_with_gunicorn(  # gunicorn owns (and closes) the socket from here
            # A worker connects on its first request, not when it starts (the schema and the key
            # were checked above): one restarted while the database is down answers 503 until it
            # is back, where a worker that fails to start would make gunicorn stop the service.
            lambda: create_app(
                Database.open(db_target, check_schema=False),
                secret_key=secret,
                public_url=public_url,
                rate_limits=rate_limit,
                proxy_hops=proxy_hops,
                request_threads=threads,
            ),
            listener_fd=listener.detach(),
            workers=workers,
            threads=threads,
        )
        click.echo("Stopped.", err=True)
        return
    with listener:
        app = create_app(
            database, secret_key=secret, public_url=public_url, rate_limits=rate_limit, proxy_hops=proxy_hops
        )
        httpd = make_server(host, port, app, threaded=True, request_handler=_AccessLog, fd=listener.fileno())
    click.echo(
        f"Blog Content Service on http://{shown_host}:{httpd.socket.getsockname()[1]} (database {database.shown}{public})"
    )
    if no_users:
        click.echo(
            f"No users yet: create the sample blog with `mkdocs-blogsvc server admin --db {database.argument} seed`.",
            err=True,
        )

    def stop(_signum: int, _frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever() to return, so it cannot run on this thread.
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
        database.dispose()
    click.echo("Stopped.", err=True)


def _rate_limits(values: tuple[str, ...]) -> dict[str, Limit]:
    """The limits: defaults, then `BLOGSVC_RATE_LIMITS`, then each `--rate-limit`."""
    try:
        limits = ratelimit.parse(os.environ.get(ratelimit.ENV_VARIABLE, ""))
    except ValueError as exc:  # named as the culprit: no --rate-limit was typed
        raise click.BadParameter(str(exc), param_hint=ratelimit.ENV_VARIABLE) from None
    try:
        return ratelimit.parse(",".join(values), limits)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _public_url(value: str | None) -> str | None:
    """The `--public-url` normalised (no trailing slash), checked before anything starts."""
    try:
        return None if value is None else normalize_public_url(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


server.add_command(admin_group)
