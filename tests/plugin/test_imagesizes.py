"""The image table (`imagesizes.prepare`): sizes read once, variants made once and reused,
swept when no image needs them, image work bounded in time."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mkdocs_blogsvc import imagesizes, variants
from mkdocs_blogsvc.cache import Cache
from tests.imagesamples import photo_like, truncated

A = "images/" + "a" * 32 + ".png"
B = "images/" + "b" * 32 + ".png"


def cache_with(tmp_path: Path, files: dict[str, bytes]) -> tuple[Cache, Any]:
    cache = Cache(tmp_path / "cache")
    for relative, data in files.items():
        (cache.root / relative).parent.mkdir(parents=True, exist_ok=True)
        (cache.root / relative).write_bytes(data)
    manifest = SimpleNamespace(
        entries={
            f"article-{i}": SimpleNamespace(images={f"https://x.test/{i}": relative})
            for i, relative in enumerate(files)
        }
    )
    return cache, manifest


def test_variants_are_made_once_then_reused_and_swept_when_not_needed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache, manifest = cache_with(tmp_path, {A: photo_like(1600, 900), B: photo_like(700, 400, seed=2)})
    table = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert (table.by_src[f"blog/{A}"].width, table.by_src[f"blog/{A}"].height) == (1600, 900)
    assert [v.width for v in table.by_src[f"blog/{A}"].variants] == [480, 960, 1440]
    assert [v.width for v in table.by_src[f"blog/{B}"].variants] == [480]  # never wider than the original
    assert table.made == 4 and len(table.variant_files) == 4
    stamps = {p.name: p.stat().st_mtime_ns for p in (cache.root / "variants").iterdir()}
    table_stamp = cache.image_table_path.stat().st_mtime_ns

    def no_decoding(*args: object) -> None:
        raise AssertionError("a build with nothing changed decoded an image")

    monkeypatch.setattr(variants, "make_variants", no_decoding)
    monkeypatch.setattr(variants, "read_header", no_decoding)
    again = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert again.by_src == table.by_src and again.made == 0
    assert {p.name: p.stat().st_mtime_ns for p in (cache.root / "variants").iterdir()} == stamps
    assert cache.image_table_path.stat().st_mtime_ns == table_stamp

    del manifest.entries["article-0"]  # A's article deleted: its variants go
    imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert len(list((cache.root / "variants").iterdir())) == 1
    off = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False)  # switched off: all go
    assert not list((cache.root / "variants").iterdir()) and off.by_src[f"blog/{B}"].variants == ()


def test_the_table_is_encoded_only_when_a_record_changed_or_an_image_came_or_went(tmp_path: Path) -> None:
    """A build with nothing changed leaves the table as it is, whatever its spelling (no
    encoding of every record); a lost record, and an image gone, are saved."""
    cache, manifest = cache_with(tmp_path, {A: photo_like(800, 450), B: photo_like(700, 400, seed=2)})
    table = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False)
    saved = json.loads(cache.image_table_path.read_text())
    cache.image_table_path.write_text(json.dumps(saved, indent=2))  # the same records, spelled otherwise
    spelled = cache.image_table_path.read_bytes()
    assert imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False).by_src == table.by_src
    assert cache.image_table_path.read_bytes() == spelled

    del saved["images"][A]  # a record lost: read again and saved
    cache.image_table_path.write_text(json.dumps(saved))
    assert imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False).by_src == table.by_src
    assert set(json.loads(cache.image_table_path.read_text())["images"]) == {A, B}

    del manifest.entries["article-1"]  # B's article deleted: its record goes
    imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False)
    assert set(json.loads(cache.image_table_path.read_text())["images"]) == {A}


def test_image_work_is_bounded_in_time_and_the_rest_is_done_next_time(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache, manifest = cache_with(tmp_path, {A: photo_like(800, 450), B: photo_like(800, 450, seed=4)})
    ticks = iter(range(100))
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.blogsvc"):
        first = imagesizes.prepare(
            cache, manifest, blog_dir="blog", optimize=True, budget=1.5, clock=lambda: float(next(ticks))
        )
    assert first.made == 1 and "1 images get their variants at the next build" in caplog.text
    assert imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True).made == 1


def test_a_corrupt_image_keeps_its_size_and_original_and_is_warned_about_once(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache, manifest = cache_with(tmp_path, {A: truncated(photo_like(1600, 900))})
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.blogsvc"):
        table = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
        imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    info = table.by_src[f"blog/{A}"]
    assert (info.width, info.height, info.variants) == (1600, 900, ())  # the header is intact
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "article-0" in warning and "truncated" in warning and "replace the image on the service" in warning


def test_an_unreadable_header_gives_no_size(tmp_path: Path) -> None:
    cache, manifest = cache_with(tmp_path, {A: b"\x89PNG\r\n\x1a\n" + b"\0" * 40})
    assert imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False).by_src == {}
