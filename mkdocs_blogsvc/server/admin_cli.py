"""`mkdocs-blogsvc server admin ...`: script the service from a shell.

An adapter: options are parsed here, the work is done by `content` (create and change),
`listings` (list) and `seed`. Commands that create or change print one JSON object on stdout;
`list-*` commands print a table, or `{"<kind>": [rows]}` with `--json`. Every refusal is one
line on stderr (`Error: ...`) with exit status 1, never a traceback. Wherever a command takes an
article, it takes the article's id or its slug (`--blog` settles a slug used in several blogs).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from sqlalchemy.exc import SQLAlchemyError

from mkdocs_blogsvc.server import content, listings
from mkdocs_blogsvc.server import seed as seeding
from mkdocs_blogsvc.server.database import Database, first_line
from mkdocs_blogsvc.server.errors import ContentError, DatabaseError

F = TypeVar("F", bound=Callable[..., Any])

_DB_HELP = (
    "SQLite database file, or a SQLAlchemy URL such as postgresql+psycopg://USER:PASSWORD@HOST/NAME. "
    "An empty database gets the schema on first use; a missing SQLite file is created only by "
    "create-user, create-client, seed and `server run`."
)
#: `server run`'s `--db`: required, with the same message as `server admin`'s when left out.
DB_OPTION = click.option(
    "--db",
    "db_target",
    metavar="PATH_OR_URL",
    help=_DB_HELP,
    callback=lambda _context, _parameter, value: _named(value, "server run --db blogs.db"),
)


def _named(target: str | None, example: str) -> str:
    """`--db` as given; a usage error naming an example when it is missing."""
    if target is None:
        raise click.UsageError(f"Missing option '--db': name the database, such as {example}")
    return target


def open_database(target: str | None, *, check_schema: bool = True, create: bool = True) -> Database:
    """The database named by `--db`, or a one-line click error naming it. `server admin` takes
    `--db` as optional and checks it here, so that `server admin COMMAND --help` works without it."""
    target = _named(target, "server admin --db blogs.db COMMAND")
    try:
        return Database.open(target, check_schema=check_schema, create=create)
    except DatabaseError as exc:
        raise click.ClickException(str(exc)) from None


# --- server admin ---------------------------------------------------------------------------


@click.group("admin")
@click.option("--db", "db_target", metavar="PATH_OR_URL", help=_DB_HELP + " Required by every command.")
@click.pass_context
def admin_group(ctx: click.Context, db_target: str | None) -> None:
    """Script the service: users, blogs, clients, articles, the test clock. Prints JSON or tables."""
    ctx.obj = db_target


def _command(name: str, *, creates: bool = False) -> Callable[[F], F]:
    """An admin subcommand: gets the opened database first, prints its result as JSON, and turns
    refusals and database failures into one-line errors. Only a command that `creates` may start
    a new SQLite file (the first steps: create-user, create-client, seed)."""

    def decorate(function: F) -> F:
        @admin_group.command(name, help=function.__doc__)
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> None:
            _check_text(kwargs)
            database = open_database(click.get_current_context().obj, create=creates)
            try:
                result = function(database, *args, **kwargs)
            except ContentError as exc:
                raise click.ClickException(str(exc)) from None
            except SQLAlchemyError as exc:
                raise click.ClickException(f"database error: {first_line(exc)}") from None
            finally:
                database.dispose()
            click.echo(result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False))

        return wrapper  # type: ignore[return-value]  # wraps keeps the signature

    return decorate


def _check_text(options: dict[str, Any]) -> None:
    """Every text option is UTF-8: other bytes (a terminal set to another encoding) reach Python
    as lone surrogates, which no database stores."""
    for name, value in options.items():
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and not _is_utf8(text):
                raise click.ClickException(
                    f"--{name.replace('_', '-')} {text!r} is not UTF-8 text: give it in UTF-8 (check the terminal's encoding)"
                )


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _stdin_text(what: str, *, line: bool = False) -> str:
    """Standard input (or its first line) as UTF-8 text; one line if it is not."""
    data = sys.stdin.buffer.readline() if line else sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ContentError(f"the {what} on standard input is not UTF-8 text: save it as UTF-8") from None


@_command("create-user", creates=True)
@click.option("--username", required=True)
@click.option(
    "--password",
    help="Asked for (hidden, twice) when left out, or read as one line from standard input "
    "when that is not a terminal: on the command line it shows in ps and the shell's history.",
)
def create_user(db: Database, username: str, password: str | None) -> dict[str, Any]:
    """Create a user who can sign in on the authorization pages."""
    return content.create_user(db, username, _new_password() if password is None else password)


def _new_password() -> str:
    """The password `create-user` was not given: asked for on a terminal, else the first line of
    standard input. (Asked for here, once `--db` is known good, rather than by click while it reads
    the options; and not by `getpass`, which reads the terminal even when the input is a pipe.)"""
    if sys.stdin.isatty():
        password: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        return password
    line = _stdin_text("password", line=True).removesuffix("\n").removesuffix("\r")
    if not line:
        raise ContentError("no password: give --password, or the password as a line of standard input")
    return line


@_command("create-blog")
@click.option("--owner", required=True, help="Username of the owner.")
@click.option("--name", required=True)
@click.option("--slug", required=True)
@click.option("--language", required=True, help="ISO 639-1 code: en, pt, es, fr, de...")
@click.option("--description", default="")
def create_blog(db: Database, owner: str, name: str, slug: str, language: str, description: str) -> dict[str, Any]:
    """Create a blog owned by a user."""
    return content.create_blog(db, owner=owner, name=name, slug=slug, language=language, description=description)


@_command("create-client", creates=True)
@click.option("--name", required=True, help="Shown to users on the consent page.")
@click.option("--redirect-uri", "redirect_uris", multiple=True, required=True)
@click.option("--public", is_flag=True, help="No secret: the client must use PKCE.")
def create_client(db: Database, name: str, redirect_uris: tuple[str, ...], public: bool) -> dict[str, Any]:
    """Register an application; a confidential client's secret is printed once."""
    return content.create_client(db, name=name, redirect_uris=list(redirect_uris), public=public)


def _article_options(function: F) -> F:
    options = [
        click.option("--title"),
        click.option(
            "--slug",
            help="The article's slug: a-z, 0-9 and single hyphens, at most 100 characters, free in the blog. "
            "Default: add-article derives it from the title; update-article keeps it.",
        ),
        click.option("--content", help="Markdown body."),
        click.option("--content-file", help="Read the Markdown body from this file ('-': standard input)."),
        click.option("--description", help="'' makes it null."),
        click.option("--tag", "tags", multiple=True, help="Repeat for several; --tag '' clears."),
        click.option(
            "--seo-keyword", "seo_keywords", multiple=True, help="Repeat for several; --seo-keyword '' clears."
        ),
        click.option("--seo-score", help="0 to 10; '' makes it null."),
        click.option("--cover-image", help="PNG, JPEG, GIF or WebP file; '' removes the cover."),
        click.option(
            "--inline-image", "inline_images", multiple=True, help="Image file, referred to as ![alt](inline:N)."
        ),
        click.option("--schema-org-json", help="File holding a JSON object; '' makes it null."),
        click.option(
            "--base-url",
            default=content.DEFAULT_BASE_URL,
            show_default=True,
            help="Service address used in the printed URLs.",
        ),
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
    if options["slug"] is not None:
        data.slug = options["slug"]
    if options["content"] is not None:
        data.content = options["content"]
    elif options["content_file"] == "-":
        data.content = _stdin_text("content")
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


_ARTICLE_ARGUMENT = click.argument("article_ref", metavar="ARTICLE")
_BLOG_OF_ARTICLE_OPTION = click.option(
    "--blog", "blog_slug", help="Slug of the article's blog: needed only when ARTICLE is a slug used in several blogs."
)
_BASE_URL_OPTION = click.option(
    "--base-url", default=content.DEFAULT_BASE_URL, show_default=True, help="Service address used in the printed URLs."
)


@_command("update-article")
@_ARTICLE_ARGUMENT
@_BLOG_OF_ARTICLE_OPTION
@_article_options
def update_article(
    db: Database, article_ref: str, blog_slug: str | None, base_url: str, **options: Any
) -> dict[str, Any]:
    """Change the given fields of ARTICLE (its id or slug); updatedAt moves. The slug changes only with --slug."""
    return content.update_article(db, article_ref, _article_input(options), blog_slug=blog_slug, base_url=base_url)


@_command("publish")
@_ARTICLE_ARGUMENT
@_BLOG_OF_ARTICLE_OPTION
@_BASE_URL_OPTION
def publish(db: Database, article_ref: str, blog_slug: str | None, base_url: str) -> dict[str, Any]:
    """Publish ARTICLE (id or slug), a draft or unpublished one (publishedAt is set the first time only)."""
    return content.publish(db, article_ref, blog_slug=blog_slug, base_url=base_url)


@_command("unpublish")
@_ARTICLE_ARGUMENT
@_BLOG_OF_ARTICLE_OPTION
@_BASE_URL_OPTION
def unpublish(db: Database, article_ref: str, blog_slug: str | None, base_url: str) -> dict[str, Any]:
    """Hide ARTICLE (id or slug) from the API; sync then reports its id as deleted."""
    return content.unpublish(db, article_ref, blog_slug=blog_slug, base_url=base_url)


@_command("delete-article")
@_ARTICLE_ARGUMENT
@_BLOG_OF_ARTICLE_OPTION
def delete_article(db: Database, article_ref: str, blog_slug: str | None) -> dict[str, Any]:
    """Delete ARTICLE (id or slug) for good."""
    return content.delete_article(db, article_ref, blog_slug=blog_slug)


# --- listings -------------------------------------------------------------------------------


def _listing(name: str, kind: str) -> Callable[[F], F]:
    """A `list-*` subcommand: its function returns rows; they are printed as a table, or as
    `{kind: rows}` with `--json`."""

    def decorate(function: F) -> F:
        @_command(name)
        @click.option("--json", "as_json", is_flag=True, help=f'Print {{"{kind}": [...]}} instead of a table.')
        @functools.wraps(function)
        def wrapper(db: Database, *args: Any, as_json: bool, **kwargs: Any) -> dict[str, Any] | str:
            rows: list[dict[str, Any]] = function(db, *args, **kwargs)
            return {kind: rows} if as_json else _table(rows, kind)

        return wrapper  # type: ignore[return-value]  # wraps keeps the signature

    return decorate


def _table(rows: list[dict[str, Any]], kind: str) -> str:
    """Rows as left-aligned columns under a header of their keys; lists joined with commas."""
    if not rows:
        return f"no {kind}"
    columns = list(rows[0])
    cells = [columns] + [[_cell(row[column]) for column in columns] for row in rows]
    widths = [max(len(line[n]) for line in cells) for n in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "-"
    return " ".join(str(value).split())  # one line per row, whatever a title holds


@_listing("list-articles", "articles")
@click.option("--blog", "blog_slug", required=True, help="Slug of the blog.")
@click.option("--all", "include_all", is_flag=True, help="Drafts and unpublished articles too.")
def list_articles(db: Database, blog_slug: str, include_all: bool) -> list[dict[str, Any]]:
    """List a blog's articles, most recently changed first: id, slug, status, title, updatedAt."""
    return listings.articles(db, blog_slug, include_all=include_all)


@_listing("list-blogs", "blogs")
def list_blogs(db: Database) -> list[dict[str, Any]]:
    """List the blogs: id, slug, name, language, owner, published and total article counts."""
    return listings.blogs(db)


@_listing("list-users", "users")
def list_users(db: Database) -> list[dict[str, Any]]:
    """List the users: id, username, the blogs they own, createdAt."""
    return listings.users(db)


@_listing("list-clients", "clients")
def list_clients(db: Database) -> list[dict[str, Any]]:
    """List the registered applications: client_id, name, public, redirect_uris, createdAt (never secrets)."""
    return listings.clients(db)


@_listing("list-connections", "connections")
def list_connections(db: Database) -> list[dict[str, Any]]:
    """List the approved connections (OAuth grants): application, user, blog, scope, dates, revoked."""
    return listings.connections(db)


@_command("revoke-connection")
@click.argument("connection_id", metavar="ID", type=int)
def revoke_connection(db: Database, connection_id: int) -> dict[str, Any]:
    """Revoke a connection (its id in list-connections) and all its tokens: the application must be authorized again."""
    return content.revoke_connection(db, connection_id)


@_command("advance-clock")
@click.argument("seconds", type=float)
def advance_clock(db: Database, seconds: float) -> dict[str, Any]:
    """Move the service's clock forward by SECONDS; a running server sees it at once."""
    return content.advance_clock(db, seconds)


@admin_group.command("migrate")
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Upgrade the database's schema to this version (back it up first); prints the revisions."""
    database = open_database(ctx.obj, check_schema=False, create=False)
    try:
        before, after = database.migrate()
    except DatabaseError as exc:
        raise click.ClickException(str(exc)) from None
    except SQLAlchemyError as exc:
        raise click.ClickException(f"cannot migrate database {database.shown}: {first_line(exc)}") from None
    finally:
        database.dispose()
    click.echo(json.dumps({"database": database.shown, "from": before, "to": after}, indent=2))


@_command("seed", creates=True)
@click.option("--base-url", default=None, help="Address the service will be reached at (adds schema.org image URLs).")
def seed(db: Database, base_url: str | None) -> dict[str, Any]:
    """Create the sample blog: user demo / demo-password, 12 published articles, a public client."""
    return seeding.seed(db, base_url_hint=base_url)


@_command("generate-articles")
@click.option("--blog", "blog_slug", required=True, help="Slug of the blog to fill.")
@click.option("--count", required=True, type=int, help=f"How many articles to add (1 to {seeding.MAX_GENERATED:,}).")
@click.option("--words", default=300, show_default=True, type=int, help="Words of text in each article.")
@click.option("--covers", is_flag=True, help="Give each article one of the sample covers (14 images, stored once).")
def generate_articles(db: Database, blog_slug: str, count: int, words: int, covers: bool) -> dict[str, Any]:
    """Fill a blog quickly with published articles (capacity tests, benchmarks, demos)."""
    return seeding.generate_articles(db, blog_slug, count, words=words, covers=covers)
