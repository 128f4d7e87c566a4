"""One sync of the cache with the service, applied as a transaction (`sync_cache`).

No MkDocs lifecycle here: the plugin, the background sync and the `sync`/`export` commands
share it. The caller holds the cache's lock (`Cache.acquire`).

The phases (why this order: a failure or a kill at any point leaves the previous cache usable):
0. read the manifest and check it against the disk (`Cache.read`), then one
   `POST /api/v1/sync` with the intact articles as `knownArticles`;
1. diff: which articles are new, updated, deleted, unchanged (`_diff`);
2. images: download every wanted image URL not cached yet (`_fetch_images`);
3. commit: write new and updated article JSON (content-addressed, so the old manifest's files
   stay untouched), then replace the manifest atomically: the commit point (`_commit`);
4. cleanup: delete the files the old manifest owned that the new one no longer names, and the
   temp files a killed writer left (`_cleanup`).
Before its first article or image file is written or dropped, a sync leaves a mark in the cache
(`Cache.mark_pending`), removed when it is done: a sync killed in phases 2 to 4 leaves files no
manifest names (written before the commit point, or no longer named after it), which the next
sync, finding the mark, removes (`Cache.finish_pending`). A sync that changes nothing writes
no mark. Pages are rendered afterwards, from the cache (`pages.render_pages`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

import msgspec

from mkdocs_blogsvc import collector
from mkdocs_blogsvc.api import display_url
from mkdocs_blogsvc.cache import Cache, CacheContents, CachedArticles
from mkdocs_blogsvc.errors import BlogServiceError, CacheUnwritable
from mkdocs_blogsvc.fileio import make_durable
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import Entry, EntryRecords, Manifest
from mkdocs_blogsvc.models import (
    Article,
    BlogStatus,
    KnownArticle,
    SyncResult,
)


class SyncClient(Protocol):
    """What a sync needs of `api.BlogServiceClient`."""

    def sync(self, known: Sequence[KnownArticle]) -> SyncResult: ...

    def status(self) -> BlogStatus: ...

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]: ...


@dataclass
class SyncReport:
    """What one sync changed (article ids), for the build's summary line and the CLI."""

    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    image_failures: dict[str, str] = field(default_factory=dict)
    duration: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.new or self.updated or self.deleted)

    def summary(self) -> str:
        return (
            f"{len(self.new)} new, {len(self.updated)} updated, {len(self.deleted)} deleted, "
            f"{self.unchanged} unchanged in {self.duration:.2f} s"
        )


@dataclass
class _Diff:
    """Phase 1's outcome: the articles after the sync, which of them changed, the old entries
    that stay as they are, and the ids for the report."""

    articles: CachedArticles
    changed: dict[str, Article]
    kept: dict[str, Entry]
    report: SyncReport


def sync_cache(
    cache: Cache,
    client: SyncClient,
    *,
    download_images: bool = True,
    contents: CacheContents | None = None,
    full_sync_interval: float | None = None,
) -> tuple[CacheContents, SyncReport]:
    """Bring the cache in line with the service; the caller holds the cache's lock.

    With `full_sync_interval` (seconds), the sync asks for every article when the last full
    sync is that old (see `full_sync_due`); None never does, besides the first sync.

    `contents` is the cache as the caller just read it (read again when None). Raises
    `BlogServiceError` when the sync call fails (nothing changed on disk), `CacheUnwritable`
    when the cache cannot be written (the previous manifest still describes the cache)."""
    started = time.perf_counter()
    try:
        contents = contents or cache.read()
        cache.finish_pending(contents)  # what a sync killed while it changed files left behind
        now = datetime.now(timezone.utc)
        full = full_sync_due(contents.manifest, full_sync_interval, now)
        with collector.paused():
            known = [] if full else contents.manifest.known_articles()
        result = client.sync(known)
        if full:
            result = _as_incremental(result, contents)
        with collector.paused():  # bookkeeping on every article: long-lived objects, no cycles
            diff = _diff(contents, result)
        wanted, cached_images = _fetch_images(cache, client, contents.manifest, diff, download_images)
        with collector.paused():
            manifest, saved = _commit(
                cache, client, contents.manifest, diff, wanted, cached_images, now if full else None
            )
        if saved:  # else no file lost its owner: nothing to clean up
            _cleanup(cache, contents, manifest)
        cache.clear_pending()
    except OSError as exc:
        raise CacheUnwritable(cache.root, exc) from None
    diff.report.duration = time.perf_counter() - started
    # saved: the new manifest owns every file kept; unsaved: the same entries, the same files dropped
    return CacheContents(manifest, diff.articles, frozenset() if saved else contents.dropped), diff.report


def _diff(contents: CacheContents, result: SyncResult) -> _Diff:
    """Phase 1: the service's answer against the cache."""
    old = contents.manifest
    report = SyncReport()
    for skipped in result.skipped:
        report.skipped.append(
            f"article {skipped.id!r}: {skipped.reason}" if skipped.id else f"an article: {skipped.reason}"
        )
        log.warning(  # the id as repr: a line feed or escape sequence in it cannot forge a log line
            "article %s skipped: %s; fix the article on the service (the cache keeps any earlier version)",
            repr(skipped.id) if skipped.id else "(without an id)",
            skipped.reason,
        )
    deleted = [article_id for article_id in dict.fromkeys(result.deleted) if article_id in old.entries]
    changed = {article.id: article for article in (*result.new, *result.updated)}
    report.new = [a.id for a in result.new if a.id not in old.entries]
    report.updated = [a.id for a in changed.values() if a.id not in report.new]
    report.deleted = [a for a in deleted if a not in changed]
    articles = contents.articles.changed(changed, deleted)
    kept = {k: v for k, v in old.entries.items() if k in articles and k not in changed}
    report.unchanged = len(kept)
    return _Diff(articles, changed, kept, report)


def _fetch_images(
    cache: Cache, client: SyncClient, old: Manifest, diff: _Diff, download_images: bool
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, int]]]:
    """Phase 2: every wanted URL not already cached (new URLs, and earlier failures).

    Every intact old entry counts, changed articles' included: a URL always maps to the same
    file (named by the URL's hash), so an update that keeps its image URLs downloads nothing.
    Returns the wanted URLs by article id and URL -> (cache path, size) of the images held."""
    cached = {
        url: (path, entry.image_sizes.get(url, 0))
        for entry in old.entries.values()
        for url, path in entry.images.items()
    }
    wanted = {
        article_id: summary.image_urls if download_images else ()
        for article_id, summary in diff.articles.summaries.items()
    }
    to_fetch = [url for urls in wanted.values() for url in urls if url not in cached]
    if not to_fetch:  # the usual sync: no image module, no threads
        return wanted, cached
    from mkdocs_blogsvc import images as image_files

    cache.mark_pending()
    downloads = image_files.download_all(client, to_fetch, cache)
    cached.update(downloads.saved)
    for url, reason in downloads.failed.items():
        diff.report.image_failures[url] = reason
        owner = next((i for i, urls in wanted.items() if url in urls), "?")
        log.warning(
            "image %s of article %s was not downloaded (%s); the page uses the remote URL",
            display_url(url),
            owner,
            reason,
        )
    return wanted, cached


def _commit(
    cache: Cache,
    client: SyncClient,
    old: Manifest,
    diff: _Diff,
    wanted: dict[str, tuple[str, ...]],
    cached_images: dict[str, tuple[str, int]],
    full_at: datetime | None,
) -> tuple[Manifest, bool]:
    """Phase 3: write the changed articles' files, then the new manifest (the commit point),
    unless nothing changed; returns the manifest and whether it was saved.
    An article keeps the `records` and `outputs` of its old entry, updated or not."""
    manifest = Manifest(
        rendered=list(old.rendered),
        blog_language=old.blog_language,
        blog_name=old.blog_name,
        records=dict(old.records),
    )
    unchanged = len(diff.articles) == len(old.entries)
    if full_at is not None:
        manifest.set_last_full_sync(full_at)
    written: list[Path] = []  # made durable together, before the manifest that names them
    for article_id in diff.articles:
        entry = diff.kept.get(article_id)
        if entry is None:
            if not written:
                cache.mark_pending()
            entry = cache.write_article(diff.changed[article_id], durable=False)
            written.append(cache.root / entry.article_file)
        previous = old.entries.get(article_id)
        urls = wanted[article_id]
        if entry is previous and not urls and not entry.images:
            manifest.entries[article_id] = entry  # the common case of a build: nothing to copy
            continue
        have = {url: cached_images[url] for url in urls if url in cached_images}
        images = {url: path for url, (path, _size) in have.items()}
        sizes = {url: size for url, (_path, size) in have.items()}
        if entry is previous and entry.images == images and entry.image_sizes == sizes:
            manifest.entries[article_id] = entry  # the common case of a build: nothing to copy
            continue
        unchanged = False
        manifest.entries[article_id] = msgspec.structs.replace(
            entry,
            images=images,
            image_sizes=sizes,
            records=previous.records if previous is not None else EntryRecords(),
            outputs=previous.outputs if previous is not None else None,
        )
    if full_at is not None or manifest.blog_language is None or manifest.blog_slug is None:
        _learn_blog(client, manifest)
    unchanged = (
        unchanged
        and (manifest.blog_language, manifest.blog_name) == (old.blog_language, old.blog_name)
        and manifest.records == old.records
    )  # blogSlug, lastFullSync
    if old.unsaved or not unchanged:
        make_durable(written)
        cache.save(manifest)
        return manifest, True
    return manifest, False


def _cleanup(cache: Cache, contents: CacheContents, manifest: Manifest) -> None:
    """Phase 4, after a saved manifest: only files a manifest said we created, and only inside
    the cache. (Temp files of a killed writer wait for the next sync that changes something.)"""
    dropped = contents.owned - manifest.owned_files()
    if dropped:
        cache.mark_pending()
        cache.remove_unowned(dropped, set())
    cache.sweep_temp_files()


def _learn_blog(client: SyncClient, manifest: Manifest) -> None:
    """The blog's language (for `inLanguage`), name (index title) and slug (links to the hosted
    blog), cached: asked at the first sync and again with each full sync, which a rename or a
    new language reaches the site with."""
    try:
        status = client.status()
    except BlogServiceError as exc:
        log.debug("blog language unknown (%s)", exc)
        return
    manifest.learn_blog(language=status.blog.language, name=status.blog.name, slug=status.blog.slug)


def ever_synced(contents: CacheContents) -> bool:
    """Whether the cache holds a sync: articles, or a blog synced with none yet (every saved
    sync records the blog's slug). Building or exporting from it then leaves nothing out."""
    return bool(contents.articles) or contents.manifest.blog_slug is not None


def full_sync_due(manifest: Manifest, interval: float | None, now: datetime) -> bool:
    """Whether this sync asks for every article (an empty `knownArticles`).

    Why: `contentHash` covers title, description, content and tags only, so an incremental
    sync never reports an article whose slug or dates alone changed (and so its URL on the
    site); a full sync every `interval` seconds brings those in. 0: every sync; None: never."""
    if interval is None:
        return False
    if not manifest.entries:
        return True  # a first sync asks for everything anyway: remember when it was
    moment = manifest.last_full_sync
    return moment is None or not 0 <= (now - moment).total_seconds() < interval


def _as_incremental(result: SyncResult, contents: CacheContents) -> SyncResult:
    """A full sync's answer as an incremental one: a cached article the service did not send
    is deleted; one it sent unchanged (its view count aside) is left out, so it keeps its entry."""
    sent = {article.id for article in (*result.new, *result.updated)}
    sent |= {skipped.id for skipped in result.skipped if skipped.id}  # malformed now is not deleted
    cached = contents.articles
    changed = tuple(
        article
        for article in (*result.new, *result.updated)
        if article.id not in cached or replace(article, view_count=cached[article.id].view_count) != cached[article.id]
    )
    deleted = tuple(article_id for article_id in contents.manifest.entries if article_id not in sent)
    return replace(result, new=changed, updated=(), deleted=deleted)
