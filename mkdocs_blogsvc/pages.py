"""The blog's pages in the cache: every cached article rendered to a Markdown page (and the
index page), written only when changed, and the list of files a site adds (`render_pages`).

Shared by the plugin's build and `mkdocs-blogsvc export`, so both produce the same pages. In two
steps: `plan` decides (which files, where, which pages are stale) without writing anything;
`write` renders and writes the stale pages (`exported` renders the export's variant in memory).
No network, no MkDocs imports; the caller holds the cache's lock. A page is rendered by
`render.Renderer`; this module decides paths, writes files and records in the manifest (in
memory: the caller saves it) the rendered pages, so that pages no longer rendered are removed.

A build with nothing changed renders nothing: each page's `manifest.PageRecord` holds the hash of its inputs (the
article file's hash, slug, paths, image paths and `Renderer.fingerprint`) and the size and
mtime of the file written. When both match, the page is neither rendered nor read; when the
inputs changed, or the file was changed or removed behind the manifest's back, it is rendered
and written again (only if its bytes differ). Links to other articles (`links`) are inputs too:
the record lists the ones the page holds, and the inputs include the page each now names, so a
page is rendered again when an article it links to moves, and only then.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from mkdocs_blogsvc import imagesizes, privacy
from mkdocs_blogsvc.cache import Cache, CacheContents
from mkdocs_blogsvc.errors import CacheUnwritable
from mkdocs_blogsvc.fileio import inputs_hash, write_if_changed
from mkdocs_blogsvc.links import HostedBlog, Targets
from mkdocs_blogsvc.manifest import Entry, PageRecord
from mkdocs_blogsvc.models import Article, per_article
from mkdocs_blogsvc.render import ArticleLinks, PagePaths, Renderer
from mkdocs_blogsvc.slugs import assign_slugs

if TYPE_CHECKING:
    from mkdocs_blogsvc.theme_override import ExportHead

#: The index page's title when the blog's name is not known yet.
DEFAULT_INDEX_TITLE = "Blog"


@per_article
class SiteFile:
    """A file to add to the site: its docs-relative path and the cache file behind it (or, for
    the pages of an export, its content in memory)."""

    src_uri: str
    #: the file's absolute path (a string: MkDocs' `abs_src_path`, built for every article).
    path: str
    article_id: str | None = None
    data: bytes | None = None

    @property
    def abs_path(self) -> Path:
        return Path(self.path)

    def read(self) -> bytes:
        return self.data if self.data is not None else self.abs_path.read_bytes()


@dataclass
class RenderedSite:
    """What `render_pages` produced; `written` counts the files that changed on disk."""

    pages: list[SiteFile] = field(default_factory=list)
    images: list[SiteFile] = field(default_factory=list)
    index: SiteFile | None = None
    written: int = 0
    #: every image's size and variants (`imagesizes`), by its docs path.
    image_table: imagesizes.ImageTable = field(default_factory=imagesizes.ImageTable)
    #: the links between articles of the pages rendered (None without `base_url`).
    links: ArticleLinks | None = None

    def files(self) -> Iterator[SiteFile]:
        """Every file of the site: images, article pages, the index page."""
        yield from self.images
        yield from self.pages
        if self.index is not None:
            yield self.index


def render_pages(
    cache: Cache,
    contents: CacheContents,
    renderer: Renderer,
    *,
    blog_dir: str,
    posts_dir: str,
    with_index: bool = False,
    export: ExportHead | None = None,
    base_url: str | None = None,
) -> RenderedSite:
    """Render every cached article to `<posts_dir>/<slug>.md` in the cache's pages folder (and
    `<blog_dir>/index.md`, titled with the blog's name, when `with_index`); write only what
    changed; remove pages no longer rendered. Raises `BadTemplate`, or `CacheUnwritable`.

    With `export`, the pages are the exported variant (`Renderer.page`'s `export`), kept in
    memory (`SiteFile.data`): the cache's own pages, the plugin's, are left as they are.
    With `base_url` (the service's), links to other articles on the service become links to
    their pages (see `links`)."""
    try:
        return _render(
            cache,
            contents,
            renderer,
            blog_dir=blog_dir,
            posts_dir=posts_dir,
            with_index=with_index,
            export=export,
            base_url=base_url,
        )
    except OSError as exc:
        raise CacheUnwritable(cache.root, exc) from None


@per_article
class PlannedPage:
    """A page the site has: its file, the article it shows (None: the index), its slug and
    images, the hash of its inputs, and whether the file on disk is already that page."""

    file: SiteFile
    slug: str
    images: dict[str, str]
    inputs: str
    current: bool


@dataclass
class SitePlan:
    """What `plan` decided, before anything is rendered or written."""

    images: list[SiteFile]
    pages: list[PlannedPage]
    links: ArticleLinks | None
    #: the index page, with its title (None: the site has its own, or Material's blog makes it).
    index: PlannedPage | None = None
    index_title: str = DEFAULT_INDEX_TITLE


def plan(
    cache: Cache,
    contents: CacheContents,
    renderer: Renderer,
    *,
    blog_dir: str,
    posts_dir: str,
    with_index: bool,
    base_url: str | None,
) -> SitePlan:
    """The pure step: which files the site has, where, and which pages must be rendered (reads
    only the pages' stats: a build with nothing changed renders and reads none)."""
    manifest, summaries = contents.manifest, contents.articles.summaries
    slugs = assign_slugs(summaries.values())
    image_src: dict[str, str] = {}
    images: list[SiteFile] = []
    seen: set[str] = set()
    for entry in manifest.entries.values():
        for url, relative in entry.images.items():
            src = f"{blog_dir}/{relative}"
            image_src[url] = src
            path = cache.locate(relative)
            if path is not None and src not in seen:
                seen.add(src)
                images.append(SiteFile(src, path))
    links = _links(contents, slugs, posts_dir, base_url)
    fingerprint = renderer.fingerprint
    pages: list[PlannedPage] = []
    # In the order of their paths, as MkDocs lists the files of docs_dir: the site (its sitemap,
    # the order of equal-dated posts) is the same whatever order the manifest or the sync had.
    for article_id, slug in sorted(slugs.items(), key=lambda item: item[1]):
        src_uri = f"{posts_dir}/{slug}.md"
        entry = manifest.entries[article_id]
        page_images = {url: image_src[url] for url in entry.images} if entry.images else {}
        file = SiteFile(src_uri, cache.page_file(src_uri), article_id)
        previous = entry.records.page
        held = previous.links or () if previous is not None else ()
        inputs = inputs_hash(
            fingerprint, entry.article_sha256, slug, src_uri, sorted(page_images.items()), *_link_inputs(links, held)
        )
        pages.append(PlannedPage(file, slug, page_images, inputs, _is_current(file.path, inputs, previous)))
    site = SitePlan(images, pages, links)
    if with_index:
        src_uri = f"{blog_dir}/index.md"
        site.index_title = manifest.blog_name or DEFAULT_INDEX_TITLE
        file = SiteFile(src_uri, cache.page_file(src_uri))
        # every article page's inputs (its article file's hash, its path among them), in the
        # pages' order: the index changes with any of them
        inputs = inputs_hash(fingerprint, site.index_title, src_uri, [page.inputs for page in pages])
        site.index = PlannedPage(file, "", {}, inputs, _is_current(file.path, inputs, manifest.index_page))
    return site


def _render(
    cache: Cache,
    contents: CacheContents,
    renderer: Renderer,
    *,
    blog_dir: str,
    posts_dir: str,
    with_index: bool,
    export: ExportHead | None,
    base_url: str | None,
) -> RenderedSite:
    planned = plan(
        cache, contents, renderer, blog_dir=blog_dir, posts_dir=posts_dir, with_index=with_index, base_url=base_url
    )
    table = imagesizes.prepare(
        cache, contents.manifest, blog_dir=blog_dir, optimize=renderer.optimize_images, budget=renderer.image_budget
    )
    if export is not None:  # exported pages offer the originals only (see imagemarkup)
        rendered = exported(planned, contents, renderer, export, table)
    else:
        rendered = write(planned, cache, contents, renderer)
        rendered.images.extend(SiteFile(src, path) for src, path in table.variant_files)
        if planned.images:
            cache.link_images_for_feeds(posts_dir, blog_dir)  # feeds give the cover's byte length
    rendered.image_table, rendered.links = table, planned.links
    return rendered


def _index_items(site: SitePlan, contents: CacheContents) -> list[tuple[Article, str]]:
    return [(contents.articles[page.file.article_id], page.file.src_uri) for page in site.pages if page.file.article_id]


def exported(
    site: SitePlan, contents: CacheContents, renderer: Renderer, export: ExportHead, table: imagesizes.ImageTable
) -> RenderedSite:
    """The export's variant of every page, in memory: the cache's own pages and its manifest,
    the plugin's, are left as they are."""
    rendered = RenderedSite(images=list(site.images))
    for page in site.pages:
        article_id = page.file.article_id
        assert article_id is not None
        sizes = {url: (info.width, info.height) for url, src in page.images.items() if (info := table.by_src.get(src))}
        text = renderer.page(
            contents.articles[article_id],
            page.slug,
            PagePaths(page.file.src_uri, page.images, sizes),
            export=export,
            links=site.links,
        )
        rendered.pages.append(SiteFile(page.file.src_uri, page.file.path, article_id, text.encode("utf-8")))
    if site.index is not None:
        text = renderer.index(site.index_title, _index_items(site, contents), site.index.file.src_uri)
        rendered.index = SiteFile(site.index.file.src_uri, site.index.file.path, data=text.encode("utf-8"))
    return rendered


def write(site: SitePlan, cache: Cache, contents: CacheContents, renderer: Renderer) -> RenderedSite:
    """The write step: render and write the pages that are not current (only when their bytes
    differ), record them in the manifest (in memory: the caller saves it), and remove the cache's
    pages no longer rendered."""
    manifest, links, fingerprint = contents.manifest, site.links, renderer.fingerprint
    rendered = RenderedSite(
        images=list(site.images),
        pages=[page.file for page in site.pages],
        index=site.index.file if site.index is not None else None,
    )
    for page in site.pages:
        if page.current:
            continue  # the usual page of a build with nothing changed: nothing rendered, nothing read
        article_id, src_uri = page.file.article_id, page.file.src_uri
        assert article_id is not None
        entry = manifest.entries[article_id]
        text = renderer.page(contents.articles[article_id], page.slug, PagePaths(src_uri, page.images), links=links)
        written, record = _write_page(page.file.path, text, page.inputs)
        if links is not None:  # the links the page holds now
            now = tuple(links.found.get(article_id, ()))
            record = msgspec.structs.replace(
                record,
                links=now,
                inputs=inputs_hash(
                    fingerprint,
                    entry.article_sha256,
                    page.slug,
                    src_uri,
                    sorted(page.images.items()),
                    *_link_inputs(links, now),
                ),
            )
        removed = renderer.removed.get(article_id)  # logged by every build (`markdown_removed`)
        rendered.written += written
        manifest.set_page(
            article_id,
            msgspec.structs.replace(
                record,
                removed=removed.to_json() if removed else None,
                remote=tuple(privacy.remote_hosts(text)),  # kept from Material's privacy plugin (`remote_hosts` below)
            ),
        )
    if site.index is not None and not site.index.current:
        text = renderer.index(site.index_title, _index_items(site, contents), site.index.file.src_uri)
        written, record = _write_page(site.index.file.path, text, site.index.inputs)
        rendered.written += written
        manifest.set_index_page(record)
    names = sorted(cache.page_name(f.src_uri) for f in [*rendered.pages, *([rendered.index] if rendered.index else [])])
    if names != sorted(set(manifest.rendered)):
        cache.remove_unowned(set(manifest.rendered), set(names))
        manifest.set_rendered(names)
    return rendered


def remote_hosts(contents: CacheContents) -> set[str]:
    """The external hosts every article page names (`//host`), as recorded when each was rendered."""
    found: set[str] = set()
    for entry in contents.manifest.entries.values():
        record = entry.records.page
        if record is not None:
            found.update(record.remote)
    return found


def markdown_removed(entry: Entry) -> Any:
    """What the Markdown pass of the sanitiser took out of the article's page when it was
    last rendered, as kept in its page record (`Removed.to_json`; empty or None: nothing;
    `Removed.from_json` checks it)."""
    record = entry.records.page
    return record.removed if record is not None else None


def _links(contents: CacheContents, slugs: dict[str, str], posts_dir: str, base_url: str | None) -> ArticleLinks | None:
    """What rewriting links between articles needs (None without `base_url`)."""
    if base_url is None:
        return None
    return ArticleLinks(
        HostedBlog(base_url, contents.manifest.blog_slug),
        Targets(
            (summary, f"{posts_dir}/{slugs[article_id]}.md")
            for article_id, summary in contents.articles.summaries.items()
        ),
    )


def _link_inputs(links: ArticleLinks | None, held: tuple[tuple[str, bool], ...]) -> tuple[Any, ...]:
    """The parts of a page's inputs its links decide: where the hosted blog is, and the page each
    link held (from the page record) names now (separate parts: strings hash without JSON)."""
    if links is None:
        return (None,)
    return links.blog.base_url, links.blog.blog_slug, links.targets.resolve(held) if held else []


def _is_current(path: str, inputs: str, record: PageRecord | None) -> bool:
    """Whether `record` says the file at `path` is the page of these `inputs`, and the file's
    size and mtime are still the ones recorded (so it was not changed behind our back)."""
    if record is None or record.inputs != inputs:
        return False
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return record.size == stat.st_size and record.mtime_ns == stat.st_mtime_ns


def _write_page(path: str, text: str, inputs: str) -> tuple[int, PageRecord]:
    """Write the page when its bytes differ; 1 when the file was written, and its new record."""
    written = write_if_changed(Path(path), text.encode("utf-8"), durable=False)
    stat = os.stat(path)
    return int(written), PageRecord(inputs, stat.st_size, stat.st_mtime_ns)
