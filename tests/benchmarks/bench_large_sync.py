"""A 100,000-article blog: time and server memory of the sync and of a full listing. Prints
figures; not a test.

    python tests/benchmarks/bench_large_sync.py                         # SQLite, 1 and 4 workers
    python tests/benchmarks/bench_large_sync.py --articles 20000 --workers 1
    python tests/benchmarks/bench_large_sync.py --db-url 'postgresql+psycopg://...'
    python tests/benchmarks/bench_large_sync.py --postgres --workers 4 --vacuum

The articles (about 1.5 kB of Markdown each) are bulk-inserted into a new store; `server run
--workers N` serves it (rate limits off). Measured, one request at a time:

- sync with all articles known (gzip body, as the plugin sends it): nothing to answer;
- sync with 1,000 of them changed on the service: 1,000 updated articles;
- the first sync (nothing known): every article new, the answer streamed;
- a full listing: every page at limit 100, one after another.

On PostgreSQL the measures start right after the bulk insert, before autovacuum has visited
the table (no statistics, no visibility map), unless `--vacuum` runs `VACUUM (ANALYZE)` on it
first: what autovacuum does within a minute or so of a bulk load (PostgreSQL 13 and later
vacuum insert-only tables too), so the state of a database in service.

Memory is the server's peak resident size (VmHWM, the largest of its processes, Linux), read
after each step: it only grows, so each figure is the peak so far. Other processes may share
the machine (the load average at start is printed).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import update

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from tests.benchmarks.service_fixture import (
    cpu_note,
    make_blog,
    peak_rss_mib,
    postgres_database,
    running_service,
)


def sync(http: httpx.Client, known: list[tuple[str, str]]) -> tuple[float, int, dict[str, Any]]:
    body = gzip.compress(json.dumps({"knownArticles": [{"id": i, "contentHash": h} for i, h in known]}).encode(), 6)
    start = time.perf_counter()
    response = http.post("/api/v1/sync", content=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    answer = response.json()
    counts: dict[str, Any] = {key: len(answer[key]) for key in ("new", "updated", "deleted")}
    counts["hashes"] = {article["id"]: article["contentHash"] for article in answer["updated"]}
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
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--db-url", help="a PostgreSQL URL (an empty database) instead of a new SQLite file")
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL cluster (initdb/pg_ctl) instead of SQLite")
    parser.add_argument("--vacuum", action="store_true", help="PostgreSQL: VACUUM (ANALYZE) the articles after the bulk insert")
    parser.add_argument("--skip-listing", action="store_true", help="leave out the full listing")
    args = parser.parse_args()
    print(f"Large blog: {args.articles} articles, {cpu_note()}")
    with ExitStack() as stack:
        if args.postgres:
            args.db_url = stack.enter_context(postgres_database())
        measure(args)


def measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-large-") as folder:
        target = args.db_url or str(Path(folder) / "large.db")
        start = time.perf_counter()
        blog = make_blog(target, args.articles)
        print(f"bulk insert: {time.perf_counter() - start:.1f} s")
        if args.vacuum and args.db_url:
            start = time.perf_counter()
            db = Database(target)
            with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.exec_driver_sql("VACUUM (ANALYZE) articles")
            db.dispose()
            print(f"VACUUM (ANALYZE): {time.perf_counter() - start:.1f} s")
        database = "PostgreSQL" if args.db_url else "SQLite"
        changed = [article_id for article_id, _ in blog.known[:: max(1, args.articles // 1000)]][:1000]
        for workers in args.workers:
            db = Database(target) if "://" in target else Database.from_path(target)
            with db.session(write=True) as session:  # a fresh set changed (1,000 at most) for each configuration
                session.execute(update(tables.Article).where(tables.Article.id.in_(changed))
                                .values(content=tables.Article.content + f"Edited for {workers}.\n"))
            db.dispose()
            print(f"\n{database}, {workers} worker{'s' if workers > 1 else ''}:")
            with running_service(target, workers, Path(folder) / f"server-{workers}.log") as (url, process), \
                    httpx.Client(base_url=url, headers={"Authorization": f"Bearer {blog.tokens[0]}"}, timeout=600) as http:
                http.get("/api/v1/status").raise_for_status()
                current = list(blog.known)
                for label in (f"sync, {len(changed):,} changed", "sync, all known", "sync, nothing known"):
                    known = [] if label.endswith("nothing known") else current
                    elapsed, size, counts = sync(http, known)
                    hashes = counts.pop("hashes")
                    current = [(i, hashes.get(i, h)) for i, h in current]  # the client now holds the new versions
                    print(f"  {label:<22} {elapsed:7.2f} s  answer {size / 1e6:7.1f} MB  {counts}  "
                          f"server peak RSS {peak_rss_mib(process.pid):6.0f} MiB")
                if not args.skip_listing:
                    elapsed, count = full_listing(http)
                    print(f"  {'full listing':<22} {elapsed:7.2f} s  {count} articles in pages of 100  "
                          f"server peak RSS {peak_rss_mib(process.pid):6.0f} MiB")


if __name__ == "__main__":
    main()
