"""Rate limits kept in the database: 429 with Retry-After and the spec's Error object past the
data API's per-token and per-client limits and the token endpoint's, sign-in lockout per account
and per address, counters shared by worker processes, and a build that finishes against a
rate-limited service."""

from __future__ import annotations

import math
import multiprocessing
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from flask import Flask

from mkdocs_blogsvc.server import create_app, ratelimit
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from tests.conftest import (
    IN_PROCESS_URL,
    Owner,
    add_owner,
    issue_access_token,
    start_live_server,
    start_of_window,
)
from tests.server.counters_worker import open_counters
from tests.server.oauth_support import add_client, authorize_url, refresh

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


def limited_app(db: Database, **limits: Limit) -> Flask:
    """The app with these limits, its clock at the start of a window of every one of them."""
    start_of_window(db, math.lcm(*(limit.seconds for limit in limits.values())))
    return create_app(db, secret_key="limits", TESTING=True, rate_limits=limits)


@pytest.fixture
def client_for(db: Database) -> Iterator[Callable[[Flask], httpx.Client]]:
    opened: list[httpx.Client] = []

    def make(app: Flask) -> httpx.Client:
        http = httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL)
        opened.append(http)
        return http

    yield make
    for http in opened:
        http.close()


def assert_429(response: httpx.Response, count: int, seconds: int, what: str) -> None:
    assert response.status_code == 429
    retry_after = int(response.headers["Retry-After"])
    assert (
        1 <= retry_after <= math.ceil(seconds * (1 + 1 / ratelimit.BUCKETS))
    )  # a hit is remembered up to 1.1 x seconds
    assert response.json() == {
        "error": "too_many_requests",
        "error_description": f"Rate limit exceeded: at most {count} requests per {seconds} seconds {what}; "
        f"retry after {retry_after} seconds",
    }


def test_the_data_api_is_limited_per_token_then_the_window_passes(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    http = client_for(limited_app(db, token=Limit(3, 60)))
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    assert [http.get("/api/v1/status", headers=headers).status_code for _ in range(3)] == [200, 200, 200]
    assert_429(http.get("/api/v1/articles", headers=headers), 3, 60, "for this access token")
    assert_429(http.post("/api/v1/sync", json={"knownArticles": []}, headers=headers), 3, 60, "for this access token")
    other = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}  # another token has its own budget
    assert http.get("/api/v1/status", headers=other).status_code == 200
    db.advance_clock(66)  # the hits have left the sliding window (remembered 60 s, up to 66 s)
    assert http.get("/api/v1/status", headers=headers).status_code == 200


def test_retry_after_counts_the_seconds_until_the_hit_leaves_the_window(
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
) -> None:
    """A hit made 30 s into a 6-second bucket's span leaves the window 60 to 66 s later: the
    client is told to come back then, not at the end of a fixed window."""
    http = client_for(limited_app(db, token=Limit(1, 60)))
    db.advance_clock((30 - db.now().timestamp() % 60) % 60)
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    assert http.get("/api/v1/status", headers=headers).status_code == 200
    refused = http.get("/api/v1/status", headers=headers)
    assert_429(refused, 1, 60, "for this access token")
    assert 60 <= int(refused.headers["Retry-After"]) <= 66
    db.advance_clock(int(refused.headers["Retry-After"]) - 3)  # 3 s short: the machine's own seconds pass too
    assert http.get("/api/v1/status", headers=headers).status_code == 429
    db.advance_clock(int(http.get("/api/v1/status", headers=headers).headers["Retry-After"]))
    assert http.get("/api/v1/status", headers=headers).status_code == 200


def test_the_data_api_is_limited_per_client(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    http = client_for(limited_app(db, client=Limit(4, 60)))
    tokens = [issue_access_token(db, owner, client_id="one-app") for _ in range(3)]
    answers = [http.get("/api/v1/status", headers={"Authorization": f"Bearer {t}"}).status_code for t in tokens * 2]
    assert answers == [200, 200, 200, 200, 429, 429]
    other_app = issue_access_token(db, owner, client_id="another-app")
    assert http.get("/api/v1/status", headers={"Authorization": f"Bearer {other_app}"}).status_code == 200


def test_busy_counters_let_the_request_through(
    tmp_path: Path,
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fail open: when the counters cannot be written in time, the request is served uncounted."""
    if not db.is_sqlite:
        pytest.skip("the counters' own SQLite file is what is held busy here")
    monkeypatch.setattr(ratelimit, "COUNTER_TIMEOUT", 0.2)
    http = client_for(limited_app(db, token=Limit(1, 60)))
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    holder = sqlite3.connect(tmp_path / "service.db.ratelimits", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process writing the counters, for longer than the timeout
        assert [http.get("/api/v1/status", headers=headers).status_code for _ in range(2)] == [200, 200]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert http.get("/api/v1/status", headers=headers).status_code == 200
    assert http.get("/api/v1/status", headers=headers).status_code == 429


def test_a_bad_token_is_401_not_counted(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    http = client_for(limited_app(db, token=Limit(1, 60)))
    for _ in range(3):
        assert http.get("/api/v1/status", headers={"Authorization": "Bearer svc_at_nothing"}).status_code == 401


def test_the_token_endpoint_is_limited_per_client_and_per_refresh_token(
    db: Database, client_for: Callable[[Flask], httpx.Client]
) -> None:
    http = client_for(limited_app(db, token_endpoint=Limit(2, 60), refresh_token=Limit(30, 60)))
    client = add_client(db, public=True)
    assert [refresh(http, client, "svc_rt_unknown").status_code for _ in range(2)] == [400, 400]
    assert_429(refresh(http, client, "svc_rt_unknown"), 2, 60, "for this client at the token endpoint")

    http = client_for(limited_app(db, refresh_token=Limit(2, 60)))
    other = add_client(db, public=True)
    assert [refresh(http, other, "svc_rt_again").status_code for _ in range(2)] == [400, 400]
    assert_429(refresh(http, other, "svc_rt_again"), 2, 60, "for this refresh token")


def sign_in(http: httpx.Client, url: str, username: str, password: str) -> httpx.Response:
    page = http.get(url)
    csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    return http.post(url, data={"csrf_token": csrf, "username": username, "password": password})


def test_sign_in_lockout_per_account(db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]) -> None:
    app = limited_app(db, signin_account=Limit(3, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    http = client_for(app)
    for _ in range(3):
        wrong = sign_in(http, url, owner.username, "wrong")
        assert wrong.status_code == 200 and "Wrong username or password." in wrong.text
    locked = sign_in(http, url, owner.username, owner.password)  # even the right password
    assert locked.status_code == 429 and 1 <= int(locked.headers["Retry-After"]) <= 990
    assert "Too many failed sign-ins for this account: try again in" in locked.text
    assert 'name="password"' in locked.text  # still the sign-in page, no session
    bob = add_owner(db, "bob", "bob-blog")
    assert sign_in(client_for(app), url, bob.username, bob.password).status_code == 303  # another account
    db.advance_clock(990)  # the failed attempts have left the sliding window (900 s, up to 990 s)
    assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 303


def test_sign_ins_sent_at_once_get_no_more_guesses(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    """Found by review: the lockout was checked before the slow password hash and counted
    after it, so attempts sent together all passed (22 guesses of 10 allowed, on 4 workers)."""
    app = limited_app(db, signin_account=Limit(3, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    clients = [client_for(app) for _ in range(12)]
    forms = [
        {
            "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', http.get(url).text).group(1),
            "username": owner.username,
            "password": f"wrong-{n}",
        }
        for n, http in enumerate(clients)
    ]
    barrier = threading.Barrier(len(clients))

    def attempt(n: int) -> int:
        barrier.wait()
        return clients[n].post(url, data=forms[n]).status_code

    with ThreadPoolExecutor(len(clients)) as pool:
        statuses = list(pool.map(attempt, range(len(clients))))
    assert sorted(statuses) == [200] * 3 + [429] * 9, statuses


def test_a_right_password_gives_its_attempt_back(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    app = limited_app(db, signin_account=Limit(2, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    for _ in range(3):
        assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 303
    assert sign_in(client_for(app), url, owner.username, "wrong").status_code == 200
    assert sign_in(client_for(app), url, owner.username, "wrong").status_code == 200
    assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 429


def test_attempts_a_locked_address_makes_do_not_count_against_the_account(
    db: Database,
    owner: Owner,
    client_for: Callable[[Flask], httpx.Client],
) -> None:
    """Found by review: each refused attempt still counted for its account, so a locked
    address could lock any number of accounts."""
    app = limited_app(db, signin_address=Limit(2, 900), signin_account=Limit(5, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    http = client_for(app)
    assert sign_in(http, url, "nobody", "x").status_code == 200
    assert sign_in(http, url, "someone", "y").status_code == 200
    for _ in range(6):
        assert sign_in(http, url, owner.username, owner.password).status_code == 429  # the address is locked
    elsewhere = httpx.Client(transport=httpx.WSGITransport(app=app, remote_addr="10.9.9.9"), base_url=IN_PROCESS_URL)
    with elsewhere:
        assert sign_in(elsewhere, url, owner.username, owner.password).status_code == 303


def test_a_sign_in_limit_of_zero_is_off(
    db: Database, owner: Owner, client_for: Callable[[Flask], httpx.Client]
) -> None:
    """`signin_account=0/900` switches the lockout off: it does not lock every account out."""
    app = limited_app(db, signin_account=Limit(0, 900), signin_address=Limit(0, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    for _ in range(3):
        assert sign_in(client_for(app), url, owner.username, "wrong").status_code == 200
    assert sign_in(client_for(app), url, owner.username, owner.password).status_code == 303


def test_sign_in_lockout_per_address(db: Database, client_for: Callable[[Flask], httpx.Client]) -> None:
    app = limited_app(db, signin_address=Limit(2, 900))
    url = authorize_url(add_client(db, public=True), code_challenge="x" * 43, code_challenge_method="S256")
    http = client_for(app)
    assert sign_in(http, url, "nobody", "x").status_code == 200
    assert sign_in(http, url, "someone", "y").status_code == 200
    locked = sign_in(http, url, "anyone-else", "z")
    assert locked.status_code == 429 and "Too many failed sign-ins for this address" in locked.text


def test_limits_parse_and_refuse_in_one_line() -> None:
    limits = ratelimit.parse("token=10/1, signin_account=0/60")
    assert limits["token"] == Limit(10, 1) and limits["signin_account"] == Limit(0, 60)
    assert limits["client"] == ratelimit.DEFAULTS["client"]
    assert ratelimit.parse("token=10/1; client=5/2") == {
        **ratelimit.DEFAULTS,
        "token": Limit(10, 1),
        "client": Limit(5, 2),
    }
    with pytest.raises(ValueError, match="unknown rate limit 'tokens'"):
        ratelimit.parse("tokens=1/1")
    with pytest.raises(ValueError, match="write NAME=COUNT/SECONDS"):
        ratelimit.parse("token=ten/60")


@pytest.mark.slow
def test_counters_are_shared_by_worker_processes(tmp_path: Path) -> None:
    db_path = tmp_path / "shared.db"
    db = Database.from_path(db_path)
    headers = {"Authorization": f"Bearer {issue_access_token(db, add_owner(db))}"}
    db.dispose()
    server = start_live_server(db_path, "--workers", "2", "--rate-limit", "token=5/600")
    try:
        barrier = threading.Barrier(8)

        def call(_: int) -> int:
            with httpx.Client(timeout=30) as http:
                barrier.wait()
                return http.get(f"{server.url}/api/v1/status", headers=headers).status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = sorted(pool.map(call, range(8)))
    finally:
        server.stop()
    assert statuses == [200] * 5 + [429] * 3


def test_worker_processes_starting_together_share_one_counter_table(tmp_path: Path) -> None:
    """gunicorn starts every worker at once, and each opens `<db>.ratelimits` and creates its
    table if missing: a check and then a create would let two workers both try to create it
    (`table rate_counters already exists`, a traceback in the server's log), and switching the
    new file to WAL together gets "database is locked" at once (1 start in 6 to 30 failed)."""
    # forkserver, this module preloaded: each start is a fork (milliseconds), not a fresh
    # interpreter importing the service (a second each); the barrier makes the starts together.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([open_counters.__module__])
    for attempt in range(8):
        path = tmp_path / f"service-{attempt}.db"
        Database.from_path(path).dispose()
        start, errors = context.Barrier(6), context.Queue()
        workers = [context.Process(target=open_counters, args=(str(path), start, errors)) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert [worker.exitcode for worker in workers] == [0] * 6
        assert errors.empty(), errors.get()
        assert Path(f"{path}.ratelimits").is_file()
