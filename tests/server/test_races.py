"""Races settled by one conditional statement in the database, on SQLite and on PostgreSQL:
threads with their own connections present one authorization code, or sync one connection, at once.
(One refresh token: `test_oauth_tokens.py`; views of one article: `test_blogs.py`.)"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import httpx
import pytest
from flask import Flask
from sqlalchemy import select

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, Owner, issue_access_token
from tests.server.oauth_support import add_client, authorize, exchange

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

T = TypeVar("T")


def at_once(app: Flask, contenders: int, call: Callable[[httpx.Client], T]) -> list[T]:
    """`call` from `contenders` threads released together, each with its own client."""
    barrier = threading.Barrier(contenders)
    results: list[T] = []
    lock = threading.Lock()

    def contend() -> None:
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            barrier.wait()
            result = call(http)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=contend) for _ in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == contenders
    return results


def test_a_code_presented_at_once_is_redeemed_once(app: Flask, db: Database, owner: Owner) -> None:
    client = add_client(db, public=True)
    code = authorize(app, client, owner)
    answers = at_once(app, 6, lambda http: exchange(http, client, code))
    assert sorted(answer.status_code for answer in answers) == [200, 400, 400, 400, 400, 400]
    assert all(answer.json()["error"] == "invalid_grant" for answer in answers if answer.status_code == 400)
    with db.session() as session:
        assert len(session.scalars(select(tables.Grant)).all()) == 1  # one exchange created a connection
        refresh_tokens = session.scalars(select(tables.Token).where(tables.Token.kind == "refresh")).all()
        assert len(refresh_tokens) == 1
        stored = session.scalars(select(tables.AuthorizationCode)).one()
        assert stored.used_at is not None


def test_every_sync_sets_last_sync_at_even_at_once(app: Flask, db: Database, owner: Owner) -> None:
    token = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    answers = at_once(app, 6, lambda http: http.post("/api/v1/sync", headers=token, json={"knownArticles": []}))
    assert [answer.status_code for answer in answers] == [200] * 6
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        first = http.get("/api/v1/status", headers=token).json()["lastSyncAt"]
        assert first in {answer.json()["syncedAt"] for answer in answers}
        db.advance_clock(120)
        later = http.post("/api/v1/sync", headers=token, json={"knownArticles": []}).json()["syncedAt"]
        assert http.get("/api/v1/status", headers=token).json()["lastSyncAt"] == later > first
