"""Large blogs on both databases: time and server memory of the sync and of a full listing.
Prints figures; not a test.

    python tests/benchmarks/bench_large_sync.py                          # 20,000 and 100,000, SQLite and PostgreSQL, 2 workers
    python tests/benchmarks/bench_large_sync.py --articles 20000 --engines sqlite
    python tests/benchmarks/bench_large_sync.py --db-url 'postgresql+psycopg://...' --articles 20000

Each blog is filled by `server admin generate-articles` (in-process, about 2 kB of Markdown an
article; on PostgreSQL it ends with `VACUUM (ANALYZE)`, as an operator's bulk load would) in a
new store: a SQLite file, or a new database of a throwaway PostgreSQL cluster (`tests/postgres.py`,
default settings, no fsync). `server run --workers N` serves it (rate limits off). Measured, one
request at a time:

- the first sync (nothing known): every article new, the answer streamed;
- sync with 1,000 of them changed on the service since: 1,000 updated articles;
- sync with all articles known (gzip body): nothing to answer;
- a full listing: every page at limit 100, one after another.

Memory is the server's peak resident size (VmHWM, the largest of its processes, Linux), read
after each step: it only grows, so each figure is the peak so far. Other processes may share
the machine (the load average at start is printed). The summary at the end gives the first
sync and the full listing per engine and size, and PostgreSQL's time over SQLite's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, update

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mkdocs_blogsvc.server import seed, tables
from mkdocs_blogsvc.server.database import Database
from tests import postgres
from tests.benchmarks.service_fixture import (
    cpu_note,
    make_blog,
    peak_rss_mib,
    running_service,
)

#: The suite's throwaway cluster (`tests/postgres.py`), as a context manager.
postgres_cluster = contextmanager(postgres.postgres_cluster.__wrapped__)


def sync(http: httpx.Client, known: list[tuple[str, str]]) -> tuple[float, int, dict[str, Any]]:
    body = gzip.compress(json.dumps({"knownArticles": [{"id": i, "contentHash": h} for i, h in known]}).encode(), 6)
    start = time.perf_counter()
    response = http.post(
        "/api/v1/sync", content=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    answer = response.json()
    counts: dict[str, Any] = {key: len(answer[key]) for key in ("new", "updated", "deleted")}
    counts["hashes"] = {article["id"]: article["contentHash"] for article in answer["new"] + answer["updated"]}
    return elapsed, len(response.content), counts


def full_listing(http: httpx.Client) -> tuple[float, int]:
    start = time.perf_counter()
    page, pages, count = 1, 1, 0
    while page <= pages:
        response = http.get("/api/v1/articles", params={"limit": 100, "page": page})
        response.raise_for_status()
        data = response.json()
        pages = data["pagination"]["totalPages"]
        count += len(data["articles"])
        page += 1
    return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--engines", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--db-url", help="PostgreSQL: this URL (an empty database) instead of a throwaway cluster; one size only"
    )
    args = parser.parse_args()
    print(f"Large blogs: {', '.join(f'{n:,}' for n in args.articles)} articles, {args.workers} workers, {cpu_note()}")
    summary: dict[tuple[str, int], tuple[float, float]] = {}
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-large-") as folder:
        cluster = None
        for engine in args.engines:
            for articles in args.articles:
                if engine == "sqlite":
                    target = str(Path(folder) / f"large-{articles}.db")
                else:
                    if args.db_url:
                        target = args.db_url
                    else:
                        cluster = cluster or stack.enter_context(postgres_cluster())
                        target = cluster.new_database()
                summary[engine, articles] = measure(target, engine, articles, args.workers, Path(folder))
    print(f"\nSummary ({args.workers} workers): first sync (nothing known) / full listing (pages of 100)")
    for articles in args.articles:
        cells = [
            f"{engine} {summary[engine, articles][0]:6.2f} s / {summary[engine, articles][1]:6.2f} s"
            for engine in args.engines
            if (engine, articles) in summary
        ]
        ratio = ""
        if ("sqlite", articles) in summary and ("postgresql", articles) in summary:
            lite, pg = summary["sqlite", articles], summary["postgresql", articles]
            ratio = f"   PostgreSQL/SQLite {pg[0] / lite[0]:.2f} / {pg[1] / lite[1]:.2f}"
        print(f"  {articles:>7,}: " + "   ".join(cells) + ratio)


def measure(target: str, engine: str, articles: int, workers: int, folder: Path) -> tuple[float, float]:
    """Fill a blog of `articles` in `target`, serve it, and print each step; returns the first
    sync's and the full listing's seconds."""
    print(f"\n{engine}, {articles:,} articles, {workers} worker{'s' if workers > 1 else ''}:")
    blog = make_blog(target, 0)  # a user, a blog and a token
    db = Database(target) if "://" in target else Database.from_path(target)
    with db.session() as session:
        slug = session.scalars(select(tables.Blog.slug)).one()
    start = time.perf_counter()
    seed.generate_articles(db, slug, articles)
    print(f"  {'generate-articles':<22} {time.perf_counter() - start:7.2f} s")
    with (
        running_service(target, workers, folder / f"server-{engine}-{articles}.log") as (url, process),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {blog.tokens[0]}"}, timeout=600) as http,
    ):
        http.get("/api/v1/status").raise_for_status()
        first, size, counts = sync(http, [])
        current = list(counts.pop("hashes").items())
        print(
            f"  {'sync, nothing known':<22} {first:7.2f} s  answer {size / 1e6:7.1f} MB  {counts}  "
            f"server peak RSS {peak_rss_mib(process.pid):6.0f} MiB"
        )
        changed = [article_id for article_id, _ in current[:: max(1, articles // 1000)]][:1000]
        with db.session(write=True) as session:
            session.execute(
                update(tables.Article)
                .where(tables.Article.id.in_(changed))
                .values(content=tables.Article.content + "Edited.\n")
            )
        for label in (f"sync, {len(changed):,} changed", "sync, all known"):
            elapsed, size, counts = sync(http, current)
            hashes = counts.pop("hashes")
            current = [(i, hashes.get(i, h)) for i, h in current]  # the client now holds the new versions
            print(
                f"  {label:<22} {elapsed:7.2f} s  answer {size / 1e6:7.1f} MB  {counts}  "
                f"server peak RSS {peak_rss_mib(process.pid):6.0f} MiB"
            )
        listing, count = full_listing(http)
        print(
            f"  {'full listing':<22} {listing:7.2f} s  {count} articles in pages of 100  "
            f"server peak RSS {peak_rss_mib(process.pid):6.0f} MiB"
        )
    db.dispose()
    return first, listing


if __name__ == "__main__":
    main()
