"""The blog's pages in the cache: every cached article rendered to a Markdown page (and the
index page), written only when changed, and the list of files a site adds (`render_pages`).

Shared by the plugin's on_files and `mkdocs-blogsvc export`, so both produce the same pages.
No network, no MkDocs imports; the caller holds the cache's lock. A page is rendered by
`render.Renderer`; this module decides paths, writes files and keeps the manifest's list of
rendered pages, so that pages no longer rendered are removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs_blogsvc.cache import Cache, CacheContents
from mkdocs_blogsvc.errors import CacheUnwritable
from mkdocs_blogsvc.fileio import write_if_changed
from mkdocs_blogsvc.render import ExportHead, PagePaths, Renderer, assign_slugs

#: The index page's title when the blog's name is not known yet.
DEFAULT_INDEX_TITLE = "Blog"


@dataclass(frozen=True)
class SiteFile:
    """A file to add to the site: its docs-relative path and the cache file behind it (or, for
    the pages of an export, its content in memory)."""

    src_uri: str
    abs_path: Path
    article_id: str | None = None
    data: bytes | None = None

    def read(self) -> bytes:
        return self.data if self.data is not None else self.abs_path.read_bytes()


@dataclass
class RenderedSite:
    """What `render_pages` produced; `written` counts the files that changed on disk."""

    pages: list[SiteFile] = field(default_factory=list)
    images: list[SiteFile] = field(default_factory=list)
    index: SiteFile | None = None
    written: int = 0

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
) -> RenderedSite:
    """Render every cached article to `<posts_dir>/<slug>.md` in the cache's pages folder (and
    `<blog_dir>/index.md`, titled with the blog's name, when `with_index`); write only what
    changed; remove pages no longer rendered. Raises `BadTemplate`, or `CacheUnwritable`.

    With `export`, the pages are the exported variant (`Renderer.page`'s `export`), kept in
    memory (`SiteFile.data`): the cache's own pages, the plugin's, are left as they are."""
    try:
        return _render(cache, contents, renderer, blog_dir=blog_dir, posts_dir=posts_dir, with_index=with_index,
                       export=export)
    except OSError as exc:
        raise CacheUnwritable(cache.root, exc) from None


def _render(
    cache: Cache, contents: CacheContents, renderer: Renderer, *, blog_dir: str, posts_dir: str, with_index: bool,
    export: ExportHead | None,
) -> RenderedSite:
    site = RenderedSite()
    manifest = contents.manifest
    slugs = assign_slugs(contents.articles.values())
    image_src: dict[str, str] = {}
    for entry in manifest.entries.values():
        for url, relative in entry.images.items():
            src = f"{blog_dir}/{relative}"
            image_src[url] = src
            path = cache.resolve(relative)
            if path is not None and src not in {f.src_uri for f in site.images}:
                site.images.append(SiteFile(src, path))
    for article_id, article in contents.articles.items():
        src_uri = f"{posts_dir}/{slugs[article_id]}.md"
        urls = manifest.entries[article_id].images
        paths = PagePaths(src_uri, {url: image_src[url] for url in urls})
        if export is not None:
            text = renderer.page(article, slugs[article_id], paths, export=export)
            site.pages.append(SiteFile(src_uri, cache.page_path(src_uri), article_id, text.encode("utf-8")))
            continue
        page = SiteFile(src_uri, cache.page_path(src_uri), article_id)
        text = renderer.page(article, slugs[article_id], paths)
        site.written += write_if_changed(page.abs_path, text.encode("utf-8"), durable=False)
        site.pages.append(page)
    if with_index:
        src_uri = f"{blog_dir}/index.md"
        items = [(contents.articles[p.article_id], p.src_uri) for p in site.pages if p.article_id]
        text = renderer.index(manifest.blog_name or DEFAULT_INDEX_TITLE, items, src_uri)
        if export is not None:
            site.index = SiteFile(src_uri, cache.page_path(src_uri), data=text.encode("utf-8"))
        else:
            site.index = SiteFile(src_uri, cache.page_path(src_uri))
            site.written += write_if_changed(site.index.abs_path, text.encode("utf-8"), durable=False)
    if export is not None:
        return site  # the cache's pages and its manifest are the plugin's: untouched

    rendered = sorted(cache.page_name(f.src_uri) for f in [*site.pages, *([site.index] if site.index else [])])
    if rendered != sorted(set(manifest.rendered)):
        cache.remove_unowned(set(manifest.rendered), set(rendered))
        manifest.rendered = rendered
        cache.save(manifest)
    return site
