"""One sync of the cache with the service, applied as a transaction; pages rendered from the cache.

No MkDocs imports: the plugin and the `sync`/`export` commands share this module.

Order of a sync (why: a failure or a kill at any point leaves the previous cache usable):
1. read the manifest and check it against the disk (`read_cache`);
2. one `POST /api/v1/sync` with the intact articles as `knownArticles`;
3. write new and updated article JSON and images, each file atomically, under new names
   (article files are content-addressed, so the old manifest's files stay untouched);
4. replace the manifest atomically (the commit point);
5. delete the files the old manifest owned that the new one no longer names, only inside
   cache_dir and only files a manifest said we created (and temp files a killed writer left).
`render_all` then writes the pages, comparing content first so that an unchanged page keeps
its bytes and its mtime.

Every process that syncs, renders or reads the cache for a build holds `CacheLock` (the file
`cache_dir/.lock`): a `mkdocs-blogsvc sync` must not delete files a `mkdocs serve` build is
copying, nor two builds interleave their writes.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

import filelock

from mkdocs_blogsvc import images as image_files
from mkdocs_blogsvc import manifest as cache
from mkdocs_blogsvc.api import display_url
from mkdocs_blogsvc.errors import BlogServiceError
from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.manifest import Entry, Manifest, inside, sha256
from mkdocs_blogsvc.models import Article, BlogStatus, KnownArticle, SyncResult
from mkdocs_blogsvc.render import PagePaths, Renderer, assign_slugs

PAGES_DIR = "docs"
#: The cross-process lock file of a cache (see `CacheLock`).
LOCK_NAME = ".lock"
#: Longest wait for another process's hold on the cache: one sync plus one build of a big site.
LOCK_TIMEOUT = 300.0
#: Temp files of `fileio.atomic_write` (`.<name>.<16 hex digits>.tmp`), left only by a killed writer.
_TEMP_FILE = re.compile(r"\..+\.[0-9a-f]{16}\.tmp")

log = logging.getLogger("mkdocs.plugins.mkdocs_blogsvc.sync")


class CacheBusy(BlogServiceError):
    """Another process kept the cache locked for longer than `LOCK_TIMEOUT`."""


class CacheLock:
    """The cross-process lock of one cache_dir (`cache_dir/.lock`, an OS file lock that dies
    with its process). Held by a build from its sync to its end, by `mkdocs-blogsvc sync` and
    `export`, and by each background sync of `mkdocs serve`.

    Within one process the plugin serialises its own threads with a threading lock taken
    first; this object is shared by those threads (`thread_local=False`), so a build may be
    released from another thread than the one that acquired it.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self._lock = filelock.FileLock(cache_dir / LOCK_NAME, thread_local=False)

    def try_acquire(self, timeout: float) -> bool:
        """Take the lock within `timeout` seconds; False when another process still holds it.
        Raises `OSError` when cache_dir cannot be created."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=timeout)
        except filelock.Timeout:
            return False
        return True

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting at most `timeout` (default `LOCK_TIMEOUT`) seconds for another
        process, with a log line when it has to wait; `CacheBusy` after that."""
        if self.try_acquire(0):
            return
        limit = LOCK_TIMEOUT if timeout is None else timeout
        log.info("blogsvc: waiting for another process that is using the cache in %s", self.cache_dir)
        if not self.try_acquire(limit):
            raise CacheBusy(
                f"blogsvc: the cache in {self.cache_dir} is still in use by another process "
                f"(a build, `mkdocs serve` or `mkdocs-blogsvc sync`/`export`) after {limit:.0f} s; "
                "wait for it to finish (or stop it), then try again"
            )

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> CacheLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


class SyncClient(Protocol):
    """What a sync needs of `api.BlogServiceClient`."""

    def sync(self, known: Sequence[KnownArticle]) -> SyncResult: ...

    def status(self) -> BlogStatus: ...

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]: ...


@dataclass
class CacheState:
    """The cache as checked against the disk: the manifest, the intact articles, and every
    file any manifest entry owned before the check (so dropped entries get cleaned up too)."""

    manifest: Manifest
    articles: dict[str, Article]
    owned: set[str]


@dataclass
class SyncReport:
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    image_failures: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0

    def summary(self) -> str:
        return (
            f"{len(self.new)} new, {len(self.updated)} updated, {len(self.deleted)} deleted, "
            f"{self.unchanged} unchanged in {self.duration:.2f} s"
        )


def read_cache(cache_dir: Path) -> CacheState:
    manifest = cache.load(cache_dir)
    owned = manifest.owned_files()
    return CacheState(manifest, cache.verify(cache_dir, manifest), owned)


def sync_cache(
    cache_dir: Path, client: SyncClient, *, download_images: bool = True, state: CacheState | None = None
) -> tuple[CacheState, SyncReport]:
    """Bring the cache in line with the service; the caller holds the cache's `CacheLock`.
    Raises `BlogServiceError` (nothing changed on disk) when the sync call fails, `OSError`
    when the cache cannot be written."""
    started = time.perf_counter()
    state = state or read_cache(cache_dir)
    old = state.manifest
    result = client.sync(old.known_articles())
    report = SyncReport()
    for skipped in result.skipped:
        report.skipped.append(f"article {skipped.id or '(no id)'}: {skipped.reason}")
        log.warning("blogsvc: article %s skipped: %s", skipped.id or "(without an id)", skipped.reason)

    deleted = [article_id for article_id in dict.fromkeys(result.deleted) if article_id in old.entries]
    changed = {article.id: article for article in (*result.new, *result.updated)}
    report.new = [a.id for a in result.new if a.id not in old.entries]
    report.updated = [a.id for a in changed.values() if a.id not in report.new]
    report.deleted = [a for a in deleted if a not in changed]

    articles = {k: v for k, v in state.articles.items() if k not in deleted}
    articles.update(changed)
    entries = {k: v for k, v in old.entries.items() if k in articles and k not in changed}
    report.unchanged = len(entries)

    # Images: every wanted URL not already cached (new URLs, and earlier failures). Every intact
    # old entry counts, changed articles' included: a URL always maps to the same file (named
    # by the URL's hash), so an update that keeps its image URLs downloads nothing.
    known_images = {url: (path, entry.image_sizes.get(url, 0)) for entry in old.entries.values() for url, path in entry.images.items()}
    wanted = {article_id: _image_urls(article) if download_images else [] for article_id, article in articles.items()}
    to_fetch = [url for urls in wanted.values() for url in urls if url not in known_images]
    downloads = image_files.download_all(client, to_fetch, cache_dir)
    known_images.update(downloads.saved)
    for url, reason in downloads.failed.items():
        report.image_failures[url] = reason
        owner = next((i for i, urls in wanted.items() if url in urls), "?")
        log.warning(
            "blogsvc: image %s of article %s was not downloaded (%s); the page uses the remote URL",
            display_url(url), owner, reason,
        )

    new_manifest = Manifest(rendered=list(old.rendered), blog_language=old.blog_language, blog_name=old.blog_name)
    for article_id, article in articles.items():
        entry = entries.get(article_id) or _write_article(cache_dir, article)
        have = {url: known_images[url] for url in wanted[article_id] if url in known_images}
        new_manifest.entries[article_id] = Entry(
            id=entry.id, content_hash=entry.content_hash, article_file=entry.article_file,
            article_sha256=entry.article_sha256,
            images={url: path for url, (path, _size) in have.items()},
            image_sizes={url: size for url, (_path, size) in have.items()},
        )
    if new_manifest.blog_language is None:
        _learn_blog(client, new_manifest)
    if new_manifest.to_json() != old.to_json():
        cache.save(cache_dir, new_manifest)
    _delete_unowned(cache_dir, state.owned | old.owned_files(), new_manifest.owned_files())
    _sweep_temp_files(cache_dir)
    report.duration = time.perf_counter() - started
    return CacheState(new_manifest, articles, new_manifest.owned_files()), report


def _image_urls(article: Article) -> list[str]:
    urls = [article.cover_image_url] if article.cover_image_url else []
    return list(dict.fromkeys([*urls, *article.inline_image_urls]))


def _write_article(cache_dir: Path, article: Article) -> Entry:
    data = (json.dumps(article.to_json(), ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode("utf-8")
    digest = sha256(data)
    relative = f"articles/{sha256(article.id)[:24]}-{digest[:16]}.json"
    _write_if_changed(cache_dir / relative, data)
    return Entry(id=article.id, content_hash=article.content_hash, article_file=relative, article_sha256=digest)


def _learn_blog(client: SyncClient, manifest: Manifest) -> None:
    """The blog's language (for `inLanguage`) and name (index title), asked once and cached."""
    try:
        status = client.status()
    except BlogServiceError as exc:
        log.debug("blogsvc: blog language unknown (%s)", exc)
        return
    manifest.blog_language, manifest.blog_name = status.blog.language, status.blog.name


def _delete_unowned(cache_dir: Path, before: set[str], after: set[str]) -> None:
    for relative in sorted(before - after):
        path = inside(cache_dir, relative)
        if path is not None:
            path.unlink(missing_ok=True)


def _sweep_temp_files(cache_dir: Path) -> None:
    """Remove the temp files of writers killed mid-write (the caller holds the cache lock, so
    no live writer owns one). Only our folders, only our writer's temp-file names."""
    found = [*cache_dir.glob(f".{cache.MANIFEST_NAME}.*.tmp")]
    for folder in ("articles", image_files.IMAGES_DIR):
        found += (cache_dir / folder).glob(".*.tmp")
    found += (cache_dir / PAGES_DIR).rglob(".*.tmp")
    for path in found:
        if _TEMP_FILE.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def _write_if_changed(path: Path, data: bytes, *, durable: bool = True) -> bool:
    """Write only when the content differs: unchanged files keep their mtime."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, durable=durable)
    return True


# --- rendering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SiteFile:
    """A file to add to the site: its docs-relative path and the cache file behind it."""

    src_uri: str
    abs_path: Path
    article_id: str | None = None


@dataclass
class RenderedSite:
    pages: list[SiteFile] = field(default_factory=list)
    images: list[SiteFile] = field(default_factory=list)
    index: SiteFile | None = None
    written: int = 0


def render_all(
    cache_dir: Path,
    state: CacheState,
    renderer: Renderer,
    *,
    blog_dir: str,
    posts_dir: str,
    index_title: str | None = None,
) -> RenderedSite:
    """Render every cached article to `cache_dir/docs/<posts_dir>/<slug>.md` (and the index
    when `index_title` is given); write only what changed; remove pages no longer rendered."""
    site = RenderedSite()
    slugs = assign_slugs(state.articles.values())
    image_src = {}
    for entry in state.manifest.entries.values():
        for url, relative in entry.images.items():
            src = f"{blog_dir}/{relative}"
            image_src[url] = src
            path = inside(cache_dir, relative)
            if path is not None and src not in {f.src_uri for f in site.images}:
                site.images.append(SiteFile(src, path))
    for article_id, article in state.articles.items():
        src_uri = f"{posts_dir}/{slugs[article_id]}.md"
        urls = state.manifest.entries[article_id].images
        paths = PagePaths(src_uri, {url: image_src[url] for url in urls})
        page = SiteFile(src_uri, cache_dir / PAGES_DIR / src_uri, article_id)
        text = renderer.page(article, slugs[article_id], paths)
        site.written += _write_if_changed(page.abs_path, text.encode("utf-8"), durable=False)
        site.pages.append(page)
    if index_title is not None:
        src_uri = f"{blog_dir}/index.md"
        items = [(state.articles[p.article_id], p.src_uri) for p in site.pages if p.article_id]
        site.index = SiteFile(src_uri, cache_dir / PAGES_DIR / src_uri)
        text = renderer.index(index_title, items, src_uri)
        site.written += _write_if_changed(site.index.abs_path, text.encode("utf-8"), durable=False)

    rendered = sorted(f"{PAGES_DIR}/{f.src_uri}" for f in [*site.pages, *([site.index] if site.index else [])])
    if rendered != sorted(set(state.manifest.rendered)):
        _delete_unowned(cache_dir, set(state.manifest.rendered), set(rendered))
        state.manifest.rendered = rendered
        cache.save(cache_dir, state.manifest)
    return site


# --- export -------------------------------------------------------------------------------

EXPORT_RECORD = ".blogsvc-export.json"


def export_site(site: RenderedSite, dest: Path) -> tuple[int, int]:
    """Copy the rendered pages and images into `dest` (docs-relative layout) as plain files.

    Returns (files written, files removed). Files of an earlier export that are no longer part
    of the site are removed; `dest/.blogsvc-export.json` records what the export owns, so
    nothing else in `dest` is ever touched.
    """
    record = dest / EXPORT_RECORD
    try:
        previous = {p for p in json.loads(record.read_text(encoding="utf-8")) if isinstance(p, str)}
    except (OSError, ValueError, TypeError):
        previous = set()
    written, current = 0, []
    for item in [*site.images, *site.pages, *([site.index] if site.index else [])]:
        target = inside(dest, item.src_uri)
        if target is None:
            continue
        written += _write_if_changed(target, item.abs_path.read_bytes())
        current.append(item.src_uri)
    removed = 0
    for relative in sorted(previous - set(current)):
        path = inside(dest, relative)
        if path is not None and path.is_file():
            path.unlink()
            removed += 1
    _write_if_changed(record, (json.dumps(sorted(current), indent=1) + "\n").encode("utf-8"))
    return written, removed
