"""Images hosted by the service: stored in the database, served at `/media/<key>`.

Keys are `<first 32 hex digits of the SHA-256 of the bytes>.<ext>`: the same bytes always get
the same key (stored once, shared by every article and blog that uses them), and a key's bytes
never change, so responses are cacheable forever (`immutable`).

The type is sniffed from the bytes, never taken from a file name. PNG, JPEG, GIF and WebP are
accepted. SVG is refused: it is a document that can carry scripts, and clients such as the
MkDocs plugin download the images and serve them from their own site, where no header of ours
protects the reader.
"""

from __future__ import annotations

import hashlib
import re

from flask import Flask, Response, jsonify, request
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as BaseResponse

from mkdocs_blogsvc import imagetypes
from mkdocs_blogsvc.server import home
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ImageError
from mkdocs_blogsvc.server.tables import Media

#: Larger uploads are refused; covers of a blog are a few hundred kilobytes at most.
MAX_IMAGE_BYTES = 10 * 1024 * 1024

#: The formats accepted, by file extension: every type the plugin accepts too.
CONTENT_TYPES = imagetypes.CONTENT_TYPES

KEY_PATTERN = re.compile(r"[0-9a-f]{32}\.(?:" + "|".join(CONTENT_TYPES) + ")")

_CACHE_FOREVER = "public, max-age=31536000, immutable"


def sniff_image(data: bytes) -> str:
    """The extension (`png`, `jpg`, `gif`, `webp`, `avif`) of the image in `data`, from its magic
    bytes: the same rule as the plugin's (`imagetypes.sniff`)."""
    if not data:
        raise ImageError("the file is empty, not an image: give a PNG, JPEG, GIF, WebP or AVIF file")
    extension = imagetypes.sniff(data)
    if extension is not None:
        return extension
    if imagetypes.looks_like_svg(data):
        raise ImageError("SVG images are refused (they can carry scripts): use PNG, JPEG, GIF, WebP or AVIF")
    raise ImageError("not an image: expected PNG, JPEG, GIF, WebP or AVIF")


def store_image(session: Session, blog_id: str, data: bytes) -> str:
    """Store `data` for `blog_id` (once per content) and return its media key.

    Raises `ImageError` for anything that is not an accepted image.
    """
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(f"image too large: {len(data)} bytes (the limit is {MAX_IMAGE_BYTES})")
    extension = sniff_image(data)
    key = f"{hashlib.sha256(data).hexdigest()[:32]}.{extension}"
    if session.get(Media, key) is None:
        session.add(Media(key=key, blog_id=blog_id, content_type=CONTENT_TYPES[extension], data=data))
        session.flush()
    return key


def register(app: Flask, db: Database) -> None:
    """Attach `GET /media/<key>` and the home page to the app."""

    @app.get("/media/<key>")
    def media(key: str) -> BaseResponse:
        found = None
        if KEY_PATTERN.fullmatch(key):
            with db.session() as session:
                found = session.get(Media, key)
        if found is None:
            response = jsonify(error="not_found", error_description="Media not found")
            response.status_code = 404
            response.headers["X-Content-Type-Options"] = "nosniff"
            return response
        response = Response(found.data, mimetype=found.content_type)
        response.headers["Cache-Control"] = _CACHE_FOREVER
        response.headers["X-Content-Type-Options"] = "nosniff"
        # Opened directly in a browser the image is its own document: give it no powers.
        response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
        response.set_etag(key.split(".")[0])
        conditional = response.make_conditional(request)
        # make_conditional adds a Date header; the HTTP server adds its own, and Date is a singleton.
        conditional.headers.pop("Date", None)
        return conditional

    home.register(app, db)
