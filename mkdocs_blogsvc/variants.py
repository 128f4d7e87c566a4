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
from struct import error as struct_error
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
#: The EXIF tag browsers turn an image by (a single SHORT, 1 to 8).
_ORIENTATION_TAG = 0x0112
#: Bytes Pillow holds per pixel by mode (RGB, CMYK and the two-band modes in 4); the decoded
#: image, then its 8-bit and RGB(A) copies beside it, are what one decode takes.
_MODE_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16B": 2, "I;16L": 2}
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
                if width * height > MAX_PIXELS:  # before anything that could decode a pixel
                    raise Unusable(f"its header claims {width} x {height} pixels, more than {MAX_PIXELS}")
                animated = bool(getattr(image, "is_animated", False))
                turned = _orientation(image) in _QUARTER_TURNS
    except Image.DecompressionBombError:
        raise Unusable(f"its header claims more than {MAX_PIXELS} pixels") from None
    except (OSError, ValueError, SyntaxError, EOFError):
        return None
    if width <= 0 or height <= 0:
        return None
    return Header(height, width, animated) if turned else Header(width, height, animated)


def _orientation(image: Any) -> int:
    """The EXIF orientation browsers apply (1: as stored), from the EXIF block read with the
    header: never `getexif()`, which decodes a PNG whose eXIf chunk is not before its pixels,
    and takes an XMP orientation that browsers ignore. A damaged block, or a value that is not
    one SHORT from 1 to 8, counts as none."""
    from PIL import Image

    raw = image.info.get("exif")
    if not isinstance(raw, bytes):
        return 1
    try:
        found = Image.Exif()
        found.load(raw)
        value = found.get(_ORIENTATION_TAG, 1)
    except (OSError, ValueError, SyntaxError, TypeError, EOFError, KeyError, IndexError, struct_error):
        return 1
    return value if type(value) is int and 1 <= value <= 8 else 1


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
    from PIL import Image

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
            orientation = _orientation(image)
            turned = orientation in _QUARTER_TURNS
            widest = max(widths)
            # libjpeg keeps a progressive JPEG's coefficients at full size, whatever `draft` says
            coefficients = width * height * len(image.getbands()) * 2 if "progressive" in image.info else 0
            if image.format == "JPEG":  # decode at 1/2, 1/4 or 1/8 when the largest variant allows
                # as stored: a quarter-turned image's shown width is its stored height
                box = (
                    (max(1, width * widest // height), widest) if turned else (widest, max(1, height * widest // width))
                )
                image.draft("RGB", box)
            if coefficients + _decoding_bytes(image) > MAX_DECODED_BYTES:
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
            eight = _eight_bit(image)
            source = eight.convert("RGBA" if _transparent(eight) else "RGB")
            del eight
        turn = _transpose(orientation)
        if turn is not None:  # the decoded image let go first: one full-size copy beside this one
            source = source.transpose(turn)
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


def _transpose(orientation: int) -> Any:
    """The turn that shows an image of this EXIF orientation as browsers do (None: as stored)."""
    from PIL import Image

    turns = {
        2: Image.Transpose.FLIP_LEFT_RIGHT,
        3: Image.Transpose.ROTATE_180,
        4: Image.Transpose.FLIP_TOP_BOTTOM,
        5: Image.Transpose.TRANSPOSE,
        6: Image.Transpose.ROTATE_270,
        7: Image.Transpose.TRANSVERSE,
        8: Image.Transpose.ROTATE_90,
    }
    return turns.get(orientation)


def _decoding_bytes(image: Any) -> int:
    """What decoding `image` (at its draft size) and converting it takes at most: the decoded
    pixels, then beside them the copies `make_variants` makes (8-bit grey of 16-bit grey in
    two steps of 4 bytes a pixel, and the RGB(A) copy in 4)."""
    pixels: int = image.size[0] * image.size[1]
    decoded = _MODE_BYTES.get(image.mode, 4)
    extra = 4 + 4 if image.mode.startswith("I") else 0
    return pixels * (decoded + extra + 4)


def _eight_bit(image: Any) -> Any:
    """16- and 32-bit greyscale scaled to 8 bits (Pillow's conversion clips it: white), its
    transparent grey, if it has one, made an alpha band; any other image as it is."""
    from PIL import Image, ImageMath

    if not (image.mode.startswith("I;16") or image.mode == "I"):
        return image
    wide = image.convert("I")
    peak = 65535 if image.mode.startswith("I;16") or (wide.getextrema()[1] or 0) > 255 else 255
    grey = wide.point(lambda value: value * (255 / peak)).convert("L")
    clear = image.info.get("transparency")
    if type(clear) is not int:
        return grey
    alpha = ImageMath.lambda_eval(lambda args: (args["a"] != clear) * 255, a=wide).convert("L")
    return Image.merge("LA", (grey, alpha))


def _transparent(image: Any) -> bool:
    return bool(image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info)
