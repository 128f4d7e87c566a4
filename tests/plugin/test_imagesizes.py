"""The image table (`imagesizes.prepare`): sizes read once, variants made once and reused,
swept when no image needs them, image work bounded in time."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image, ImageCms, ImageFile, ImageStat

from mkdocs_blogsvc import imagesizes, variants
from mkdocs_blogsvc.cache import Cache
from tests.imagesamples import photo_like, png_bomb, rotated_photo, truncated

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
    # never wider than the original, and its own width offered (found by review: a 700 px image
    # offered only at 480 px showed blurred in a 688 px column)
    assert [v.width for v in table.by_src[f"blog/{B}"].variants] == [480, 700]
    assert table.made == 5 and len(table.variant_files) == 5
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
    assert len(list((cache.root / "variants").iterdir())) == 2  # B's 480 and 700
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
    assert first.made == 2 and "1 images get their variants at the next build" in caplog.text  # 480 and 800
    assert imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True).made == 2


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


# --- found by review: the pipeline held to what the best static-site pipelines do --------------


def test_the_same_bytes_under_two_urls_are_decoded_once_and_their_variants_added_once(tmp_path: Path) -> None:
    """Every --strict build had failed: the shared variants were added once per URL, and MkDocs'
    "docs_dir already has ..." warning came for each copy."""
    same = photo_like(1600, 900)
    cache, manifest = cache_with(tmp_path, {A: same, B: same})
    table = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert table.made == 3 and len(table.variant_files) == 3
    assert table.by_src[f"blog/{A}"].variants == table.by_src[f"blog/{B}"].variants
    again = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert again.made == 0 and len(again.variant_files) == 3


def test_a_photo_with_an_exif_orientation_is_sized_and_turned_as_browsers_show_it(tmp_path: Path) -> None:
    """It had the stored (landscape) size in its <img> (an 836 px layout shift) and sideways variants."""
    data, _shown = rotated_photo()
    assert variants.read_header(io.BytesIO(data)) == variants.Header(900, 1600, False)
    made = variants.make_variants(data, variants.widths_for(900))
    assert [(width, height) for width, height, _webp in made] == [(480, 853), (900, 1600)]
    with Image.open(io.BytesIO(made[0][2])) as variant:
        top, bottom = variant.convert("RGB").getpixel((240, 40)), variant.convert("RGB").getpixel((240, 800))
    assert top[0] > 200 and top[1] < 60 and min(bottom) > 200  # the red band on top, as shown


def test_sixteen_bit_greyscale_is_scaled_not_clipped_to_white() -> None:
    gradient = Image.linear_gradient("L").resize((800, 600)).convert("I").point(lambda value: value * 257)
    out = io.BytesIO()
    gradient.convert("I;16").save(out, format="PNG")
    made = variants.make_variants(out.getvalue(), (480,))
    with Image.open(io.BytesIO(made[0][2])) as variant:
        mean = ImageStat.Stat(variant.convert("L")).mean[0]
    assert 100 < mean < 155, mean  # the gradient's middle grey (it was 254: white)


def test_an_rgb_images_colour_profile_goes_into_its_variants() -> None:
    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    out = io.BytesIO()
    Image.open(io.BytesIO(photo_like(800, 450))).save(out, format="JPEG", icc_profile=profile)
    made = variants.make_variants(out.getvalue(), (480,))
    with Image.open(io.BytesIO(made[0][2])) as variant:
        assert variant.info.get("icc_profile") == profile


def test_decoding_counts_the_copy_it_converts() -> None:
    """A 7000 x 7000 PNG passed a bound of 160 MiB at 3 bytes a pixel and took 490 MB: Pillow holds
    RGB in 4 bytes a pixel, and the converted copy is held beside the decoded image."""
    out = io.BytesIO()
    Image.new("RGB", (5000, 4500), "white").save(out, format="PNG")  # 22.5 megapixels: 180 MB as decoded and converted
    with pytest.raises(variants.Unusable, match="would take more than 160 MiB"):
        variants.make_variants(out.getvalue(), (480,))


def test_a_table_an_older_version_wrote_is_read_again_so_turned_photos_get_their_shown_size(tmp_path: Path) -> None:
    data, _shown = rotated_photo()
    cache, manifest = cache_with(tmp_path, {A: data})
    stat = (cache.root / A).stat()
    old = {"size": stat.st_size, "mtimeNs": stat.st_mtime_ns, "width": 1600, "height": 900, "animated": False}
    cache.image_table_path.write_text(json.dumps({"version": 1, "images": {A: old}}))
    table = imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=False)
    info = table.by_src[f"blog/{A}"]
    assert (info.width, info.height) == (900, 1600)


# --- found by the review of the fixes above -------------------------------------------------------


def test_a_header_is_read_without_decoding_a_pixel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a PNG's orientation with `getexif()` decoded the whole image first: a 12000 x
    12000 PNG of 560 kB took 567 MB before the pixel bound refused it."""

    def no_decoding(*args: object) -> None:
        raise AssertionError("a pixel was decoded")

    plain = io.BytesIO()
    Image.new("RGB", (7000, 7000)).save(plain, format="PNG", compress_level=1)
    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    assert variants.read_header(io.BytesIO(plain.getvalue())) == variants.Header(7000, 7000, False)
    assert (
        variants.refusal(png_bomb(12000, 12000), "png") == "its header claims 12000 x 12000 pixels, more than 50000000"
    )


def test_an_xmp_orientation_is_ignored_as_browsers_ignore_it() -> None:
    """Pillow's `getexif()` takes an XMP `tiff:Orientation` where EXIF has none; browsers do not,
    so the sizes and the variants were turned and the original was not."""
    xmp = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        b'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="6"/></rdf:RDF></x:xmpmeta>'
    )
    out = io.BytesIO()
    Image.new("RGB", (1000, 600), "white").save(out, format="JPEG", xmp=xmp)
    assert variants.read_header(io.BytesIO(out.getvalue())) == variants.Header(1000, 600, False)
    assert [(w, h) for w, h, _ in variants.make_variants(out.getvalue(), (480,))] == [(480, 288)]


def test_sixteen_bit_grey_with_a_transparent_grey_keeps_it_transparent() -> None:
    out = io.BytesIO()
    Image.new("I;16", (800, 600), 40000).save(out, format="PNG", transparency=40000)
    ((_w, _h, webp),) = variants.make_variants(out.getvalue(), (480,))
    with Image.open(io.BytesIO(webp)) as variant:
        assert variant.mode == "RGBA" and variant.getpixel((10, 10))[3] == 0


def test_a_large_progressive_jpeg_counts_its_full_size_coefficients() -> None:
    """libjpeg keeps a progressive JPEG's coefficients at full size whatever `draft` says: an
    8160 x 6120 one of 586 kB took 316 MB. A baseline one of the same size is decoded small."""
    for progressive in (True, False):
        out = io.BytesIO()
        Image.new("RGB", (6000, 5000), "white").save(out, format="JPEG", progressive=progressive, quality=50)
        if progressive:
            with pytest.raises(variants.Unusable, match="would take more than 160 MiB"):
                variants.make_variants(out.getvalue(), (480,))
        else:
            assert [(w, h) for w, h, _ in variants.make_variants(out.getvalue(), (480,))] == [(480, 400)]


def test_the_same_refused_bytes_under_two_urls_are_decoded_and_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = truncated(photo_like(1600, 900))
    cache, manifest = cache_with(tmp_path, {A: broken, B: broken})
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.blogsvc"):
        imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
        imagesizes.prepare(cache, manifest, blog_dir="blog", optimize=True)
    assert len([r for r in caplog.records if "keeps its original only" in r.getMessage()]) == 1


def test_the_summaries_code_unreadable_as_a_file_counts_as_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Imported from a zip, `models.py` is no file: every cache read failed on it."""
    from mkdocs_blogsvc import __version__, cache

    monkeypatch.setattr(cache, "_SUMMARIES_MADE_BY", Path("/nonexistent.zip/mkdocs_blogsvc/models.py"))
    assert cache._summaries_made_by() == f"version {__version__}"
