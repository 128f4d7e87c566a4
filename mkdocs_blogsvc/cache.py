"""The plugin's cache folder and its one owner, `Cache`: the layout, the lock, the manifest,
and what may be deleted. Everything else asks a `Cache` object and never builds a cache path.

Layout of the cache folder (`cache_dir`, default `.cache/blogsvc` next to mkdocs.yml; every
path in the manifest is relative to it, POSIX style):

    manifest.json                                         MANIFEST_NAME: the single source of truth
    .lock                                                 LOCK_NAME: the cross-process lock
    serve-signal.json                                     SIGNAL_NAME: raised by the background sync
    articles/<sha256(id)[:24]>-<sha256(json)[:16]>.json   ARTICLES_DIR: the article as the service sent it
    images/<sha256(url)[:32]>.<ext>                       IMAGES_DIR: downloaded images
    docs/<posts_dir>/<slug>.md                            PAGES_DIR: rendered pages (and the index page)
    outputs.pack                                          OUTPUTS_NAME: the article pages' sanitised HTML and
                                                          head tags, with the hash of their inputs (`outputs`)
    sync-in-progress                                      PENDING_NAME: a sync is writing or dropping files
    images.json                                           IMAGE_TABLE_NAME: each image's size and variants (`imagesizes`)
    variants/<sha256(image)[:24]>-<settings>-<width>.webp VARIANTS_DIR: WebP variants (`optimize_images`)
    docs/<posts_dir>/<blog_dir>/images -> ../../images    the images where feeds look for a page's cover
    lock-held                                             HELD_NAME: a process holds the lock (or was killed)

The manifest is written atomically and durably (`fileio.atomic_write`), so a process killed at
any point leaves the old manifest or the new one. The files it names are content-addressed or
written before the manifest that refers to them: whatever manifest is on disk describes files
that exist, or `check` notices that they do not. A missing, corrupt or unknown-version manifest
is an empty one (a full sync), never a crash. Only files a manifest named are ever deleted
(`remove_unowned`), plus the temp files of killed writers (`sweep_temp_files`: after every sync
that saved a manifest, and when the lock is taken after a holder that was killed, whatever it
was writing: a page, the outputs, an image), plus, after a
sync killed while it changed files (`sync-in-progress` left behind: `mark_pending`), the files
of `articles/` and `images/` named as only the plugin names them that the manifest on disk does
not name (`finish_pending`): a killed sync may have written them before its manifest, or
dropped the manifest naming them before deleting them.

The manifest's content and its typed records are `manifest.Manifest`'s; this class reads and
saves it (`load`, `save`: the only writer).

The lock (`.lock`, an OS file lock that dies with its process) is held by every process that
syncs, renders or reads the cache for a build: a `mkdocs-blogsvc sync` must not delete files a
`mkdocs serve` build is copying, nor two builds interleave their writes. One `Cache` object's
lock is shared by its threads (`thread_local=False`): a build may release it from another
thread than the one that took it. Threads of one process serialise first with their own lock
(see `coordinator.SyncCoordinator`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import filelock

from mkdocs_blogsvc import __version__, collector, models
from mkdocs_blogsvc.errors import CacheBusy, CacheDamaged, CacheUnwritable, InvalidResponse
from mkdocs_blogsvc.fileio import (
    atomic_write,
    compact_json,
    inside,
    safe_relative,
    sha256,
    write_if_changed,
)
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import MANIFEST_VERSION, Entry, Manifest, OtherVersion
from mkdocs_blogsvc.models import Article, ArticleSummary

MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".lock"
#: In the cache folder; watched by `mkdocs serve`, written only by the background sync.
SIGNAL_NAME = "serve-signal.json"
ARTICLES_DIR = "articles"
IMAGES_DIR = "images"
PAGES_DIR = "docs"
OUTPUTS_NAME = "outputs.pack"
IMAGE_TABLE_NAME = "images.json"
VARIANTS_DIR = "variants"
#: The names `variant_name` gives, the only ones `sweep_variants` deletes.
_VARIANT_FILE = re.compile(r"[0-9a-f]{24}-[a-z0-9-]{1,60}-[0-9]{1,5}\.webp")
#: Exists while a sync writes or drops article and image files (see the module doc).
PENDING_NAME = "sync-in-progress"
#: Exists while a process holds the lock: found by the next holder, the last one was killed
#: (its temp files are swept then: `sweep_temp_files`).
HELD_NAME = "lock-held"
#: The names `article_name` and `image_name` give, the only ones `finish_pending` deletes.
_OWN_FILE = {
    ARTICLES_DIR: re.compile(r"[0-9a-f]{24}-[0-9a-f]{16}\.json"),
    IMAGES_DIR: re.compile(r"[0-9a-f]{32}\.(?:png|jpg|gif|webp|avif)"),
}
#: Where an earlier version kept the outputs (a file per article): removed when the pack is made.
_LEGACY_OUTPUTS_DIR = "outputs"
_LEGACY_OUTPUT_FILE = re.compile(r"[0-9a-f]{24}\.json")
#: Longest wait for another process's hold on the cache: one sync plus one build of a big site.
LOCK_TIMEOUT = 300.0
#: What an article's summary is made by (its parsing, `ArticleSummary.of`): when this code
#: changes, `check` makes every summary again from its article file, once, so that a summary
#: an older version made (a title with control characters, a `javascript:` cover) is not kept.
_SUMMARIES_MADE_BY = Path(models.__file__)
#: Temp files of `fileio.atomic_write` (`.<name>.<16 hex digits>.tmp`), left only by a killed writer.
_TEMP_FILE = re.compile(r"\..+\.[0-9a-f]{16}\.tmp")


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _summaries_made_by() -> str:
    """The hash of `_SUMMARIES_MADE_BY`, or the package's version where the source cannot be
    read as a file (imported from a zip: found by review, every cache read failed)."""
    try:
        return sha256(_SUMMARIES_MADE_BY.read_bytes())
    except OSError:
        return f"version {__version__}"


class CachedArticles(Mapping[str, Article]):
    """The articles by id, each read from its file only when asked for: a build with nothing
    changed needs only their `summaries` (kept in the manifest), not their bodies."""

    def __init__(
        self,
        summaries: dict[str, ArticleSummary],
        read: Callable[[str], Article],
        loaded: dict[str, Article] | None = None,
    ) -> None:
        self.summaries = summaries
        self._read = read
        self._loaded = loaded if loaded is not None else {}

    def __getitem__(self, article_id: str) -> Article:
        article = self._loaded.get(article_id)
        if article is None:
            if article_id not in self.summaries:
                raise KeyError(article_id)
            article = self._loaded[article_id] = self._read(article_id)
        return article

    def __iter__(self) -> Iterator[str]:
        return iter(self.summaries)

    def __len__(self) -> int:
        return len(self.summaries)

    def __contains__(self, article_id: object) -> bool:
        return article_id in self.summaries

    def changed(self, changed: Mapping[str, Article], deleted: Iterable[str]) -> CachedArticles:
        """These articles with `changed` added or replaced and `deleted` left out."""
        gone = set(deleted)
        summaries = {k: v for k, v in self.summaries.items() if k not in gone}
        loaded = {k: v for k, v in self._loaded.items() if k not in gone}
        for article_id, article in changed.items():
            summaries[article_id] = ArticleSummary.of(article)
            loaded[article_id] = article
        return CachedArticles(summaries, self._read, loaded)


@dataclass
class CacheContents:
    """The cache as checked against the disk: the manifest, the intact articles, and the files
    of the entries the check dropped (damaged articles: cleaned up with the others)."""

    manifest: Manifest
    articles: CachedArticles
    dropped: frozenset[str] = frozenset()

    @property
    def owned(self) -> set[str]:
        """Every file a manifest entry owned before the check. Made when asked (a sync that
        saved, a killed sync's files): a build with nothing changed never asks."""
        return self.manifest.owned_files() | self.dropped


class Cache:
    """The cache folder of one plugin instance (or one CLI command): its paths, its lock, its
    manifest, and the only code that deletes files in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(root, "")
        self._lock = filelock.FileLock(root / LOCK_NAME, thread_local=False)

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    # --- layout ----------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def signal_path(self) -> Path:
        return self.root / SIGNAL_NAME

    @property
    def outputs_path(self) -> Path:
        return self.root / OUTPUTS_NAME

    def resolve(self, relative: str) -> Path | None:
        """The file of a manifest path, or None when the path would leave the cache folder."""
        return inside(self.root, relative)

    def locate(self, relative: str) -> str | None:
        """`resolve` as a string, for loops over every article (no `Path` object to build)."""
        return self._prefix + relative if safe_relative(relative) else None

    @staticmethod
    def page_name(src_uri: str) -> str:
        """The manifest path of a page whose docs-relative path is `src_uri`."""
        return f"{PAGES_DIR}/{src_uri}"

    def page_path(self, src_uri: str) -> Path:
        """Where the page of docs-relative path `src_uri` is written (its `abs_src_path`)."""
        return self.root / PAGES_DIR / src_uri

    def page_file(self, src_uri: str) -> str:
        """`page_path` as a string (built for every article of every build)."""
        return f"{self._prefix}{PAGES_DIR}/{src_uri}"

    @staticmethod
    def article_name(article_id: str, digest: str) -> str:
        """The manifest path of an article's JSON: named by its id and its content's hash."""
        return f"{ARTICLES_DIR}/{sha256(article_id)[:24]}-{digest[:16]}.json"

    @staticmethod
    def image_name(url: str, extension: str) -> str:
        """`images/<sha256(url)[:32]>.<ext>`: stable, safe, collision-free."""
        return f"{IMAGES_DIR}/{sha256(url)[:32]}.{extension}"

    @property
    def image_table_path(self) -> Path:
        return self.root / IMAGE_TABLE_NAME

    @staticmethod
    def variant_name(digest: str, settings: str, width: int) -> str:
        """`variants/<sha256(image)[:24]>-<settings>-<width>.webp`: keyed by the image's content
        and the settings that made it, so a changed image or setting never reuses a stale file."""
        return f"{VARIANTS_DIR}/{digest[:24]}-{settings}-{width}.webp"

    def existing_variants(self) -> set[str]:
        """The variant files on disk (manifest paths): one directory listing."""
        try:
            return {
                f"{VARIANTS_DIR}/{found.name}"
                for found in os.scandir(self.root / VARIANTS_DIR)
                if _VARIANT_FILE.fullmatch(found.name)
            }
        except OSError:
            return set()

    def sweep_variants(self, existing: set[str], keep: set[str]) -> None:
        """Delete the variant files no cached image needs any more (a deleted article's, an
        image's made with other settings, all of them with `optimize_images` off): only files
        of `variant_name`'s naming, only in `variants/`."""
        for relative in sorted(existing - keep):
            if _VARIANT_FILE.fullmatch(relative.removeprefix(f"{VARIANTS_DIR}/")):
                (self.root / relative).unlink(missing_ok=True)

    def link_images_for_feeds(self, posts_dir: str, blog_dir: str) -> None:
        """Make `<blog_dir>/images/...` resolve from the folder of the article pages, where
        mkdocs-rss-plugin looks for a page's `image` (`Path(page.abs_src_path).parent / image`)
        to give its enclosure a byte length; without it the feed says `length="None"`. A
        symbolic link to `images/` (created once); where links cannot be made, a debug line."""
        if not safe_relative(f"{posts_dir}/{blog_dir}"):
            return
        link = self.root / PAGES_DIR / posts_dir / blog_dir / IMAGES_DIR
        target = os.path.relpath(self.root / IMAGES_DIR, link.parent)
        try:
            if os.readlink(link) == target:
                return
        except OSError:
            pass
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink():
                link.unlink()
            os.symlink(target, link, target_is_directory=True)
        except OSError as exc:
            log.debug("feeds cannot size the covers: no link to the images in %s (%s)", link.parent, exc)

    # --- the cross-process lock --------------------------------------------------------------

    def wait_message(self) -> str:
        """What a process says while it waits for another one's hold on the cache."""
        return f"waiting for another process that is using the cache in {self.root}"

    def try_acquire(self, timeout: float) -> bool:
        """Take the lock within `timeout` seconds; False when another process still holds it.
        Raises `CacheUnwritable` when the folder cannot be created."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._lock.acquire(timeout=timeout)
        except filelock.Timeout:
            return False
        except OSError as exc:
            raise CacheUnwritable(self.root, exc) from None
        if self._lock.lock_counter == 1:  # this process's first hold, not a nested one
            self._mark_held()
        return True

    def acquire(self, timeout: float | None = None, *, on_wait: Callable[[str], object] | None = None) -> None:
        """Take the lock, waiting at most `timeout` (default `LOCK_TIMEOUT`) seconds for another
        process; `on_wait` gets `wait_message()` when it has to wait (default: an info log
        line). `CacheBusy` after that, `CacheUnwritable` when the folder cannot be created."""
        if self.try_acquire(0):
            return
        limit = LOCK_TIMEOUT if timeout is None else timeout
        (on_wait or log.info)(self.wait_message())
        if not self.try_acquire(limit):
            raise CacheBusy(
                f"the cache in {self.root} is still in use by another process "
                f"(a build, `mkdocs serve` or `mkdocs-blogsvc sync`/`export`) after {limit:.0f} s; "
                "wait for it to finish (or stop it), then try again"
            )

    def release(self) -> None:
        if self._lock.lock_counter == 1:  # the last hold ends: a clean exit, not a kill
            with contextlib.suppress(OSError):
                os.unlink(self.root / HELD_NAME)
            collector.release()  # the work on the cache is done: what it set aside is collectable
        self._lock.release()

    @contextlib.contextmanager
    def locked(self, *, on_wait: Callable[[str], object] | None = None) -> Iterator[Cache]:
        """Hold the lock for the block (see `acquire`)."""
        self.acquire(on_wait=on_wait)
        try:
            yield self
        finally:
            self.release()

    # --- the manifest --------------------------------------------------------------------------

    def load(self) -> Manifest:
        """The manifest; an empty one when it is missing, corrupt or of another version."""
        with collector.paused():  # about a hundred objects per article, none in cycles
            return self._load()

    def _load(self) -> Manifest:
        path = self.manifest_path
        try:
            return Manifest.decode(
                path.read_bytes(),
                lambda article_id, exc: log.info(
                    "cache entry of article %r dropped (%s): it will be downloaded again", article_id, exc
                ),
            )
        except FileNotFoundError:
            log.debug("no manifest in %s: full sync", self.root)
        except OtherVersion as exc:
            log.info("the cache manifest has format version %r, not %r: full sync", exc.version, MANIFEST_VERSION)
        except (OSError, ValueError) as exc:
            log.info("the cache manifest %s cannot be read (%s): full sync", path, exc)
        return Manifest()

    def save(self, manifest: Manifest) -> None:
        """Replace the manifest atomically and durably (the commit point of a sync). Compact
        JSON (`compact_json`): indented, the file would be a fifth larger to read."""
        data = compact_json(manifest.to_json()) + b"\n"
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write(self.manifest_path, data)
        manifest.unsaved = False

    def check(self, manifest: Manifest) -> CachedArticles:
        """Check every entry against the disk; return the cached articles that are intact.

        An article file whose size and mtime are the ones recorded (`Entry.article_stat`) is
        trusted without being read (its summary is in the manifest); any other is hashed and
        parsed (and its stat and summary recorded when intact), as is every file once after
        the code that makes summaries changed (`_SUMMARIES_MADE_BY`). An entry whose article JSON is
        missing, altered, unparsable or for another id, or whose image files are missing or of
        the wrong size, is removed from `manifest.entries`: it is then left out of
        `knownArticles` and the service sends it again as new. (`read` keeps the files of a
        dropped entry in `CacheContents.dropped`, so they are still cleaned up.)
        """
        summaries: dict[str, ArticleSummary] = {}
        loaded: dict[str, Article] = {}
        files: dict[str, str] = {}
        made_by = _summaries_made_by()
        trusted = manifest.summaries_from == made_by
        for article_id, entry in list(manifest.entries.items()):
            problem = self._check_entry(entry, trust_summary=trusted)
            if isinstance(problem, str):
                log.info("cached article %s is damaged (%s): it will be downloaded again", article_id, problem)
                manifest.drop_entry(article_id)  # the next save drops it, and its files are cleaned up
                continue
            if isinstance(problem, Article):
                loaded[article_id] = problem
                manifest.update_entry(
                    article_id, article_stat=self._article_stat(entry), summary=ArticleSummary.of(problem)
                )
                entry = manifest.entries[article_id]
            assert entry.summary is not None
            summaries[article_id] = entry.summary
            files[article_id] = entry.article_file
        if not trusted:
            manifest.set_summaries_from(made_by)
        return CachedArticles(summaries, lambda article_id: self.read_article(article_id, files[article_id]), loaded)

    def read(self) -> CacheContents:
        """The manifest, checked against the disk."""
        with collector.paused():
            manifest = self.load()
            before = dict(manifest.entries)
            articles = self.check(manifest)
            dropped = frozenset(
                path
                for article_id, entry in before.items()
                if article_id not in manifest.entries
                for path in entry.files()
            )
            return CacheContents(manifest, articles, dropped)

    def read_article(self, article_id: str, relative: str) -> Article:
        """An article file `check` found intact (without reading it). Raises `CacheDamaged`
        when it changed since, behind the cache's back."""
        path = self.locate(relative)
        try:
            article = Article.from_json(json.loads(_read(path))) if path is not None else None
        except (OSError, ValueError, InvalidResponse):
            article = None
        if article is None or article.id != article_id:
            raise CacheDamaged(
                f"the cached article file {self.root / relative} changed during the build; "
                f"delete the cache folder {self.root} and build again"
            )
        return article

    def _article_stat(self, entry: Entry) -> tuple[int, int] | None:
        try:
            found = os.stat(self.root / entry.article_file)
        except OSError:
            return None
        return found.st_size, found.st_mtime_ns

    def _check_entry(self, entry: Entry, *, trust_summary: bool) -> Article | str | None:
        """None when the article file is the one recorded (by size and mtime) and the entry has
        its summary, trusted; the article when the file had to be read and is intact; else what
        is wrong."""
        path = self.locate(entry.article_file)
        if path is None:
            return "article path outside the cache"
        for url, relative in entry.images.items():
            image = self.locate(relative)
            if image is None:
                return "image path outside the cache"
            try:
                size = os.stat(image).st_size
            except OSError:
                return f"image {relative} missing"
            if size != entry.image_sizes.get(url, -1):
                return f"image {relative} altered"
        try:
            found = os.stat(path)
        except OSError:
            return "article file missing"
        if (found.st_size, found.st_mtime_ns) == entry.article_stat and entry.summary is not None and trust_summary:
            return None
        try:
            raw = _read(path)
        except OSError:
            return "article file missing"
        if sha256(raw) != entry.article_sha256:
            return "article file altered"
        try:
            article = Article.from_json(json.loads(raw))
        except (ValueError, InvalidResponse) as exc:
            return f"article file unreadable: {exc}"
        if article.id != entry.id or article.content_hash != entry.content_hash:
            return "article file belongs to another version"
        return article

    # --- files -------------------------------------------------------------------------------

    def write_article(self, article: Article, *, durable: bool = True) -> Entry:
        """Write the article's JSON (content-addressed, so an older manifest's file stays
        untouched) and return its entry, without images or records. With `durable=False` the
        caller makes it durable (`fileio.make_durable`) before saving a manifest that names it."""
        # compact and sorted: json's C encoder (indentation takes the Python one, 4 times slower)
        data = (json.dumps(article.to_json(), ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode(
            "utf-8"
        )
        digest = sha256(data)
        relative = self.article_name(article.id, digest)
        path = self.root / relative
        write_if_changed(path, data, durable=durable)
        found = path.stat()
        return Entry(
            id=article.id,
            content_hash=article.content_hash,
            article_file=relative,
            article_sha256=digest,
            article_stat=(found.st_size, found.st_mtime_ns),
            summary=ArticleSummary.of(article),
        )

    def remove_unowned(self, before: set[str], after: set[str]) -> None:
        """Delete the files named in `before` but not in `after` (manifest paths), only inside
        the cache folder: a manifest names the only files the plugin may delete."""
        for relative in sorted(before - after):
            path = self.resolve(relative)
            if path is not None:
                path.unlink(missing_ok=True)

    def mark_pending(self) -> None:
        """Before a sync writes or drops its first article or image file: leave a mark that a
        kill from here on shows the next sync (durably, so that no file can outlive it)."""
        path = self.root / PENDING_NAME
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write(path, b"")

    def clear_pending(self) -> None:
        """The sync finished: every file it wrote is named by the manifest, every file it dropped
        is deleted."""
        (self.root / PENDING_NAME).unlink(missing_ok=True)

    def finish_pending(self, contents: CacheContents) -> None:
        """At the start of a sync, when a killed one left its mark: remove the files of
        `articles/` and `images/` that `contents` (the manifest on disk) does not name, then the
        mark. The caller holds the lock. Without a mark: one `stat`."""
        path = self.root / PENDING_NAME
        if not path.exists():
            return
        named = contents.owned
        for folder, own_name in _OWN_FILE.items():
            with contextlib.suppress(FileNotFoundError):
                for found in os.scandir(self.root / folder):
                    if own_name.fullmatch(found.name) and f"{folder}/{found.name}" not in named:
                        os.unlink(found.path)
        path.unlink(missing_ok=True)

    def _mark_held(self) -> None:
        """Just after the lock is taken: leave the mark of a holder, which `release` removes. A
        mark already there was left by a holder that was killed (kill -9, a power cut, a crash
        of the interpreter), maybe mid-write: sweep its temp files now. One `open` per build,
        where listing every folder on each build would cost about 1 ms per 1,000 files. Not
        fsynced: a mark lost with a power cut only delays the sweep until a later kill or sync."""
        try:
            os.close(os.open(self.root / HELD_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return
        except FileExistsError:
            pass
        except OSError:
            return  # a cache that cannot be written fails later, where it is written, with its message
        log.debug(
            "the last process to hold the cache %s was stopped while holding it: sweeping its temp files", self.root
        )
        with contextlib.suppress(OSError):
            self.sweep_temp_files()

    def sweep_temp_files(self) -> None:
        """Remove the temp files of writers killed mid-write (the caller holds the lock, so no
        live writer owns one). Only our folders, only our writer's temp-file names."""
        found = [
            path
            for name in (MANIFEST_NAME, OUTPUTS_NAME, PENDING_NAME, IMAGE_TABLE_NAME, SIGNAL_NAME)
            for path in self.root.glob(f".{name}.*.tmp")
        ]
        for folder in (ARTICLES_DIR, IMAGES_DIR, VARIANTS_DIR):
            found += (self.root / folder).glob(".*.tmp")
        found += (self.root / PAGES_DIR).rglob(".*.tmp")
        for path in found:
            if _TEMP_FILE.fullmatch(path.name) and path.is_file():
                path.unlink(missing_ok=True)

    def remove_legacy_outputs(self) -> None:
        """Remove the outputs an earlier version kept in a file per article (`outputs/`), only
        files of its naming; called when the pack that replaces them is first written."""
        folder = self.root / _LEGACY_OUTPUTS_DIR
        if not folder.is_dir():
            return
        for path in folder.iterdir():
            if _LEGACY_OUTPUT_FILE.fullmatch(path.name) or _TEMP_FILE.fullmatch(path.name):
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: anything else in it is not ours

    # --- the signal file of `mkdocs serve` ------------------------------------------------------

    def prepare_signal(self) -> Path:
        """The signal file, created when missing (a watched path must exist). Raises
        `CacheUnwritable`."""
        if not self.signal_path.is_file():
            self.raise_signal("created")
        return self.signal_path

    def raise_signal(self, summary: str) -> None:
        """Replace the signal file: the server sees a change and rebuilds the site. Raises
        `CacheUnwritable`."""
        record = {"at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "summary": summary}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Not durable: a signal lost in a power cut only means one rebuild less.
            atomic_write(self.signal_path, (json.dumps(record) + "\n").encode("utf-8"), durable=False)
        except OSError as exc:
            raise CacheUnwritable(self.root, exc) from None
