"""`mkdocs-blogsvc demo`: the whole product on the embedded reference service, in one command.

It starts the reference service on a free loopback port with a fresh database in a temporary
folder, seeds the sample blog, logs in for real (PKCE, the real sign-in and consent forms,
submitted by the demo as the sample user), builds the example site, changes the blog (edits
one article, unpublishes one, publishes a new one) and builds again. Nothing is left running.

Which site: `--config-file` when given; else `example-site/` of a clone (the current folder);
else the copy of the example site that ships in the package (`example_site/`, put there by
setup.py), written into a folder of the current one (`blogsvc-demo/`) and built there: the
installed package is never written into.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs_blogsvc import config
from mkdocs_blogsvc.errors import BlogServiceError, ConfigurationError, LoginError, prefixed
from mkdocs_blogsvc.shared import DEV_ADDR_BESIDE_SERVICE, counted

if TYPE_CHECKING:  # the server side is imported where used: it needs the [server] extra
    from mkdocs_blogsvc.server import content
    from mkdocs_blogsvc.server.database import Database
    from mkdocs_blogsvc.sync import SyncReport

DEFAULT_SITE = Path("example-site") / "mkdocs.yml"
#: Where the demo writes the packaged example site when there is no clone.
DEFAULT_COPY = Path("blogsvc-demo")
#: The file that marks a folder as a copy the demo wrote (so a rerun may write into it again).
COPY_MARKER = ".blogsvc-demo"


@dataclass(frozen=True)
class DemoResult:
    site_dir: Path
    summaries: tuple[str, ...]
    service_url: str


def _require_extras() -> None:
    missing = []
    for module in ("flask", "authlib", "sqlalchemy", "material"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        from mkdocs_blogsvc.installed import install_command

        raise ConfigurationError(
            f"the demo needs the [demo] extra ({', '.join(missing)} missing): install it with {install_command('demo')}"
        )


@contextmanager
def running_service(folder: Path) -> Iterator[tuple[str, Database]]:
    """The reference service on a free loopback port, in a thread; stopped on exit."""
    from werkzeug.serving import make_server

    from mkdocs_blogsvc.server import create_app
    from mkdocs_blogsvc.server.database import Database

    db = Database.from_path(folder / "blog.db")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request in the demo's output
    server = make_server("127.0.0.1", 0, create_app(db), threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="blogsvc-demo-service", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", db
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
        db.dispose()


def approve_as(username: str, password: str) -> Callable[[str], None]:
    """An `open_browser` for `login`: signs in and approves over HTTP, as a person would click.

    It runs in the caller's thread (the loopback listener serves in its own), so a refused
    sign-in is reported at once as a `LoginError` instead of a wait for a redirect that never comes.
    """
    from mkdocs_blogsvc.server.consent_driver import drive_consent
    from mkdocs_blogsvc.server.errors import ConsentDriverError

    def approve(authorize_url: str) -> None:
        try:
            location = drive_consent(authorize_url, username=username, password=password)
            with urllib.request.urlopen(location, timeout=30):  # the loopback listener of `login`
                pass
        except (ConsentDriverError, OSError) as exc:
            raise LoginError(f"the demo could not approve its own login: {exc}") from None

    return approve


def build_site(config_file: Path) -> list[SyncReport]:
    """`mkdocs build` in-process, with the startup and shutdown events the CLI would send;
    returns the sync report of each blogsvc instance of the site."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from mkdocs_blogsvc.plugin import BlogServicePlugin

    try:
        site = load_config(str(config_file))
        site.plugins.on_startup(command="build", dirty=False)
        try:
            build(site)
        finally:
            site.plugins.on_shutdown()
    except MkDocsException as exc:
        raise BlogServiceError(f"building {config_file} failed: {exc}") from None
    plugins = [p for p in site.plugins.values() if isinstance(p, BlogServicePlugin)]
    return [p.last_report for p in plugins if p.last_report is not None]


def _summary(reports: list[SyncReport]) -> str:
    """The build's summary line, as the plugin logs it (`blogsvc: 12 new, ...`)."""
    return "\n".join(prefixed(report.summary()) for report in reports)


def _change_blog(db: Database, blog_slug: str) -> None:
    """Edit the newest article, unpublish the second newest, publish a new one."""
    from sqlalchemy import select

    from mkdocs_blogsvc.server import content, tables

    with db.session() as session:
        newest = session.scalars(
            select(tables.Article)
            .join(tables.Blog)
            .where(tables.Blog.slug == blog_slug, tables.Article.status == "published")
            .order_by(tables.Article.published_at.desc(), tables.Article.id.desc())
            .limit(2)
        ).all()
        edited, unpublished = newest[0].id, newest[1].id
        edited_title = newest[0].title
    content.update_article(db, edited, content.ArticleInput(title=f"{edited_title} (revised)"))
    content.unpublish(db, unpublished)
    content.add_article(db, blog_slug, _new_article())


def _new_article() -> content.ArticleInput:
    """The article the demo publishes between its two builds."""
    from importlib import resources

    from mkdocs_blogsvc.server import content

    cover = (resources.files("mkdocs_blogsvc.server") / "sample_media" / "cover-05.png").read_bytes()
    return content.ArticleInput(
        title="Fresh off the press: publishing from the service",
        description="Written on the service a moment ago, on this site at the next build.",
        content=(
            "This article did not exist when the site was first built. It was published on the\n"
            "Blog Content Service, and the next `mkdocs build` asked `/sync` for the differences:\n"
            "one new article, one edited, one gone.\n\n"
            "## What changed\n\n- one article was **edited**\n- one was **unpublished**\n- this one is **new**\n"
        ),
        tags=["demo", "sync"],
        seo_keywords=["incremental sync", "mkdocs blog"],
        seo_score=8.5,
        cover_image=cover,
    )


def example_site_source() -> Path | None:
    """The example site this copy of the package can write out: the one shipped in the wheel,
    else (an editable install) the clone's `example-site/` beside the package."""
    package = Path(__file__).resolve().parent
    for folder in (package / "example_site", package.parent / "example-site"):
        if (folder / "mkdocs.yml").is_file():
            return folder
    return None


def write_example_site(into: Path) -> Path:
    """Copy the packaged example site into `into` (new, empty, or an earlier copy of the demo's)
    and return its mkdocs.yml. An earlier copy's build and cache stay: the demo clears the cache."""
    source = example_site_source()
    if source is None:
        raise ConfigurationError(
            "this installation of mkdocs-blogsvc has no example site (example_site/ is missing from the package): "
            "reinstall it from a wheel, or pass --config-file pointing at a site's mkdocs.yml"
        )
    try:
        if into.exists() and (not into.is_dir() or (any(into.iterdir()) and not (into / COPY_MARKER).is_file())):
            raise ConfigurationError(
                f"{into} already exists and is not a copy of the example site that the demo wrote: "
                "pass --into DIR naming a new or empty folder"
            )
        into.mkdir(parents=True, exist_ok=True)
        for part in ("mkdocs.yml", "docs", "templates"):  # what setup.py ships: no build, cache or credentials
            if (source / part).is_dir():
                shutil.copytree(
                    source / part, into / part, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                shutil.copyfile(source / part, into / part)
        (into / COPY_MARKER).write_text(
            "Written by `mkdocs-blogsvc demo`, which may write into it again.\n", encoding="utf-8"
        )
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the example site into {into} ({exc.strerror or exc}): run the demo in a folder this "
            "user can write to, or pass --into DIR"
        ) from None
    return into / "mkdocs.yml"


def choose_site(config_file: Path | None, into: Path = DEFAULT_COPY, echo: Callable[[str], None] = print) -> Path:
    """The mkdocs.yml the demo builds: `config_file`, the clone's example site, or a copy of the
    packaged one written into `into` (said in one line)."""
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigurationError(
                f"{config_file} not found: pass --config-file pointing at a site's mkdocs.yml, or leave it out "
                "to build the example site"
            )
        return config_file
    if DEFAULT_SITE.is_file():  # a clone of the repository
        return DEFAULT_SITE
    written = write_example_site(into)
    echo(f"Wrote the example site into {into}/ (it ships with the package); the demo builds it there.")
    return written


def run_demo(
    config_file: Path | None = None,
    *,
    echo: Callable[[str], None] = print,
    serve: bool = False,
    dev_addr: str = DEV_ADDR_BESIDE_SERVICE,
    into: Path = DEFAULT_COPY,
) -> DemoResult:
    """Run the demo on the site of `config_file` (default: `choose_site`); returns the built
    site and the two summaries."""
    _require_extras()
    if serve:
        _check_free(dev_addr)  # before any work: a busy port is the likeliest failure of --serve
    config_file = choose_site(config_file, into, echo)
    from mkdocs_blogsvc.server.seed import seed

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    with tempfile.TemporaryDirectory(prefix="blogsvc-demo-") as folder, running_service(Path(folder)) as (url, db):
        sample = seed(db, base_url_hint=url)
        echo(
            f"Reference service on {url} with the sample blog {sample['blog']['name']!r} "
            f"({counted(sample['articles'], 'published article')}); signing in as {sample['user']!r}"
        )
        os.environ["BLOGSVC_BASE_URL"] = url
        os.environ["BLOGSVC_CLIENT_ID"] = sample["client_id"]
        settings = config.load_site_settings(str(config_file))[0]
        # The demo's own state from an earlier run belongs to another (now deleted) service.
        shutil.rmtree(settings.cache_dir, ignore_errors=True)
        settings.credentials_file.unlink(missing_ok=True)
        try:
            return _log_in_and_build(config_file, settings, sample, url, db, echo, serve=serve, dev_addr=dev_addr)
        finally:  # they belong to this service, gone when the demo ends: a later build warns instead of failing
            settings.credentials_file.unlink(missing_ok=True)


def _log_in_and_build(
    config_file: Path,
    settings: config.Settings,
    sample: dict[str, Any],
    url: str,
    db: Database,
    echo: Callable[[str], None],
    *,
    serve: bool,
    dev_addr: str,
) -> DemoResult:
    """The demo's steps against its service: log in, build, change the blog, build again (and serve)."""
    from mkdocs_blogsvc.login import login

    try:
        result = login(settings, open_browser=approve_as(sample["user"], sample["password"]), timeout=60)
    except LoginError as exc:
        raise LoginError(f"the demo's login failed: {exc}") from None
    echo(f"Logged in: {result.status.blog.name} connected, credentials in {result.credentials_file}")
    site_dir = config_file.parent / "site"
    summaries = [_summary(build_site(config_file))]
    echo(summaries[-1])
    _change_blog(db, sample["blog"]["slug"])
    echo("Changed the blog: edited one article, unpublished one, published a new one")
    summaries.append(_summary(build_site(config_file)))
    echo(summaries[-1])
    echo(f"Built site: {site_dir.resolve()}")
    if not serve:
        echo(
            f"  look at it with `python -m http.server -d {site_dir} 8001` and http://127.0.0.1:8001/, "
            "or run `mkdocs-blogsvc demo --serve`"
        )
    else:
        _serve(config_file, url, db, dev_addr)
    return DemoResult(site_dir, tuple(summaries), url)


def check_dev_addr(address: str) -> tuple[str, int]:
    """`--dev-addr`'s host and port; one line if it is not HOST:PORT."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise ConfigurationError(f"--dev-addr must be HOST:PORT, such as 127.0.0.1:8001, not {address!r}")
    return host, int(port)


def _check_free(address: str) -> None:
    host, port = check_dev_addr(address)
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"cannot serve the example site on {address} ({getattr(exc, 'strerror', None) or exc}): "
                "stop what uses it (another `mkdocs serve`?) or pass --dev-addr HOST:PORT"
            ) from None


#: `python -m mkdocs`, but with SIGINT raising KeyboardInterrupt even when inherited ignored.
_SERVE_WITH_CTRL_C = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from mkdocs.__main__ import cli; cli(prog_name='mkdocs')"
)


def _serve(config_file: Path, url: str, db: Database, address: str) -> None:
    """`mkdocs serve --livereload` (a child process, with MkDocs' own logging) while the service
    keeps running in this one; Ctrl-C ends both."""
    db_path = db.url.removeprefix("sqlite:///")
    print(
        f"Serving the example site with live reload on http://{address}/; the service stays on {url}.\n"
        f"Change the blog while it runs, e.g.:\n"
        f"  mkdocs-blogsvc server admin --db {db_path} add-article --blog demo-blog --title 'Hello' --content 'Hi!'\n"
        "and the page appears within seconds (sync_interval: 5). Ctrl-C stops everything.",
        flush=True,
    )
    # `mkdocs serve`, with Python's Ctrl-C handler put back: a demo started in the background by
    # a shell inherits SIGINT ignored, and then the SIGINT passed on below would do nothing.
    command = [sys.executable, "-c", _SERVE_WITH_CTRL_C, "serve", "--livereload", "-a", address, "-f", str(config_file)]
    # In a session of its own: a Ctrl-C in the terminal reaches this process only, which passes
    # it on once, and so does a SIGTERM or a `kill -INT` sent to this process alone.
    child = subprocess.Popen(command, env={**os.environ, "BLOGSVC_SYNC_INTERVAL": "5"}, start_new_session=True)
    try:
        child.wait()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (see `cli.demo`)
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
