"""Bearer-token checks of the data endpoints (RFC 6750): 401 invalid_token, 403 insufficient_scope."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, add_owner, issue_access_token

INVALID = {"error": "invalid_token", "error_description": "Access token is missing, expired, or invalid."}
CHALLENGE = (
    'Bearer realm="blogsvc", error="invalid_token", error_description="Access token is missing, expired, or invalid."'
)
ARTICLE_ENDPOINTS = [("GET", "/api/v1/articles"), ("GET", "/api/v1/articles/some-slug"), ("POST", "/api/v1/sync")]
ALL_ENDPOINTS = [*ARTICLE_ENDPOINTS, ("GET", "/api/v1/status")]


def call(http: httpx.Client, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if method == "POST":
        kwargs.setdefault("json", {"knownArticles": []})
    return http.request(method, path, headers={**headers, **kwargs.pop("headers", {})}, **kwargs)


def assert_invalid_token(response: httpx.Response, challenge: str = CHALLENGE) -> None:
    assert response.status_code == 401
    assert response.json() == INVALID
    assert response.headers["WWW-Authenticate"] == challenge
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(("method", "path"), ALL_ENDPOINTS)
def test_no_credentials_get_a_bare_challenge(http: httpx.Client, method: str, path: str) -> None:
    """RFC 6750 3.1: a request with no authentication information gets no error attributes."""
    assert_invalid_token(call(http, method, path), challenge='Bearer realm="blogsvc"')


@pytest.mark.parametrize(("method", "path"), ALL_ENDPOINTS)
@pytest.mark.parametrize(
    "header",
    ["Bearer svc_at_unknown", "Bearer", "Bearer    ", "Bearer a b", "Bearer svc_at_a,b", 'Bearer svc_at_"quoted"'],
)
def test_invalid_credentials_are_refused(http: httpx.Client, method: str, path: str, header: str) -> None:
    response = call(http, method, path, headers={"Authorization": header.encode("utf-8")})
    assert_invalid_token(response)


@pytest.mark.parametrize(("method", "path"), ALL_ENDPOINTS)
@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "svc_at_nobearer"])
def test_another_scheme_gets_a_bare_challenge(http: httpx.Client, method: str, path: str, header: str) -> None:
    """RFC 6750 3.1: an unsupported authentication method gets no error attributes."""
    response = call(http, method, path, headers={"Authorization": header})
    assert_invalid_token(response, challenge='Bearer realm="blogsvc"')


def test_scheme_name_is_case_insensitive(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner)
    assert http.get("/api/v1/status", headers={"Authorization": f"bearer {token}"}).status_code == 200
    assert http.get("/api/v1/status", headers={"Authorization": f"BEARER {token}"}).status_code == 200


def test_spaces_around_the_token_are_allowed(http: httpx.Client, db: Database, owner: Owner) -> None:
    """RFC 7235 2.1: one or more spaces separate the scheme from the token."""
    token = issue_access_token(db, owner)
    for header in (f"Bearer  {token}", f"  Bearer {token}  ", f"Bearer   {token}"):
        assert http.get("/api/v1/status", headers={"Authorization": header}).status_code == 200, header


def test_token_outside_the_header_is_not_accepted(http: httpx.Client, db: Database, owner: Owner) -> None:
    """Query-string and form tokens leak into logs (RFC 6750 5.3): only the header counts."""
    token = issue_access_token(db, owner)
    assert_invalid_token(http.get("/api/v1/status", params={"access_token": token}), challenge='Bearer realm="blogsvc"')
    form = http.post("/api/v1/sync", data={"access_token": token, "knownArticles": "[]"})
    assert_invalid_token(form, challenge='Bearer realm="blogsvc"')


def test_token_expires_after_an_hour_of_the_service_clock(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner)
    db.advance_clock(security.ACCESS_TOKEN_LIFETIME - 5)
    assert call(http, "GET", "/api/v1/articles", token).status_code == 200
    db.advance_clock(5)
    for method, path in ALL_ENDPOINTS:
        assert_invalid_token(call(http, method, path, token))


def test_revoked_token_is_refused(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner)
    with db.session(write=True) as session:
        session.execute(update(tables.Token).values(revoked_at=db.now()))
    assert_invalid_token(call(http, "GET", "/api/v1/status", token))


def test_revoked_grant_kills_its_access_tokens(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner)
    with db.session(write=True) as session:
        session.execute(update(tables.Grant).values(revoked_at=db.now()))
    assert_invalid_token(call(http, "GET", "/api/v1/status", token))


def test_refresh_token_is_not_an_access_token(http: httpx.Client, db: Database, owner: Owner) -> None:
    access = issue_access_token(db, owner)
    refresh = security.new_token(security.REFRESH_TOKEN_PREFIX)
    now = db.now()
    with db.session(write=True) as session:
        grant_id = session.scalars(select(tables.Token.grant_id)).one()
        session.add(
            tables.Token(
                grant_id=grant_id,
                kind="refresh",
                token_hash=security.token_hash(refresh),
                scope="articles:read blog:read",
                issued_at=now,
                expires_at=now + timedelta(days=30),
            )
        )
    assert call(http, "GET", "/api/v1/status", access).status_code == 200
    assert_invalid_token(call(http, "GET", "/api/v1/status", refresh))


def test_error_answers_never_echo_the_token(http: httpx.Client) -> None:
    secret = "svc_at_" + "s3cr3t" * 8
    response = call(http, "GET", "/api/v1/articles", secret)
    assert secret not in response.text
    assert secret not in response.headers["WWW-Authenticate"]


@pytest.mark.parametrize(("method", "path"), ARTICLE_ENDPOINTS)
def test_article_endpoints_need_articles_read(
    http: httpx.Client, db: Database, owner: Owner, method: str, path: str
) -> None:
    add_article(db, owner.blog_id, "Some Slug")
    token = issue_access_token(db, owner, scope="blog:read")
    response = call(http, method, path, token)
    assert response.status_code == 403
    assert response.json() == {"error": "insufficient_scope", "error_description": "Required scope: articles:read"}
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="articles:read"' in challenge
    assert response.headers["Cache-Control"] == "no-store"


def test_forbidden_sync_records_no_sync(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner, scope="blog:read")
    assert call(http, "POST", "/api/v1/sync", token).status_code == 403
    assert call(http, "GET", "/api/v1/status", token).json()["lastSyncAt"] is None


@pytest.mark.parametrize("scope", ["blog:read", "articles:read", "articles:read blog:read"])
def test_status_takes_any_valid_token(http: httpx.Client, db: Database, owner: Owner, scope: str) -> None:
    token = issue_access_token(db, owner, scope=scope)
    response = call(http, "GET", "/api/v1/status", token)
    assert response.status_code == 200
    assert response.json()["scopes"] == scope.split()


def test_token_sees_only_its_own_blog(http: httpx.Client, db: Database, owner: Owner) -> None:
    other = add_owner(db, "bob", "bob-blog")
    mine = add_article(db, owner.blog_id, "Mine")
    add_article(db, other.blog_id, "Theirs")
    token = issue_access_token(db, owner)
    listed = call(http, "GET", "/api/v1/articles", token).json()["articles"]
    assert [article["id"] for article in listed] == [mine]
    assert call(http, "GET", "/api/v1/articles/theirs", token).status_code == 404
    assert call(http, "GET", "/api/v1/status", token).json()["blog"]["id"] == owner.blog_id
