"""The MkDocs plugin `blogsvc`: hooks only. They adapt MkDocs to `sync` and `render`.

    on_startup    remember whether this is `mkdocs serve` (and keep the object across rebuilds)
    on_config     resolve the settings; refuse two instances sharing a cache, store or posts_dir,
                  and a cache or credentials file inside docs_dir
    on_pre_build  take the cache locks and sync if due: before MkDocs empties site_dir, so a
                  build the service stops leaves the previous site in place
    on_files      (priority 50, before Material's blog plugin at -50) render the pages from the
                  cache, add them as `File.generated(..., abs_src_path=...)`
    on_post_page  article pages: JSON-LD, Open Graph and keywords before `</head>`
    on_post_build / on_build_error   release the cache lock
    on_serve      watch the custom templates; start the background sync (`watch.Poller`), which
                  syncs every sync_interval seconds and, when the blog changed, raises the
                  signal file the server watches, so the site rebuilds from the cache
    on_shutdown   stop the background sync

The cache locks are held from on_pre_build to the end of the build (MkDocs reads the pages and
copies the images long after on_files): a threading lock against the background sync of this
process, then `sync.CacheLock` (a file lock) against other processes (another build,
`mkdocs-blogsvc sync` or `export`). So nothing changes files a build is reading.

Failures of the service follow `on_error`: `warn` logs a warning and builds from the cache
(so `mkdocs build --strict` fails), `fail` stops the build with a `PluginError`. Failures that
cannot heal by themselves (credentials, configuration, a broken template) always stop it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, PrefixedLogger, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from mkdocs_blogsvc import credentials, watch
from mkdocs_blogsvc.api import redact
from mkdocs_blogsvc.config import BlogServiceConfig, Settings
from mkdocs_blogsvc.errors import BlogServiceError, ConfigurationError, CredentialsError
from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.sync import (
    CacheLock,
    CacheState,
    SyncReport,
    read_cache,
    render_all,
    sync_cache,
)

#: MkDocs' plugin logger, with the plugin's public name as the prefix ("blogsvc: ...").
log = PrefixedLogger("blogsvc", logging.getLogger(f"mkdocs.plugins.{__name__}"))

_HEAD_END = re.compile(r"</head\s*>", re.IGNORECASE)
#: Settings two instances must never share (each instance is one connected blog).
_EXCLUSIVE = ("cache_dir", "credentials_file", "posts_dir")


class BlogServicePlugin(BasePlugin[BlogServiceConfig]):
    supports_multiple_instances = True

    def __init__(self) -> None:
        super().__init__()
        self.is_serve = False
        self.settings: Settings | None = None
        self.renderer: Renderer | None = None
        #: monotonic time of the last sync attempt (kept across `mkdocs serve` rebuilds).
        self.last_sync_attempt: float | None = None
        self.language: str | None = None
        #: docs-relative page path -> (article, docs-relative cover image path or None).
        self.pages: dict[str, tuple[Article, str | None]] = {}
        self.files: Files | None = None
        #: what on_pre_build hands to on_files: (cache state, report, reason, start time).
        self._synced: tuple[CacheState, SyncReport, str, float] | None = None
        #: held by a build from on_files to its end, and by each background sync; the file
        #: lock (`_held_file_lock`, other processes) is always taken after it.
        self.cache_lock = threading.Lock()
        self._holds_cache = False
        self._held_file_lock: CacheLock | None = None
        self.poller: watch.Poller | None = None
        self._poll_errors = watch.WarnOnce(log)  # reset when a background sync succeeds
        self._poll_notices = watch.WarnOnce(log)  # never reset: shown once per `mkdocs serve`

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        self.is_serve = command == "serve"

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            return None
        self.settings = _resolve(self.config, config)
        for other in config.plugins.values():
            if other is self or not isinstance(other, BlogServicePlugin) or not other.config.enabled:
                continue
            theirs = _resolve(other.config, config)
            for name in _EXCLUSIVE:
                if getattr(theirs, name) == getattr(self.settings, name):
                    raise PluginError(
                        f"blogsvc: two instances of the plugin share {name} ({getattr(self.settings, name)}); "
                        f"give each connected blog its own {name}"
                    )
        _check_outside_docs(self.settings, Path(config.docs_dir).resolve())
        try:
            self.renderer = Renderer(self.settings.page_template, self.settings.head_template)
        except BlogServiceError as exc:
            raise PluginError(str(exc)) from None
        return None

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        """Take the cache and sync. This runs before MkDocs empties site_dir, so a build that
        the service stops (credentials, `on_error: fail`) leaves the previous site in place."""
        if not self.config.enabled or self.settings is None:
            return
        settings, started = self.settings, time.perf_counter()
        self._release_cache()  # still held only if the previous build was interrupted (Ctrl-C)
        self.cache_lock.acquire()  # both locks are released in on_post_build / on_build_error
        self._holds_cache = True
        try:
            file_lock = CacheLock(settings.cache_dir)
            file_lock.acquire()  # raises CacheBusy after sync.LOCK_TIMEOUT
            self._held_file_lock = file_lock
            state = read_cache(settings.cache_dir)
            state, report, reason = self._sync_if_due(state)
        except OSError as exc:
            raise PluginError(_cache_unwritable(settings, exc)) from None
        except BlogServiceError as exc:  # the cache is busy
            raise PluginError(_message(exc)) from None
        self._synced = (state, report, reason, started)

    @event_priority(50)  # before Material's blog plugin (-50), which reads posts in on_files
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if not self.config.enabled or self.settings is None or self.renderer is None or self._synced is None:
            return None
        settings = self.settings
        state, report, reason, started = self._synced
        self._synced = None
        try:
            blog_plugin = _material_blog(config)
            if blog_plugin is not None:
                _check_post_dir(blog_plugin, settings.posts_dir)
            wants_index = blog_plugin is None and not _has_index(files, settings.blog_dir)
            index_title = (state.manifest.blog_name or "Blog") if wants_index else None
            site = render_all(
                settings.cache_dir, state, self.renderer,
                blog_dir=settings.blog_dir, posts_dir=settings.posts_dir, index_title=index_title,
            )
        except OSError as exc:
            raise PluginError(_cache_unwritable(settings, exc)) from None
        except BlogServiceError as exc:  # a template that cannot be rendered
            raise PluginError(_message(exc)) from None
        self.language = state.manifest.blog_language
        self.pages = {}
        for site_file in [*site.images, *site.pages, *([site.index] if site.index else [])]:
            if files.get_file_from_path(site_file.src_uri) is not None:
                log.warning(f"docs_dir already has {site_file.src_uri}; the plugin's file of that name is left out")
                continue
            files.append(File.generated(config, site_file.src_uri, abs_src_path=str(site_file.abs_path)))
            if site_file.article_id is not None:
                article = state.articles[site_file.article_id]
                entry = state.manifest.entries[site_file.article_id]
                cover = entry.images.get(article.cover_image_url or "")
                self.pages[site_file.src_uri] = (article, f"{settings.blog_dir}/{cover}" if cover else None)
        self.files = files
        report.duration = time.perf_counter() - started
        log.info(report.summary() + reason)
        return files

    def _sync_if_due(self, state: CacheState) -> tuple[CacheState, SyncReport, str]:
        """Sync unless offline or (under `mkdocs serve`) synced less than sync_interval ago."""
        settings = self.settings
        assert settings is not None
        cached = SyncReport(unchanged=len(state.articles))
        if settings.offline:
            return state, cached, " (offline: built from the cache)"
        if self.is_serve and self._seconds_until_due(settings) > 0:
            return state, cached, f" (synced less than {settings.sync_interval} s ago: built from the cache)"
        self.last_sync_attempt = time.monotonic()
        try:
            state, report = self._sync(settings, state, warn=log.warning)
        except (CredentialsError, ConfigurationError) as exc:
            # Not a passing outage: no later build can succeed until someone logs in again or
            # fixes the setting, so `on_error: warn` does not apply.
            raise PluginError(_message(exc)) from None
        except BlogServiceError as exc:
            if settings.on_error == "fail":
                raise PluginError(f"blogsvc: the sync with {settings.base_url} failed: {exc}") from None
            log.warning(
                f"the sync with {settings.base_url} failed ({exc}); the site is built from the cache "
                f"({len(state.articles)} articles). Set on_error: fail to stop the build instead"
            )
            return state, cached, " (sync failed: built from the cache)"
        return state, report, ""

    def _seconds_until_due(self, settings: Settings) -> float:
        if self.last_sync_attempt is None:
            return 0.0
        return self.last_sync_attempt + settings.sync_interval - time.monotonic()

    def _sync(
        self, settings: Settings, state: CacheState | None, *, warn: Callable[[str], object]
    ) -> tuple[CacheState, SyncReport]:
        """One sync into the cache, the build's and the background one alike. The caller holds
        the cache lock. Raises `BlogServiceError` (cache untouched) or `OSError`."""
        with credentials.open_client(settings) as client:
            tokens = client.tokens
            if isinstance(tokens, credentials.TokenManager):
                expires = tokens.refresh_expires_soon()
                if expires is not None:
                    warn(
                        f"the stored refresh token expires on {expires:%Y-%m-%d %H:%M} UTC; run "
                        "`mkdocs-blogsvc login` before then (the credentials cannot be renewed afterwards)"
                    )
            return sync_cache(settings.cache_dir, client, download_images=settings.download_images, state=state)

    def _poll(self) -> float:
        """One round of the background sync under `mkdocs serve`; returns the seconds to wait.

        It syncs when sync_interval has passed since the last attempt (the build's or its own),
        under both cache locks; when something changed it raises the signal file, and the rebuild
        that follows finds the sync recent and builds from the cache.
        """
        settings = self.settings
        if settings is None or not settings.enabled or settings.offline or settings.sync_interval <= 0:
            return 1.0  # switched off in mkdocs.yml while serving: look again soon
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait
        if not self.cache_lock.acquire(timeout=1.0):
            return 0.0  # a build is running: sync when it is done
        try:
            file_lock = CacheLock(settings.cache_dir)
            if not file_lock.try_acquire(timeout=1.0):
                return 1.0  # another process (a build, `mkdocs-blogsvc sync`) uses the cache
            try:
                return self._poll_locked(settings)
            finally:
                file_lock.release()
        except OSError as exc:  # the cache folder cannot be created
            return self._poll_cannot_write(settings, exc)
        finally:
            self.cache_lock.release()

    def _poll_locked(self, settings: Settings) -> float:
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait  # the build that just ended synced
        self.last_sync_attempt = time.monotonic()
        try:
            _, report = self._sync(settings, None, warn=self._poll_notices.warn)
        except BlogServiceError as exc:
            self._poll_errors.warn(
                f"the background sync with {settings.base_url} failed ({exc}); the site keeps the "
                f"articles of the last sync; trying again every {settings.sync_interval} s"
            )
            return settings.sync_interval
        except OSError as exc:
            return self._poll_cannot_write(settings, exc)
        if self._poll_errors.reset():
            log.info(f"the background sync with {settings.base_url} works again")
        if report.new or report.updated or report.deleted:
            watch.raise_signal(settings.cache_dir, report.summary())
            log.info(report.summary() + " (background sync: rebuilding the site)")
        return settings.sync_interval

    def _poll_cannot_write(self, settings: Settings, exc: OSError) -> float:
        self._poll_errors.warn(
            f"the background sync cannot write the cache in {settings.cache_dir} "
            f"({exc.strerror or exc}); trying again every {settings.sync_interval} s"
        )
        return float(settings.sync_interval)

    def _poll_crashed(self, exc: Exception) -> None:
        self._poll_errors.warn(
            f"the background sync failed unexpectedly ({type(exc).__name__}: {redact(str(exc))[:300]}); "
            "trying again in a few seconds"
        )

    def _release_cache(self) -> None:
        if self._held_file_lock is not None:
            self._held_file_lock.release()
            self._held_file_lock = None
        if self._holds_cache:
            self._holds_cache = False
            self.cache_lock.release()

    @event_priority(-100)  # last: other plugins' on_post_build may still read the cached files
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        self._release_cache()

    def on_build_error(self, *, error: Exception) -> None:
        self._release_cache()

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str | None:
        found = self.pages.get(page.file.src_uri) if self.config.enabled else None
        if found is None or self.renderer is None:
            return None
        article, cover_src = found
        site_url = config.site_url or ""
        page_url = urljoin(site_url, page.url) if site_url else None
        image_url = article.cover_image_url
        cover_file = self.files.get_file_from_path(cover_src) if cover_src and self.files else None
        if cover_file is not None:
            image_url = urljoin(site_url, cover_file.url) if site_url else get_relative_url(cover_file.url, page.url)
        try:
            head = self.renderer.head(article, page_url=page_url, image_url=image_url, language=self.language)
        except BlogServiceError as exc:  # a custom head_template that cannot be rendered
            raise PluginError(_message(exc)) from None
        match = _HEAD_END.search(output)
        if match is None:
            log.debug(f"no </head> in {page.file.src_uri}: head tags not inserted")
            return None
        return output[: match.start()] + head + output[match.start() :]

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        """Rebuild when a custom template changes (they live outside docs_dir), and when the
        background sync changed the cache (MkDocs calls on_serve only with live reload on)."""
        settings = self.settings
        if settings is None or not self.config.enabled:
            return server
        for template in (settings.page_template, settings.head_template):
            if template is not None:
                server.watch(os.fspath(template))
        if settings.offline or settings.sync_interval <= 0 or self.poller is not None:
            return server
        try:
            signal = watch.prepare_signal(settings.cache_dir)
        except OSError as exc:
            log.warning(
                f"the cache in {settings.cache_dir} cannot be written ({exc.strerror or exc}): no background "
                "sync; articles changed on the service appear at the first rebuild after sync_interval"
            )
            return server
        server.watch(os.fspath(signal))
        observer = getattr(server, "observer", None)  # LiveReloadServer's watchdog observer
        self.poller = watch.Poller(
            self._poll,
            ready=lambda: observer is None or observer.is_alive(),
            on_crash=self._poll_crashed,
            name=f"blogsvc-sync-{settings.blog_dir}",
        )
        self.poller.start()
        log.info(f"checking {settings.base_url} for changes every {settings.sync_interval} s")
        return server

    def on_shutdown(self) -> None:
        if self.poller is not None:
            self.poller.stop()
            self.poller = None


def _cache_unwritable(settings: Settings, exc: OSError) -> str:
    return (
        f"blogsvc: the cache in {settings.cache_dir} cannot be written ({exc.strerror or exc}); "
        "check the folder's permissions and free space"
    )


def _resolve(plugin_config: BlogServiceConfig, config: MkDocsConfig) -> Settings:
    try:
        return Settings.from_config(plugin_config, config.config_file_path)
    except BlogServiceError as exc:
        raise PluginError(str(exc)) from None


def _message(exc: BlogServiceError) -> str:
    """The error's message with the plugin's prefix, once."""
    text = str(exc)
    return text if text.startswith("blogsvc: ") else f"blogsvc: {text}"


def _check_outside_docs(settings: Settings, docs_dir: Path) -> None:
    """Refuse a cache or credentials file inside docs_dir (and a cache_dir holding docs_dir).

    Whatever is in docs_dir is published with the site (a credentials file would be served to
    anyone), and each write there (a page rendered, a token refreshed) makes `mkdocs serve`
    rebuild in a loop.
    """
    cache_dir = settings.cache_dir.resolve()
    if cache_dir == docs_dir or docs_dir in cache_dir.parents:
        raise PluginError(
            f"blogsvc: cache_dir ({settings.cache_dir}) is inside docs_dir; writing there would make "
            "`mkdocs serve` rebuild in a loop: use a folder outside docs_dir (default .cache/blogsvc)"
        )
    if cache_dir in docs_dir.parents:
        raise PluginError(
            f"blogsvc: cache_dir ({settings.cache_dir}) contains docs_dir; the cache would write into "
            "docs_dir: use a folder of its own outside docs_dir (default .cache/blogsvc)"
        )
    credentials_file = settings.credentials_file.resolve()
    if docs_dir in credentials_file.parents:
        raise PluginError(
            f"blogsvc: credentials_file ({settings.credentials_file}) is inside docs_dir; it would be "
            "published with the site, and each token refresh would make `mkdocs serve` rebuild: "
            "use a path outside docs_dir (default .blogsvc/credentials.json), then run `mkdocs-blogsvc login`"
        )


def _material_blog(config: MkDocsConfig) -> Any:
    """Material's blog plugin when it is active (it builds the index itself), else None."""
    for plugin in config.plugins.values():
        if type(plugin).__module__.startswith("material.plugins.blog") and plugin.config.get("enabled", True):
            return plugin
    return None


def _check_post_dir(blog_plugin: Any, posts_dir: str) -> None:
    blog_dir = str(blog_plugin.config.blog_dir).strip("/")
    post_dir = str(blog_plugin.config.post_dir).format(blog=blog_dir).strip("/")
    if not (posts_dir == post_dir or posts_dir.startswith(post_dir + "/")):
        log.warning(
            f"posts_dir is {posts_dir!r} but Material's blog plugin reads posts from {post_dir!r}: "
            "the articles will not be blog posts; set posts_dir (or the blog plugin's post_dir) to match"
        )


def _has_index(files: Files, blog_dir: str) -> bool:
    return any(files.get_file_from_path(f"{blog_dir}/{name}") is not None for name in ("index.md", "README.md"))
