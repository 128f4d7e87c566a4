"""The `mkdocs-blogsvc` command. It only adapts: each command calls plain functions of the
package and turns `BlogServiceError` into a one-line message and exit status 1."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mkdocs_blogsvc import __version__
from mkdocs_blogsvc.errors import BlogServiceError, prefixed
from mkdocs_blogsvc.shared import DEV_ADDR_BESIDE_SERVICE, counted

if TYPE_CHECKING:  # imported where used: `--help` and the server commands stay fast
    from datetime import datetime

    from mkdocs_blogsvc.cache import Cache, CacheContents
    from mkdocs_blogsvc.config import Settings, Site
    from mkdocs_blogsvc.export import Exported
    from mkdocs_blogsvc.sync import SyncReport
    from mkdocs_blogsvc.theme_override import OverrideResult

F = TypeVar("F", bound=Callable[..., Any])


def reports_errors(command: F) -> F:
    """Turn the package's errors into `click.ClickException` (message, exit status 1, no traceback)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except BlogServiceError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper  # type: ignore[return-value]  # wraps keeps the signature


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mkdocs-blogsvc")
def main() -> None:
    """Publish a blog hosted on the Blog Content Service as part of an MkDocs site."""


# --- commands of the client side are added below this line ---------------------------------
# --- login, status, logout, token (authentication; README "Logging in") -------------------------

_CONFIG_FILE_OPTION = click.option(
    "-f",
    "--config-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="The site's mkdocs.yml (default: mkdocs.yml in the current folder).",
)
_INSTANCE_OPTION = click.option(
    "--instance",
    "--blog-dir",
    "blog_dir",
    default=None,
    metavar="BLOG_DIR",
    help="With several blogsvc plugin instances in mkdocs.yml: the blog_dir of the one to use.",
)


def _site_settings(config_file: str | None, blog_dir: str | None) -> Settings:
    """The `Settings` of the chosen blogsvc instance of the site."""
    from mkdocs_blogsvc.config import load_site_settings

    return _choose(load_site_settings(config_file), blog_dir)


def _choose(instances: list[Settings], blog_dir: str | None) -> Settings:
    """The instance whose blog_dir is `blog_dir`, or the only one."""
    from mkdocs_blogsvc.errors import ConfigurationError

    if blog_dir is not None:
        chosen = [s for s in instances if s.blog_dir == blog_dir.strip("/")]
        if not chosen:
            known = ", ".join(s.blog_dir for s in instances)
            raise ConfigurationError(
                f"no blogsvc instance has blog_dir {blog_dir!r} (instances: {known}): pass one of them to --instance"
            )
        return chosen[0]
    if len(instances) > 1:
        known = ", ".join(s.blog_dir for s in instances)
        raise ConfigurationError(
            f"mkdocs.yml has several blogsvc instances ({known}): choose one with --instance BLOG_DIR"
        )
    return instances[0]


def _moment(value: datetime | None) -> str:
    """A datetime for people: UTC, to the minute."""
    return "never" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


@main.command()
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@click.option(
    "--no-browser",
    is_flag=True,
    help="Print the address to open on any device instead of opening a browser; then wait for the redirect, "
    "or for the address the browser was sent to, pasted here (over SSH, in a container).",
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=300, show_default=True, help="Seconds to wait for the browser."
)
@reports_errors
def login(config_file: str | None, blog_dir: str | None, no_browser: bool, timeout: float) -> None:
    """Connect the site to its blog: sign in and approve in the browser (OAuth 2.0 + PKCE)."""
    import webbrowser

    from mkdocs_blogsvc.login import login as run_login

    settings = _site_settings(config_file, blog_dir)

    def open_browser(url: str) -> None:
        if no_browser or not webbrowser.open(url):
            click.echo(
                f"Open this address in a browser, on this machine or any other device, to connect your "
                f"blog:\n\n    {url}\n",
                err=True,
            )
        else:
            click.echo(f"Your browser was opened to sign in. If it was not, open:\n\n    {url}\n", err=True)

    try:
        import sys

        result = run_login(
            settings,
            open_browser=open_browser,
            timeout=timeout,
            echo=lambda line: click.echo(line, err=True),
            paste=sys.stdin if no_browser else None,
        )
    except KeyboardInterrupt:  # Ctrl-C while waiting: a plain line, no traceback
        click.echo("\nLogin cancelled: nothing was saved. Run `mkdocs-blogsvc login` to start again.", err=True)
        raise click.exceptions.Exit(130) from None
    blog = result.status.blog
    published = counted(blog.article_count, "published article")
    click.echo(f'Connected to the blog "{blog.name}" ({blog.slug}, {published}) at {settings.base_url}.')
    click.echo(f"Credentials saved to {result.credentials_file} (keep this folder out of version control).")


@main.command()
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@reports_errors
def status(config_file: str | None, blog_dir: str | None) -> None:
    """Show the connected blog and the state of the stored tokens (never the tokens)."""
    import time
    from datetime import datetime, timezone

    from mkdocs_blogsvc.connection import connect

    settings = _site_settings(config_file, blog_dir)
    with connect(settings) as service:
        answer = service.client.status()
        stored = service.tokens.stored()
    blog = answer.blog
    rows = [
        ("Blog", f"{blog.name} ({blog.slug})"),
        ("Language", blog.language),
        ("Published articles", str(blog.article_count)),
        ("Scopes", " ".join(answer.scopes) or "(none)"),
        ("Connected at", _moment(answer.connected_at)),
        ("Last sync", _moment(answer.last_sync_at)),
        ("Service", settings.base_url),
        ("Credentials", str(settings.credentials_file)),
    ]
    if stored is not None:
        now = time.time()
        minutes = int(stored.access_valid_for(now) // 60)
        days = round((stored.refresh_expires_at - now) / 86400)
        expiry = datetime.fromtimestamp(stored.refresh_expires_at, timezone.utc)
        rows.append(
            ("Access token", f"valid for {minutes} minutes" if minutes > 0 else "expired (renewed on next use)")
        )
        rows.append(("Refresh token", f"expires on {expiry:%Y-%m-%d} (in {days} days)"))
    width = max(len(label) for label, _ in rows) + 1
    for label, value in rows:
        click.echo(f"{label + ':':<{width}} {value}")


@main.command()
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@reports_errors
def logout(config_file: str | None, blog_dir: str | None) -> None:
    """Delete the stored credentials of the site."""
    from mkdocs_blogsvc.credentials import CredentialStore

    store = CredentialStore(_site_settings(config_file, blog_dir).credentials_file)
    with store.locked():  # never between a refresh and its save
        existed = store.delete()
    if existed:
        click.echo(f"Logged out: deleted {store.path}.")
    else:
        click.echo(f"Not logged in: there are no credentials at {store.path}.")


@main.command()
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@click.option(
    "--print-refresh-token",
    is_flag=True,
    help="Refresh, print the new refresh token, and hand it over (forget it here).",
)
@reports_errors
def token(config_file: str | None, blog_dir: str | None, print_refresh_token: bool) -> None:
    """Hand the connection over to CI: print a fresh refresh token for a CI secret."""
    from mkdocs_blogsvc.connection import connect

    if not print_refresh_token:
        raise click.UsageError(
            "token needs --print-refresh-token (its only action): run mkdocs-blogsvc token --print-refresh-token"
        )
    settings = _site_settings(config_file, blog_dir)
    with connect(settings) as service:
        fresh = service.tokens.hand_over()
    click.echo(
        "Warning: the previous refresh token is now dead (the service rotates it on every refresh).\n"
        f"This new one was removed from {settings.credentials_file}, so that this machine never spends\n"
        "it: store it in your CI secret BLOGSVC_REFRESH_TOKEN now, and run `mkdocs-blogsvc login`\n"
        "again to build here (a separate connection). Treat it like a password.",
        err=True,
    )
    click.echo(fresh.refresh_token)


# --- new (a site to start from; README "Getting started") ----------------------------------


def _at_a_terminal() -> bool:
    """Whether a person can answer a question: standard input is a terminal."""
    import sys

    return sys.stdin.isatty()


def _ask(value: str | None, option: str, prompt: str, check: Callable[[str], str]) -> str:
    """An option's value: given, else asked for when a person is at a terminal (again until it
    passes `check`), else a one-line error naming the option."""
    from mkdocs_blogsvc.errors import ConfigurationError

    if value is not None:
        return check(value)
    if not _at_a_terminal():
        raise ConfigurationError(f"{option} is missing and there is no terminal to ask for it: pass {option}")
    while True:
        answer = click.prompt(prompt, err=True)
        try:
            return check(answer)
        except ConfigurationError as exc:
            click.echo(f"Error: {exc}", err=True)


@main.command()
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--base-url", default=None, metavar="URL", help="The Blog Content Service's address (asked when left out)."
)
@click.option(
    "--client-id",
    default=None,
    metavar="ID",
    help="The client_id the service issued for the site (asked when left out); written into mkdocs.yml.",
)
@click.option("--site-name", default=None, help="The site's name (default: from DIR).")
@reports_errors
def new(folder: Path, base_url: str | None, client_id: str | None, site_name: str | None) -> None:
    """Start a site in DIR (new or empty) that builds at once: Material, its blog, RSS, the plugin."""
    from mkdocs_blogsvc.scaffold import check_base_url, check_client_id, check_folder, write_site

    check_folder(folder)  # before any question
    base_url = _ask(base_url, "--base-url", "The Blog Content Service's address (base_url)", check_base_url)
    client_id = _ask(client_id, "--client-id", "The site's client_id on that service", check_client_id)
    site = write_site(folder, base_url=base_url, client_id=client_id, site_name=site_name)
    for path in site.written:
        click.echo(f"Wrote {path}")
    click.echo(
        f"\nNext, in {folder}:\n"
        "  mkdocs build                # builds now; warns that the blog is left out until you log in\n"
        "  mkdocs-blogsvc login        # once; --no-browser over SSH or in a container\n"
        "  mkdocs serve --livereload\n"
        "For CI, see .github/workflows/publish.yml (the secrets it needs are listed at its top)."
    )
    for step in site.to_do:
        click.echo(f"To do: {step}")


# --- sync, export (the plugin's cache; README "Commands") -----------------------------


def _show_plugin_warnings() -> None:
    """The sync logs through MkDocs' plugin loggers; outside MkDocs, show its warnings on stderr."""
    import logging

    logger = logging.getLogger("mkdocs.plugins")
    if not any(getattr(h, "_blogsvc_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s - %(message)s"))
        handler.setLevel(logging.WARNING)
        handler._blogsvc_cli = True  # type: ignore[attr-defined]  # our marker on the handler
        logger.addHandler(handler)


def _say_waiting(message: str) -> None:
    """The cache lock's wait message, as a line of the command's own output."""
    click.echo(f"{message[:1].upper()}{message[1:]}...", err=True)


@contextlib.contextmanager
def _locked_cache(settings: Settings) -> Iterator[Cache]:
    """Hold the cache's cross-process lock: a build or `mkdocs serve` in another process must
    not read files this command deletes. Waits for the holder (saying so), then fails in one
    line (`CacheBusy`, `CacheUnwritable`)."""
    from mkdocs_blogsvc.cache import Cache

    with Cache(settings.cache_dir).locked(on_wait=_say_waiting) as cache:
        yield cache


def _run_sync(settings: Settings, cache: Cache, *, full: bool = False) -> tuple[CacheContents, SyncReport]:
    """One sync into the cache, as the plugin's (the caller holds the cache lock)."""
    from mkdocs_blogsvc.coordinator import run_sync
    from mkdocs_blogsvc.logs import log

    _show_plugin_warnings()
    return run_sync(settings, cache, warn=log.warning, full=full)


@main.command()
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@click.option(
    "--full",
    is_flag=True,
    help="Ask for every article, to bring in slug and date changes (contentHash does not cover them).",
)
@click.option(
    "--forget-addresses",
    is_flag=True,
    help="Also forget the earlier addresses of every article: the next build writes no redirect pages "
    "for them (after a settings mistake that was never published).",
)
@reports_errors
def sync(config_file: str | None, blog_dir: str | None, full: bool, forget_addresses: bool) -> None:
    """Bring the plugin's cache in line with the blog now, and print what changed."""
    settings = _site_settings(config_file, blog_dir)
    with _locked_cache(settings) as cache:
        contents, report = _run_sync(settings, cache, full=full)
        if forget_addresses:
            forgotten = contents.manifest.forget_addresses()
            cache.save(contents.manifest)
            click.echo(
                f"Forgot the earlier addresses of {counted(forgotten, 'article')}: the next build records where each "
                "page is and writes redirect pages only for addresses they move from after that."
            )
    for label, ids in (("new", report.new), ("updated", report.updated)):
        for article_id in ids:
            click.echo(f"{label:8} {contents.articles[article_id].title}  ({article_id})")
    for article_id in report.deleted:
        click.echo(f"deleted  {article_id}")
    click.echo(prefixed(report.summary()))
    if report.image_failures or report.skipped:
        click.echo(
            f"{counted(len(report.image_failures), 'image')} not downloaded, "
            f"{counted(len(report.skipped), 'article')} skipped (see the warnings above)"
        )


@main.command()
@click.argument("dest_text", metavar="DEST", type=click.Path(file_okay=False))
@_CONFIG_FILE_OPTION
@_INSTANCE_OPTION
@click.option("--offline", is_flag=True, help="Do not sync first: export what the cache holds.")
@click.option("--index", "with_index", is_flag=True, help="Also write <blog_dir>/index.md listing the articles.")
@click.option(
    "--theme-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Also write the theme override that puts the JSON-LD, Open Graph, article: and keywords tags "
    "of exported pages into <head> (DIR is the theme's custom_dir).",
)
@click.option("--watch", is_flag=True, help="Keep exporting as the blog changes, until Ctrl-C.")
@click.option(
    "--interval",
    type=click.IntRange(min=1),
    default=None,
    metavar="SECONDS",
    help="With --watch (implies it): seconds between two syncs (default: sync_interval, else 60).",
)
@reports_errors
def export(
    dest_text: str,
    config_file: str | None,
    blog_dir: str | None,
    offline: bool,
    with_index: bool,
    theme_dir: Path | None,
    watch: bool,
    interval: int | None,
) -> None:
    """Write the articles as plain Markdown pages and images into DEST (e.g. your docs folder),
    for committing them or for generators that cannot run MkDocs plugins (Zensical)."""
    from mkdocs_blogsvc.config import load_site
    from mkdocs_blogsvc.errors import (
        BlogServiceError,
        ConfigurationError,
        InvalidResponse,
        NeverSynced,
        ServiceError,
        TransportError,
    )
    from mkdocs_blogsvc.redirects import post_urls
    from mkdocs_blogsvc.render import Renderer
    from mkdocs_blogsvc.theme_override import ExportHead, override_in_use

    if not dest_text.strip():  # `export ""` or an unset variable: not the current folder
        raise ConfigurationError(f"DEST is {dest_text!r}: give the folder to export into, usually the site's docs_dir")
    dest = Path(dest_text)
    # the override first: mkdocs.yml may already name its folder as `custom_dir`, which MkDocs
    # refuses to load while the folder does not exist (the order of the Zensical page)
    override = _write_theme_override(theme_dir) if theme_dir is not None else None
    site = load_site(config_file)
    settings = _choose(site.instances, blog_dir)
    if site.docs_dir in dest.resolve().parents:  # found by review: `export docs/blog` built every page twice
        raise ConfigurationError(
            f"{dest} is a folder inside the docs_dir of mkdocs.yml ({site.docs_dir}): the pages would be "
            "read twice, at two addresses; export into the docs_dir itself"
        )
    if dest.resolve() != site.docs_dir:
        click.echo(
            f"Warning: {dest} is not the docs_dir of mkdocs.yml ({site.docs_dir}), where MkDocs and "
            "Zensical read pages: export into that folder to build the articles with the site.",
            err=True,
        )
    watch = watch or interval is not None
    if watch and (offline or settings.offline):
        raise ConfigurationError("--watch syncs with the service: it cannot run offline (--offline, offline: true)")
    # a broken template fails before the sync
    renderer = Renderer(
        settings.page_template,
        settings.head_template,
        sanitise=not settings.trust_article_html,
        optimize_images=settings.optimize_images,
        image_budget=settings.timeout,
    )
    if override is not None and theme_dir is not None:
        _say_theme_override(override, theme_dir, site)

    reported_left_out: set[str] = set()
    urls = post_urls(site.blogs, settings.posts_dir, use_directory_urls=site.use_directory_urls, language=site.language)
    in_head = override_in_use(site.custom_dir)  # else the JSON-LD goes at the end of each page's body

    def export_once(sync: bool, only_if_changed: bool) -> tuple[Any, Exported, int, int]:
        from mkdocs_blogsvc.export import Exported, export_site, redirect_files
        from mkdocs_blogsvc.pages import render_pages
        from mkdocs_blogsvc.sync import SyncReport, ever_synced

        with _locked_cache(settings) as cache:
            contents, report = _run_sync(settings, cache) if sync else (cache.read(), SyncReport())
            if not sync and not ever_synced(contents):  # a new clone; `zensical build --clean` deletes .cache/
                raise NeverSynced(
                    f"the cache in {settings.cache_dir} holds no sync of the blog (none was made here, or the "
                    f"cache was deleted since), so there is nothing to export from it: {dest} is left as it is"
                )
            if only_if_changed and not report.changed:
                return report, Exported(0, 0), len(contents.articles), 0
            head = ExportHead(site.site_url, contents.manifest.blog_language, urls, in_head, attr_list=site.attr_list)
            rendered = render_pages(
                cache,
                contents,
                renderer,
                blog_dir=settings.blog_dir,
                posts_dir=settings.posts_dir,
                with_index=with_index,
                export=head,
                base_url=settings.base_url,
            )
            for page in rendered.pages:  # what the sanitiser removed, once per article, as the plugin logs it
                found = renderer.removed.get(page.article_id or "")
                if found:
                    click.echo(f"{page.src_uri}: removed {found.summary()} (trust_article_html: true keeps it)")
                # found by review: the plugin's builds say so (an INFO line), the export said nothing
                for url in rendered.links.unresolved.get(page.article_id or "", ()) if rendered.links else ():
                    click.echo(
                        f"{page.src_uri}: links to {url}, which is not a published article of the blog: "
                        "the link is left as it is"
                    )
            moved, occupied = redirect_files(
                cache,
                contents,
                rendered,
                urls,
                dest,
                site_url=site.site_url,
                language=contents.manifest.blog_language,
                enabled=settings.redirects,
            )
            try:
                exported = export_site(
                    rendered,
                    dest,
                    settings.blog_dir,
                    redirect_pages=moved,
                    configured={instance.blog_dir for instance in site.instances},
                )
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot export into {dest}: {exc.strerror or exc}; choose a folder this user can write to"
                ) from None
            if new_left_out := sorted(set(exported.left_out) - reported_left_out):  # each path said once
                reported_left_out.update(new_left_out)
                click.echo(_left_out_message(dest, new_left_out), err=True)
            if new_occupied := sorted(set(occupied + list(exported.occupied)) - reported_left_out):
                reported_left_out.update(new_occupied)
                click.echo(
                    f"The old addresses {', '.join(new_occupied)} of articles are files or pages of the site: "
                    "no redirect page there.",
                    err=True,
                )
            for gone, count in exported.retired.items():
                click.echo(
                    f"Removed {counted(count, 'file')} that an earlier export wrote for blog_dir {gone!r}, which no "
                    "blogsvc instance of mkdocs.yml has now."
                )
            return report, exported, exported.pages, len(rendered.images)

    every = interval or settings.sync_interval or 60
    try:
        _, exported, pages, images = export_once(not (offline or settings.offline), False)
    except NeverSynced as exc:  # offline: never export an empty blog over the earlier export
        step = "run the export without --offline" if offline else "set offline: false in mkdocs.yml"
        raise NeverSynced(f"{exc}; {step} to sync first") from None
    except (InvalidResponse, ServiceError, TransportError) as exc:  # the service's part, not the cache's
        if not watch:
            raise BlogServiceError(f"{exc} (`export --offline` exports what the cache holds)") from None
        # --watch waits out an outage from its first round on, as from every later one
        click.echo(
            f"Warning: the sync failed ({exc}); exporting what the cache holds, and trying again every {every} s",
            err=True,
        )
        try:
            _, exported, pages, images = export_once(False, False)
        except NeverSynced as empty:
            click.echo(f"Warning: {empty}, until a sync succeeds.", err=True)
            _watch_export(settings, every, lambda: export_once(True, True))
            return
    moved = f", {counted(exported.redirects, 'redirect page')} at earlier addresses" if exported.redirects else ""
    click.echo(
        f"Exported {counted(pages, 'article')} and {counted(images, 'image')} to {dest}{moved} "
        f"({counted(exported.written, 'file')} written, {exported.removed} removed)."
    )
    if watch:
        _watch_export(settings, every, lambda: export_once(True, True))


def _left_out_message(dest: Path, paths: list[str], shown: int = 5) -> str:
    from mkdocs_blogsvc.exportrecord import EXPORT_RECORD

    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return (
        f"Warning: {dest} already has {len(paths)} of the exported files, not written by an earlier export "
        f"(not in its {EXPORT_RECORD}): {', '.join(paths[:shown])}{more}. They are left as they are and "
        "those files of the export left out; move or delete them to export the blog's."
    )


def _write_theme_override(theme_dir: Path) -> OverrideResult:
    from mkdocs_blogsvc.errors import ConfigurationError
    from mkdocs_blogsvc.theme_override import write_theme_override

    try:
        return write_theme_override(theme_dir)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot write the theme override into {theme_dir}: {exc.strerror or exc}; "
            "choose a folder this user can write to"
        ) from None


def _say_theme_override(result: OverrideResult, theme_dir: Path, site: Site) -> None:
    import os

    from mkdocs_blogsvc.theme_override import HEAD_PARTIAL

    for path in result.written:
        click.echo(f"Wrote {path}")
    if result.main_to_edit is not None:
        click.echo(
            f'{result.main_to_edit} is yours and was left as it is: add {{% include "{HEAD_PARTIAL}" %}} '
            "to its {% block extrahead %} (after {{ super() }}) to get the head tags of exported pages."
        )
    if site.custom_dir != theme_dir.resolve():
        relative = Path(os.path.relpath(theme_dir.resolve(), site.config_dir)).as_posix()
        click.echo(
            f"Set `custom_dir: {relative}` under `theme:` in mkdocs.yml (a path relative to mkdocs.yml) "
            "so that the theme uses this override."
        )


def _watch_export(
    settings: Settings, interval: int, export_round: Callable[[], tuple[Any, Exported, int, int]]
) -> None:
    """`export --watch`: a sync every `interval` seconds until Ctrl-C or SIGTERM, which end it
    between two rounds (never in the middle of writing), without a traceback."""
    import signal
    import threading

    from mkdocs_blogsvc.export import ExportRound, keep_exporting

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C interrupts at once

    def one_round() -> ExportRound:
        report, exported, _, _ = export_round()
        return ExportRound(prefixed(report.summary()), report.changed, exported.written, exported.removed)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    click.echo(f"Watching {settings.base_url} for changes every {interval} s; Ctrl-C stops.")
    try:
        keep_exporting(
            one_round, interval, stop, say=click.echo, warn=lambda message: click.echo(f"Warning: {message}", err=True)
        )
    except KeyboardInterrupt:  # the second Ctrl-C
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("Stopped.")


# --- the reference service ------------------------------------------------------------------


class _LazyServerGroup(click.Group):
    """`mkdocs-blogsvc server ...`: loaded on use, so plugin users need no server dependencies."""

    def _real(self) -> click.Group:
        try:
            from mkdocs_blogsvc.server.cli import server
        except ImportError as exc:
            from mkdocs_blogsvc.installed import install_command

            raise click.ClickException(
                f"the reference service needs the [server] extra ({exc.name} is missing): "
                f"install it with {install_command('server')}"
            ) from None
        return server

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._real().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._real().get_command(ctx, name)


main.add_command(_LazyServerGroup("server", help="Run and script the reference Blog Content Service."))


# --- the demo -------------------------------------------------------------------------------


def _dev_addr(value: str) -> str:
    """`demo --dev-addr` is HOST:PORT: anything else is a usage error, as other malformed options are."""
    from mkdocs_blogsvc.demo import check_dev_addr
    from mkdocs_blogsvc.errors import ConfigurationError

    try:
        check_dev_addr(value)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc).removeprefix("--dev-addr ")) from None
    return value


@main.command()
@click.option(
    "-f",
    "--config-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The site to build (default: example-site/mkdocs.yml of a clone, else the example site that "
    "ships with the package, written into --into).",
)
@click.option(
    "--into",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("blogsvc-demo"),
    show_default=True,
    metavar="DIR",
    help="Without a clone: the folder the packaged example site is written into and built in.",
)
@click.option(
    "--serve", is_flag=True, help="Then keep the service running and `mkdocs serve` the site with live reload."
)
@click.option(
    "-a",
    "--dev-addr",
    default=DEV_ADDR_BESIDE_SERVICE,
    show_default=True,
    metavar="HOST:PORT",
    help="Where --serve serves the site.",
    callback=lambda _context, _parameter, value: _dev_addr(value),
)
@reports_errors
def demo(config_file: Path | None, into: Path, serve: bool, dev_addr: str) -> None:
    """Build the example site from a freshly seeded reference service, change the blog, build again."""
    import signal

    from mkdocs_blogsvc.demo import run_demo

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM ends the demo like Ctrl-C: service stopped, temporary folder removed

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        run_demo(config_file, echo=click.echo, serve=serve, dev_addr=dev_addr, into=into)
    finally:
        signal.signal(signal.SIGTERM, previous)
