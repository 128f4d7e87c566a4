"""One build of one plugin instance, from its sync to its redirect pages (`BuildSession`).

Why a module of its own: what one hook of a build hands the next (the cache read, the pages
rendered, the article pages registered, the outputs kept) is the build's state, and the
decisions made with it (which files to register, what an article page's HTML and head are,
which addresses to record) are testable without running MkDocs. `plugin.py` creates a
session in on_pre_build and calls one method per hook; nothing here knows about hooks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from datetime import timezone
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.utils import get_build_datetime, get_relative_url

from mkdocs_blogsvc import collector, headtags, material, outputs, privacy, redirects
from mkdocs_blogsvc.cache import CacheContents
from mkdocs_blogsvc.coordinator import SyncCoordinator
from mkdocs_blogsvc.errors import CacheUnwritable, SiteUnwritable
from mkdocs_blogsvc.exportrecord import read_record
from mkdocs_blogsvc.imagemarkup import ImageMarkup
from mkdocs_blogsvc.imagesizes import ImageInfo
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import Address
from mkdocs_blogsvc.models import ArticleSummary, per_article
from mkdocs_blogsvc.outputs import Output, PageOutputs
from mkdocs_blogsvc.pages import RenderedSite, markdown_removed, remote_hosts, render_pages
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.sync import SyncReport


@per_article
class ArticlePage:
    """An article's page in this build: what is known of the article without reading its file,
    and the docs-relative paths of its cover and of each image downloaded (by remote URL)."""

    summary: ArticleSummary
    article_sha256: str
    cover_src: str | None
    downloaded: dict[str, str]


def generated_files(config: MkDocsConfig) -> Callable[[str, str], File]:
    """`File.generated(config, src_uri, abs_src_path=path)` for every file the plugin adds,
    with what it reads of `config` read once and, for a POSIX path already in the form MkDocs
    gives it (`PurePath(src_uri).as_posix()`: no `//`, `.` part or trailing `/`), without
    MkDocs' pathlib round trip: at 10,000 articles, half the time of registering the files.
    The same attributes either way (tests/e2e/test_output_reuse.py compares them)."""
    site_dir, directory_urls = config.site_dir, config.use_directory_urls
    generated_by = config.plugins._current_plugin or "<unknown>"

    def generated(src_uri: str, path: str) -> File:
        if os.sep != "/" or not _plain_path(src_uri):
            return File.generated(config, src_uri, abs_src_path=path)
        file = File.__new__(File)
        file.src_uri, file.src_dir, file.dest_dir = src_uri, None, site_dir
        file.use_directory_urls, file.inclusion = directory_urls, InclusionLevel.UNDEFINED
        file.generated_by, file.abs_src_path, file._content = generated_by, path, None
        return file

    return generated


def _plain_path(src_uri: str) -> bool:
    """Whether pathlib gives `src_uri` back unchanged (a relative POSIX path, no empty or `.` part)."""
    parts = src_uri.split("/")
    return bool(src_uri) and "." not in parts and "" not in parts


class BuildSession:
    """The state of one build. Created by `begin` (which holds the cache's locks until the
    coordinator's `end_build`); every method raises `BlogServiceError` subclasses only."""

    def __init__(
        self,
        coordinator: SyncCoordinator,
        renderer: Renderer,
        markup: ImageMarkup,
        contents: CacheContents,
        site: RenderedSite,
        exported: set[str],
        report: SyncReport,
        reason: str,
        started: float,
    ) -> None:
        self.coordinator = coordinator
        self.markup = markup
        self.settings = coordinator.settings
        self.renderer = renderer
        self.contents = contents
        self.site = site
        self.exported = exported
        self.report = report
        self.reason = reason
        self.started = started
        self.language = contents.manifest.blog_language
        #: docs-relative page path -> the article page (filled by `add_files`).
        self.pages: dict[str, ArticlePage] = {}
        self.files: Files | None = None
        #: the site's URL (`site_url`, "" when unset), read once by `add_files`.
        self.site_url = ""
        #: the sanitised HTML and head tags of the article pages, from `add_files` to `finish`.
        self.outputs: PageOutputs | None = None
        #: the article pages given their head tags: MkDocs writes each to site_dir just after.
        self.built: set[str] = set()

    @classmethod
    def begin(
        cls,
        coordinator: SyncCoordinator,
        renderer: Renderer,
        markup: ImageMarkup,
        *,
        docs_dir: Path,
        plugins: Iterable[Any],
        is_serve: bool,
    ) -> BuildSession:
        """Take the cache, sync if due, and render the pages that need it (before MkDocs empties
        site_dir, so a build the service stops leaves the previous site in place)."""
        started = time.perf_counter()
        contents, report, reason = coordinator.begin_build(is_serve)
        settings = coordinator.settings
        blog_plugins, exported = material.material_blogs(plugins), read_record(docs_dir)
        if blog_plugins:
            material.check_post_dir(blog_plugins, settings.posts_dir)
        with_index = not blog_plugins and not material.has_own_index(docs_dir, settings.blog_dir, exported)
        with collector.paused():
            site = render_pages(
                coordinator.cache,
                contents,
                renderer,
                blog_dir=settings.blog_dir,
                posts_dir=settings.posts_dir,
                with_index=with_index,
                base_url=settings.base_url,
            )
        if contents.manifest.unsaved:  # pages rendered, articles checked: the pages' records first
            try:
                coordinator.cache.save(contents.manifest)
            except OSError as exc:
                raise CacheUnwritable(coordinator.cache.root, exc) from None
        return cls(coordinator, renderer, markup, contents, site, exported, report, reason, started)

    def add_files(self, files: Files, config: MkDocsConfig) -> SyncReport:
        """Register every page and image rendered (leaving out what `export` wrote into docs_dir,
        and keeping the article pages' external hosts from Material's privacy plugin); returns
        the sync's report, logged."""
        material.leave_out_exported(files, self.exported)
        self.site_url = config.site_url or ""
        if fetching := privacy.fetching_plugins(config.plugins.values()):  # before any page is built
            hosts = remote_hosts(self.contents)
            privacy.exclude(fetching, hosts)
            log.debug(
                f"the addresses of {len(hosts)} external hosts of article pages kept from Material's privacy plugin"
            )
        with collector.paused():
            self._register(files, config)
        self.markup.images = self.site.image_table.by_name()  # sizes and variants, for every page's HTML
        self.report.duration = time.perf_counter() - self.started
        log.info(self.report.summary() + self.reason)
        return self.report

    def _register(self, files: Files, config: MkDocsConfig) -> None:
        blog_dir, contents = self.settings.blog_dir, self.contents
        self.outputs = PageOutputs(self.coordinator.cache, contents.manifest)
        generated = generated_files(config)
        for site_file in self.site.files():
            if files.src_uris.get(site_file.src_uri) is not None:
                log.warning(f"docs_dir already has {site_file.src_uri}; the plugin's file of that name is left out")
                continue
            files.append(generated(site_file.src_uri, site_file.path))
            if site_file.article_id is not None:
                summary = contents.articles.summaries[site_file.article_id]
                entry = contents.manifest.entries[site_file.article_id]
                cover = entry.images.get(summary.cover_image_url or "")
                downloaded = {url: f"{blog_dir}/{path}" for url, path in entry.images.items()}
                self.pages[site_file.src_uri] = ArticlePage(
                    summary, entry.article_sha256, f"{blog_dir}/{cover}" if cover else None, downloaded
                )
        self.files = files

    def date_pages(self, files: Files) -> None:
        """An article page's sitemap `lastmod` is its `updatedAt` (MkDocs' sitemap template
        prints `page.update_date`, the build date unless a plugin sets it), never after the
        build's date (MkDocs' gzip header of the sitemap takes the latest, and a date past 2106
        does not fit it); and a warning for a page of docs_dir written where an article page is."""
        latest = get_build_datetime().date()  # SOURCE_DATE_EPOCH, as MkDocs reads it
        at: dict[str, str] = {}  # where each article page is written -> its src_uri
        for src_uri, found in self.pages.items():
            file = files.src_uris.get(src_uri)
            if file is not None and file.page is not None:
                updated = found.summary.updated_at.astimezone(timezone.utc).date()
                file.page.update_date = min(updated, latest).isoformat()
                at[file.dest_uri] = src_uri
        material.warn_about_shared_addresses(files, at)

    def page_html(self, src_uri: str, html: str) -> str | None:
        """An article page's HTML through the allowlist (`sanitize.clean_html`), None for other
        pages: it sees what Markdown and the site's extensions made of the body, so no
        Markdown-level trick gets past it. What was removed is logged once per article."""
        found = self.pages.get(src_uri)
        if found is None or self.settings.trust_article_html or self.outputs is None:
            return None
        article_id = found.summary.id
        inputs = outputs.key(outputs.HTML, article_id, self.renderer.html_fingerprint, text=html)
        kept = self.outputs.get(article_id, outputs.HTML, inputs)
        if kept is None:
            from mkdocs_blogsvc.sanitize import (
                clean_html,  # a build with nothing changed sanitises nothing
            )

            cleaned = clean_html(html)  # the text is kept only when it differs from the input
            kept = Output(inputs, cleaned.text if cleaned.text != html else None, cleaned.removed.to_json())
            self.outputs.put(article_id, outputs.HTML, kept)
        entry = self.contents.manifest.entries.get(article_id)
        from_markdown = markdown_removed(entry) if entry is not None else None
        if kept.removed or from_markdown:  # the usual article: nothing to parse or log
            from mkdocs_blogsvc.removals import Removed

            removed = Removed.from_json(kept.removed)
            removed.update(Removed.from_json(from_markdown))
            if removed:
                log.info(
                    f"article {src_uri}: removed {removed.summary()} from its HTML "
                    "(trust_article_html: true keeps it; see the security page of the docs)"
                )
        return html if kept.text is None else kept.text

    def with_head(self, output: str, page: Page) -> str | None:
        """An article page with its JSON-LD, Open Graph and keywords before `</head>` (and a
        canonical link when the theme wrote none); None for other pages."""
        found = self.pages.get(page.file.src_uri)
        if found is None or self.outputs is None:
            return None
        site_url = self.site_url
        page_url = headtags.absolute(site_url, page.url) if site_url else None
        local_cover, images, cover = self._on_site(found, page) if found.downloaded else (None, {}, None)
        article_id = found.summary.id
        inputs = outputs.key(
            outputs.HEAD,
            article_id,
            self.renderer.head_fingerprint,
            found.article_sha256,
            page_url,
            local_cover,
            self.language,
            sorted(images.items()),
            cover.key() if cover else None,
        )
        kept = self.outputs.get(article_id, outputs.HEAD, inputs)
        if kept is None:
            article = self.contents.articles[article_id]
            head = self.renderer.head(
                article,
                page_url=page_url,
                image_url=local_cover or article.cover_image_url,
                language=self.language,
                images=images,
                image_size=(cover.width, cover.height) if cover else None,
            )
            kept = Output(inputs, head)
            self.outputs.put(article_id, outputs.HEAD, kept)
        self.outputs.flush(article_id)  # the article page's last hook
        inserted = headtags.insert(output, kept.text or "", page.canonical_url)
        if inserted is None:
            log.debug(f"no </head> in {page.file.src_uri}: head tags not inserted")
        else:  # a page with `</head>` is not empty: MkDocs writes it next
            self.built.add(page.file.src_uri)
        return inserted

    def _on_site(self, found: ArticlePage, page: Page) -> tuple[str | None, dict[str, str], ImageInfo | None]:
        """The site's URLs of an article page's cover and images (absolute with site_url, else
        relative to the page), as the files are after every plugin's on_files; and the cover's
        sizes and variants."""
        site_url, by_uri = self.site_url, self.files.src_uris if self.files else {}

        def on_site(src: str) -> str | None:
            file = by_uri.get(src)
            if file is None:
                return None
            return headtags.absolute(site_url, file.url) if site_url else get_relative_url(file.url, page.url)

        local_cover = on_site(found.cover_src) if found.cover_src else None
        images = {url: local for url, src in found.downloaded.items() if (local := on_site(src))}
        cover = self.site.image_table.by_src.get(found.cover_src) if local_cover and found.cover_src else None
        return local_cover, images, cover

    def finish(self, site_dir: Path) -> None:
        """Record where each article's page was built (`file.url` after every plugin ran, and
        only if the file is in site_dir) and the outputs kept, then write a redirect page at
        each earlier address. Raises `SiteUnwritable`."""
        if self.outputs is not None:
            self.outputs.flush()  # pages whose on_post_page did not run
        if self.files is None:
            return
        built = os.path.join(site_dir, "")
        current: dict[str, Address] = {}
        for src_uri, found in self.pages.items():
            file = self.files.src_uris.get(src_uri)
            if file is None or (src_uri not in self.built and not os.path.isfile(built + file.dest_uri)):
                continue  # not built (Material's blog plugin may leave a post out)
            current[found.summary.id] = Address(file.url, file.dest_uri)
        manifest, cache = self.contents.manifest, self.coordinator.cache
        histories = redirects.record(manifest, current)
        if manifest.unsaved:  # addresses recorded, outputs kept
            try:
                cache.save(manifest)
            except OSError as exc:
                log.warning(f"{CacheUnwritable(cache.root, exc)}; page addresses not recorded")
        if not self.settings.redirects:
            return
        planned = redirects.plan(histories, current)
        summaries = self.contents.articles.summaries
        pages = [
            (
                r,
                redirects.page(
                    r, title=summaries[r.article_id].title, site_url=self.site_url or None, language=self.language
                ),
            )
            for r in planned
        ]
        try:
            report = redirects.write(site_dir, pages)
        except OSError as exc:
            raise SiteUnwritable(
                f"a redirect page cannot be written in {site_dir} ({exc.strerror or exc}): check the "
                "folder's permissions and free space, or set redirects: false"
            ) from None
        for path in report.occupied:
            log.info(f"the old address {path} of an article is a file of the site: no redirect page there")
        if len(planned) > len(report.occupied):
            log.info(f"{len(planned) - len(report.occupied)} redirect page(s) for old article addresses")

    def close(self) -> None:
        """Let go of the outputs pack (the coordinator's `end_build` releases the locks)."""
        if self.outputs is not None:
            self.outputs.close()
            self.outputs = None
