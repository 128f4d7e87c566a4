"""images.py and imagetypes.py: type sniffing (one rule for the plugin and the service),
refusals, URLs shown without secrets, concurrent downloads from the real service (in-process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.api import BlogServiceClient, display_url
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.images import download_all
from mkdocs_blogsvc.imagetypes import looks_like_svg, sniff
from mkdocs_blogsvc.models import is_web_url
from mkdocs_blogsvc.server import media
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, add_owner
from tests.imagesamples import photo_like, png_bomb

SAMPLES = Path(media.__file__).parent / "sample_media"
PNG = (SAMPLES / "cover-01.png").read_bytes()
GIF = photo_like(40, 30, fmt="GIF")
SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


AVIF_COMPATIBLE = b"\0\0\0\x1cftypmif1\0\0\0\0mif1avifmiaf" + bytes(8)  # AVIF as a compatible brand only
SAMPLES_BY_TYPE = [
    (PNG, "png"),
    (b"\xff\xd8\xff\xe0rest", "jpg"),
    (b"GIF89a....", "gif"),
    (b"GIF87a....", "gif"),
    (b"RIFF\0\0\0\0WEBPVP8 ", "webp"),
    (b"RIFF\0\0\0\0WEBPVP8L", "webp"),
    (b"\0\0\0\x1cftypavif\0\0\0\0", "avif"),
    (AVIF_COMPATIBLE, "avif"),
    (SVG, None),
    (b"<html>", None),
    (b"", None),
    (PNG[:12] + b"XXXX", None),
    (b"RIFF\0\0\0\0WAVEfmt ", None),
    (b"\0\0\0\x1cftypmp42\0\0\0\0isommp41", None),
    (b"\0\0\0\x1cftypavis\0\0\0\0", "avif"),  # an AVIF image sequence
    # near misses: each differs from an accepted signature in one part
    (b"\xff\xd8\x00\xe0rest", None),
    (b"GIF90a....", None),
    (b"RIFF\0\0\0\0WEBPXXXX", None),
    (b"RIFF\0\0\0\0AVI VP8 ", None),
    (b"\0\0\0\x1cmoovavif\0\0\0\0", None),
    (b"\0\0\0\x14ftypmif1\0\0\0\0mif1avif" + bytes(8), None),  # `avif` after the ftyp box's end
    (b"\0\0\0\x18ftypmif1avifmiaf", None),  # `avif` as the minor version, not a brand
    (b"\0\0\0\x18ftypmif1\0\0\0\0xxavifxx", None),  # `avif` across two brands
]


@pytest.mark.parametrize(("data", "expected"), SAMPLES_BY_TYPE)
def test_sniff(data: bytes, expected: str | None) -> None:
    assert sniff(data) == expected


@pytest.mark.parametrize(("data", "expected"), SAMPLES_BY_TYPE)
def test_the_service_hosts_exactly_the_images_the_plugin_accepts(data: bytes, expected: str | None) -> None:
    if expected is not None:
        assert media.sniff_image(data) == expected
    else:
        with pytest.raises(media.ImageError):
            media.sniff_image(data)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://cdn.test/a.png?X-Amz-Signature=secret&token=secret", "https://cdn.test/a.png"),
        ("https://cdn.test/a.png#token=secret", "https://cdn.test/a.png"),
        ("https://cdn.test/a.png", "https://cdn.test/a.png"),
        ("https://cdn.test/" + "x" * 200, "https://cdn.test/" + "x" * 80 + "..."),
    ],
)
def test_display_url_drops_query_and_fragment(url: str, shown: str) -> None:
    assert display_url(url) == shown


@pytest.mark.parametrize(
    ("data", "svg"),
    [
        (SVG, True),
        (b"\xef\xbb\xbf\n  <svg xmlns='http://www.w3.org/2000/svg'/>", True),
        (b"<!DOCTYPE svg><svg/>", True),
        (b"<?xml version='1.0'?><note/>", False),
        (b"<html><svg/></html>", False),
    ],
)
def test_svg_is_recognised_to_name_the_refusal(data: bytes, svg: bool) -> None:
    assert looks_like_svg(data) is svg


def test_only_http_urls_are_fetched() -> None:
    assert is_web_url("https://a.test/x.png") and is_web_url("http://a.test/x")
    for url in (
        "https:///x.png",
        "http:x.png",
        "file:///etc/passwd",
        "ftp://a/x",
        "javascript:alert(1)",
        "//a.test/x",
        "data:image/png;base64,xx",
    ):
        assert not is_web_url(url)


def test_file_name_is_a_hash_of_the_url() -> None:
    name = Cache.image_name("https://a.test/../../x.png", "png")
    assert name.startswith("images/") and name.endswith(".png") and ".." not in name and len(name) == 7 + 32 + 4


@pytest.fixture
def hosted(db: Database, app) -> Iterator[tuple[BlogServiceClient, dict[str, str]]]:
    owner = add_owner(db)
    with db.session(write=True) as session:
        png = media.store_image(session, owner.blog_id, PNG)
        gif = media.store_image(session, owner.blog_id, GIF)
    urls = {
        "png": f"{IN_PROCESS_URL}/media/{png}",
        "gif": f"{IN_PROCESS_URL}/media/{gif}",
        "missing": f"{IN_PROCESS_URL}/media/{'0' * 32}.png",
    }
    with BlogServiceClient(IN_PROCESS_URL, transport=httpx.WSGITransport(app=app), retries=0) as client:
        yield client, urls


def test_downloads_are_saved_under_hashed_names_and_failures_reported(hosted, tmp_path: Path) -> None:
    client, urls = hosted
    result = download_all(
        client, [urls["png"], urls["gif"], urls["png"], urls["missing"], "ftp://x/y.png"], Cache(tmp_path)
    )
    assert result.saved == {
        urls["png"]: (Cache.image_name(urls["png"], "png"), len(PNG)),
        urls["gif"]: (Cache.image_name(urls["gif"], "gif"), len(GIF)),
    }
    assert (tmp_path / Cache.image_name(urls["png"], "png")).read_bytes() == PNG
    assert set(result.failed) == {urls["missing"], "ftp://x/y.png"}
    assert "not an http(s) URL" in result.failed["ftp://x/y.png"]


def test_size_limit_and_non_images_are_refused(hosted, tmp_path: Path) -> None:
    client, urls = hosted
    result = download_all(client, [urls["png"]], Cache(tmp_path), max_bytes=100)
    assert "larger than 100 bytes" in result.failed[urls["png"]]

    class Svg:
        def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
            return SVG, "image/svg+xml"

    refused = download_all(Svg(), ["https://a.test/x.svg"], Cache(tmp_path))
    assert "SVG" in refused.failed["https://a.test/x.svg"]
    assert not (tmp_path / "images").exists() or not any((tmp_path / "images").glob("*.svg"))


def test_unchanged_image_is_not_rewritten(hosted, tmp_path: Path) -> None:
    client, urls = hosted
    download_all(client, [urls["png"]], Cache(tmp_path))
    target = tmp_path / Cache.image_name(urls["png"], "png")
    before = target.stat().st_mtime_ns
    download_all(client, [urls["png"]], Cache(tmp_path))
    assert target.stat().st_mtime_ns == before


def test_a_full_disk_stops_every_download_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Found by review: a cache on a full disk printed a warning per image (192 of them) before
    the sync's one-line "cannot be written". The first such failure now stops the batch; the
    sync reports it once (`CacheUnwritable`). Each worker stops itself, so a loaded machine
    cannot let the pool run on. A full disk cannot be made here without mounting a
    file system, so the write fails by hand."""
    import errno

    from mkdocs_blogsvc import images

    attempts: list[Path] = []

    def disk_full(path: Path, data: bytes, **options: object) -> bool:
        attempts.append(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    class Service:
        def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
            return PNG, "image/png"

    monkeypatch.setattr(images, "write_if_changed", disk_full)
    urls = [f"https://a.test/{n}.png" for n in range(40)]
    with pytest.raises(OSError) as raised:
        download_all(Service(), urls, Cache(tmp_path), workers=2)
    assert raised.value.errno == errno.ENOSPC
    assert len(attempts) <= 2, f"{len(attempts)} images were still tried (at most one per worker)"


class Counting:
    """A service answering every download with `data`, counting the calls."""

    def __init__(self, data: bytes) -> None:
        self.data, self.calls = data, 0

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
        self.calls += 1
        return self.data, "image/png"


def test_an_image_of_exactly_the_limit_is_kept(hosted, tmp_path: Path) -> None:
    client, urls = hosted
    result = download_all(client, [urls["png"]], Cache(tmp_path), max_bytes=len(PNG))
    assert result.saved == {urls["png"]: (Cache.image_name(urls["png"], "png"), len(PNG))}


def test_the_size_limit_holds_whatever_the_downloader_returns(tmp_path: Path) -> None:
    result = download_all(Counting(PNG), ["https://a.test/x.png"], Cache(tmp_path), max_bytes=100)
    assert result.failed == {"https://a.test/x.png": "larger than 100 bytes"}
    assert not (tmp_path / "images").exists()


def test_a_url_listed_twice_is_downloaded_once(tmp_path: Path) -> None:
    service = Counting(PNG)
    result = download_all(service, ["https://a.test/x.png", "https://a.test/x.png"], Cache(tmp_path))
    assert service.calls == 1 and list(result.saved) == ["https://a.test/x.png"]


def test_an_image_that_cannot_be_written_is_a_failure_of_that_image(tmp_path: Path) -> None:
    """Another write error than a full or read-only cache (here a folder where the image goes)
    fails that image only, and the page keeps its remote URL."""
    cache = Cache(tmp_path)
    (tmp_path / Cache.image_name("https://a.test/x.png", "png")).mkdir(parents=True)
    result = download_all(Counting(PNG), ["https://a.test/x.png", "https://a.test/y.png"], cache)
    assert result.failed["https://a.test/x.png"].startswith("cannot be written to the cache: ")
    assert list(result.saved) == ["https://a.test/y.png"]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        # found by review: published on the site's origin, with a JPEG's name, an HTML page behind its first bytes
        (b"\xff\xd8\xff\xe0<html><script>alert(1)</script></html>", "its JPG header cannot be read"),
        # found by review: served from the site with width="9000" height="9000", to every reader's browser
        (png_bomb(9000, 9000), "its header claims 9000 x 9000 pixels, more than 50000000"),
        (png_bomb(), "more than 50000000"),
    ],
    ids=["polyglot", "bomb-81-megapixels", "bomb-1600-megapixels"],
)
def test_an_image_pillow_cannot_read_or_an_image_bomb_is_refused(tmp_path: Path, data: bytes, reason: str) -> None:
    result = download_all(Counting(data), ["https://a.test/x"], Cache(tmp_path))
    assert reason in result.failed["https://a.test/x"] and not result.saved
    assert not (tmp_path / "images").exists() or not any((tmp_path / "images").iterdir())
