"""`server run --workers 4` (gunicorn): races between processes are settled in the database.

From 16 threads at once against four worker processes: one refresh token presented 16 times
(exactly one succeeds; the 15 reuses revoke the connection, the spec's rotation rules), one
authorization code redeemed 16 times (exactly one succeeds), and 320 views of one article
(`viewCount` exactly 1,000 more). Sign-in sessions and CSRF tokens, and the test clock, work
whichever worker answers each request.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_article, add_owner, issue_access_token, start_live_server
from tests.postgres import PostgresCluster
from tests.server.oauth_support import (
    Authorized,
    RegisteredClient,
    add_client,
    authorize_url,
    exchange,
    pkce_pair,
    query_of,
    refresh,
)

pytestmark = pytest.mark.slow

T = TypeVar("T")
CONTENDERS = 16
VIEWS = 320


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The `--db` value of the service under test: a SQLite file, or a database of the
    session's PostgreSQL cluster (`tests/postgres.py`)."""
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return str(tmp_path / "workers.db")


@pytest.fixture
def four_workers(target: str, tmp_path: Path) -> Iterator[tuple[LiveServer, Database]]:
    db = Database.open(target)
    db.dispose()  # created the schema; the server opens its own connections
    if "://" in target:
        server = start_live_server(tmp_path / "workers", "--workers", "4", database_url=target)
    else:
        server = start_live_server(Path(target), "--workers", "4")
    try:
        yield server, db
    finally:
        server.stop()
        db.dispose()


def at_once(base: str, count: int, call: Callable[[httpx.Client], T]) -> list[T]:
    """`call` from `count` threads released together, each with its own connection to `base`."""
    barrier = threading.Barrier(count)

    def contend(_: int) -> T:
        with httpx.Client(base_url=base, timeout=60) as http:
            barrier.wait()
            return call(http)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(contend, range(count)))


def code_over_http(server: LiveServer, client: RegisteredClient, username: str, password: str) -> tuple[str, str]:
    """Sign in and approve through the running service (each request may reach another worker)."""
    verifier, challenge = pkce_pair()
    url = authorize_url(client, code_challenge=challenge, code_challenge_method="S256").replace(
        "http://testserver", server.url
    )
    location = drive_consent(url, username=username, password=password)
    return query_of(location)["code"], verifier


def worker_processes(master_pid: int) -> int:
    """How many processes `master_pid` has started (Linux /proc), or -1 where unknown."""
    return len(children(master_pid)) if Path("/proc").is_dir() else -1


def test_races_between_four_worker_processes(four_workers: tuple[LiveServer, Database]) -> None:
    server, db = four_workers
    deadline = time.monotonic() + 30  # the first worker answered; the others may still boot
    while worker_processes(server.process.pid) not in (4, -1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker_processes(server.process.pid) in (4, -1)
    owner = add_owner(db)
    client = add_client(db, public=True)
    article_id = add_article(db, owner.blog_id, "Counted")
    base = server.url

    # Two codes through the sign-in and consent pages of four workers: session and CSRF hold.
    first_code, first_verifier = code_over_http(server, client, owner.username, owner.password)
    second_code, second_verifier = code_over_http(server, client, owner.username, owner.password)

    with httpx.Client(base_url=base, timeout=60) as http:
        tokens = exchange(http, client, Authorized(first_code, first_verifier, client.redirect_uri)).json()
    refresh_token = tokens["refresh_token"]

    # One refresh token, 16 presentations at once: one new pair, and reuse revokes the family.
    answers = at_once(base, CONTENDERS, lambda http: refresh(http, client, refresh_token))
    assert sorted(a.status_code for a in answers) == [200] + [400] * (CONTENDERS - 1)
    assert all(a.json()["error"] == "invalid_grant" for a in answers if a.status_code == 400)
    winner = next(a.json() for a in answers if a.status_code == 200)
    with httpx.Client(base_url=base, timeout=60) as http:
        assert (
            http.get("/api/v1/status", headers={"Authorization": f"Bearer {winner['access_token']}"}).status_code == 401
        )
        assert refresh(http, client, winner["refresh_token"]).status_code == 400

    # One code, 16 redemptions at once: one succeeds.
    second = Authorized(second_code, second_verifier, client.redirect_uri)
    redeemed = at_once(base, CONTENDERS, lambda http: exchange(http, client, second))
    assert sorted(a.status_code for a in redeemed) == [200] + [400] * (CONTENDERS - 1)
    with db.session() as session:
        grants = session.scalars(select(tables.Grant).order_by(tables.Grant.id)).all()
        assert [g.revoked_at is not None for g in grants] == [True, True]  # reuse revoked each family

    # 320 views of one article from 16 threads (20 each, every one racing the others): none lost.
    with db.session() as session:
        before = session.get_one(tables.Article, article_id).view_count
    slug_path = f"/blogs/{owner.blog_slug}/counted"

    def views(http: httpx.Client) -> list[int]:
        """A thread's 20 views, through its own client (not one client, and its TLS set-up of
        34 ms of CPU, per view: that was half this test's CPU)."""
        return [http.get(slug_path).status_code for _ in range(VIEWS // CONTENDERS)]

    statuses = [status for thread in at_once(base, CONTENDERS, views) for status in thread]
    assert statuses == [200] * VIEWS
    with db.session() as session:
        assert session.get_one(tables.Article, article_id).view_count == before + VIEWS

    # The test clock is in the database: every worker sees it move.
    access = issue_access_token(db, owner)
    headers = {"Authorization": f"Bearer {access}"}
    assert {a.status_code for a in at_once(base, 8, lambda http: http.get("/api/v1/status", headers=headers))} == {200}
    db.advance_clock(3601)
    assert {a.status_code for a in at_once(base, 8, lambda http: http.get("/api/v1/status", headers=headers))} == {401}


def test_a_worker_restarted_while_postgresql_refuses_connections_keeps_the_service_up(
    tmp_path: Path,
    postgres_cluster: PostgresCluster,
    postgres_url: str,
) -> None:
    """gunicorn stops the whole service when a worker fails to start: a worker must not need
    the database to start. Outage: the database refuses new connections, its sessions ended."""
    db = Database.open(postgres_url)
    owner = add_owner(db)
    add_article(db, owner.blog_id, "Still here")
    token = issue_access_token(db, owner)
    db.dispose()
    server = start_live_server(tmp_path / "outage", "--workers", "2", database_url=postgres_url)
    name = make_url(postgres_url).database
    headers = {"Authorization": f"Bearer {token}"}

    def articles() -> httpx.Response:
        return httpx.get(f"{server.url}/api/v1/articles", headers=headers, timeout=30)

    def wait_for_workers(gone: int | None = None) -> list[int]:
        deadline = time.monotonic() + 30
        while (gone in (now := children(server.process.pid)) or len(now) < 2) and time.monotonic() < deadline:
            time.sleep(0.2)
        return now

    try:
        assert articles().status_code == 200
        try:
            postgres_cluster.sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            postgres_cluster.sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
            workers = wait_for_workers()
            assert len(workers) == 2
            os.kill(workers[0], signal.SIGKILL)
            restarted = wait_for_workers(gone=workers[0])
            assert workers[0] not in restarted and len(restarted) == 2
            during = [articles() for _ in range(4)]
            assert server.process.poll() is None, server.db_path.with_suffix(".log").read_text(errors="replace")
            assert [answer.status_code for answer in during] == [503] * 4
            assert all(answer.json()["error"] == "temporarily_unavailable" for answer in during)
        finally:
            postgres_cluster.sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        after = [articles() for _ in range(4)]
        assert [answer.status_code for answer in after] == [200] * 4
        assert all(answer.json()["articles"][0]["title"] == "Still here" for answer in after)
        log = server.db_path.with_suffix(".log").read_text(errors="replace")
        assert "Worker failed to boot" not in log and "Traceback" not in log
    finally:
        server.stop()


def children(master_pid: int) -> list[int]:
    """The processes `master_pid` started (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master_pid:
                found.append(int(entry.name))
    return sorted(found)


def test_workers_log_like_one_process_and_leave_no_control_socket(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    server = start_live_server(tmp_path / "logged.db", "--workers", "2", env={"HOME": str(home)})
    try:
        assert httpx.get(f"{server.url}/api/v1/articles?page=1&secret=not-logged", timeout=30).status_code == 401
    finally:
        server.stop()
    log = (tmp_path / "logged.log").read_text(errors="replace")
    line = next(line for line in log.splitlines() if '"GET /api/v1/articles"' in line)
    assert re.match(r'127\.0\.0\.1 - - \[[^]]+\] "GET /api/v1/articles" 401$', line), line
    assert "not-logged" not in log
    assert not (home / ".gunicorn").exists()
