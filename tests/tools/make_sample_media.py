"""Draw the sample images of the seeded blog into mkdocs_blogsvc/server/sample_media/.

Run once by a developer (`python tests/tools/make_sample_media.py`); the package ships the PNG files
and never runs this. Pure Python (zlib + struct), so it needs no imaging library: covers are
flat-shaded landscapes (sky gradient, sun or moon, layered ridges) in one palette per article,
inline images are simple charts and diagrams. Flat areas and row-constant gradients keep each
PNG small.
"""

from __future__ import annotations

import itertools
import math
import random
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "mkdocs_blogsvc" / "server" / "sample_media"

Color = tuple[int, int, int]


def hex_color(value: str) -> Color:
    return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)


def mix(a: Color, b: Color, t: float) -> Color:
    return (round(a[0] + (b[0] - a[0]) * t), round(a[1] + (b[1] - a[1]) * t), round(a[2] + (b[2] - a[2]) * t))


class Canvas:
    def __init__(self, width: int, height: int, background: Color) -> None:
        self.width, self.height = width, height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def blend(self, x: int, y: int, color: Color, alpha: float) -> None:
        if alpha <= 0 or not (0 <= x < self.width and 0 <= y < self.height):
            return
        row, i = self.rows[y], 3 * x
        if alpha >= 1:
            row[i : i + 3] = bytes(color)
            return
        for c in range(3):
            row[i + c] = round(row[i + c] + (color[c] - row[i + c]) * alpha)

    def vertical_gradient(self, top: Color, bottom: Color, y0: int, y1: int) -> None:
        for y in range(max(0, y0), min(self.height, y1)):
            t = (y - y0) / max(1, y1 - y0 - 1)
            t = t * t * (3 - 2 * t)
            self.rows[y][:] = bytes(mix(top, bottom, t)) * self.width

    def fill_below(self, heights: list[float], color: Color, bottom: int | None = None) -> None:
        """Fill every column from its curve height down, anti-aliased along the curve."""
        row_bytes = bytes(color)
        for x, edge in enumerate(heights):
            top = max(0, math.floor(edge))
            self.blend(x, top, color, 1 - (edge - top))
            for y in range(top + 1, min(self.height, bottom or self.height)):
                self.rows[y][3 * x : 3 * x + 3] = row_bytes

    def disc(self, cx: float, cy: float, r: float, color: Color, alpha: float = 1.0) -> None:
        for y in range(max(0, int(cy - r - 1)), min(self.height, int(cy + r + 2))):
            for x in range(max(0, int(cx - r - 1)), min(self.width, int(cx + r + 2))):
                coverage = min(1.0, max(0.0, r + 0.5 - math.hypot(x - cx, y - cy)))
                self.blend(x, y, color, coverage * alpha)

    def rounded_rect(
        self, x0: float, y0: float, x1: float, y1: float, radius: float, color: Color, alpha: float = 1.0
    ) -> None:
        for y in range(max(0, int(y0)), min(self.height, math.ceil(y1))):
            for x in range(max(0, int(x0)), min(self.width, math.ceil(x1))):
                dx = max(x0 + radius - x - 0.5, 0, x + 0.5 - (x1 - radius))
                dy = max(y0 + radius - y - 0.5, 0, y + 0.5 - (y1 - radius))
                coverage = min(1.0, max(0.0, radius + 0.5 - math.hypot(dx, dy)))
                self.blend(x, y, color, coverage * alpha)

    def line(self, x0: float, y0: float, x1: float, y1: float, width: float, color: Color) -> None:
        length2 = (x1 - x0) ** 2 + (y1 - y0) ** 2 or 1.0
        pad = width + 2
        for y in range(max(0, int(min(y0, y1) - pad)), min(self.height, int(max(y0, y1) + pad))):
            for x in range(max(0, int(min(x0, x1) - pad)), min(self.width, int(max(x0, x1) + pad))):
                t = max(0.0, min(1.0, ((x - x0) * (x1 - x0) + (y - y0) * (y1 - y0)) / length2))
                distance = math.hypot(x - (x0 + t * (x1 - x0)), y - (y0 + t * (y1 - y0)))
                self.blend(x, y, color, min(1.0, max(0.0, width / 2 + 0.5 - distance)))

    def png(self) -> bytes:
        """Encode as 8-bit RGB PNG, choosing per row the filter with the smallest residuals."""
        stride, previous, raw = 3 * self.width, bytes(3 * self.width), bytearray()
        for row in self.rows:
            sub = bytes((row[i] - (row[i - 3] if i >= 3 else 0)) & 0xFF for i in range(stride))
            up = bytes((row[i] - previous[i]) & 0xFF for i in range(stride))
            best = min(((0, bytes(row)), (1, sub), (2, up)), key=lambda f: sum(min(b, 256 - b) for b in f[1]))
            raw.append(best[0])
            raw += best[1]
            previous = bytes(row)

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
            + chunk(b"IEND", b"")
        )


# --- covers ---------------------------------------------------------------------------------

#: name, sky top, sky horizon, ridge near colour, sun colour, terrain kind, night sky
COVERS = [
    ("cover-01.png", "#1d4e89", "#f6c38b", "#1b2f4b", "#fff1c9", "mountains", False),
    ("cover-02.png", "#0f5257", "#a8e6cf", "#0b3033", "#f7ffe0", "hills", False),
    ("cover-03.png", "#3b1f5c", "#f0907a", "#26123a", "#ffd9a8", "sea", False),
    ("cover-04.png", "#0b132b", "#3a506b", "#05080f", "#e8eef7", "mountains", True),
    ("cover-05.png", "#c2553d", "#f7d08a", "#5a2019", "#fff6d6", "dunes", False),
    ("cover-06.png", "#2a6f4e", "#d8f0c4", "#163a29", "#fdfbe6", "hills", False),
    ("cover-07.png", "#5b2a86", "#c9a7eb", "#2c1245", "#fbeaff", "mountains", False),
    ("cover-08.png", "#114b7a", "#7cc6e8", "#0a2b45", "#ffffff", "sea", False),
    ("cover-09.png", "#8a3b12", "#f2b872", "#3f1a08", "#fff0c2", "hills", False),
    ("cover-10.png", "#23395b", "#8ea8c3", "#141f33", "#f4f6fb", "dunes", True),
    ("cover-11.png", "#7a1f3d", "#f49ac1", "#3b0d1d", "#ffe3ef", "sea", False),
    ("cover-12.png", "#2e4057", "#d1b490", "#1a2433", "#fff4df", "mountains", False),
    ("cover-13.png", "#4a5d23", "#e3e7af", "#263012", "#fffbe0", "hills", False),
    ("cover-14.png", "#355070", "#eaac8b", "#1f2f42", "#fff1e6", "dunes", False),
]


def terrain(kind: str, width: int, base: float, amplitude: float, rng: random.Random) -> list[float]:
    """Heights of one ridge: sums of sines, sharpened for mountains, flattened for the sea."""
    waves = [(rng.uniform(0.6, 1.0) / (k + 1), rng.uniform(1.0, 2.5) * (k + 1), rng.uniform(0, 6.3)) for k in range(3)]
    heights = []
    for x in range(width):
        u = x / width * 2 * math.pi
        value = sum(a * math.sin(f * u + p) for a, f, p in waves)
        if kind == "mountains":
            value = 1.6 * (0.5 - abs(math.sin(0.5 * value + u * 1.3))) + 0.3 * value
        elif kind == "sea":
            value = 0.25 * value + 0.08 * math.sin(u * 18 + waves[0][2])
        elif kind == "dunes":
            value = abs(value) * 0.9
        heights.append(base - amplitude * value)
    return heights


def cover(spec: tuple[str, str, str, str, str, str, bool], seed: int) -> Canvas:
    _name, top, horizon, near, sun, kind, night = spec
    width, height = 1200, 630
    rng = random.Random(seed)
    sky_top, sky_horizon, ground, sun_color = map(hex_color, (top, horizon, near, sun))
    canvas = Canvas(width, height, sky_top)
    canvas.vertical_gradient(sky_top, sky_horizon, 0, int(height * 0.72))
    canvas.vertical_gradient(sky_horizon, sky_horizon, int(height * 0.72), height)
    if night:
        for _ in range(70):
            canvas.disc(
                rng.uniform(0, width),
                rng.uniform(0, height * 0.5),
                rng.uniform(0.6, 1.6),
                (255, 255, 255),
                rng.uniform(0.4, 0.9),
            )
    sun_x, sun_y, radius = rng.uniform(0.58, 0.82) * width, rng.uniform(0.22, 0.36) * height, rng.uniform(54, 78)
    for ring, alpha in ((2.2, 0.10), (1.6, 0.16)):
        canvas.disc(sun_x, sun_y, radius * ring, sun_color, alpha)
    canvas.disc(sun_x, sun_y, radius, sun_color)
    layers = 4
    for layer in range(layers):
        depth = layer / (layers - 1)
        color = mix(mix(sky_horizon, sky_top, 0.25), ground, 0.35 + 0.65 * depth)
        base = height * (0.52 + 0.13 * layer)
        amplitude = height * (0.10 - 0.015 * layer) * (0.5 if kind == "sea" else 1.0)
        canvas.fill_below(terrain(kind, width, base, amplitude, rng), color)
    return canvas


# --- inline images --------------------------------------------------------------------------

INK = hex_color("#334e68")
GRID = hex_color("#d9e2ec")
PAPER = hex_color("#f8fafc")


def bars(accent: str, values: list[float], highlight: int) -> Canvas:
    canvas = Canvas(800, 450, PAPER)
    color, soft = hex_color(accent), mix(hex_color(accent), PAPER, 0.55)
    for k in range(5):
        canvas.line(70, 60 + k * 80, 760, 60 + k * 80, 1.2, GRID)
    step = 690 / len(values)
    for i, value in enumerate(values):
        x0 = 70 + i * step + step * 0.18
        canvas.rounded_rect(x0, 380 - value * 320, x0 + step * 0.64, 381, 6, color if i == highlight else soft)
    canvas.line(70, 381, 760, 381, 2.5, INK)
    return canvas


def area(accent: str, values: list[float]) -> Canvas:
    canvas = Canvas(800, 450, PAPER)
    color = hex_color(accent)
    for k in range(5):
        canvas.line(60, 60 + k * 80, 760, 60 + k * 80, 1.2, GRID)
    points = [(60 + i * 700 / (len(values) - 1), 380 - v * 300) for i, v in enumerate(values)]
    heights = []
    for x in range(800):
        if x < 60 or x > 760:
            heights.append(450.0)
            continue
        i = min(len(points) - 2, int((x - 60) / (700 / (len(values) - 1))))
        (xa, ya), (xb, yb) = points[i], points[i + 1]
        t = (x - xa) / (xb - xa)
        heights.append(ya + (yb - ya) * t)
    canvas.fill_below(heights, mix(color, PAPER, 0.7), bottom=381)
    for (xa, ya), (xb, yb) in itertools.pairwise(points):
        canvas.line(xa, ya, xb, yb, 4, color)
    for px, py in points:
        canvas.disc(px, py, 7, color)
        canvas.disc(px, py, 3.5, PAPER)
    canvas.line(60, 381, 760, 381, 2.5, INK)
    return canvas


def flow(accent: str, boxes: int, loop_back: bool) -> Canvas:
    """Boxes joined by arrows: a pipeline, or a request/response exchange when `loop_back`."""
    canvas = Canvas(800, 450, PAPER)
    color, soft = hex_color(accent), mix(hex_color(accent), PAPER, 0.8)
    width, gap = 150.0, (680 - boxes * 150) / (boxes - 1)
    centers = []
    for i in range(boxes):
        x0 = 60 + i * (width + gap)
        canvas.rounded_rect(x0 - 3, 162, x0 + width + 3, 288, 18, color)
        canvas.rounded_rect(x0, 165, x0 + width, 285, 15, soft)
        for k in range(3):
            canvas.rounded_rect(
                x0 + 24, 195 + k * 26, x0 + width - 24 - k * 22, 205 + k * 26, 5, mix(color, PAPER, 0.35)
            )
        centers.append((x0, x0 + width))
    for (_, right), (left, _) in itertools.pairwise(centers):
        canvas.line(right + 8, 225, left - 10, 225, 4, INK)
        canvas.line(left - 22, 213, left - 9, 225, 4, INK)
        canvas.line(left - 22, 237, left - 9, 225, 4, INK)
    if loop_back:
        first, last = (centers[0][0] + centers[0][1]) / 2, (centers[-1][0] + centers[-1][1]) / 2
        canvas.line(last, 290, last, 360, 4, color)
        canvas.line(last, 360, first, 360, 4, color)
        canvas.line(first, 360, first, 296, 4, color)
        canvas.line(first - 12, 308, first, 295, 4, color)
        canvas.line(first + 12, 308, first, 295, 4, color)
    return canvas


INLINE: dict[str, Callable[[], Canvas]] = {
    "inline-pkce-flow.png": lambda: flow("#0f766e", 3, True),
    "inline-wal-readers.png": lambda: bars("#7c3aed", [0.35, 0.42, 0.38, 0.9, 0.95, 0.93], 4),
    "inline-build-times.png": lambda: bars("#2563eb", [0.92, 0.74, 0.61, 0.44, 0.31, 0.22, 0.18], 6),
    "inline-cache-hits.png": lambda: area("#0891b2", [0.2, 0.35, 0.5, 0.62, 0.78, 0.86, 0.9, 0.93]),
    "inline-rotation.png": lambda: flow("#b45309", 4, True),
    "inline-pipeline.png": lambda: flow("#4f46e5", 4, False),
    "inline-pages-per-week.png": lambda: area("#be123c", [0.7, 0.55, 0.6, 0.4, 0.45, 0.3, 0.25, 0.2]),
    "inline-sync-diff.png": lambda: bars("#15803d", [0.8, 0.1, 0.06, 0.05], 0),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for seed, spec in enumerate(COVERS):
        (OUT / spec[0]).write_bytes(cover(spec, seed).png())
    for name, draw in INLINE.items():
        (OUT / name).write_bytes(draw().png())
    for path in sorted(OUT.glob("*.png")):
        print(f"{path.name}: {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
