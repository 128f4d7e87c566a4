"""How much does the plugin add to a build when nothing changed? Prints figures; not a test.

    python tests/benchmarks/bench_build.py [--articles 200] [--runs 5] [--material]

Builds one site against the reference service (in a thread on 127.0.0.1) with N articles,
then times: a no-change build with the plugin (one /sync, pages compared, nothing rewritten),
and the same site without the plugin, its articles exported as plain files into docs_dir.
Peak memory of one no-change build is measured with tracemalloc. Run from the repository root.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config

from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.sync import export_site, read_cache, render_all
from tests.conftest import add_article, add_owner, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site


def timed_build(config: Path) -> float:
    started = time.perf_counter()
    build(load_config(str(config)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--material", action="store_true", help="Material theme with the blog plugin")
    args = parser.parse_args()
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="blogsvc-bench-") as tmp:
        root = Path(tmp)
        db = Database.from_path(root / "service.db")
        owner = add_owner(db)
        body = "\n\n".join(f"Paragraph {i} with some *Markdown* text." for i in range(30))
        for number in range(args.articles):
            add_article(db, owner.blog_id, f"Article number {number}", minutes_ago=number, content=f"# Article {number}\n\n{body}")
        service = Service(db)
        try:
            with_plugin = root / "with"
            config = write_site(with_plugin, service.url, material=args.material)
            write_credentials(with_plugin / "credentials.json", service.url, issue_access_token(db, owner))
            started = time.perf_counter()
            build(load_config(str(config)))
            first = time.perf_counter() - started

            tracemalloc.start()
            build(load_config(str(config)))
            _current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()

            without = root / "without"
            plain = write_site(without, service.url, material=args.material)
            data = yaml.safe_load(plain.read_text())
            data["plugins"] = [p for p in data["plugins"] if not (isinstance(p, dict) and "blogsvc" in p)]
            plain.write_text(yaml.safe_dump(data))
            cache = with_plugin / ".cache" / "blogsvc"
            site = render_all(cache, read_cache(cache), Renderer(), blog_dir="blog", posts_dir="blog/posts",
                              index_title=None if args.material else "Blog")
            export_site(site, without / "docs")
            # Interleaved, so that load from other processes hits both series alike.
            service.requests.clear()
            plugin_times, plain_times = [], []
            for _ in range(args.runs):
                plugin_times.append(timed_build(config))
                plain_times.append(timed_build(plain))
            syncs = service.requests.count("/api/v1/sync")
        finally:
            service.stop()
            db.dispose()

    with_median, without_median = statistics.median(plugin_times), statistics.median(plain_times)
    print(f"articles: {args.articles}, theme: {'material + blog' if args.material else 'mkdocs'}, runs: {args.runs}")
    print(f"first build (full sync + render):     {first:.3f} s")
    print(f"no-change build with the plugin:      {with_median:.3f} s (median; {syncs} /sync requests in {args.runs} builds)")
    print(f"same site without the plugin:         {without_median:.3f} s (median)")
    print(f"plugin overhead:                      {with_median - without_median:+.3f} s")
    print(f"peak traced memory, no-change build:  {peak / 1024 / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
