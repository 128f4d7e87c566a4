"""Concurrent, bounded, checked image downloads into the cache (`Cache.image_name`).

Why download at all: remote image URLs expire or move, and a site should not hot-link the
service. Each image is fetched once per URL (the file name is a hash of the URL), checked to
really be an image, and written atomically.

Decisions:
- only http and https URLs; at most `MAX_IMAGE_BYTES` per image;
- the bytes must be a PNG, JPEG, GIF, WebP or AVIF image (`imagetypes.sniff`, the rule the
  reference service uses too); the extension comes from those bytes, never from the URL or
  the Content-Type;
- SVG is refused: it can carry scripts, and served from the site's own origin it would run
  with the site's privileges;
- so is an image whose header Pillow cannot read (a polyglot: an HTML page behind a JPEG's
  first bytes) or that claims more than `variants.MAX_PIXELS` pixels (an image bomb: a few
  hundred bytes that would take gigabytes in every reader's browser).

A refused image keeps its remote URL (with a warning).
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.errors import BlogServiceError
from mkdocs_blogsvc.fileio import write_if_changed
from mkdocs_blogsvc.imagetypes import looks_like_svg, sniff
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.models import is_web_url
from mkdocs_blogsvc.shared import counted
from mkdocs_blogsvc.variants import refusal

#: Largest image accepted (10 MiB): covers photos at web sizes, stops a runaway download.
MAX_IMAGE_BYTES = 10 * 1024 * 1024
#: Parallel downloads: enough to hide latency, few enough not to hammer one host.
WORKERS = 8
#: Downloads lasting longer than this show a progress line every PROGRESS_EVERY seconds.
PROGRESS_EVERY = 3.0
#: A write failing so stops every download: no later image could be written either, and the
#: sync reports the cache once (`CacheUnwritable`) instead of a warning per image.
_CACHE_UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES})


class Downloader(Protocol):
    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]: ...


@dataclass
class Downloads:
    """The outcome of one batch: URL -> (relative path, size) for images saved, URL -> reason."""

    saved: dict[str, tuple[str, int]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def download_all(
    client: Downloader,
    urls: Iterable[str],
    cache: Cache,
    *,
    max_bytes: int = MAX_IMAGE_BYTES,
    workers: int = WORKERS,
    clock: Callable[[], float] = time.monotonic,
) -> Downloads:
    """Fetch every distinct URL of `urls` concurrently (at most `workers` at a time)."""
    result = Downloads()
    pending_urls = list(dict.fromkeys(urls))
    for url in pending_urls:
        if not is_web_url(url):  # `Article` leaves them out: a cache of an older version may hold one
            result.failed[url] = "not an http(s) URL"
    todo = [url for url in pending_urls if url not in result.failed]
    if not todo:
        return result
    started = last_report = clock()
    stop = threading.Event()  # set by the first download that finds the cache unwritable
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="blogsvc-image") as pool:
        futures: dict[Future[tuple[str, int]], str] = {
            pool.submit(_fetch_one, client, url, cache, max_bytes, stop): url for url in todo
        }
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=PROGRESS_EVERY, return_when=FIRST_COMPLETED)
            for future in done:
                url = futures[future]
                try:
                    result.saved[url] = future.result()
                except _Stopped:
                    continue
                except _Refused as exc:
                    result.failed[url] = str(exc)
                except BlogServiceError as exc:
                    result.failed[url] = str(exc)
                except OSError as exc:
                    if exc.errno in _CACHE_UNWRITABLE:
                        pool.shutdown(wait=False, cancel_futures=True)
                        raise
                    result.failed[url] = f"cannot be written to the cache: {exc.strerror or exc}"
            now = clock()
            if pending and now - last_report >= PROGRESS_EVERY:
                last_report = now
                # what succeeded only: a failed download is its own warning, never "downloaded"
                failed = f", {len(result.failed)} failed" if result.failed else ""
                log.info(
                    "downloaded %d of %s%s (%.0f s)",
                    len(result.saved),
                    counted(len(todo), "image"),
                    failed,
                    now - started,
                )
    return result


class _Refused(Exception):
    """The service answered, but not with an acceptable image."""


class _Stopped(Exception):
    """Another download found the cache unwritable, so this one was not tried."""


def _fetch_one(client: Downloader, url: str, cache: Cache, max_bytes: int, stop: threading.Event) -> tuple[str, int]:
    """Download and store one image; the pool's threads stop themselves (not the main thread,
    which may wake late on a loaded machine) once one write finds the cache unwritable."""
    if stop.is_set():
        raise _Stopped
    data, _content_type = client.download(url, max_bytes=max_bytes)
    if len(data) > max_bytes:
        raise _Refused(f"larger than {max_bytes} bytes")
    extension = sniff(data)
    if extension is None:
        what = (
            "an SVG image (refused: SVG can carry scripts)"
            if looks_like_svg(data)
            else "not a PNG, JPEG, GIF, WebP or AVIF image"
        )
        raise _Refused(what)
    reason = refusal(data, extension)
    if reason is not None:
        raise _Refused(reason)
    relative = cache.image_name(url, extension)
    if stop.is_set():
        raise _Stopped
    try:
        write_if_changed(cache.root / relative, data)
    except OSError as exc:
        if exc.errno in _CACHE_UNWRITABLE:
            stop.set()
        raise
    return relative, len(data)
