"""WebP variants of one raster image at a few widths (`optimize_images: true`), and the
image's header read without decoding. The only module that imports Pillow, and only inside the
functions that need it: the settings below are read by every build.

Why these numbers (measured with `tests/benchmarks/bench_webp_quality.py`, see the Performance
page): quality 80 and method 4. Above 80 the bytes double for less than half a dB of PSNR;
below it they shrink by at most a third while the 480 px variant loses visible detail. Method 6
saves up to 15 % at 1440 px for 40 % more CPU.

Hostile images: the header's size is checked before any pixel is decoded (`MAX_PIXELS`); a
JPEG is decoded at a reduced scale when that is enough for the largest variant (`draft`), and
what is decoded, with the copy converted from it, must fit `MAX_DECODED_BYTES`. A truncated or
corrupt file raises `Unusable`. Variants are never wider than the original, and none is made
for an image narrower than `MIN_WIDTH`, nor for an animated one (WebP of its first frame would
stop it).

As a browser shows the original: a size is the one after the EXIF orientation (a phone's
portrait photo is stored landscape with an orientation tag, which browsers apply), variants are
turned the same way and keep an RGB image's colour profile, and 16-bit greyscale is scaled to
8 bits (not clipped to white).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

#: Widths offered (in CSS pixels of a layout up to about 720 px wide, at 1x, 2x and 3x).
WIDTHS = (480, 960, 1440)
#: An image narrower than this keeps its original only (a variant would save little).
MIN_WIDTH = 600
#: WebP settings, chosen by measurement (see the module doc).
QUALITY = 80
METHOD = 4
#: An image claiming more pixels than this is never decoded (an image bomb: 40000 x 40000 in
#: a few hundred bytes would take 4.8 GB).
MAX_PIXELS = 50_000_000
#: The memory one decode may take (after a JPEG's reduced-scale decoding).
MAX_DECODED_BYTES = 160 * 1024 * 1024
#: What the variants depend on besides the image's bytes: part of their file names. `o2`: made
#: by the second version of this code (oriented, colour profile kept, the original's width offered).
SETTINGS = f"webp-q{QUALITY}-m{METHOD}-w{'-'.join(map(str, WIDTHS))}-o2"
#: EXIF orientations that turn the image a quarter (width and height swapped when shown).
_QUARTER_TURNS = frozenset({5, 6, 7, 8})
#: Bytes Pillow keeps per pixel of the decoded image and of its converted copy (RGB is held in 4).
_BYTES_PER_PIXEL = 4 + 4
#: Types variants are made of (GIF may be animated; WebP and AVIF are compact already).
RASTER_TYPES = frozenset({"png", "jpg"})


class Unusable(Exception):
    """The image is not decoded: too many pixels, corrupt or truncated (the message says which)."""


@dataclass(frozen=True)
class Header:
    width: int
    height: int
    animated: bool


def read_header(path: str | Path | BinaryIO) -> Header | None:
    """The size in the image's header as shown (no pixel decoded), or None when it cannot be
    read. Raises `Unusable` for a header claiming more than `MAX_PIXELS`."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                animated = bool(getattr(image, "is_animated", False))
                turned = _orientation(image) in _QUARTER_TURNS
    except Image.DecompressionBombError:
        raise Unusable(f"its header claims more than {MAX_PIXELS} pixels") from None
    except (OSError, ValueError, SyntaxError, EOFError):
        return None
    if width <= 0 or height <= 0:
        return None
    if width * height > MAX_PIXELS:
        raise Unusable(f"its header claims {width} x {height} pixels, more than {MAX_PIXELS}")
    return Header(height, width, animated) if turned else Header(width, height, animated)


def _orientation(image: Any) -> int:
    """The EXIF orientation (1: as stored); a damaged EXIF block counts as none."""
    try:
        return int(image.getexif().get(0x0112, 1))
    except (OSError, ValueError, SyntaxError, TypeError, EOFError):
        return 1


def refusal(data: bytes, extension: str) -> str | None:
    """Why a downloaded image of this type must not be kept (None: keep it): a header claiming
    more than `MAX_PIXELS` (an image bomb, handed to every reader's browser), or none that
    Pillow can read (a polyglot or a fragment behind the right first bytes). AVIF is taken on
    its first bytes when this Pillow reads no AVIF."""
    from PIL import features

    if extension == "avif" and not features.check("avif"):
        return None
    try:
        header = read_header(io.BytesIO(data))
    except Unusable as exc:
        return str(exc)
    return None if header is not None else f"its {extension.upper()} header cannot be read"


def widths_for(width: int) -> tuple[int, ...]:
    """The variant widths of an image `width` pixels wide: the `WIDTHS` below it, and its own
    width when it is narrower than the largest (a 700 px image offered only at 480 px would
    show blurred at 700), never wider than the original."""
    if width < MIN_WIDTH:
        return ()
    below = tuple(w for w in WIDTHS if w < width)
    return below if width > WIDTHS[-1] else (*below, width)


def make_variants(data: bytes, widths: tuple[int, ...]) -> list[tuple[int, int, bytes]]:
    """(width, height, WebP bytes) of each width, turned as the EXIF orientation says. Raises `Unusable`."""
    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as exc:
            raise Unusable(f"it claims more than {MAX_PIXELS} pixels") from exc
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise Unusable(f"it cannot be read ({exc})") from None
        with image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise Unusable(f"it claims {width} x {height} pixels, more than the {MAX_PIXELS} decoded at most")
            turned = _orientation(image) in _QUARTER_TURNS
            widest = max(widths)
            if image.format == "JPEG":  # decode at 1/2, 1/4 or 1/8 when the largest variant allows
                # as stored: a quarter-turned image's shown width is its stored height
                box = (
                    (max(1, width * widest // height), widest) if turned else (widest, max(1, height * widest // width))
                )
                image.draft("RGB", box)
            if image.size[0] * image.size[1] * _BYTES_PER_PIXEL > MAX_DECODED_BYTES:
                raise Unusable(
                    f"decoding its {width} x {height} pixels would take more than "
                    f"{MAX_DECODED_BYTES // (1024 * 1024)} MiB"
                )
            try:
                image.load()
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise Unusable(f"it is corrupt or truncated ({exc})") from None
            # a profile describes RGB values only when the image has them (not CMYK's or grey's)
            profile = image.info.get("icc_profile") if image.mode in ("RGB", "RGBA", "P", "PA") else None
            source = ImageOps.exif_transpose(_eight_bit(image))
    source = source.convert("RGBA" if _transparent(source) else "RGB")
    shown_width, shown_height = (height, width) if turned else (width, height)
    variants = []
    for target in widths:
        target_height = max(1, round(shown_height * target / shown_width))
        scaled = (
            source
            if source.size == (target, target_height)
            else source.resize((target, target_height), Image.Resampling.LANCZOS)
        )
        out = io.BytesIO()
        scaled.save(out, format="WEBP", quality=QUALITY, method=METHOD, icc_profile=profile or None)
        variants.append((target, target_height, out.getvalue()))
    return variants


def _eight_bit(image: Any) -> Any:
    """16- and 32-bit greyscale scaled to 8 bits (Pillow's conversion clips it: white)."""
    if image.mode.startswith("I;16") or image.mode == "I":
        peak = 65535 if image.mode.startswith("I;16") or (image.getextrema()[1] or 0) > 255 else 255
        return image.convert("I").point(lambda value: value * (255 / peak)).convert("L")
    return image


def _transparent(image: Any) -> bool:
    return bool(image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info)
