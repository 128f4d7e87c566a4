"""What images cost a build, and what they cost a reader, with and without `optimize_images`.
Prints figures; not a test.

    python tests/benchmarks/bench_images.py                 # 200 articles, a 1600 x 900 PNG cover each
    python tests/benchmarks/bench_images.py --articles 20   # a quick look

It stores the articles (each with its own photo-like cover, `tests/imagesamples.photo_like`)
in the reference service, starts it on 127.0.0.1 in a thread of this process, and builds a
Material site (blog plugin) with `mkdocs build` as a separate process, the way users run it:
for each setting, a cold build (empty cache: sync, downloads, sizes, variants) and then
`--runs` no-change builds (median). Peak memory is the build process's peak resident set size
(`ru_maxrss`). The bytes a reader downloads are those of the cover a browser fetches for an
article page at 400 and 1400 CSS pixels wide (device pixel ratio 1): the original without
variants, else the `srcset` candidate Chromium picks for `imagemarkup.SIZES` (the smallest at
least as wide as the slot; `tests/e2e/test_browser_images.py` checks that Chromium does).
The timeout is raised so that the cold build makes every variant (`timeout` bounds image work).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mkdocs_blogsvc.server import media
from mkdocs_blogsvc.server.database import Database
from tests.conftest import add_article, add_owner, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site
from tests.imagesamples import photo_like


def build(config: Path) -> tuple[float, float, float]:
    """(seconds, CPU seconds, peak RSS in MiB) of one `mkdocs build` process."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)], env=env, cwd=config.parent
    )
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build of {config} failed")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def cover_bytes(site: Path, width: int) -> int:
    """The bytes of the cover a browser `width` CSS pixels wide downloads for one article page."""
    page = next(path for path in sorted(site.glob("blog/20*/**/index.html")))
    html = page.read_text(encoding="utf-8")
    source = re.search(r'<source[^>]*srcset="([^"]+)"', html)
    if source is None:
        src = re.search(r'<img[^>]*src="([^"]*images/[^"]+)"', html)
        assert src is not None
        return (page.parent / src.group(1)).resolve().stat().st_size
    slot = min(width, 800)  # imagemarkup.SIZES
    candidates = sorted((int(w[:-1]), url) for url, w in (c.strip().rsplit(" ", 1) for c in source.group(1).split(",")))
    chosen = next((url for w, url in candidates if w >= slot), candidates[-1][1])
    return (page.parent / chosen).resolve().stat().st_size


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3, help="no-change builds per setting (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-images-") as temp:
        root = Path(temp)
        db = Database.from_path(root / "service.db")
        owner = add_owner(db)
        started = time.perf_counter()
        originals = 0
        bases = [Image.open(io.BytesIO(photo_like(1600, 900, seed=seed))) for seed in range(8)]
        for number in range(args.articles):  # each cover its own: one of 8 photos with a mark of its own
            picture = bases[number % 8].copy()
            ImageDraw.Draw(picture).rectangle(
                (number * 7 % 1500, number * 3 % 800, number * 7 % 1500 + 60, number * 3 % 800 + 40),
                fill=(number % 256, 255 - number % 256, 90),
            )
            out = io.BytesIO()
            picture.save(out, format="PNG")
            data = out.getvalue()
            originals += len(data)
            with db.session(write=True) as session:
                key = media.store_image(session, owner.blog_id, data)
            add_article(
                db,
                owner.blog_id,
                f"Article {number}",
                cover_media_key=key,
                minutes_ago=number,
                description=f"The lead of article {number}.",
            )
        print(
            f"{args.articles} articles, covers 1600 x 900 PNG, {originals / args.articles / 1024:.0f} KiB on average "
            f"(made in {time.perf_counter() - started:.0f} s)"
        )
        service = Service(db)
        try:
            print(
                f"{'optimize_images':<16} {'cold s':>7} {'cold CPU s':>10} {'cold MiB':>9} {'no-change s':>12} "
                f"{'no-change CPU s':>15} {'no-change MiB':>14} {'400 px KiB':>11} {'1400 px KiB':>12} {'variants':>9}"
            )
            for optimize in (False, True):
                folder = root / f"site-{optimize}"
                folder.mkdir()
                config = write_site(folder, service.url, plugin={"optimize_images": optimize, "timeout": 3600})
                write_credentials(folder / "credentials.json", service.url, issue_access_token(db, owner))
                data = yaml.safe_load(config.read_text())
                data["theme"]["font"] = False
                config.write_text(yaml.safe_dump(data, sort_keys=False))
                cold, cold_cpu, cold_rss = build(config)
                variants = folder / ".cache" / "blogsvc" / "variants"
                made = sorted(variants.iterdir()) if variants.exists() else []
                stamps = [path.stat().st_mtime_ns for path in made]
                again = [build(config) for _ in range(args.runs)]
                assert [path.stat().st_mtime_ns for path in made] == stamps, "a no-change build rewrote a variant"
                site = folder / "site"
                print(
                    f"{str(optimize).lower():<16} {cold:>7.1f} {cold_cpu:>10.1f} {cold_rss:>9.0f} "
                    f"{statistics.median(t for t, _c, _m in again):>12.2f} "
                    f"{statistics.median(c for _t, c, _m in again):>15.2f} {max(m for _t, _c, m in again):>14.0f} "
                    f"{cover_bytes(site, 400) / 1024:>11.1f} {cover_bytes(site, 1400) / 1024:>12.1f} {len(made):>9}"
                )
        finally:
            service.stop()
            db.dispose()


if __name__ == "__main__":
    main()
