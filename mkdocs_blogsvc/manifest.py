"""The cache manifest: which files in `cache_dir` the plugin created, and for which article.

`cache_dir/manifest.json` is the single source of truth of the cache. It is written atomically
and durably (`fileio.atomic_write`: temp file in the same folder, fsync, `os.replace`), so a
build killed at any point leaves either the old or the new manifest, never half of one. The files it names are content-addressed or
written before the manifest that refers to them, so whatever manifest is on disk describes files
that exist (or the next `verify` notices that they do not).

Layout of `cache_dir` (all paths in the manifest are relative to it, POSIX style):

    manifest.json
    articles/<sha256(id)[:24]>-<sha256(json)[:16]>.json   the article as the service sent it
    images/<sha256(url)[:32]>.<ext>                      downloaded images
    docs/<posts_dir>/<slug>.md                           rendered pages (and the index page)

A missing, corrupt or unknown-version manifest is an empty one (a full sync), never a crash.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mkdocs_blogsvc.errors import InvalidResponse
from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.models import Article, KnownArticle

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1

log = logging.getLogger("mkdocs.plugins.mkdocs_blogsvc.manifest")


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def inside(root: Path, relative: str) -> Path | None:
    """`root / relative` when that stays inside `root` (no `..`, not absolute), else None.

    Every path read from the manifest goes through this: a tampered manifest must not make
    the plugin read or delete anything outside `cache_dir`.
    """
    pure = PurePosixPath(relative)
    if not relative or pure.is_absolute() or ".." in pure.parts or "\\" in relative or ":" in relative:
        return None
    return root.joinpath(*pure.parts)


@dataclass(frozen=True)
class Entry:
    """What the cache holds for one article."""

    id: str
    content_hash: str
    article_file: str
    article_sha256: str
    #: remote URL -> cached image file (relative to cache_dir), for images downloaded.
    images: dict[str, str] = field(default_factory=dict)
    #: size of each image file, checked by `verify` (cheap, unlike hashing megabytes each build).
    image_sizes: dict[str, int] = field(default_factory=dict)

    def files(self) -> Iterator[str]:
        yield self.article_file
        yield from self.images.values()

    def to_json(self) -> dict[str, Any]:
        return {
            "contentHash": self.content_hash,
            "article": self.article_file,
            "articleSha256": self.article_sha256,
            "images": dict(sorted(self.images.items())),
            "imageSizes": dict(sorted(self.image_sizes.items())),
        }

    @classmethod
    def from_json(cls, article_id: str, data: Any) -> Entry:
        if not isinstance(data, dict):
            raise ValueError("entry is not an object")
        images, sizes = data.get("images", {}), data.get("imageSizes", {})
        if not (isinstance(images, dict) and isinstance(sizes, dict)):
            raise ValueError("entry has fields of the wrong type")
        return cls(
            id=article_id,
            content_hash=_str(data, "contentHash"),
            article_file=_str(data, "article"),
            article_sha256=_str(data, "articleSha256"),
            images={str(k): str(v) for k, v in images.items()},
            image_sizes={str(k): int(v) for k, v in sizes.items()},
        )


def _str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key!r} is missing")
    return value


@dataclass
class Manifest:
    """The manifest in memory. `entries` by article id; `rendered` lists page files we wrote."""

    entries: dict[str, Entry] = field(default_factory=dict)
    rendered: list[str] = field(default_factory=list)
    blog_language: str | None = None
    blog_name: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "blogLanguage": self.blog_language,
            "blogName": self.blog_name,
            "articles": {key: self.entries[key].to_json() for key in sorted(self.entries)},
            "rendered": sorted(set(self.rendered)),
        }

    def known_articles(self) -> list[KnownArticle]:
        return [KnownArticle(entry.id, entry.content_hash) for entry in self.entries.values()]

    def owned_files(self) -> set[str]:
        """Every cache file (relative path) the manifest says we created."""
        owned = {path for entry in self.entries.values() for path in entry.files()}
        return owned | set(self.rendered)


def load(cache_dir: Path) -> Manifest:
    """The manifest of `cache_dir`; an empty one when it is missing, corrupt or of another version."""
    path = cache_dir / MANIFEST_NAME
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        log.debug("blogsvc: no manifest in %s: full sync", cache_dir)
        return Manifest()
    except (OSError, ValueError) as exc:
        log.info("blogsvc: the cache manifest %s cannot be read (%s): full sync", path, exc)
        return Manifest()
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        version = data.get("version") if isinstance(data, dict) else None
        log.info("blogsvc: the cache manifest has format version %r, not %r: full sync", version, MANIFEST_VERSION)
        return Manifest()
    manifest = Manifest()
    language = data.get("blogLanguage")
    manifest.blog_language = language if isinstance(language, str) else None
    name = data.get("blogName")
    manifest.blog_name = name if isinstance(name, str) else None
    rendered = data.get("rendered")
    manifest.rendered = [p for p in rendered if isinstance(p, str)] if isinstance(rendered, list) else []
    articles = data.get("articles")
    for article_id, raw in (articles.items() if isinstance(articles, dict) else ()):
        try:
            manifest.entries[article_id] = Entry.from_json(article_id, raw)
        except (ValueError, TypeError) as exc:
            log.info("blogsvc: cache entry of article %r dropped (%s): it will be downloaded again", article_id, exc)
    return manifest


def save(cache_dir: Path, manifest: Manifest) -> None:
    text = json.dumps(manifest.to_json(), indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    cache_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(cache_dir / MANIFEST_NAME, text.encode("utf-8"))


def verify(cache_dir: Path, manifest: Manifest) -> dict[str, Article]:
    """Check every entry against the disk; return the cached articles that are intact.

    An entry whose article JSON is missing, altered, unparsable or for another id, or whose
    image files are missing or of the wrong size, is removed from `manifest.entries`: it is
    then left out of `knownArticles` and the service sends it again as new. (The sync takes
    `owned_files()` before calling this, so the files of a dropped entry are still cleaned up.)
    """
    articles: dict[str, Article] = {}
    for article_id, entry in list(manifest.entries.items()):
        problem = _check(cache_dir, entry)
        if isinstance(problem, Article):
            articles[article_id] = problem
            continue
        log.info("blogsvc: cached article %s is damaged (%s): it will be downloaded again", article_id, problem)
        del manifest.entries[article_id]
    return articles


def _check(cache_dir: Path, entry: Entry) -> Article | str:
    path = inside(cache_dir, entry.article_file)
    if path is None:
        return "article path outside the cache"
    try:
        raw = path.read_bytes()
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
    for url, relative in entry.images.items():
        image = inside(cache_dir, relative)
        if image is None:
            return "image path outside the cache"
        try:
            size = image.stat().st_size
        except OSError:
            return f"image {relative} missing"
        if size != entry.image_sizes.get(url, -1):
            return f"image {relative} altered"
    return article
