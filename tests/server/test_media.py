"""Hosted images: type sniffing, content-addressed keys, `GET /media/<key>`, and the home page."""

from __future__ import annotations

import hashlib
from importlib import resources

import httpx
import pytest

from mkdocs_blogsvc.server import media, security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ImageError
from tests.conftest import add_owner

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

PNG = resources.files("mkdocs_blogsvc.server").joinpath("sample_media/inline-sync-diff.png").read_bytes()
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01" + bytes(40)
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + bytes(20)
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00" + bytes(24)


@pytest.mark.parametrize(
    ("data", "extension"),
    [(PNG, "png"), (JPEG, "jpg"), (GIF, "gif"), (GIF.replace(b"89a", b"87a"), "gif"), (WEBP, "webp")],
)
def test_real_type_is_sniffed_from_the_bytes(data: bytes, extension: str) -> None:
    assert media.sniff_image(data) == extension


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"hello, world\n", "not an image"),
        (b"%PDF-1.7\n", "not an image"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "not an image"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "SVG images are refused"),
        (b'\xef\xbb\xbf<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>', "SVG images are refused"),
    ],
)
def test_anything_else_is_refused_with_a_reason(data: bytes, message: str) -> None:
    with pytest.raises(ImageError, match=message):
        media.sniff_image(data)


def test_store_image_names_the_key_after_the_content_and_stores_it_once(db: Database) -> None:
    owner = add_owner(db)
    with db.session(write=True) as session:
        first = media.store_image(session, owner.blog_id, PNG)
        again = media.store_image(session, owner.blog_id, PNG)
        other = media.store_image(session, owner.blog_id, JPEG)
    assert first == again == hashlib.sha256(PNG).hexdigest()[:32] + ".png"
    assert other.endswith(".jpg") and other != first
    with db.session() as session:
        row = session.get(tables.Media, first)
        assert row is not None and row.data == PNG and row.content_type == "image/png"
        assert session.query(tables.Media).count() == 2


def test_store_image_refuses_oversized_data(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = add_owner(db)
    monkeypatch.setattr(media, "MAX_IMAGE_BYTES", len(PNG) - 1)
    with db.session(write=True) as session, pytest.raises(ImageError, match="too large"):
        media.store_image(session, owner.blog_id, PNG)


def test_store_image_takes_an_image_of_exactly_the_limit(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = add_owner(db)
    monkeypatch.setattr(media, "MAX_IMAGE_BYTES", len(PNG))
    with db.session(write=True) as session:
        assert media.store_image(session, owner.blog_id, PNG).endswith(".png")


def test_media_is_served_with_its_type_and_cached_forever(db: Database, http: httpx.Client) -> None:
    owner = add_owner(db)
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, GIF)
    response = http.get(f"/media/{key}")
    assert response.status_code == 200
    assert response.content == GIF
    assert response.headers["Content-Type"] == "image/gif"
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    # Opened as a document of its own, an image may run nothing.
    assert response.headers["Content-Security-Policy"] == "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    assert response.headers["ETag"] == f'"{key.split(".")[0]}"'
    assert "Date" not in response.headers  # the HTTP server adds the one Date header


def test_a_matching_etag_gets_304(db: Database, http: httpx.Client) -> None:
    owner = add_owner(db)
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, PNG)
    etag = http.get(f"/media/{key}").headers["ETag"]
    response = http.get(f"/media/{key}", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""
    assert http.get(f"/media/{key}", headers={"If-None-Match": '"other"'}).status_code == 200


@pytest.mark.parametrize("key", ["0" * 32 + ".png", "nope", "X" * 32 + ".png", "0" * 32 + ".svg"])
def test_unknown_media_is_a_json_404(http: httpx.Client, key: str) -> None:
    response = http.get(f"/media/{key}")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "error_description": "Media not found"}
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_home_page_says_what_the_service_is_and_lists_blogs(db: Database, http: httpx.Client) -> None:
    empty = http.get("/")
    assert empty.status_code == 200
    assert "No blog yet" in empty.text and "seed" in empty.text

    owner = add_owner(db, username="zoe", blog_slug="zoe-<notes>")
    with db.session(write=True) as session:
        session.add(
            tables.Article(
                id=security.new_cuid(),
                blog_id=owner.blog_id,
                slug="a",
                title="A",
                content="x",
                status="published",
                published_at=db.now(),
                updated_at=db.now(),
                created_at=db.now(),
            )
        )
    page = http.get("/")
    assert page.headers["Content-Type"].startswith("text/html")
    assert page.headers["X-Frame-Options"] == "DENY"
    assert "Blog Content Service" in page.text
    assert 'href="http://testserver/openapi.json"' in page.text
    assert "zoe-&lt;notes&gt;" in page.text  # autoescaped
    assert ">Zoe&#39;s Blog</a></td>" in page.text and "<td>1</td>" in page.text
