"""Shared by the service benchmarks: a blog bulk-inserted into a store, and `server run` as a
real process (Werkzeug with 1 worker, gunicorn with more) on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.serialize import content_hash
from tests.conftest import add_owner, free_port, issue_access_token

#: Rate limits off: a benchmark measures throughput, not the limiter's refusals.
NO_LIMITS = ["--rate-limit", "token=0/60", "--rate-limit", "client=0/60"]


@dataclass
class Blog:
    target: str
    tokens: list[str]
    known: list[tuple[str, str]]


def make_blog(target: str, articles: int, tokens: int = 1, body_bytes: int = 1500) -> Blog:
    """A blog of `articles` published articles (bulk insert, batches of 10,000) and `tokens` tokens."""
    db = Database(target) if "://" in target else Database.from_path(target)
    try:
        owner = add_owner(db)
        now = db.now()
        known: list[tuple[str, str]] = []
        filler = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * (body_bytes // 57 + 1))[:body_bytes]
        for start in range(0, articles, 10_000):
            rows: list[dict[str, Any]] = []
            for n in range(start, min(start + 10_000, articles)):
                article_id = security.new_cuid()
                title, description, content = f"Article {n}", f"About article {n}", f"# Article {n}\n\n{filler}\n"
                rows.append(
                    {
                        "id": article_id,
                        "blog_id": owner.blog_id,
                        "slug": f"article-{n}",
                        "title": title,
                        "description": description,
                        "content": content,
                        "inline_media_keys": [],
                        "tags": ["bench"],
                        "seo_keywords": [],
                        "status": "published",
                        "published_at": now - timedelta(seconds=n),
                        "updated_at": now,
                        "created_at": now,
                        "view_count": 0,
                    }
                )
                known.append((article_id, content_hash(title, description, content, ["bench"])))
            with db.session(write=True) as session:
                session.execute(insert(tables.Article), rows)
        return Blog(target, [issue_access_token(db, owner) for _ in range(tokens)], known)
    finally:
        db.dispose()


@contextmanager
def running_service(target: str, workers: int, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`server run --workers N` on a free port until the block ends."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "mkdocs_blogsvc",
        "server",
        "run",
        "--db",
        target,
        "--port",
        str(port),
        "--workers",
        str(workers),
        *NO_LIMITS,
    ]
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text(errors='replace')}")
            try:
                httpx.get(f"{url}/openapi.json", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        time.sleep(1.0 if workers > 1 else 0)  # let every worker boot
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def peak_rss_mib(pid: int) -> float:
    """The largest peak resident size (VmHWM) of `pid` and its children, in MiB (Linux)."""
    pids = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    pids.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    peak = 0
    for each in pids:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            continue
    return peak / 1024


def cpu_note() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} CPUs, load average {load:.1f} at start (other processes share the machine)"


@contextmanager
def postgres_database() -> Iterator[str]:
    """A throwaway PostgreSQL cluster (`tests/postgres.py`, the suite's) and one empty database."""
    from tests import postgres

    cluster_fixture = contextmanager(postgres.postgres_cluster.__wrapped__)  # the fixture's own generator
    with cluster_fixture() as cluster:
        url = cluster.new_database()
        try:
            yield url
        finally:
            cluster.drop(url)
