"""The one rule for telling an image's type from its bytes (the plugin's downloads and the
reference service's uploads both use it).

Why from the bytes: a URL's extension and a Content-Type header are claims; the first bytes of
the file are what a browser will act on. Recognised: PNG, JPEG, GIF, WebP and AVIF.

SVG is never recognised: it is a document that can carry scripts, and served from a site's own
origin it would run with the site's privileges. `looks_like_svg` exists only so that callers
can say why such a file was refused.

Which recognised types are *accepted* is each caller's decision: the plugin accepts all five
(images may come from any host the service links to); the reference service hosts PNG, JPEG,
GIF and WebP only (its media keys and content types list those four).
"""

from __future__ import annotations

#: Extension -> Content-Type of every type `sniff` recognises.
CONTENT_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "avif": "image/avif",
}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_AVIF_BRANDS = (b"avif", b"avis")


def sniff(data: bytes) -> str | None:
    """The extension (`png`, `jpg`, `gif`, `webp`, `avif`) of the image in `data`, or None."""
    if data.startswith(_PNG_SIGNATURE) and data[12:16] == b"IHDR":  # IHDR is always the first chunk
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and data[12:15] == b"VP8":  # VP8, VP8L or VP8X
        return "webp"
    if _is_avif(data):
        return "avif"
    return None


def _is_avif(data: bytes) -> bool:
    """An ISO-BMFF file whose leading `ftyp` box names an AVIF brand (major or compatible)."""
    if len(data) < 12 or data[4:8] != b"ftyp":
        return False
    if data[8:12] in _AVIF_BRANDS:
        return True
    box_end = min(int.from_bytes(data[:4], "big"), len(data), 64)
    compatible = data[16:box_end]
    return any(compatible[i : i + 4] in _AVIF_BRANDS for i in range(0, len(compatible) - 3, 4))


def looks_like_svg(data: bytes) -> bool:
    """True for what is probably an SVG document (to name the reason it is refused)."""
    head = data[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<?xml", b"<svg", b"<!doctype svg")) and b"<svg" in data[:4096].lower()
