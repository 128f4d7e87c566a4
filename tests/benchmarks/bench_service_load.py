"""Throughput of the reference service under load. Prints figures; not a test.

    python tests/benchmarks/bench_service_load.py                       # SQLite, 1 worker, 60 s
    python tests/benchmarks/bench_service_load.py --seconds 15 --workers 1 4
    python tests/benchmarks/bench_service_load.py --db-url 'postgresql+psycopg://...' --workers 4

A blog of 1,000 articles (about 1.5 kB of Markdown each) is bulk-inserted into a new store, then
`server run --workers N` serves it on a loopback port (rate limits off) while `--clients`
threads (20), each with its own connection and its own token, send a random mix for
`--seconds`: a listing page at limit 100 (random page of 10), one article by id, a sync with all
1,000 known, and the status. Prints requests/s and p50/p99 latency per endpoint and overall.

The load client runs in this process on the same machine, and other processes may share the
CPUs: figures are comparable only between runs on one machine at one time (the load average
at start is printed).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.service_fixture import cpu_note, make_blog, postgres_database, running_service

ENDPOINTS = ("list", "get", "sync", "status")


def run_load(url: str, tokens: list[str], known: list[tuple[str, str]], seconds: float) -> dict[str, list[float]]:
    sync_body = json.dumps({"knownArticles": [{"id": i, "contentHash": h} for i, h in known]}).encode()
    ids = [article_id for article_id, _ in known]
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(token: str, seed: int) -> None:
        rng = random.Random(seed)
        mine: dict[str, list[float]] = defaultdict(list)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            while time.monotonic() < deadline:
                endpoint = rng.choice(ENDPOINTS)
                start = time.perf_counter()
                if endpoint == "list":
                    response = http.get("/api/v1/articles", params={"limit": 100, "page": rng.randint(1, 10)})
                elif endpoint == "get":
                    response = http.get(f"/api/v1/articles/{rng.choice(ids)}")
                elif endpoint == "sync":
                    response = http.post(
                        "/api/v1/sync", content=sync_body, headers={"Content-Type": "application/json"}
                    )
                else:
                    response = http.get("/api/v1/status")
                elapsed = time.perf_counter() - start
                if response.status_code != 200:
                    with lock:
                        errors[f"{endpoint} {response.status_code}"] += 1
                    continue
                mine[endpoint].append(elapsed)
        with lock:
            for endpoint, values in mine.items():
                latencies[endpoint].extend(values)

    threads = [threading.Thread(target=client, args=(token, n)) for n, token in enumerate(tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        print(f"  non-200 answers: {dict(errors)}")
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(label: str, latencies: dict[str, list[float]], seconds: float) -> None:
    every = [v for values in latencies.values() for v in values]
    print(f"\n{label}: {len(every) / seconds:.1f} requests/s over {seconds:.0f} s ({len(every)} answered)")
    print(f"  {'endpoint':<8} {'count':>6} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for endpoint in (*ENDPOINTS, "all"):
        values = every if endpoint == "all" else latencies.get(endpoint, [])
        if not values:
            continue
        print(
            f"  {endpoint:<8} {len(values):>6} {len(values) / seconds:>7.1f} "
            f"{statistics.median(values) * 1000:>8.0f} {percentile(values, 0.99) * 1000:>8.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration per configuration (default 60)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--articles", type=int, default=1000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="worker counts to measure (default 1)")
    parser.add_argument("--db-url", help="a PostgreSQL URL (an empty database) instead of a new SQLite file")
    parser.add_argument(
        "--postgres", action="store_true", help="a throwaway PostgreSQL cluster (initdb/pg_ctl) instead of SQLite"
    )
    args = parser.parse_args()
    print(f"Service load: {args.clients} clients, {args.articles} articles, {cpu_note()}")
    with ExitStack() as stack:
        if args.postgres:
            args.db_url = stack.enter_context(postgres_database())
        measure(args)


def measure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder:
        target = args.db_url or str(Path(folder) / "load.db")
        blog = make_blog(target, args.articles, tokens=args.clients)
        database = "PostgreSQL" if args.db_url else "SQLite"
        for workers in args.workers:
            with running_service(target, workers, Path(folder) / f"server-{workers}.log") as (url, _process):
                latencies = run_load(url, blog.tokens, blog.known, args.seconds)
            report(f"{database}, {workers} worker{'s' if workers > 1 else ''}", latencies, args.seconds)


if __name__ == "__main__":
    main()
