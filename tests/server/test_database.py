"""SQLite transactions of the service: reads run side by side (WAL), writes queue up at BEGIN.

SQLite only (this module's `db`): PostgreSQL has row locks and MVCC instead of one write lock,
and the guarantees that matter on both (a token spent once, a code redeemed once, counters) are
shown on both databases by `test_races.py` and the OAuth tests.

Every wait is bounded by a short timeout on a worker thread, so a regression (a read taking the
write lock) fails in seconds instead of hanging for SQLite's 30-second busy timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import func, select

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import add_article, add_owner, issue_access_token
from tests.server.oauth_support import add_client, authorize_url

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

T = TypeVar("T")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.from_path(tmp_path / "service.db")
    yield database
    database.dispose()


TIMEOUT = 5.0


def finishes(function: Callable[[], T], timeout: float = TIMEOUT) -> T:
    """Run `function` on a thread and return its result; fail if it is still waiting after `timeout`."""
    executor = ThreadPoolExecutor(max_workers=1)
    try:
        return executor.submit(function).result(timeout)
    except FutureTimeout:
        raise AssertionError(f"still waiting after {timeout} s: blocked on the database's write lock?") from None
    finally:
        executor.shutdown(wait=False)


def count_users(session: Any) -> int:
    return int(session.scalar(select(func.count()).select_from(tables.User)))


def test_read_transactions_run_side_by_side_and_keep_their_snapshot(db: Database) -> None:
    add_owner(db)
    all_open = threading.Barrier(3, timeout=TIMEOUT)  # two readers and this thread
    writer_done = threading.Event()
    seen: list[int] = []

    def reader() -> None:
        with db.session() as session:
            seen.append(count_users(session))
            all_open.wait()  # the other reader's transaction is open at the same time
            assert writer_done.wait(TIMEOUT)
            seen.append(count_users(session))

    readers = [threading.Thread(target=reader, daemon=True) for _ in range(2)]
    for thread in readers:
        thread.start()
    all_open.wait()
    with db.session() as third:  # a third connection reads while both are open
        assert count_users(third) == 1
    finishes(lambda: add_owner(db, "bob", "bob-blog"))  # and a writer is not blocked by them
    writer_done.set()
    for thread in readers:
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    assert seen == [1, 1, 1, 1]  # each read transaction kept the snapshot of its first read
    with db.session() as session:
        assert count_users(session) == 2


def test_write_transactions_take_the_lock_at_begin_and_queue_up(db: Database) -> None:
    entered = threading.Event()

    def second_writer() -> float:
        with db.session(write=True) as session:
            entered.set()
            clock = session.get(tables.ClockOffset, 1)
            assert clock is not None
            return clock.offset_seconds

    with db.session(write=True) as first:
        first.add(tables.ClockOffset(id=1, offset_seconds=5.0))
        waiting = threading.Thread(target=second_writer, daemon=True)
        waiting.start()
        assert not entered.wait(0.3), "a second write transaction began while the first held the lock"
        with db.session() as reader:  # reads are not held up by the writer
            assert finishes(lambda: reader.get(tables.ClockOffset, 1)) is None  # the uncommitted row is not seen
    assert entered.wait(TIMEOUT), "the queued write transaction never began"
    waiting.join(TIMEOUT)
    assert not waiting.is_alive()


def test_reading_the_clock_inside_a_write_transaction_does_not_wait(db: Database) -> None:
    db.advance_clock(60)
    with db.session(write=True) as session:
        session.add(tables.User(username="clock-reader", password_hash="x", created_at=db.now()))
        session.flush()
        now = finishes(db.now)  # its own connection, outside any transaction
    assert now - datetime.now(timezone.utc) >= timedelta(seconds=59)  # the test clock was read


def test_read_endpoints_answer_while_another_process_holds_the_write_lock(db: Database, http: httpx.Client) -> None:
    owner = add_owner(db)
    article_id = add_article(db, owner.blog_id, "Readable")
    token = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")

    def read_everything() -> list[int]:
        statuses = [
            http.get("/api/v1/articles", headers=token).status_code,
            http.get(f"/api/v1/articles/{article_id}", headers=token).status_code,
            http.get("/api/v1/status", headers=token).status_code,
            http.get("/media/0123456789abcdef0123456789abcdef.png").status_code,
            http.get("/").status_code,
            http.get("/openapi.json").status_code,
        ]
        page = http.get(url)  # the sign-in page, then a sign-in (scrypt) and the consent page
        csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        signed_in = http.post(url, data={"csrf_token": csrf, "username": owner.username, "password": owner.password})
        return [*statuses, page.status_code, signed_in.status_code, http.get(url).status_code]

    sync_done = threading.Event()

    def sync() -> None:
        http.post("/api/v1/sync", headers=token, json={"knownArticles": []})
        sync_done.set()

    with db.session(write=True):  # as `server admin` would, in another process
        assert finishes(read_everything) == [200, 200, 200, 404, 200, 200, 200, 303, 200]
        syncing = threading.Thread(target=sync, daemon=True)
        syncing.start()
        assert not sync_done.wait(0.3), "sync (it writes lastSyncAt) did not wait for the write lock"
    assert sync_done.wait(TIMEOUT)
    syncing.join(TIMEOUT)
