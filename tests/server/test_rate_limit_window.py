"""Rate limits an attacker cannot double: a sliding window holds across the boundary where a
fixed window would have started afresh, and sign-in fails closed (503) when its counters cannot
be written, while the data API fails open."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from flask import Flask
from sqlalchemy import text

from mkdocs_blogsvc.server import ratelimit
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from tests.conftest import Owner, issue_access_token
from tests.server.oauth_support import add_client, authorize_url
from tests.server.test_rate_limits import client_for, limited_app, sign_in

__all__ = ["client_for"]  # a fixture, used by name


def seconds_into_fixed_window(db: Database, seconds: int, into: float) -> None:
    """Move the test clock to `into` seconds past a multiple of `seconds` (where a fixed window would start)."""
    db.advance_clock((into - db.now().timestamp() % seconds) % seconds)


def test_the_data_api_cannot_be_doubled_across_a_window_boundary(
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
) -> None:
    http = client_for(limited_app(db, token=Limit(10, 60)))
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    seconds_into_fixed_window(db, 60, 57)
    assert {http.get("/api/v1/status", headers=headers).status_code for _ in range(10)} == {200}
    db.advance_clock(4)  # 1 s into the next fixed window: a fixed window would allow 10 more now
    refused = http.get("/api/v1/status", headers=headers)
    assert refused.status_code == 429
    assert (
        45 <= int(refused.headers["Retry-After"]) <= 66
    )  # when the 10 hits of 4 s ago have left (59 s, less the seconds this test took)
    db.advance_clock(30)
    assert http.get("/api/v1/status", headers=headers).status_code == 429  # still within 60 s of them
    db.advance_clock(int(http.get("/api/v1/status", headers=headers).headers["Retry-After"]))
    assert http.get("/api/v1/status", headers=headers).status_code == 200


def test_passwords_cannot_be_doubled_across_a_window_boundary(
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
) -> None:
    """Found by an attack: 20 passwords checked in 7 s across a fixed window's boundary (10 allowed)."""
    app = limited_app(db, signin_account=Limit(10, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    http = client_for(app)
    seconds_into_fixed_window(db, 900, 896)
    for _ in range(10):
        assert "Wrong username or password." in sign_in(http, url, owner.username, "wrong").text
    db.advance_clock(7)  # 3 s into the next fixed window
    locked = sign_in(http, url, owner.username, "guess-11")
    assert locked.status_code == 429 and "Too many failed sign-ins for this account" in locked.text
    assert 800 <= int(locked.headers["Retry-After"]) <= 990  # 897 s, less the seconds the ten sign-ins took
    db.advance_clock(int(locked.headers["Retry-After"]))
    assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 303


@contextmanager
def counters_broken(db: Database, path: Path, how: str) -> Iterator[None]:
    """The counters unwritable while inside: held by another writer ("busy": SQLite's file
    locked, PostgreSQL's table locked), or without their table ("broken", as a damaged store)."""
    if db.is_sqlite:
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute(
                "BEGIN IMMEDIATE" if how == "busy" else "ALTER TABLE rate_counters RENAME TO rate_counters_gone"
            )
            yield
            holder.execute("ROLLBACK" if how == "busy" else "ALTER TABLE rate_counters_gone RENAME TO rate_counters")
        finally:
            holder.close()
        return
    with db.engine.connect() as connection:
        transaction = connection.begin()
        if how == "busy":
            connection.execute(text("LOCK TABLE rate_counters IN ACCESS EXCLUSIVE MODE"))
        else:
            connection.execute(text("ALTER TABLE rate_counters RENAME TO rate_counters_gone"))
            transaction.commit()
        try:
            yield
        finally:
            if how == "busy":
                transaction.rollback()
            else:
                connection.execute(text("ALTER TABLE rate_counters_gone RENAME TO rate_counters"))
                connection.commit()


@pytest.mark.parametrize("how", ["busy", "broken"])
def test_sign_in_fails_closed_when_counters_cannot_be_written(
    tmp_path: Path,
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    monkeypatch.setattr(ratelimit, "COUNTER_TIMEOUT", 0.2)
    app = limited_app(db, signin_account=Limit(10, 900), token=Limit(100, 60))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    http = client_for(app)
    page = http.get(url)
    csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    with counters_broken(db, tmp_path / "service.db.ratelimits", how):
        refused = http.post(url, data={"csrf_token": csrf, "username": owner.username, "password": owner.password})
        assert refused.status_code == 503 and refused.headers["Retry-After"] == str(ratelimit.UNAVAILABLE_RETRY_AFTER)
        assert "Sign-in is unavailable: its rate-limit counters cannot be written" in refused.text
        assert "session" not in refused.headers.get("set-cookie", "")
        # The data API limits load, not guesses: it goes on, uncounted.
        headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
        assert http.get("/api/v1/status", headers=headers).status_code == 200
    # The store is back: sign-in works again.
    assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 303
