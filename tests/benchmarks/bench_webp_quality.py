"""How the WebP variants' quality and method were chosen (`variants.QUALITY`, `variants.METHOD`):
bytes against visual quality for each setting, on the photo-like 1600 x 900 sample scaled to
each variant width. Visual quality is PSNR of the luminance (dB) against the same scaled
image before encoding; above about 40 dB differences are not visible at 1:1, below about 35 dB
they are. Encoding time is the CPU time of one encode, for the method's cost.

    python tests/benchmarks/bench_webp_quality.py [--sample photo.png]
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import time
from pathlib import Path

from PIL import Image, ImageChops, ImageStat

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.imagesamples import photo_like


def psnr(reference: Image.Image, other: Image.Image) -> float:
    difference = ImageChops.difference(reference.convert("L"), other.convert("L"))
    rms = ImageStat.Stat(difference).rms[0]
    return 99.0 if rms == 0 else 20 * math.log10(255 / rms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, help="an image to measure instead of the drawn sample")
    args = parser.parse_args()
    data = args.sample.read_bytes() if args.sample else photo_like()
    original = Image.open(io.BytesIO(data)).convert("RGB")
    print(f"sample: {original.width} x {original.height}, {len(data)} bytes as given")
    print(f"{'width':>5} {'quality':>7} {'method':>6} {'bytes':>8} {'PSNR dB':>8} {'encode ms':>9}")
    for width in (480, 960, 1440):
        scaled = original.resize((width, round(original.height * width / original.width)), Image.Resampling.LANCZOS)
        for quality in (60, 70, 75, 80, 85, 90):
            for method in (4, 6):
                out = io.BytesIO()
                started = time.process_time()
                scaled.save(out, format="WEBP", quality=quality, method=method)
                elapsed = (time.process_time() - started) * 1000
                decoded = Image.open(io.BytesIO(out.getvalue()))
                print(
                    f"{width:>5} {quality:>7} {method:>6} {len(out.getvalue()):>8} {psnr(scaled, decoded):>8.2f} {elapsed:>9.1f}"
                )


if __name__ == "__main__":
    main()
