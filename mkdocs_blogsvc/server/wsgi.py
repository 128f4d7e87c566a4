"""The service as a WSGI application for production servers, and `server run --workers N`.

Operators who run their own WSGI server point it at `mkdocs_blogsvc.server.wsgi:app`, which is
built from environment variables when the server first asks for it (in each worker, after the
fork: a database connection pool must never be shared across a fork):

- `BLOGSVC_DB` (required): a SQLite file path or a SQLAlchemy URL (`postgresql+psycopg://...`);
- `BLOGSVC_PUBLIC_URL`: the address clients use (`--public-url`);
- `BLOGSVC_SECRET_KEY`: the key signing browser sessions. Without it the key every process of
  this database shares is used (`PATH.secret` next to a SQLite file, or the database's own
  `service_keys` table); a random key per process would sign a user out whenever the next
  request reaches another worker;
- `BLOGSVC_RATE_LIMITS`: changed rate limits, `name=COUNT/SECONDS,...` (`ratelimit`);
- `BLOGSVC_PROXY_HOPS`: proxies in front whose `X-Forwarded-For`/`-Proto` are trusted (`--proxy-hops`).
- `BLOGSVC_THREADS`: the requests each process serves at once (the server's own setting, such
  as gunicorn's `--threads`): on SQLite, writers waiting for the lock then leave one thread free
  for reads (`bulkhead`); unset, up to `bulkhead.THREAD_PER_REQUEST_SLOTS` may wait.

Nothing that matters lives in one process: sessions and CSRF tokens are in the signed cookie,
the test clock, tokens, codes and rate-limit counters are in the database.
`server run --workers N` (N > 1) runs gunicorn with the same application (`GunicornServer`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sys
from collections.abc import Callable, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any

from flask import Flask

from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.server import ratelimit
from mkdocs_blogsvc.server.app import create_app
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ReferenceServiceError
from mkdocs_blogsvc.server.responses import protocol_error_body

DB_VARIABLE = "BLOGSVC_DB"
PUBLIC_URL_VARIABLE = "BLOGSVC_PUBLIC_URL"
SECRET_VARIABLE = "BLOGSVC_SECRET_KEY"
PROXY_HOPS_VARIABLE = "BLOGSVC_PROXY_HOPS"
THREADS_VARIABLE = "BLOGSVC_THREADS"


class DeploymentError(ReferenceServiceError):
    """The environment does not describe a service; the message says which variable and why."""


def session_secret(target: str, database: Database | None = None) -> str:
    """The session signing key every process serving `target` shares.

    SQLite: kept in `<db>.secret` (mode 0600) next to the file, made on first use (never
    overwritten, so two first starts agree). Deleting the file signs everyone out.
    Another database: kept in the database itself when it supports that (`service_keys`).
    """
    if "://" not in target:
        path = Path(target)
        path = path.with_name(path.name + ".secret")
        try:
            if not path.exists():
                with contextlib.suppress(FileExistsError):  # another worker wrote it first
                    atomic_write(path, secrets.token_hex(32).encode("ascii"), mode=0o600, overwrite=False)
            secret = path.read_text(errors="replace").strip()
        except OSError as exc:  # a dangling link, a folder of that name, no permission
            raise DeploymentError(
                f"cannot read the session key file {path} ({exc.strerror or exc}): remove what is there "
                "(a new key is made) or make it readable, and start again"
            ) from None
        if len(secret) < 32:
            raise DeploymentError(f"the session key file {path} is damaged: delete it and start again")
        return secret
    opened = database or Database.open(target)
    try:
        service_key: Callable[[str], str] | None = getattr(opened, "service_key", None)
        if service_key is None:
            raise DeploymentError(f"set {SECRET_VARIABLE}: this database cannot keep the session key")
        return service_key("session")
    finally:
        if opened is not database:  # opened only for the key: its connections closed
            opened.dispose()


def from_environment(environ: Mapping[str, str] | None = None) -> Flask:
    """The application described by `BLOGSVC_*` variables (see the module docstring)."""
    env = os.environ if environ is None else environ
    target = env.get(DB_VARIABLE, "").strip()
    if not target:
        raise DeploymentError(f"{DB_VARIABLE} is not set: give a SQLite file path or a postgresql+psycopg:// URL")
    try:
        limits = ratelimit.parse(env.get(ratelimit.ENV_VARIABLE, ""))
    except ValueError as exc:
        raise DeploymentError(f"{ratelimit.ENV_VARIABLE}: {exc}") from None
    hops_value = env.get(PROXY_HOPS_VARIABLE, "").strip()
    # 0 to 10, as --proxy-hops: a negative count would make ProxyFix trust an address the client wrote
    if hops_value and not (hops_value.isdecimal() and int(hops_value) <= 10):
        raise DeploymentError(
            f"{PROXY_HOPS_VARIABLE}={hops_value!r} is not a number of proxies from 0 to 10: set it to the "
            "proxies in front whose X-Forwarded-For/-Proto are trusted (--proxy-hops), or unset it"
        )
    threads_value = env.get(THREADS_VARIABLE, "").strip()
    if threads_value and not (threads_value.isdecimal() and 1 <= int(threads_value) <= 1024):
        raise DeploymentError(
            f"{THREADS_VARIABLE}={threads_value!r} is not a number of threads from 1 to 1024: "
            "set it to the requests each process serves at once (gunicorn's --threads), or unset it"
        )
    database = Database.open(target)  # a stale schema or an unreachable database: a one-line DatabaseError
    secret = env.get(SECRET_VARIABLE) or session_secret(target, database)
    return create_app(
        database,
        secret_key=secret,
        public_url=env.get(PUBLIC_URL_VARIABLE) or None,
        rate_limits=limits,
        proxy_hops=int(hops_value) if hops_value else 0,
        request_threads=int(threads_value) if threads_value else None,
    )


_app: Flask | None = None


def __getattr__(name: str) -> Any:
    """`app` is built on first access, so importing this module needs no environment."""
    global _app
    if name == "app":
        if _app is None:
            _app = from_environment()
        return _app
    raise AttributeError(name)


class _CapturedSocket:
    """Stands in for a client socket to keep what gunicorn would write to it."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0

    def sendall(self, data: bytes) -> None:
        self.data += data


def serve_with_gunicorn(factory: Callable[[], Flask], *, listener_fd: int, workers: int, threads: int) -> None:
    """Serve `factory()` (called in each worker) with gunicorn on an already bound socket.

    Workers are `gthread` workers: each serves `threads` requests at once. The access log keeps
    no query string (authorization requests carry codes and state). Returns after SIGINT or
    SIGTERM once the workers have finished their requests.
    """
    master = os.getpid()
    try:
        gunicorn_application(factory, listener_fd=listener_fd, workers=workers, threads=threads).run()
    except SystemExit as exc:  # the arbiter (and each forked worker) ends with sys.exit
        if os.getpid() != master or exc.code not in (0, None):
            raise


def gunicorn_application(factory: Callable[[], Flask], *, listener_fd: int, workers: int, threads: int) -> Any:
    """The gunicorn application `serve_with_gunicorn` runs: its settings, access logger and
    worker class, built apart from running it so that each can be checked in one process."""
    from gunicorn.app.base import BaseApplication
    from gunicorn.glogging import Logger

    class StderrAccessLogger(Logger):  # type: ignore[misc]  # untyped base class
        """gunicorn's logger with the access log on this process's own stderr. (Its `accesslog`
        "-" is stdout, and "/dev/stderr" opens the file behind stderr anew: with `2> blogsvc.log`
        or systemd's `StandardError=file:`, two descriptors at two offsets overwrite each
        other's lines.)"""

        def setup(self, cfg: Any) -> None:
            super().setup(cfg)
            for handler in self.access_log.handlers:
                if type(handler) is logging.StreamHandler:
                    handler.setStream(sys.stderr)

    from gunicorn import util as gunicorn_util
    from gunicorn.workers.gthread import ThreadWorker

    class JsonErrorWorker(ThreadWorker):  # type: ignore[misc]  # untyped base class
        """gunicorn's `gthread` worker whose own refusals (a request line or headers over its
        limits, a malformed or conflicting `Content-Length`, an unknown `Transfer-Encoding`)
        are the spec's Error object instead of an HTML page. gunicorn picks the status and
        writes the log line; only the body it writes is replaced."""

        def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
            captured = _CapturedSocket()
            super().handle_error(req, captured, addr, exc)
            status_line = captured.data.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            status = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else 500
            reason = status_line[2] if len(status_line) > 2 else "Error"
            if reason == "Bad Request" and status != 400:  # gunicorn keeps it for its 500 and 501
                with contextlib.suppress(ValueError):  # a status HTTPStatus does not know: gunicorn's reason
                    reason = HTTPStatus(status).phrase
            # A 501 is the client's doing (a Transfer-Encoding gunicorn does not know): named as 4xx are.
            client_error = status < 500 or status == 501
            description = f"{reason}: {str(exc)[:200] or type(exc).__name__}" if client_error else reason
            body = protocol_error_body(status, description)
            head = (
                f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode("latin-1")
            try:
                gunicorn_util.write_nonblock(client, head + body)
            except OSError:  # the client went away: nothing to answer
                self.log.debug("Failed to send error message.")

    class GunicornServer(BaseApplication):  # type: ignore[misc]  # untyped base class
        def load_config(self) -> None:
            settings = {
                "bind": [f"fd://{listener_fd}"],
                "workers": workers,
                "worker_class": JsonErrorWorker,
                "threads": threads,
                # as the one-process server writes it (to stderr, no query string), gunicorn's time stamp
                "accesslog": "-",
                "logger_class": StderrAccessLogger,
                "access_log_format": '%(h)s - - %(t)s "%(m)s %(U)s" %(s)s',
                "errorlog": "-",
                "loglevel": "warning",
                "graceful_timeout": 10,
                "timeout": 60,
                "proc_name": "mkdocs-blogsvc",
                # No peer may set the scheme (X-Forwarded-Proto, -Ssl...) for gunicorn: by default it
                # trusts any loopback peer. Proxies are trusted by --proxy-hops alone (ProxyFix),
                # as with one process.
                "forwarded_allow_ips": "",
            }
            if "control_socket_disable" in self.cfg.settings:  # gunicorn 27: no ~/.gunicorn/gunicorn.ctl,
                settings["control_socket_disable"] = True  # which two services on one host would share
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Flask:
            return factory()

    return GunicornServer()
