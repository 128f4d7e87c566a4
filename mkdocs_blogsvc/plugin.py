"""The MkDocs plugin `blogsvc`: hooks only. Each translates one MkDocs call into a call on the
build's `session.BuildSession` (or, once per process, on the `coordinator.SyncCoordinator` and
`background.BackgroundSync`), and the package's errors into `PluginError`.

    on_startup       remember whether this is `mkdocs serve` (and keep the object across rebuilds)
    on_config        resolve the settings (`config.Settings`), the renderer, the coordinator
    on_pre_build     `BuildSession.begin`: take the cache's locks, sync if due, render the pages;
                     before MkDocs empties site_dir, so a build the service stops leaves the
                     previous site in place
    on_files         (priority 50, before Material's blog plugin at -50) `add_files`
    on_nav           `date_pages`: the sitemap's lastmod of article pages
    on_page_content  (last) `page_html`: article pages through the sanitiser's allowlist
    on_post_page     `with_head`: JSON-LD, Open Graph and keywords before `</head>`
    on_post_build    (last) `finish`: addresses recorded, redirect pages; the locks released
    on_build_error   the locks released
    on_serve         the background sync (`background.BackgroundSync`); stopped in on_shutdown

What a failed sync means for the build (`on_error`, `on_missing_credentials`) is decided in
`coordinator`; what the pages are, in `session`, `pages` and `render`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

from mkdocs_blogsvc.background import BackgroundSync
from mkdocs_blogsvc.config import BlogServiceConfig, Settings, check_exclusive
from mkdocs_blogsvc.coordinator import SyncCoordinator
from mkdocs_blogsvc.errors import BlogServiceError, prefixed
from mkdocs_blogsvc.imagemarkup import ImageMarkup
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.session import BuildSession
from mkdocs_blogsvc.sync import SyncReport


class _AsPluginError:
    """The package's errors as MkDocs shows a plugin's: one line, no traceback. (A class, not
    `contextlib.contextmanager`: entered for every article page, where a generator per page
    cost 80 ms at 10,000 articles.)"""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, traceback: Any) -> None:
        if isinstance(exc, BlogServiceError):
            raise PluginError(prefixed(exc)) from None


_as_plugin_error = _AsPluginError()


class BlogServicePlugin(BasePlugin[BlogServiceConfig]):
    supports_multiple_instances = True

    def __init__(self) -> None:
        super().__init__()
        self.is_serve = False
        self.renderer: Renderer | None = None
        #: the cache, its locks and the time of the last sync (kept across `mkdocs serve` rebuilds).
        self.coordinator: SyncCoordinator | None = None
        #: the build in progress, from on_pre_build to on_post_build.
        self.session: BuildSession | None = None
        #: what the last build's sync changed (the demo prints it).
        self.last_report: SyncReport | None = None
        #: the Markdown extension that writes the images' sizes and variants (`imagemarkup`).
        self.image_markup = ImageMarkup()
        #: under `mkdocs serve` with live reload: its server (from on_serve) and the background sync.
        self.server: Any = None
        self.background: BackgroundSync | None = None

    @property
    def poller(self) -> Any:
        """The background sync's thread, while it runs."""
        return self.background.poller if self.background is not None else None

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        self.is_serve = command == "serve"

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            if self.coordinator is not None:  # switched off in mkdocs.yml while serving
                self.coordinator.switch_off(config.config_file_path)
            return None
        with _as_plugin_error:
            settings = Settings.from_config(self.config, config.config_file_path)
            if self.coordinator is None:
                self.coordinator = SyncCoordinator(settings, config.config_file_path)
            else:  # a `mkdocs serve` rebuild: mkdocs.yml may have changed
                self.coordinator.update(settings, config.config_file_path)
            self._follow_settings()  # `mkdocs serve`: the templates or cache_dir may have changed
            check_exclusive(
                settings,
                [
                    Settings.from_config(other.config, config.config_file_path)
                    for other in config.plugins.values()
                    if other is not self and isinstance(other, BlogServicePlugin) and other.config.enabled
                ],
            )
            settings.check_outside_docs(Path(config.docs_dir))
            self.renderer = Renderer(
                settings.page_template,
                settings.head_template,
                sanitise=not settings.trust_article_html,
                optimize_images=settings.optimize_images,
                image_budget=settings.timeout,
            )
        config.markdown_extensions.append(self.image_markup)  # image sizes and variants in every page's HTML
        return None

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        if self.session is not None:  # the previous build was interrupted (Ctrl-C)
            self.session.close()
            self.session = None
        if not self.config.enabled or self.coordinator is None or self.renderer is None:
            return
        with _as_plugin_error:  # the locks are released in on_post_build / on_build_error
            self.session = BuildSession.begin(
                self.coordinator,
                self.renderer,
                self.image_markup,
                docs_dir=Path(config.docs_dir),
                plugins=config.plugins.values(),
                is_serve=self.is_serve,
            )

    @event_priority(50)  # before Material's blog plugin (-50), which reads posts in on_files
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if self.session is None:
            return None
        self.last_report = self.session.add_files(files, config)
        return files

    def on_nav(self, nav: Navigation, *, config: MkDocsConfig, files: Files) -> Navigation | None:
        if self.session is not None:
            self.session.date_pages(files)
        return None

    @event_priority(-100)  # last: sanitise what every other plugin and extension produced
    def on_page_content(self, html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str | None:
        return self.session.page_html(page.file.src_uri, html) if self.session is not None else None

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str | None:
        if self.session is None:
            return None
        with _as_plugin_error:  # a custom head_template that cannot be rendered, a damaged cache
            return self.session.with_head(output, page)

    @event_priority(-100)  # last: other plugins' on_post_build may still read the cached files
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        session, self.session = self.session, None
        try:
            if session is not None:
                with _as_plugin_error:
                    session.finish(Path(config.site_dir))
        finally:  # the cache lock is held until here: the manifest is saved under it
            self._end_build(session)
        if self.background is not None:  # `mkdocs serve`: mkdocs.yml may have switched the background sync on
            self.background.start(enabled=self.config.enabled)
            self.background.wake()

    def on_build_error(self, *, error: Exception) -> None:
        session, self.session = self.session, None
        self._end_build(session)

    def _end_build(self, session: BuildSession | None) -> None:
        if session is not None:
            session.close()
        if self.coordinator is not None:
            self.coordinator.end_build()

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        """Rebuild when a custom template changes (they live outside docs_dir), and when the
        background sync changed the cache (MkDocs calls on_serve only with live reload on)."""
        self.server = server  # kept even when switched off: mkdocs.yml may switch it on
        self._follow_settings()
        if self.background is not None:
            self.background.start(enabled=self.config.enabled)
        return server

    def _follow_settings(self) -> None:
        """Under `mkdocs serve`: the background sync watches what the current settings name."""
        if self.server is None or self.coordinator is None or not self.config.enabled:
            return
        if self.background is None:
            self.background = BackgroundSync(self.server, self.coordinator)
        self.background.watch_paths()

    def on_shutdown(self) -> None:
        if self.background is not None:
            self.background.stop()
