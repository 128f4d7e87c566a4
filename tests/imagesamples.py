"""Images for the image tests and benchmarks, drawn with Pillow: a photo-like picture (smooth
colour, shapes, fine grain: what a camera or a rendered illustration gives, and what PNG
compresses badly), an image bomb (a header claiming a huge size, a few hundred bytes), a
truncated file and a phone's portrait photo (stored landscape with an EXIF orientation)."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image, ImageDraw, ImageFilter


def photo_like(width: int = 1600, height: int = 900, *, seed: int = 7, fmt: str = "PNG") -> bytes:
    """A photo-like image, encoded as `fmt` (its shapes are fixed by `seed`, its grain is random)."""
    gradient = Image.linear_gradient("L").resize((width, height))
    red = gradient
    green = gradient.transpose(Image.Transpose.ROTATE_90).resize((width, height))
    blue = Image.radial_gradient("L").resize((width, height))
    picture = Image.merge("RGB", (red, green, blue))
    draw = ImageDraw.Draw(picture)
    step = seed * 37
    for index in range(24):  # shapes with edges, as objects in a photo
        x = (index * 173 + step) % width
        y = (index * 97 + step) % height
        size = 40 + (index * 53) % 220
        colour = ((index * 71) % 256, (index * 131 + 60) % 256, (index * 29 + 120) % 256)
        draw.ellipse((x, y, x + size, y + size * 2 // 3), fill=colour)
    picture = picture.filter(ImageFilter.GaussianBlur(3))
    grain = Image.effect_noise((width, height), 24).convert("RGB")
    picture = Image.blend(picture, grain, 0.12)
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return out.getvalue()


def png_bomb(width: int = 40000, height: int = 40000) -> bytes:
    """A valid PNG header claiming `width` x `height` pixels, with one tiny compressed row:
    decoding it would take width * height * 3 bytes of memory."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = zlib.compress(b"\0" * (1 + width * 3), 9)  # one row: the rest is missing
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def truncated(data: bytes, keep: float = 0.4) -> bytes:
    """The first `keep` of an encoded image: its header is intact, its pixels are not."""
    return data[: int(len(data) * keep)]


def rotated_photo(orientation: int = 6) -> tuple[bytes, Image.Image]:
    """A JPEG stored landscape (1600 x 900) with an EXIF orientation that shows it portrait, as a
    phone writes one; and the picture as shown (900 x 1600, a red band at its top)."""
    shown = Image.new("RGB", (900, 1600), "white")
    ImageDraw.Draw(shown).rectangle((0, 0, 899, 199), fill="red")
    stored = shown.transpose(Image.Transpose.ROTATE_90)  # what orientation 6 turns back
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    stored.save(out, format="JPEG", quality=95, exif=exif.tobytes())
    return out.getvalue(), shown
