"""Faults answered as faults: a held database lock is 503 with Retry-After (not 500 after 30 s),
an oversized chunked body is 413 (not 400), gzip bodies within a decompressed-size cap, and the
session cookie is Secure behind an https public URL."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server import bodies, create_app
from mkdocs_blogsvc.server.database import REQUEST_LOCK_TIMEOUT, Database
from tests.conftest import IN_PROCESS_URL, LiveServer, Owner, add_article, issue_access_token
from tests.server.oauth_support import add_client, authorize, authorize_url, exchange, refresh

SYNC_HEADERS = {"Content-Type": "application/json"}


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "2"
    assert response.json() == {
        "error": "temporarily_unavailable",
        "error_description": "The service is busy (a database lock or connection wait timed out); retry after 2 seconds",
    }


@contextmanager
def another_writer(db: Database) -> Iterator[None]:
    """Another process's long write transaction: SQLite's write lock (`BEGIN IMMEDIATE`), or on
    PostgreSQL locks that block every write to the tables a request writes (plain reads pass)."""
    if db.is_sqlite:
        holder = sqlite3.connect(db.url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            yield
        finally:
            holder.rollback()
            holder.close()
        return
    import psycopg

    with psycopg.connect(db.url.replace("postgresql+psycopg://", "postgresql://")) as holder:
        holder.execute("LOCK TABLE grants, tokens, authorization_codes, articles IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            holder.rollback()


def test_requests_wait_seconds_not_half_a_minute(app: object, db: Database) -> None:
    assert db.lock_timeout == REQUEST_LOCK_TIMEOUT == 5.0


@pytest.mark.postgres  # each engine's lock wait
def test_a_held_write_lock_is_503_with_retry_after(app: object, db: Database, owner: Owner, http: httpx.Client) -> None:
    client = add_client(db, public=True)
    tokens = exchange(http, client, authorize(app, client, owner)).json()
    api_headers = {"Authorization": f"Bearer {tokens['access_token']}", **SYNC_HEADERS}
    db.lock_timeout = 0.3  # the same path as the 5 s default, sooner
    with another_writer(db):
        assert_unavailable(http.post("/api/v1/sync", json={"knownArticles": []}, headers=api_headers))
        assert_unavailable(refresh(http, client, tokens["refresh_token"]))
        # Reading needs no lock: listing and status still answer.
        assert http.get("/api/v1/articles", headers=api_headers).status_code == 200
    assert http.post("/api/v1/sync", json={"knownArticles": []}, headers=api_headers).status_code == 200
    assert refresh(http, client, tokens["refresh_token"]).status_code == 200  # the 503 spent nothing


@pytest.mark.postgres  # each engine's lock wait
def test_a_503_on_a_page_is_plain_text(app: object, db: Database, owner: Owner, http: httpx.Client) -> None:
    add_article(db, owner.blog_id, "Viewed")
    db.lock_timeout = 0.3
    with another_writer(db):
        page = http.get(f"/blogs/{owner.blog_slug}/viewed")  # counting a view writes
    assert page.status_code == 503 and page.headers["Retry-After"] == "2"
    assert page.headers["Content-Type"].startswith("text/plain") and "Service busy" in page.text


@pytest.fixture
def api_live(live_server: LiveServer) -> Iterator[httpx.Client]:
    db = Database.from_path(live_server.db_path)
    try:
        from tests.conftest import add_owner

        token = issue_access_token(db, add_owner(db))
    finally:
        db.dispose()
    with httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {token}", **SYNC_HEADERS}, timeout=60
    ) as http:
        yield http


def chunked(data: bytes, size: int = 65536) -> Iterator[bytes]:
    """A body sent with `Transfer-Encoding: chunked` (a generator has no length)."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def test_an_oversized_chunked_body_is_413_not_400(api_live: httpx.Client) -> None:
    body = json.dumps({"knownArticles": [], "padding": "x" * bodies.MAX_SYNC_BODY_BYTES}).encode()
    response = api_live.post("/api/v1/sync", content=chunked(body))
    assert response.status_code == 413
    assert response.json() == {
        "error": "request_too_large",
        "error_description": f"Request body exceeds the limit of {bodies.MAX_SYNC_BODY_BYTES} bytes",
    }
    small = api_live.post("/api/v1/sync", content=chunked(b'{"knownArticles": []}'))
    assert small.status_code == 200 and small.json()["new"] == []


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_body_at_the_limit_is_whole_and_one_past_it_413_with_or_without_workers(tmp_path: Path, workers: str) -> None:
    """Found by review: under gunicorn a sync body of exactly 16 MiB was 413, and a chunked
    token request past 1 MiB was cut at the limit and acted on."""
    from tests.conftest import add_owner, start_live_server

    db = Database.from_path(tmp_path / "limits.db")
    token = issue_access_token(db, add_owner(db))
    db.dispose()
    server = start_live_server(tmp_path / "limits.db", "--workers", workers)
    try:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}", **SYNC_HEADERS}, timeout=60
        ) as http:
            start = b'{"knownArticles": []'
            exact = start + b" " * (bodies.MAX_SYNC_BODY_BYTES - len(start) - 1) + b"}"
            assert len(exact) == bodies.MAX_SYNC_BODY_BYTES
            assert http.post("/api/v1/sync", content=exact).status_code == 200
            assert http.post("/api/v1/sync", content=chunked(exact)).status_code == 200
            assert http.post("/api/v1/sync", content=chunked(exact + b" ")).status_code == 413
            form = b"grant_type=refresh_token&refresh_token=svc_rt_x&client_id=c&pad=" + b"x" * (1 << 20)
            refused = http.post(
                "/api/oauth/token",
                content=chunked(form),
                headers={"Content-Type": "application/x-www-form-urlencoded", "Authorization": ""},
            )
            assert (refused.status_code, refused.json()["error"]) == (413, "request_too_large")
    finally:
        server.stop()


@pytest.mark.slow
def test_an_answer_given_without_reading_the_body_keeps_the_connection_usable(tmp_path: Path) -> None:
    """Found by review: under gunicorn (`--workers`), a 401 or 413 answered before the body was
    read left the body in the kept-alive connection, and the next request on it failed
    ("Server disconnected", gunicorn issue 3301)."""
    from tests.conftest import start_live_server

    server = start_live_server(tmp_path / "drain.db", "--workers", "2")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for size in (100_000, 600_000, 1_100_000, 5_000_000):
                unread = http.post(
                    "/api/v1/sync",
                    content=b" " * size,
                    headers={**SYNC_HEADERS, "Authorization": "Bearer svc_at_unknown"},
                )
                assert unread.status_code == 401
                refused = http.post(
                    "/api/oauth/token",
                    content=b" " * size,
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                )
                assert refused.status_code == (413 if size > 1 << 20 else 400)
                assert http.get("/openapi.json").status_code == 200
    finally:
        server.stop()


def test_gzip_bodies_are_accepted_within_a_decompressed_cap(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Zipped")
    body = json.dumps(
        {"knownArticles": [{"id": article_id, "contentHash": "stale"}, {"id": "gone", "contentHash": "x"}]}
    )
    headers = {**SYNC_HEADERS, "Content-Encoding": "gzip"}
    answer = api.post("/api/v1/sync", content=gzip.compress(body.encode()), headers=headers)
    assert answer.status_code == 200
    assert [a["id"] for a in answer.json()["updated"]] == [article_id] and answer.json()["deleted"] == ["gone"]

    # A zip bomb: 16 MiB + 1 of spaces is a few kB compressed, and is refused once decompressed.
    bomb = gzip.compress(b'{"knownArticles": []' + b" " * bodies.MAX_DECOMPRESSED_BYTES + b"}")
    assert len(bomb) < 100_000
    refused = api.post("/api/v1/sync", content=bomb, headers=headers)
    assert refused.status_code == 413
    assert refused.json() == {
        "error": "request_too_large",
        "error_description": f"Decompressed request body exceeds the limit of {bodies.MAX_DECOMPRESSED_BYTES} bytes",
    }
    broken = api.post("/api/v1/sync", content=b"not gzip at all", headers=headers)
    assert broken.status_code == 400 and broken.json()["error"] == "invalid_request"
    assert "not valid gzip" in broken.json()["error_description"]
    truncated = api.post("/api/v1/sync", content=gzip.compress(body.encode())[:-12], headers=headers)
    assert truncated.status_code == 400 and "truncated" in truncated.json()["error_description"]
    other = api.post("/api/v1/sync", content=body.encode(), headers={**SYNC_HEADERS, "Content-Encoding": "br"})
    assert other.status_code == 415
    assert other.json() == {
        "error": "unsupported_media_type",
        "error_description": "Content-Encoding must be gzip or identity",
    }


@pytest.mark.parametrize("encoding", ["GZIP", " Gzip ", "identity", "IDENTITY", ""])
def test_content_encoding_names_are_case_insensitive_and_identity_is_none(api: httpx.Client, encoding: str) -> None:
    """RFC 9110 8.4.1: content codings are case-insensitive; `identity` means no encoding."""
    body = b'{"knownArticles": [{"id": "gone", "contentHash": "x"}]}'
    sent = gzip.compress(body) if encoding.strip().lower() == "gzip" else body
    answer = api.post("/api/v1/sync", content=sent, headers={**SYNC_HEADERS, "Content-Encoding": encoding})
    assert answer.status_code == 200, answer.text
    assert answer.json()["deleted"] == ["gone"]


@pytest.mark.parametrize(
    ("public_url", "secure"), [("https://blog.example", True), ("http://127.0.0.1:8000", False), (None, False)]
)
def test_the_session_cookie_is_secure_behind_an_https_public_url(
    tmp_path: Path, public_url: str | None, secure: bool
) -> None:
    db = Database.from_path(tmp_path / "cookie.db")
    try:
        app = create_app(db, secret_key="cookie-test", public_url=public_url)
        client = add_client(db, public=True)
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            page = http.get(authorize_url(client, code_challenge="x" * 43, code_challenge_method="S256"))
    finally:
        db.dispose()
    assert page.status_code == 200
    cookie = page.headers["set-cookie"]
    assert cookie.startswith("session=") and "HttpOnly" in cookie
    assert ("; Secure" in cookie) is secure
