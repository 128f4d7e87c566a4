"""The MkDocs plugin `blogsvc`: hooks only. They adapt MkDocs to `coordinator`, `pages` and
`render`, and translate their errors into `PluginError`.

    on_startup    remember whether this is `mkdocs serve` (and keep the object across rebuilds)
    on_config     resolve the settings; refuse two instances sharing a cache, store or posts_dir,
                  and a cache or credentials file inside docs_dir
    on_pre_build  take the cache locks and sync if due (`SyncCoordinator.begin_build`): before MkDocs
                  empties site_dir, so a build the service stops leaves the previous site in place
    on_files      (priority 50, before Material's blog plugin at -50) render the pages from the
                  cache (`pages.render_pages`), add them as `File.generated(..., abs_src_path=...)`;
                  keep their external addresses from Material's privacy plugin (`privacy`)
    on_page_content  article pages: the HTML through the sanitiser's allowlist
    on_post_page  article pages: JSON-LD, Open Graph and keywords before `</head>`
    on_post_build / on_build_error   release the cache locks (`SyncCoordinator.end_build`);
                  under `mkdocs serve`, start or wake the background sync (settings may have changed)
    on_serve      watch the custom templates and the signal file (`watch.ServerWatches`); start
                  the background sync (`watch.Poller` running `SyncCoordinator.poll`), which syncs
                  every sync_interval seconds and, when the blog changed, raises the signal file,
                  so the site rebuilds from the cache
    on_shutdown   stop the background sync

`coordinator.SyncCoordinator` holds the cache (`cache.Cache`), its locks, the time of the last
sync and the sync itself (why the locks span the whole build: see its docstring); it lives as
long as this object. `last_report` keeps the report of the last build's sync (the demo prints it).
The sanitised HTML and the head tags of each article page are kept in the cache by the hash
of their inputs (`outputs`): a build with nothing changed computes neither.

Failures of the service follow `on_error`: `warn` logs a warning and builds from the cache
(so `mkdocs build --strict` fails), `fail` stops the build with a `PluginError`, and `auto`
(the default) warns, except in CI with nothing cached, where it stops. Failures that
cannot heal by themselves (credentials, configuration, a broken template) always stop it.
"""

from __future__ import annotations

import html
import os
import posixpath
import re
import time
from dataclasses import dataclass
from datetime import timezone
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urljoin

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from mkdocs_blogsvc import collector, outputs, privacy, redirects, watch
from mkdocs_blogsvc.cache import CacheContents
from mkdocs_blogsvc.config import BlogServiceConfig, Settings
from mkdocs_blogsvc.coordinator import SyncCoordinator
from mkdocs_blogsvc.errors import BlogServiceError, CacheUnwritable
from mkdocs_blogsvc.exportrecord import read_record
from mkdocs_blogsvc.imagemarkup import ImageMarkup
from mkdocs_blogsvc.imagesizes import ImageInfo
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.models import ArticleSummary
from mkdocs_blogsvc.outputs import PageOutputs
from mkdocs_blogsvc.pages import RenderedSite, markdown_removed, remote_hosts, render_pages
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.sync import SyncReport

_HEAD_END = re.compile(r"</head\s*>", re.IGNORECASE)
_CANONICAL = re.compile(r"<link\b[^>]*\brel\s*=\s*[\"']?canonical\b", re.IGNORECASE)

#: Settings two instances must never share (each instance is one connected blog).
_EXCLUSIVE = ("cache_dir", "credentials_file", "posts_dir")


@dataclass(frozen=True, slots=True)
class ArticlePage:
    """An article's page in this build: what is known of the article without reading its file,
    and the docs-relative paths of its cover and of each image downloaded (by remote URL)."""

    summary: ArticleSummary
    article_sha256: str
    cover_src: str | None
    downloaded: dict[str, str]


class BlogServicePlugin(BasePlugin[BlogServiceConfig]):
    supports_multiple_instances = True

    def __init__(self) -> None:
        super().__init__()
        self.is_serve = False
        self.settings: Settings | None = None
        self.renderer: Renderer | None = None
        #: the cache, its locks and the time of the last sync (kept across `mkdocs serve` rebuilds).
        self.coordinator: SyncCoordinator | None = None
        #: what the last build's sync changed (None before the first build's on_files).
        self.last_report: SyncReport | None = None
        self.language: str | None = None
        #: docs-relative page path -> the article page.
        self.pages: dict[str, ArticlePage] = {}
        self.files: Files | None = None
        #: what on_pre_build hands to on_files: (cache contents, the pages rendered, the paths
        #: `export` wrote into docs_dir, report, reason, start time).
        self._synced: tuple[CacheContents, RenderedSite, set[str], SyncReport, str, float] | None = None
        self.poller: watch.Poller | None = None
        #: under `mkdocs serve` with live reload: what its server watches for this plugin (the
        #: custom templates, the background sync's signal file), which follows edits of
        #: mkdocs.yml (MkDocs calls on_serve once, before the first rebuild).
        self._watches: watch.ServerWatches | None = None
        #: the cache of this build, from on_files to on_post_build (page addresses are recorded in it).
        self.contents: CacheContents | None = None
        #: the sanitised HTML and head tags of this build's article pages, from on_files to on_post_build.
        self.outputs: PageOutputs | None = None
        #: the images' sizes and variants in every page's HTML (`imagemarkup`), and by docs path.
        self.image_markup = ImageMarkup()
        self.image_table: dict[str, ImageInfo] = {}

    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        self.is_serve = command == "serve"

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        if not self.config.enabled:
            if self.coordinator is not None:  # switched off in mkdocs.yml while serving
                self.coordinator.switch_off(config.config_file_path)
            return None
        self.settings = _resolve(self.config, config)
        if self.coordinator is None:
            self.coordinator = SyncCoordinator(self.settings, config.config_file_path)
        else:  # a `mkdocs serve` rebuild: mkdocs.yml may have changed
            self.coordinator.update(self.settings, config.config_file_path)
        if self._watches is not None:  # `mkdocs serve`: the templates or cache_dir may have changed
            self._watch_paths()
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
        try:
            self.settings.check_outside_docs(Path(config.docs_dir))
        except BlogServiceError as exc:
            raise PluginError(str(exc)) from None
        try:
            self.renderer = Renderer(
                self.settings.page_template, self.settings.head_template,
                sanitise=not self.settings.trust_article_html,
                optimize_images=self.settings.optimize_images, image_budget=self.settings.timeout,
            )
        except BlogServiceError as exc:
            raise PluginError(str(exc)) from None
        config.markdown_extensions.append(self.image_markup)
        return None

    def on_pre_build(self, *, config: MkDocsConfig) -> None:
        """Take the cache, sync, and render the pages that need it. This runs before MkDocs
        empties site_dir, so a build that the service stops (credentials, `on_error: fail`) or
        a template that cannot be rendered leaves the previous site in place."""
        if not self.config.enabled or self.settings is None or self.coordinator is None or self.renderer is None:
            return
        started = time.perf_counter()
        try:  # the locks are released in on_post_build / on_build_error, even after a failure
            contents, report, reason = self.coordinator.begin_build(self.is_serve)
        except BlogServiceError as exc:  # cache busy or unwritable, credentials, configuration, on_error: fail
            raise PluginError(_message(exc)) from None
        settings, docs_dir = self.settings, Path(config.docs_dir)
        blog_plugins, exported = _material_blogs(config), read_record(docs_dir)
        if blog_plugins:
            _check_post_dir(blog_plugins, settings.posts_dir)
        with_index = not blog_plugins and not _has_own_index(docs_dir, settings.blog_dir, exported)
        try:
            with collector.paused():
                site = render_pages(
                    self.coordinator.cache, contents, self.renderer,
                    blog_dir=settings.blog_dir, posts_dir=settings.posts_dir, with_index=with_index,
                    base_url=settings.base_url,
                )
        except BlogServiceError as exc:  # a template that cannot be rendered, an unwritable cache
            raise PluginError(_message(exc)) from None
        self._synced = (contents, site, exported, report, reason, started)

    @event_priority(50)  # before Material's blog plugin (-50), which reads posts in on_files
    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files | None:
        if (not self.config.enabled or self.settings is None or self.renderer is None
                or self.coordinator is None or self._synced is None):
            return None
        contents, site, exported, report, reason, started = self._synced
        self._synced = None
        _leave_out_exported(files, exported)
        if fetching := privacy.fetching_plugins(config.plugins.values()):  # before any page is built
            hosts = remote_hosts(contents)
            privacy.exclude(fetching, hosts)
            log.debug(f"the addresses of {len(hosts)} external hosts of article pages kept from Material's privacy plugin")
        with collector.paused():
            self._add_files(files, config, contents, site)
        self.image_table, self.image_markup.images = site.image_table.by_src, site.image_table.by_name()
        report.duration = time.perf_counter() - started
        self.last_report = report
        log.info(report.summary() + reason)
        return files

    def _add_files(self, files: Files, config: MkDocsConfig, contents: CacheContents, site: RenderedSite) -> None:
        """Add every page and image the plugin rendered to MkDocs' files."""
        assert self.settings is not None and self.coordinator is not None
        settings = self.settings
        self.language = contents.manifest.blog_language
        self.contents = contents
        self.outputs = PageOutputs(self.coordinator.cache, contents.manifest)
        self.pages = {}
        for site_file in site.files():
            if files.src_uris.get(site_file.src_uri) is not None:
                log.warning(f"docs_dir already has {site_file.src_uri}; the plugin's file of that name is left out")
                continue
            files.append(File.generated(config, site_file.src_uri, abs_src_path=site_file.path))
            if site_file.article_id is not None:
                summary = contents.articles.summaries[site_file.article_id]
                entry = contents.manifest.entries[site_file.article_id]
                cover = entry.images.get(summary.cover_image_url or "")
                downloaded = {url: f"{settings.blog_dir}/{path}" for url, path in entry.images.items()}
                self.pages[site_file.src_uri] = ArticlePage(
                    summary, entry.article_sha256, f"{settings.blog_dir}/{cover}" if cover else None, downloaded
                )
        self.files = files

    def on_nav(self, nav: Navigation, *, config: MkDocsConfig, files: Files) -> Navigation | None:
        """An article page's sitemap `lastmod` is its `updatedAt` (MkDocs' sitemap template
        prints `page.update_date`, which is the build date unless a plugin sets it). Every page
        exists once the navigation is built: one loop here, rather than a hook on every page."""
        if not self.config.enabled:
            return None
        at: dict[str, str] = {}  # where each article page is written -> its src_uri
        for src_uri, found in self.pages.items():
            file = files.src_uris.get(src_uri)
            if file is not None and file.page is not None:
                file.page.update_date = found.summary.updated_at.astimezone(timezone.utc).strftime("%Y-%m-%d")
                at[file.dest_uri] = src_uri
        _warn_about_shared_addresses(files, at)
        return None

    @event_priority(-100)  # last: other plugins' on_post_build may still read the cached files
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        contents, self.contents = self.contents, None
        outputs, self.outputs = self.outputs, None
        try:
            if self.config.enabled and contents is not None and self.coordinator is not None and self.files is not None:
                with collector.paused():
                    self._finish(config, contents, outputs, self.files)
        finally:  # the cache lock is held until here: the manifest is saved under it
            if outputs is not None:
                outputs.close()
            if self.coordinator is not None:
                self.coordinator.end_build()
        if self._watches is not None:  # `mkdocs serve`: mkdocs.yml may have switched the background sync on
            self._start_background_sync()
            if self.poller is not None:  # new settings count from now on (a shorter sync_interval, switched on)
                self.poller.wake()

    def _finish(self, config: MkDocsConfig, contents: CacheContents, outputs: PageOutputs | None, files: Files) -> None:
        """Record where each article's page was built (`file.url` after every plugin ran, and
        only if the file is in site_dir) and the outputs kept, then write a redirect page at
        each earlier address."""
        assert self.coordinator is not None
        if outputs is not None:
            outputs.flush()  # pages whose on_post_page did not run
        site_dir = Path(config.site_dir)
        built = os.path.join(site_dir, "")
        current: dict[str, redirects.Address] = {}
        titles: dict[str, str] = {}
        for src_uri, found in self.pages.items():
            file = files.src_uris.get(src_uri)
            if file is None or not os.path.isfile(built + file.dest_uri):
                continue  # not built (Material's blog plugin may leave a post out)
            current[found.summary.id] = redirects.Address(file.url, file.dest_uri)
            titles[found.summary.id] = found.summary.title
        histories, moved = redirects.record(contents.manifest, current)
        if moved or contents.manifest.refreshed:
            try:
                self.coordinator.cache.save(contents.manifest)
            except OSError as exc:
                log.warning(f"{CacheUnwritable(self.coordinator.cache.root, exc)}; page addresses not recorded")
            else:
                contents.manifest.refreshed = False
        if not self.config.redirects:
            return
        planned = redirects.plan(histories, current)
        pages = [(r, redirects.page(r, title=titles[r.article_id], site_url=config.site_url, language=self.language))
                 for r in planned]
        try:
            report = redirects.write(site_dir, pages)
        except OSError as exc:
            raise PluginError(
                f"blogsvc: a redirect page cannot be written in {site_dir} ({exc.strerror or exc}): check the "
                "folder's permissions and free space, or set redirects: false"
            ) from None
        for path in report.occupied:
            log.info(f"the old address {path} of an article is a file of the site: no redirect page there")
        if len(planned) > len(report.occupied):
            log.info(f"{len(planned) - len(report.occupied)} redirect page(s) for old article addresses")

    def on_build_error(self, *, error: Exception) -> None:
        if self.outputs is not None:
            self.outputs.close()
            self.outputs = None
        if self.coordinator is not None:
            self.coordinator.end_build()

    @event_priority(-100)  # last: sanitise what every other plugin and extension produced
    def on_page_content(self, html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str | None:
        """An article page's HTML through the allowlist (`sanitize.clean_html`): it sees what
        Markdown and the site's extensions made of the body, so no Markdown-level trick gets
        past it. What this and the Markdown pass removed is logged once per article."""
        found = self.pages.get(page.file.src_uri) if self.config.enabled else None
        if (found is None or self.settings is None or self.settings.trust_article_html or self.renderer is None
                or self.outputs is None or self.contents is None):
            return None
        article_id = found.summary.id
        inputs = outputs.key(outputs.HTML, article_id, self.renderer.html_fingerprint, text=html)
        kept = self.outputs.get(article_id, outputs.HTML, inputs)
        if kept is None:
            from mkdocs_blogsvc.sanitize import (
                clean_html,  # a build with nothing changed sanitises nothing
            )

            cleaned = clean_html(html)  # the text is kept only when it differs from the input
            kept = {"text": cleaned.text if cleaned.text != html else None, "removed": cleaned.removed.to_json()}
            self.outputs.put(article_id, outputs.HTML, inputs, kept)
        entry = self.contents.manifest.entries.get(article_id)
        from_markdown = markdown_removed(entry) if entry is not None else None
        if kept.get("removed") or from_markdown:  # the usual article: nothing to parse or log
            from mkdocs_blogsvc.removals import Removed

            removed = Removed.from_json(kept.get("removed"))
            removed.update(Removed.from_json(from_markdown))
            if removed:
                log.info(
                    f"article {page.file.src_uri}: removed {removed.summary()} from its HTML "
                    "(trust_article_html: true keeps it; see the security page of the docs)"
                )
        return html if kept["text"] is None else str(kept["text"])

    def on_post_page(self, output: str, *, page: Page, config: MkDocsConfig) -> str | None:
        found = self.pages.get(page.file.src_uri) if self.config.enabled else None
        if found is None or self.renderer is None or self.outputs is None or self.contents is None:
            return None
        site_url = config.site_url or ""
        page_url = _absolute(site_url, page.url) if site_url else None

        def on_site(src: str) -> str | None:
            """The site's URL of a file (absolute with site_url, else relative to the page)."""
            file = self.files.src_uris.get(src) if self.files else None
            if file is None:
                return None
            return _absolute(site_url, file.url) if site_url else get_relative_url(file.url, page.url)

        local_cover = on_site(found.cover_src) if found.cover_src else None
        images = {url: local for url, src in found.downloaded.items() if (local := on_site(src))}
        article_id = found.summary.id
        cover_info = self.image_table.get(found.cover_src) if local_cover and found.cover_src else None
        inputs = outputs.key(outputs.HEAD, article_id, self.renderer.head_fingerprint, found.article_sha256,
                             page_url, local_cover, self.language, sorted(images.items()),
                             cover_info.key() if cover_info else None)
        kept = self.outputs.get(article_id, outputs.HEAD, inputs)
        if kept is None:
            try:
                article = self.contents.articles[article_id]
                kept = {"text": self.renderer.head(
                    article, page_url=page_url, image_url=local_cover or article.cover_image_url,
                    language=self.language, images=images,
                    image_size=(cover_info.width, cover_info.height) if cover_info else None,
                )}
            except BlogServiceError as exc:  # a custom head_template that cannot be rendered, a damaged cache
                raise PluginError(_message(exc)) from None
            self.outputs.put(article_id, outputs.HEAD, inputs, kept)
        head = str(kept["text"])
        self.outputs.flush(article_id)  # the article page's last hook
        end = output.find("</head>")  # as themes write it; any spelling through the expression
        if end < 0:
            match = _HEAD_END.search(output)
            if match is None:
                log.debug(f"no </head> in {page.file.src_uri}: head tags not inserted")
                return None
            end = match.start()
        if page.canonical_url and not _has_canonical(output, end):  # the theme's, or ours
            head += f'<link rel="canonical" href="{html.escape(page.canonical_url)}">\n'
        return output[:end] + head + output[end:]

    def on_serve(self, server: Any, *, config: MkDocsConfig, builder: Any) -> Any:
        """Rebuild when a custom template changes (they live outside docs_dir), and when the
        background sync changed the cache (MkDocs calls on_serve only with live reload on)."""
        self._watches = watch.ServerWatches(server)  # kept even when switched off: mkdocs.yml may switch it on
        self._watch_paths()
        self._start_background_sync()
        return server

    def _start_background_sync(self) -> None:
        """Start the background sync unless it runs or the settings keep it off. From on_serve,
        and after each rebuild (MkDocs calls on_serve once): the plugin, `offline` or
        `sync_interval` may be switched on in mkdocs.yml while serving. Not before the build's
        own sync, which would race it (a sync found due by both: the background one first, its
        signal rebuilds the site a second time); so the running one is woken here too, never
        from on_config."""
        settings, coordinator, watches = self.settings, self.coordinator, self._watches
        if (watches is None or settings is None or coordinator is None or not self.config.enabled
                or settings.offline or settings.sync_interval <= 0 or self.poller is not None):
            return

        def prepared() -> bool:
            try:
                coordinator.cache.prepare_signal()
            except CacheUnwritable:
                return False  # the sync that follows says so
            return True

        def step() -> float:
            if self.config.enabled:
                watches.renew_signal(prepared)
            return coordinator.poll()

        self.poller = watch.Poller(
            step,
            ready=watches.ready,
            on_crash=coordinator.poll_crashed,
            name=f"blogsvc-sync-{settings.blog_dir}",
        )
        self.poller.start()
        log.info(f"checking {settings.base_url} for changes every {settings.sync_interval} s")

    def _watch_paths(self) -> None:
        """Have the server watch the current custom templates and signal file (`watch.ServerWatches`)."""
        settings, coordinator = self.settings, self.coordinator
        if self._watches is None or settings is None or coordinator is None or not self.config.enabled:
            return
        templates = {os.path.abspath(template) for template in (settings.page_template, settings.head_template)
                     if template is not None}
        signal = None
        if not settings.offline and settings.sync_interval > 0:
            try:
                signal = os.path.abspath(coordinator.cache.prepare_signal())
            except CacheUnwritable as exc:
                log.warning(
                    f"{exc}; no background sync: articles changed on the service appear at the first "
                    "rebuild after sync_interval"
                )
        self._watches.watch(templates, signal)

    def on_shutdown(self) -> None:
        if self.poller is not None:
            self.poller.stop()
            self.poller = None


def _has_canonical(output: str, head_end: int) -> bool:
    """Whether the page's head (up to `head_end`) has a canonical link; the expression runs only
    on a head that has the word."""
    head = output[:head_end]
    return "canonical" in head.lower() and _CANONICAL.search(head) is not None


def _absolute(site_url: str, url: str) -> str:
    """`urljoin(site_url, url)` for MkDocs' URLs (relative, no `..`, site_url ending in `/`),
    without urljoin's parsing on every article page."""
    if site_url.endswith("/") and not url.startswith((".", "/")) and ":" not in url:
        return site_url + url
    return urljoin(site_url, url)


def _resolve(plugin_config: BlogServiceConfig, config: MkDocsConfig) -> Settings:
    try:
        return Settings.from_config(plugin_config, config.config_file_path)
    except BlogServiceError as exc:
        raise PluginError(str(exc)) from None


def _message(exc: BlogServiceError) -> str:
    """The error's message with the plugin's prefix, once."""
    text = str(exc)
    return text if text.startswith("blogsvc: ") else f"blogsvc: {text}"


def _material_blogs(config: MkDocsConfig) -> list[Any]:
    """Material's blog plugin instances that are active (each builds its blog's index itself)."""
    return [plugin for plugin in config.plugins.values()
            if type(plugin).__module__.startswith("material.plugins.blog") and plugin.config.get("enabled", True)]


def _post_dir(blog_plugin: Any) -> str:
    blog_dir = str(blog_plugin.config.blog_dir)
    return posixpath.normpath(str(blog_plugin.config.post_dir).format(blog=blog_dir)).strip("/")


def _check_post_dir(blog_plugins: list[Any], posts_dir: str) -> None:
    """Warn unless one of the site's Material blogs reads posts from `posts_dir` (a site may
    have several blogs; a blog at the site's root reads `./posts`, the same as `posts`)."""
    post_dirs = [_post_dir(plugin) for plugin in blog_plugins]
    if any(posts_dir == post_dir or posts_dir.startswith(post_dir + "/") or post_dir == "." for post_dir in post_dirs):
        return
    log.warning(
        f"posts_dir is {posts_dir!r} but Material's blog plugin reads posts from "
        f"{' or '.join(repr(post_dir) for post_dir in post_dirs)}: the articles will not be blog posts; "
        "set posts_dir (or the blog plugin's post_dir) to match"
    )


def _leave_out_exported(files: Files, exported: set[str]) -> None:
    """Leave out of the build the files `mkdocs-blogsvc export` wrote into docs_dir (`exported`,
    its record): the plugin adds the current ones itself. So one mkdocs.yml and one docs folder
    serve the plugin and generators that run none (Zensical), without a warning per file,
    without an article the blog deleted since the export. Nothing is deleted from docs_dir."""
    left_out = 0
    for src_uri in sorted(exported):
        file = files.get_file_from_path(src_uri)
        if file is not None:
            files.remove(file)
            left_out += 1
    if left_out:
        log.debug(f"{left_out} files of `mkdocs-blogsvc export` in docs_dir left out: the plugin adds its own")


def _warn_about_shared_addresses(files: Files, article_pages: dict[str, str]) -> None:
    """Warn when a page of docs_dir is written where an article page is (Material's blog
    computes post URLs from slugs and dates, so a hand-written post with an article's slug
    lands on the same file): one would replace the other without a word. The URLs are final
    here: Material sets them in its on_files."""
    for file in files:  # Material's posts are not "included" pages to `documentation_pages()`
        article = article_pages.get(file.dest_uri)
        if article is not None and article != file.src_uri and file.is_documentation_page():
            log.warning(
                f"{file.src_uri} of docs_dir and the article page {article} are both written to "
                f"{file.dest_uri}: one replaces the other; give one of them another slug"
            )


def _has_own_index(docs_dir: Path, blog_dir: str, exported: set[str]) -> bool:
    """Whether docs_dir has the blog's index page of its own (not one `export --index` wrote)."""
    return any((docs_dir / blog_dir / name).is_file() and f"{blog_dir}/{name}" not in exported
               for name in ("index.md", "README.md"))

