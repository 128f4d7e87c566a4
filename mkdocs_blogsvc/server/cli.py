"""`mkdocs-blogsvc server run` and `mkdocs-blogsvc server admin ...`.

Adapters only: options are parsed here, the work is done by `content`, `seed` and `create_app`.
Every admin command prints one JSON object on stdout; every refusal is one line on stderr
(`Error: ...`) with exit status 1, never a traceback.
"""

from __future__ import annotations

import functools
import json
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.serving import WSGIRequestHandler, make_server

from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server import seed as seeding
from mkdocs_blogsvc.server.app import create_app
from mkdocs_blogsvc.server.clients import is_loopback_host
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ContentError
from mkdocs_blogsvc.server.serialize import normalize_public_url

F = TypeVar("F", bound=Callable[..., Any])

_DB_OPTION = click.option(
    "--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="SQLite database file (created with its schema on first use).",
)


@click.group()
def server() -> None:
    """Run and script the reference Blog Content Service."""


# --- server run -----------------------------------------------------------------------------


class _AccessLog(WSGIRequestHandler):
    """Access log lines without query strings: authorization requests carry codes and state."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.log("info", '"%s %s" %s', self.command, urlsplit(self.path).path, code)


@server.command()
@_DB_OPTION
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (plain HTTP: test use only).")
@click.option(
    "--public-url", callback=lambda _ctx, _param, value: _public_url(value),
    help="Address clients use (e.g. behind a proxy), named in media URLs, /openapi.json and the home page. "
    "Default: the address each request came to.",
)
def run(db_path: Path, host: str, port: int, allow_remote: bool, public_url: str | None) -> None:
    """Serve the service until Ctrl-C or SIGTERM."""
    host = host.strip("[]")  # an IPv6 literal may be given as in a URL
    if not allow_remote and not is_loopback_host(host):
        raise click.ClickException(
            f"refusing to listen on {host}: the reference service speaks plain HTTP and is meant for "
            "local testing; pass --allow-remote to do it anyway"
        )
    try:
        # Bound here rather than by werkzeug, which prints its own errors and calls sys.exit.
        listener = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    with listener:
        database = _open_database(db_path)
        app = create_app(database, secret_key=_session_secret(db_path), public_url=public_url)
        httpd = make_server(host, port, app, threaded=True, request_handler=_AccessLog, fd=listener.fileno())
    shown_host = f"[{host}]" if ":" in host else host
    public = f", public URL {public_url}" if public_url else ""
    click.echo(f"Blog Content Service on http://{shown_host}:{httpd.socket.getsockname()[1]} (database {db_path}{public})")
    with database.session() as session:
        if not session.scalar(select(func.count()).select_from(tables.User)):
            click.echo(f"No users yet: create the sample blog with `mkdocs-blogsvc server admin --db {db_path} seed`.", err=True)

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


def _public_url(value: str | None) -> str | None:
    """The `--public-url` normalised (no trailing slash), checked before anything starts."""
    try:
        return None if value is None else normalize_public_url(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _session_secret(db_path: Path) -> str:
    """The key that signs browser sessions, kept in `<db>.secret` (mode 0600) so sign-ins survive
    a restart. Deleting the file signs everyone out at the next start."""
    path = db_path.with_name(db_path.name + ".secret")
    if not path.exists():
        try:  # never overwrites: two first starts agree on one key
            atomic_write(path, secrets.token_hex(32).encode("ascii"), mode=0o600, overwrite=False)
        except FileExistsError:
            pass
    secret = path.read_text().strip()
    if len(secret) < 32:
        raise click.ClickException(f"the session key file {path} is damaged: delete it and start again")
    return secret


def _open_database(db_path: Path) -> Database:
    if not db_path.parent.is_dir():
        raise click.ClickException(f"cannot open database {db_path}: folder {db_path.parent} does not exist")
    try:
        return Database.from_path(db_path)
    except SQLAlchemyError as exc:
        raise click.ClickException(f"cannot open database {db_path}: {_first_line(exc)}") from None


def _first_line(exc: SQLAlchemyError) -> str:
    return str(getattr(exc, "orig", None) or exc).splitlines()[0]


# --- server admin ---------------------------------------------------------------------------


@server.group("admin")
@_DB_OPTION
@click.pass_context
def admin_group(ctx: click.Context, db_path: Path) -> None:
    """Script the service: users, blogs, clients, articles, the test clock. Prints JSON."""
    ctx.obj = db_path


def _command(name: str) -> Callable[[F], F]:
    """An admin subcommand: gets the opened database first, prints its result as JSON, and turns
    refusals and database failures into one-line errors."""

    def decorate(function: F) -> F:
        @admin_group.command(name, help=function.__doc__)
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            database = _open_database(click.get_current_context().obj)
            try:
                result = function(database, *args, **kwargs)
            except ContentError as exc:
                raise click.ClickException(str(exc)) from None
            except SQLAlchemyError as exc:
                raise click.ClickException(f"database error: {_first_line(exc)}") from None
            finally:
                database.dispose()
            click.echo(json.dumps(result, indent=2, ensure_ascii=False))

        return wrapper  # type: ignore[return-value]

    return decorate


@_command("create-user")
@click.option("--username", required=True)
@click.option("--password", required=True)
def create_user(db: Database, username: str, password: str) -> dict[str, Any]:
    """Create a user who can sign in on the authorization pages."""
    return content.create_user(db, username, password)


@_command("create-blog")
@click.option("--owner", required=True, help="Username of the owner.")
@click.option("--name", required=True)
@click.option("--slug", required=True)
@click.option("--language", required=True, help="ISO 639-1 code: en, pt, es, fr, de...")
@click.option("--description", default="")
def create_blog(db: Database, owner: str, name: str, slug: str, language: str, description: str) -> dict[str, Any]:
    """Create a blog owned by a user."""
    return content.create_blog(db, owner=owner, name=name, slug=slug, language=language, description=description)


@_command("create-client")
@click.option("--name", required=True, help="Shown to users on the consent page.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True)
@click.option("--public", is_flag=True, help="No secret: the client must use PKCE.")
def create_client(db: Database, name: str, redirect_uris: tuple[str, ...], public: bool) -> dict[str, Any]:
    """Register an application; a confidential client's secret is printed once."""
    return content.create_client(db, name=name, redirect_uris=list(redirect_uris), public=public)


def _article_options(function: F) -> F:
    options = [
        click.option("--title"),
        click.option("--content", help="Markdown body."),
        click.option("--content-file", help="Read the Markdown body from this file ('-': standard input)."),
        click.option("--description", help="'' makes it null."),
        click.option("--tag", "tags", multiple=True, help="Repeat for several; --tag '' clears."),
        click.option("--seo-keyword", "seo_keywords", multiple=True, help="Repeat for several; --seo-keyword '' clears."),
        click.option("--seo-score", help="0 to 10; '' makes it null."),
        click.option("--cover-image", help="PNG, JPEG, GIF or WebP file; '' removes the cover."),
        click.option("--inline-image", "inline_images", multiple=True, help="Image file, referred to as ![alt](inline:N)."),
        click.option("--schema-org-json", help="File holding a JSON object; '' makes it null."),
        click.option("--base-url", default=content.DEFAULT_BASE_URL, show_default=True, help="Service address used in the printed URLs."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _article_input(options: dict[str, Any]) -> content.ArticleInput:
    """Turn the article options into an `ArticleInput` (files read, empty values meaning null)."""
    data = content.ArticleInput(inline_images=[read_file(p, "inline image") for p in options["inline_images"]])
    if options["content"] is not None and options["content_file"] is not None:
        raise ContentError("give --content or --content-file, not both")
    if options["title"] is not None:
        data.title = options["title"]
    if options["content"] is not None:
        data.content = options["content"]
    elif options["content_file"] == "-":
        data.content = sys.stdin.read()
    elif options["content_file"] is not None:
        try:
            data.content = read_file(options["content_file"], "content file").decode("utf-8")
        except UnicodeDecodeError:
            raise ContentError(f"content file {options['content_file']!r} is not UTF-8 text") from None
    if options["description"] is not None:
        data.description = options["description"] or None
    if options["tags"]:
        data.tags = list(options["tags"])
    if options["seo_keywords"]:
        data.seo_keywords = list(options["seo_keywords"])
    if options["seo_score"] is not None:
        data.seo_score = _seo_score(options["seo_score"])
    if options["cover_image"] is not None:
        data.cover_image = read_file(options["cover_image"], "cover image") if options["cover_image"] else None
    if options["schema_org_json"] is not None:
        data.schema_org_json = _schema_org_json(options["schema_org_json"]) if options["schema_org_json"] else None
    return data


def read_file(path: str | Path, what: str) -> bytes:
    """The bytes of a file named on the command line, or a ContentError that names it."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ContentError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def _seo_score(text: str) -> float | None:
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise ContentError(f"seo score must be a number from 0 to 10 (or '' for null), not {text!r}") from None


def _schema_org_json(path: str) -> Any:
    text = read_file(path, "schema.org JSON file")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ContentError(f"schema.org JSON file {path!r} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ContentError(f"schema.org JSON file {path!r} must hold a JSON object")
    return value


@_command("add-article")
@click.option("--blog", "blog_slug", required=True, help="Slug of the blog.")
@_article_options
@click.option("--draft", is_flag=True, help="Create a draft instead of publishing now.")
def add_article(db: Database, blog_slug: str, draft: bool, base_url: str, **options: Any) -> dict[str, Any]:
    """Add an article (published now unless --draft); prints it as the API shows it, plus status."""
    data = _article_input(options)
    if isinstance(data.title, content.Unset):
        raise ContentError("give --title")
    if isinstance(data.content, content.Unset):
        raise ContentError("give --content or --content-file")
    return content.add_article(db, blog_slug, data, draft=draft, base_url=base_url)


@_command("update-article")
@click.argument("article_id")
@_article_options
def update_article(db: Database, article_id: str, base_url: str, **options: Any) -> dict[str, Any]:
    """Change the given fields of an article (updatedAt moves; the slug stays)."""
    return content.update_article(db, article_id, _article_input(options), base_url=base_url)


_BASE_URL_OPTION = click.option(
    "--base-url", default=content.DEFAULT_BASE_URL, show_default=True, help="Service address used in the printed URLs."
)


@_command("publish")
@click.argument("article_id")
@_BASE_URL_OPTION
def publish(db: Database, article_id: str, base_url: str) -> dict[str, Any]:
    """Publish a draft or unpublished article (publishedAt is set the first time only)."""
    return content.publish(db, article_id, base_url=base_url)


@_command("unpublish")
@click.argument("article_id")
@_BASE_URL_OPTION
def unpublish(db: Database, article_id: str, base_url: str) -> dict[str, Any]:
    """Hide an article from the API; sync then reports its id as deleted."""
    return content.unpublish(db, article_id, base_url=base_url)


@_command("delete-article")
@click.argument("article_id")
def delete_article(db: Database, article_id: str) -> dict[str, Any]:
    """Delete an article for good."""
    return content.delete_article(db, article_id)


@_command("advance-clock")
@click.argument("seconds", type=float)
def advance_clock(db: Database, seconds: float) -> dict[str, Any]:
    """Move the service's clock forward by SECONDS; a running server sees it at once."""
    return content.advance_clock(db, seconds)


@_command("seed")
@click.option("--base-url", default=None, help="Address the service will be reached at (adds schema.org image URLs).")
def seed(db: Database, base_url: str | None) -> dict[str, Any]:
    """Create the sample blog: user demo / demo-password, 12 published articles, a public client."""
    return seeding.seed(db, base_url_hint=base_url)
