"""Each cached image's intrinsic size and byte count, and with `optimize_images` its WebP
variants: kept in the cache's image table (`Cache.image_table_path`) so that a build with
nothing changed reads one small JSON file and stats each image, and imports no imaging code.

Why a table and not the manifest: the sizes are facts about files, not about articles; an image
is looked at again only when its file's size or mtime changed. The variants are named by the
image's content hash and `variants.SETTINGS` (`Cache.variant_name`), so a changed image or
setting never reuses a stale variant, and the sweep (`Cache.sweep_variants`) deletes those no
cached image needs (a deleted article's, all of them when `optimize_images` is off).

Hostile images (`variants`): one claiming too many pixels is never decoded, a corrupt or
truncated one keeps its original; each is one warning naming the article, recorded in the table
so that later builds neither decode it again nor warn again. The work is bounded in time: the
variants not made within `budget` seconds are made by the next build.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.fileio import compact_json, sha256, write_if_changed
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import Manifest
from mkdocs_blogsvc.variants import RASTER_TYPES, SETTINGS, widths_for

#: 2: sizes as shown (after the EXIF orientation): a table of version 1 is read again, each image once.
TABLE_VERSION = 2
#: Image types whose header is read (every type the downloads accept).
SIZED_TYPES = frozenset({"png", "jpg", "gif", "webp", "avif"})


@dataclass(frozen=True, slots=True)
class Variant:
    width: int
    height: int
    #: the file's name, next to the original in the site (`<blog_dir>/images/<name>`).
    name: str
    size: int


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What a page says of one image: its intrinsic size, its bytes, its variants (smallest first)."""

    width: int
    height: int
    size: int
    variants: tuple[Variant, ...] = ()

    def key(self) -> list[Any]:
        """The facts that change an output that shows this image (part of output keys)."""
        return [self.width, self.height, self.size, [[v.width, v.name] for v in self.variants]]


@dataclass
class ImageTable:
    """The images of one build: by docs-relative path, and the variant files to add to the site
    (docs-relative path, cache file)."""

    by_src: dict[str, ImageInfo] = field(default_factory=dict)
    variant_files: list[tuple[str, str]] = field(default_factory=list)
    made: int = 0

    def by_name(self) -> dict[str, ImageInfo]:
        """By file name (unique: names are hashes), as a page's HTML refers to them."""
        return {src.rsplit("/", 1)[-1]: info for src, info in self.by_src.items()}


def prepare(
    cache: Cache,
    manifest: Manifest,
    *,
    blog_dir: str,
    optimize: bool,
    budget: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
) -> ImageTable:
    """The image table of every cached image, its variants made where missing (with
    `optimize`), unneeded variants swept, the table saved when it changed. The caller holds
    the cache's lock."""
    owners: dict[str, str] = {}
    for article_id, entry in manifest.entries.items():
        for relative in entry.images.values():
            owners.setdefault(relative, article_id)
    old = _load(cache)
    records: dict[str, dict[str, Any]] = {}
    table = ImageTable()
    existing = cache.existing_variants()
    keep: set[str] = set()
    ends = clock() + budget
    postponed = 0
    #: variants by their names (so by content) made or found this build, and the names listed:
    #: images with the same bytes under several URLs share them, decoded once, added once.
    shared: dict[tuple[str, ...], tuple[Variant, ...]] = {}
    refused: dict[tuple[str, ...], str] = {}  # and those refused this build, with the reason
    listed: set[str] = set()
    changed = False  # a record made or changed (else the table is saved only if images went or came)
    for relative in sorted(owners):
        path = cache.locate(relative)
        extension = relative.rsplit(".", 1)[-1]
        if path is None or extension not in SIZED_TYPES:
            continue
        try:
            stat = os.stat(path)
        except OSError:
            continue
        record = old.get(relative)
        if not (
            isinstance(record, dict)
            and record.get("size") == stat.st_size
            and record.get("mtimeNs") == stat.st_mtime_ns
        ):
            record, changed = _look_at(path, stat), True
            if "reason" in record:  # an image bomb: once, when first seen
                log.warning(
                    "image %s of article %s keeps its original only, without a size: %s; "
                    "replace the image on the service",
                    relative,
                    owners[relative],
                    record["reason"],
                )
        records[relative] = record
        width, height = record.get("width"), record.get("height")
        if not (type(width) is int and type(height) is int and width > 0 and height > 0):
            continue  # no readable header (or a damaged table): the page keeps today's bare <img>
        variants: tuple[Variant, ...] = ()
        if optimize and extension in RASTER_TYPES and not record.get("animated"):
            wanted = _wanted(cache, record, width)
            if wanted and record.get("refused") != SETTINGS:
                names = tuple(name for _w, name in wanted)
                held = _variants(record)
                if names in refused:  # the same bytes under another URL, refused this build: once
                    record.update(refused=SETTINGS, reason=refused[names], variants=[])
                    changed = True
                elif names in shared:  # the same bytes under another URL: made or found this build
                    variants = shared[names]
                    if held != variants:
                        record["variants"], changed = [[v.width, v.height, v.name, v.size] for v in variants], True
                elif tuple(v.name for v in held) == names and all(f"variants/{name}" in existing for name in names):
                    variants = held  # the usual image of a build with nothing changed
                elif clock() < ends:
                    variants = _make(cache, path, relative, record, wanted, owners[relative])
                    table.made, changed = table.made + len(variants), True
                else:
                    postponed += 1
                if variants:
                    shared[names] = variants
                elif record.get("refused") == SETTINGS:
                    refused[names] = str(record.get("reason"))
                keep.update(f"variants/{v.name}" for v in variants)
            elif record.get("refused") == SETTINGS:  # warned about when it was refused
                log.debug(
                    "image %s of article %s keeps its original only: %s",
                    relative,
                    owners[relative],
                    record.get("reason"),
                )
        info = ImageInfo(width, height, stat.st_size, variants)
        table.by_src[f"{blog_dir}/{relative}"] = info
        for variant in variants:
            if variant.name not in listed:  # once, however many URLs have these bytes
                listed.add(variant.name)
                table.variant_files.append(
                    (f"{blog_dir}/images/{variant.name}", str(cache.root / "variants" / variant.name))
                )
    if postponed:
        log.info("%d images get their variants at the next build (%g s spent on images)", postponed, budget)
    cache.sweep_variants(existing, keep)
    if changed or records.keys() != old.keys():  # a build with nothing changed encodes nothing
        _save(cache, records)
    return table


def _look_at(path: str, stat: os.stat_result) -> dict[str, Any]:
    """A new record: the header's size (no pixel decoded) and the content's hash."""
    from mkdocs_blogsvc.variants import (  # Pillow: only for an image not seen before
        Unusable,
        read_header,
    )

    record: dict[str, Any] = {"size": stat.st_size, "mtimeNs": stat.st_mtime_ns}
    try:
        with open(path, "rb") as file:
            record["sha256"] = sha256(file.read())
    except OSError:
        return record
    try:
        header = read_header(path)
    except Unusable as exc:
        record["reason"] = str(exc)
        return record
    if header is not None:
        record.update(width=header.width, height=header.height, animated=header.animated)
    return record


def _wanted(cache: Cache, record: dict[str, Any], width: int) -> list[tuple[int, str]]:
    """(width, file name) of each variant the image should have."""
    digest = record.get("sha256")
    if not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):  # the table may be damaged
        return []
    return [(w, cache.variant_name(digest, SETTINGS, w).rsplit("/", 1)[-1]) for w in widths_for(width)]


def _variants(record: dict[str, Any]) -> tuple[Variant, ...]:
    try:
        return tuple(Variant(int(v[0]), int(v[1]), str(v[2]), int(v[3])) for v in record.get("variants") or ())
    except (LookupError, TypeError, ValueError):
        return ()


def _make(
    cache: Cache, path: str, relative: str, record: dict[str, Any], wanted: list[tuple[int, str]], article_id: str
) -> tuple[Variant, ...]:
    """Decode the image once and write its variants; on a refusal, one warning naming the
    article, recorded so that no later build decodes it again."""
    from mkdocs_blogsvc.variants import Unusable, make_variants

    try:
        with open(path, "rb") as file:
            data = file.read()
        made = make_variants(data, tuple(w for w, _name in wanted))
    except Unusable as exc:
        record.update(refused=SETTINGS, reason=str(exc), variants=[])
        log.warning(
            "image %s of article %s keeps its original only (no WebP variants): %s; replace the image on the service",
            relative,
            article_id,
            exc,
        )
        return ()
    except OSError as exc:
        log.warning(
            "WebP variants of image %s of article %s not made (%s): the page offers the original; "
            "the next build tries again",
            relative,
            article_id,
            exc,
        )
        return ()
    names = dict(wanted)
    variants = []
    folder = cache.root / "variants"
    folder.mkdir(parents=True, exist_ok=True)
    for width, height, webp in made:
        name = names[width]
        write_if_changed(folder / name, webp, durable=False)
        variants.append(Variant(width, height, name, len(webp)))
    record["variants"] = [[v.width, v.height, v.name, v.size] for v in variants]
    record.pop("refused", None)
    record.pop("reason", None)
    return tuple(variants)


def _load(cache: Cache) -> dict[str, Any]:
    try:
        data = json.loads(cache.image_table_path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != TABLE_VERSION or not isinstance(data.get("images"), dict):
        return {}
    images: dict[str, Any] = data["images"]
    return images


def _save(cache: Cache, records: Mapping[str, Any]) -> None:
    """Write the table when its bytes differ (a build with nothing changed writes nothing)."""
    data = compact_json({"version": TABLE_VERSION, "images": dict(sorted(records.items()))}) + b"\n"
    try:
        write_if_changed(cache.image_table_path, data, durable=False)
    except OSError as exc:
        log.debug("image table not saved (%s): read again next build", exc)
