"""The blog's pages in the cache: every cached article rendered to a Markdown page (and the
index page), written only when changed, and the list of files a site adds (`render_pages`).

Shared by the plugin's on_files and `mkdocs-blogsvc export`, so both produce the same pages.
No network, no MkDocs imports; the caller holds the cache's lock. A page is rendered by
`render.Renderer`; this module decides paths, writes files and keeps the manifest's list of
rendered pages, so that pages no longer rendered are removed.

A build with nothing changed renders nothing: each page's manifest record (`PAGE_RECORD` in
the article's `records`, `INDEX_RECORD` in the manifest's) holds the hash of its inputs (the
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
from typing import Any

from mkdocs_blogsvc import imagesizes, privacy
from mkdocs_blogsvc.cache import Cache, CacheContents, Entry
from mkdocs_blogsvc.errors import CacheUnwritable
from mkdocs_blogsvc.fileio import compact_json, sha256, write_if_changed
from mkdocs_blogsvc.links import HostedBlog, Targets
from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.render import ArticleLinks, ExportHead, PagePaths, Renderer, assign_slugs
from mkdocs_blogsvc.sync import BLOG_SLUG

#: The index page's title when the blog's name is not known yet.
DEFAULT_INDEX_TITLE = "Blog"
#: Manifest records (see the module doc): an article page's in its entry, the index page's blog-wide.
PAGE_RECORD = "page"
INDEX_RECORD = "indexPage"


@dataclass(frozen=True, slots=True)
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
    #: every image's size and variants (`imagesizes`), for the pages' markup and head tags.
    image_table: imagesizes.ImageTable = field(default_factory=imagesizes.ImageTable)

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
        return _render(cache, contents, renderer, blog_dir=blog_dir, posts_dir=posts_dir, with_index=with_index,
                       export=export, base_url=base_url)
    except OSError as exc:
        raise CacheUnwritable(cache.root, exc) from None


def _render(
    cache: Cache, contents: CacheContents, renderer: Renderer, *, blog_dir: str, posts_dir: str, with_index: bool,
    export: ExportHead | None, base_url: str | None,
) -> RenderedSite:
    site = RenderedSite()
    manifest = contents.manifest

    articles, summaries = contents.articles, contents.articles.summaries
    slugs = assign_slugs(summaries.values())
    image_src: dict[str, str] = {}
    seen: set[str] = set()
    for entry in manifest.entries.values():
        for url, relative in entry.images.items():
            src = f"{blog_dir}/{relative}"
            image_src[url] = src
            path = cache.locate(relative)
            if path is not None and src not in seen:
                seen.add(src)
                site.images.append(SiteFile(src, path))
    site.image_table = imagesizes.prepare(cache, manifest, blog_dir=blog_dir, optimize=renderer.optimize_images,
                                          budget=renderer.image_budget)
    if export is None:  # exported pages offer the originals only (see imagemarkup)
        site.images.extend(SiteFile(src, path) for src, path in site.image_table.variant_files)
    if export is None and image_src:
        cache.link_images_for_feeds(posts_dir, blog_dir)  # feeds give the cover's byte length
    links = _links(contents, slugs, posts_dir, base_url)
    changed = False
    fingerprint = renderer.fingerprint
    # In the order of their paths, as MkDocs lists the files of docs_dir: the site (its sitemap,
    # the order of equal-dated posts) is the same whatever order the manifest or the sync had.
    for article_id, slug in sorted(slugs.items(), key=lambda item: item[1]):
        src_uri = f"{posts_dir}/{slug}.md"
        entry = manifest.entries[article_id]
        images = {url: image_src[url] for url in entry.images} if entry.images else {}
        page = SiteFile(src_uri, cache.page_file(src_uri), article_id)
        if export is not None:
            sizes = {url: (info.width, info.height) for url, src in images.items()
                     if (info := site.image_table.by_src.get(src))}
            text = renderer.page(articles[article_id], slug, PagePaths(src_uri, images, sizes), export=export,
                                 links=links)
            site.pages.append(SiteFile(src_uri, page.path, article_id, text.encode("utf-8")))
            continue
        site.pages.append(page)
        previous = entry.records.get(PAGE_RECORD)
        held = previous.get("links", []) if isinstance(previous, dict) else []
        inputs = _inputs(fingerprint, entry.article_sha256, slug, src_uri, sorted(images.items()),
                         _link_inputs(links, held))
        if _is_current(page.path, inputs, previous):
            continue  # the usual page of a build with nothing changed: nothing rendered, nothing read
        text = renderer.page(articles[article_id], slug, PagePaths(src_uri, images), links=links)
        record = _write_page(page.path, text, inputs)
        if links is not None:  # the links the page holds now
            record["links"] = [list(item) for item in links.found.get(article_id, [])]
            record["inputs"] = _inputs(fingerprint, entry.article_sha256, slug, src_uri, sorted(images.items()),
                                       _link_inputs(links, record["links"]))
        if removed := renderer.removed.get(article_id):  # logged by every build (`markdown_removed`)
            record["removed"] = removed.to_json()
        if remote := privacy.remote_hosts(text):  # kept from Material's privacy plugin (`remote_hosts` below)
            record["remote"] = remote
        site.written += record.pop("written")
        entry.records[PAGE_RECORD] = record
        changed = True
    if with_index:
        src_uri = f"{blog_dir}/index.md"
        def items() -> list[tuple[Article, str]]:
            return [(articles[p.article_id], p.src_uri) for p in site.pages if p.article_id]

        title = manifest.blog_name or DEFAULT_INDEX_TITLE
        if export is not None:
            text = renderer.index(title, items(), src_uri)
            site.index = SiteFile(src_uri, cache.page_file(src_uri), data=text.encode("utf-8"))
            return site  # the cache's pages and its manifest are the plugin's: untouched
        site.index = SiteFile(src_uri, cache.page_file(src_uri))
        inputs = _inputs(renderer.fingerprint, title, src_uri, sorted(
            (p.src_uri, manifest.entries[p.article_id].article_sha256) for p in site.pages if p.article_id
        ))
        if not _is_current(site.index.path, inputs, manifest.records.get(INDEX_RECORD)):
            record = _write_page(site.index.path, renderer.index(title, items(), src_uri), inputs)
            site.written += record.pop("written")
            manifest.records[INDEX_RECORD] = record
            changed = True
    if export is not None:
        return site  # the cache's pages and its manifest are the plugin's: untouched

    rendered = sorted(cache.page_name(f.src_uri) for f in [*site.pages, *([site.index] if site.index else [])])
    if rendered != sorted(set(manifest.rendered)):
        cache.remove_unowned(set(manifest.rendered), set(rendered))
        manifest.rendered = rendered
        changed = True
    if changed or manifest.refreshed:
        cache.save(manifest)
        manifest.refreshed = False
    return site


def remote_hosts(contents: CacheContents) -> set[str]:
    """The external hosts every article page names (`//host`), as recorded when each was rendered."""
    found: set[str] = set()
    for entry in contents.manifest.entries.values():
        record = entry.records.get(PAGE_RECORD)
        urls = record.get("remote") if isinstance(record, dict) else None
        if isinstance(urls, list):
            found.update(url for url in urls if isinstance(url, str))
    return found


def markdown_removed(entry: Entry) -> Any:
    """What the Markdown pass of the sanitiser took out of the article's page when it was
    last rendered, as kept in its page record (`Removed.to_json`; empty or None: nothing)."""
    record = entry.records.get(PAGE_RECORD)
    return record.get("removed") if isinstance(record, dict) else None


def _links(contents: CacheContents, slugs: dict[str, str], posts_dir: str, base_url: str | None) -> ArticleLinks | None:
    """What rewriting links between articles needs (None without `base_url`)."""
    if base_url is None:
        return None
    blog_slug = contents.manifest.records.get(BLOG_SLUG)
    return ArticleLinks(
        HostedBlog(base_url, blog_slug if isinstance(blog_slug, str) else None),
        Targets((summary, f"{posts_dir}/{slugs[article_id]}.md") for article_id, summary in contents.articles.summaries.items()),
    )


def _link_inputs(links: ArticleLinks | None, references: Any) -> Any:
    """The part of a page's inputs its links decide: where the hosted blog is, and the page each
    link held (`references`, from the page record) names now."""
    if links is None:
        return None
    held = [(str(item[0]), bool(item[1])) for item in references if isinstance(item, list) and len(item) == 2] \
        if isinstance(references, list) else []
    return [links.blog.base_url, links.blog.blog_slug, links.targets.resolve(held)]


def _inputs(*parts: Any) -> str:
    """The hash of a page's inputs (JSON values)."""
    return sha256(compact_json(parts))


def _is_current(path: str, inputs: str, record: Any) -> bool:
    """Whether `record` says the file at `path` is the page of these `inputs`, and the file's
    size and mtime are still the ones recorded (so it was not changed behind our back)."""
    if not (isinstance(record, dict) and record.get("inputs") == inputs):
        return False
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return record.get("size") == stat.st_size and record.get("mtimeNs") == stat.st_mtime_ns


def _write_page(path: str, text: str, inputs: str) -> dict[str, Any]:
    """Write the page when its bytes differ; its new record (with `written`: 1 when the file
    was written, for the caller)."""
    written = write_if_changed(Path(path), text.encode("utf-8"), durable=False)
    stat = os.stat(path)
    return {"inputs": inputs, "size": stat.st_size, "mtimeNs": stat.st_mtime_ns, "written": int(written)}
