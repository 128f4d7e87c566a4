"""The bulkhead of SQLite write transactions (`bulkhead`): while the write lock is held elsewhere,
a writer beyond a process's slots is answered 503 with `Retry-After` at once (not after the 5 s
lock timeout), so it frees its thread for reads; a burst of short writes is never refused; the
slots follow the server's threads (`server run --threads`, `BLOGSVC_THREADS`)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server import bulkhead, create_app
from mkdocs_blogsvc.server.bulkhead import WriterBulkhead
from mkdocs_blogsvc.server.database import REQUEST_LOCK_TIMEOUT, Database
from mkdocs_blogsvc.server.errors import WritersQueued
from mkdocs_blogsvc.server.wsgi import DeploymentError, from_environment
from tests.conftest import IN_PROCESS_URL, add_owner, issue_access_token
from tests.server.oauth_support import add_client, authorize, exchange, refresh

#: Far below the 5 s lock timeout a refused writer would otherwise have waited, far above the
#: milliseconds a refusal takes: "at once" on a loaded machine.
AT_ONCE = 1.0


@contextmanager
def write_lock_held(path: Path) -> Iterator[None]:
    """Another process's long write transaction (SQLite's write lock, as `sqlite3` would hold it)."""
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.rollback()
        holder.close()


def wait_for(until: Callable[[], bool]) -> None:
    """Poll `until()` for up to 10 s (the service's threads reach the bulkhead in their own time)."""
    deadline = time.monotonic() + 10
    while not until():
        assert time.monotonic() < deadline, "the writers never reached the bulkhead"
        time.sleep(0.01)


def test_slots_leave_one_thread_for_reads() -> None:
    assert bulkhead.slots_for(4) == 3
    assert bulkhead.slots_for(2) == 1
    assert bulkhead.slots_for(1) == 1  # one thread still writes
    assert bulkhead.slots_for(None) == bulkhead.THREAD_PER_REQUEST_SLOTS == 32
    with pytest.raises(ValueError, match="^a bulkhead needs at least one slot, not 0$"):
        WriterBulkhead(0)  # no writer could ever write


def test_a_writer_beyond_the_slots_is_503_with_retry_after_at_once(tmp_path: Path) -> None:
    """One slot (2 threads): a sync waits for the held lock in it; once nothing has moved for the
    patience, every further sync is 503 with Retry-After within milliseconds while a status
    read answers; the waiting sync gets the lock when it is given back, and writes flow again."""
    path = tmp_path / "service.db"
    db = Database.from_path(path)
    owner = add_owner(db)
    token = issue_access_token(db, owner)
    app = create_app(db, secret_key="test-secret", request_threads=2)
    assert db.writers is not None and db.writers.slots == 1
    headers = {"Authorization": f"Bearer {token}"}
    client = add_client(db, public=True)
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        refresh_token = exchange(http, client, authorize(app, client, owner)).json()["refresh_token"]

    def sync() -> httpx.Response:
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            return http.post("/api/v1/sync", json={"knownArticles": []}, headers=headers)

    try:
        with ThreadPoolExecutor(1) as pool, write_lock_held(path):
            waiting = pool.submit(sync)
            wait_for(lambda: db.writers is not None and db.writers.taken == 1)
            time.sleep(bulkhead.PATIENCE)  # nothing moves: the lock is held elsewhere
            for _ in range(3):
                begun = time.monotonic()
                refused = sync()
                elapsed = time.monotonic() - begun
                assert refused.status_code == 503, refused.text
                assert refused.headers["Retry-After"] == "2"
                assert refused.json()["error"] == "temporarily_unavailable"
                assert elapsed < AT_ONCE < REQUEST_LOCK_TIMEOUT, f"refused after {elapsed:.2f} s"
            with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
                begun = time.monotonic()
                refused = refresh(http, client, refresh_token)  # the token endpoint, through Authlib
                assert refused.status_code == 503 and refused.headers["Retry-After"] == "2", refused.text
                assert time.monotonic() - begun < AT_ONCE
                assert http.get("/api/v1/status", headers=headers).status_code == 200
        assert waiting.result().status_code == 200  # it had the slot: the lock came back in time
        assert sync().status_code == 200
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            assert refresh(http, client, refresh_token).status_code == 200  # the 503 spent nothing
        assert db.writers.taken == 0
    finally:
        db.dispose()


def test_a_burst_of_short_writes_is_never_refused() -> None:
    """Twelve writers at once through two slots, each holding the lock briefly: all get through."""
    slots = WriterBulkhead(2, patience=bulkhead.PATIENCE)
    start = threading.Barrier(12)

    def write(_: int) -> bool:
        start.wait()
        with slots.slot() as got_lock:
            got_lock()
            time.sleep(0.02)
        return True

    with ThreadPoolExecutor(12) as pool:
        assert all(pool.map(write, range(12)))
    assert slots.taken == 0


def test_a_writer_waits_for_a_slot_only_while_writers_move() -> None:
    slots = WriterBulkhead(1, patience=0.2)
    with slots.slot():  # waits for a lock that never comes
        begun = time.monotonic()
        with pytest.raises(WritersQueued, match="1 write transactions of this process already wait"), slots.slot():
            pass
        assert 0.1 < time.monotonic() - begun < AT_ONCE  # the patience, then refused
        begun = time.monotonic()
        with pytest.raises(WritersQueued), slots.slot():
            pass
        assert time.monotonic() - begun < 0.1  # still nothing moved: refused without waiting
    assert slots.taken == 0


def test_after_a_lock_timeout_a_full_bulkhead_refuses_without_patience() -> None:
    """A slot given back without the lock (the lock wait timed out) marks the lock stuck: until a
    writer gets it again, a writer finding the slots full is refused at once."""
    slots = WriterBulkhead(1, patience=10.0)
    with slots.slot():
        pass  # no got_lock(): the wait for the lock failed
    with slots.slot():  # a free slot is still taken
        begun = time.monotonic()
        with pytest.raises(WritersQueued), slots.slot():
            pass
        assert time.monotonic() - begun < AT_ONCE  # not the 10 s patience
    assert slots.taken == 0


def test_postgresql_and_admin_commands_have_no_bulkhead(tmp_path: Path) -> None:
    db = Database.from_path(tmp_path / "service.db")
    try:
        assert db.writers is None  # admin commands and scripts: writers queue for the lock as ever
        create_app(db, secret_key="test-secret", request_threads=4)
        assert db.writers is not None and db.writers.slots == 3
    finally:
        db.dispose()


def test_blogsvc_threads_sizes_the_bulkhead_of_a_wsgi_deployment(tmp_path: Path) -> None:
    environ = {"BLOGSVC_DB": str(tmp_path / "service.db"), "BLOGSVC_SECRET_KEY": "k" * 32}
    for threads, slots in (("8", 7), ("", bulkhead.THREAD_PER_REQUEST_SLOTS)):
        app = from_environment({**environ, "BLOGSVC_THREADS": threads})
        db: Database = app.extensions["blogsvc_db"]
        app.extensions["blogsvc_limiter"].engine.dispose()
        db.dispose()
        assert db.writers is not None and db.writers.slots == slots
    with pytest.raises(DeploymentError, match=r"BLOGSVC_THREADS='four' is not a number of threads from 1 to 1024"):
        from_environment({**environ, "BLOGSVC_THREADS": "four"})
