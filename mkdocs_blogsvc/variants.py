"""WebP variants of one raster image at a few widths (`optimize_images: true`), and the
image's header read without decoding. The only module that imports Pillow, and only inside the
functions that need it: the settings below are read by every build.

Why these numbers (measured with `tests/benchmarks/bench_webp_quality.py`, see the Performance
page): quality 80 and method 4. Above 80 the bytes double for less than half a dB of PSNR;
below it they shrink by at most a third while the 480 px variant loses visible detail. Method 6
saves up to 15 % at 1440 px for 40 % more CPU.

Hostile images: the header's size is checked before any pixel is decoded (`MAX_PIXELS`); a
JPEG is decoded at a reduced scale when that is enough for the largest variant (`draft`), and
what is decoded must fit `MAX_DECODED_BYTES`. A truncated or corrupt file raises `Unusable`.
Variants are never wider than the original, and none is made for an image narrower than
`MIN_WIDTH`, nor for an animated one (WebP of its first frame would stop it).
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

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
#: What the variants depend on besides the image's bytes: part of their file names.
SETTINGS = f"webp-q{QUALITY}-m{METHOD}-w{'-'.join(map(str, WIDTHS))}"
#: Types variants are made of (GIF may be animated; WebP and AVIF are compact already).
RASTER_TYPES = frozenset({"png", "jpg"})


class Unusable(Exception):
    """The image is not decoded: too many pixels, corrupt or truncated (the message says which)."""


@dataclass(frozen=True)
class Header:
    width: int
    height: int
    animated: bool


def read_header(path: str | Path) -> Header | None:
    """The size in the image's header (no pixel decoded), or None when it cannot be read.
    Raises `Unusable` for a header claiming so many pixels that Pillow refuses to open it."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                width, height = image.size
                animated = bool(getattr(image, "is_animated", False))
    except Image.DecompressionBombError as exc:
        raise Unusable(f"its header claims more than {MAX_PIXELS} pixels ({exc})") from None
    except (OSError, ValueError, SyntaxError, EOFError):
        return None
    if width <= 0 or height <= 0:
        return None
    return Header(width, height, animated)


def widths_for(width: int) -> tuple[int, ...]:
    """The variant widths of an image `width` pixels wide (never wider than the original)."""
    if width < MIN_WIDTH:
        return ()
    return tuple(w for w in WIDTHS if w <= width) or (width,)


def make_variants(data: bytes, widths: tuple[int, ...]) -> list[tuple[int, int, bytes]]:
    """(width, height, WebP bytes) of each width. Raises `Unusable`."""
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
            if image.format == "JPEG":  # decode at 1/2, 1/4 or 1/8 when the largest variant allows
                image.draft("RGB", (max(widths), max(1, height * max(widths) // width)))
            bands = len(image.getbands()) or 4
            if image.size[0] * image.size[1] * max(bands, 3) > MAX_DECODED_BYTES:
                raise Unusable(
                    f"decoding its {width} x {height} pixels would take more than "
                    f"{MAX_DECODED_BYTES // (1024 * 1024)} MiB"
                )
            try:
                image.load()
            except (OSError, ValueError, SyntaxError, EOFError) as exc:
                raise Unusable(f"it is corrupt or truncated ({exc})") from None
            mode = "RGBA" if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info else "RGB"
            source = image.convert(mode)
    variants = []
    for target in widths:
        target_height = max(1, round(height * target / width))
        scaled = (
            source
            if source.size == (target, target_height)
            else source.resize((target, target_height), Image.Resampling.LANCZOS)
        )
        out = io.BytesIO()
        scaled.save(out, format="WEBP", quality=QUALITY, method=METHOD)
        variants.append((target, target_height, out.getvalue()))
    return variants
