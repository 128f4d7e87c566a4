"""The whole authorization-code flow in-process: public + PKCE, confidential with post and Basic."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

from mkdocs_blogsvc.server import security, tables
from tests.conftest import add_owner
from tests.server.oauth_support import (
    ALL_SCOPES,
    add_client,
    authorize,
    exchange,
    refresh,
    status_of,
)

TOKEN_FIELDS = ["access_token", "token_type", "expires_in", "refresh_token", "scope"]


def assert_token_response(response: httpx.Response, scope: str = ALL_SCOPES) -> dict[str, object]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"
    body: dict[str, object] = response.json()
    assert list(body) == TOKEN_FIELDS
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == scope
    access, refresh_token = str(body["access_token"]), str(body["refresh_token"])
    assert access.startswith("svc_at_") and refresh_token.startswith("svc_rt_")
    # 32 random bytes after the prefix, URL-safe base64: 256 bits, more than the 160 asked for.
    assert len(access) - len("svc_at_") >= 43 and len(refresh_token) - len("svc_rt_") >= 43
    return body


def test_public_client_with_pkce_gets_tokens_that_reach_the_api(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)

    body = assert_token_response(exchange(http, client, authorized))

    status = status_of(http, str(body["access_token"]))
    assert status.status_code == 200
    assert status.json()["blog"]["id"] == owner.blog_id
    assert status.json()["scopes"] == ["articles:read", "blog:read"]


@pytest.mark.parametrize("method", ["post", "basic"])
def test_confidential_client_authenticates_with_its_secret(db, app, http, method: str) -> None:
    owner = add_owner(db)
    client = add_client(db, public=False, redirect_uris=("https://app.example/callback",))
    authorized = authorize(app, client, owner, pkce=False)

    body = assert_token_response(exchange(http, client, authorized, method=method))
    assert status_of(http, str(body["access_token"])).status_code == 200


def test_confidential_client_may_add_pkce(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=False)
    authorized = authorize(app, client, owner, pkce=True)
    assert_token_response(exchange(http, client, authorized, method="basic"))


def test_the_exchange_creates_one_grant_holding_both_tokens(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    before = db.now()
    authorized = authorize(app, client, owner)
    body = exchange(http, client, authorized).json()

    with db.session() as session:
        grant = session.scalars(select(tables.Grant)).one()
        tokens = session.scalars(select(tables.Token).order_by(tables.Token.kind)).all()
        code = session.scalars(select(tables.AuthorizationCode)).one()
    assert (grant.client_id, grant.user_id, grant.blog_id, grant.scope) == (
        client.client_id,
        owner.user_id,
        owner.blog_id,
        ALL_SCOPES,
    )
    assert grant.connected_at >= before and grant.revoked_at is None
    assert [t.kind for t in tokens] == ["access", "refresh"]
    assert {t.grant_id for t in tokens} == {grant.id}
    assert code.grant_id == grant.id and code.used_at is not None
    # Stored as SHA-256 only: the clear values appear nowhere in the rows.
    assert {t.token_hash for t in tokens} == {
        security.token_hash(str(body["access_token"])),
        security.token_hash(str(body["refresh_token"])),
    }
    assert code.code_hash == security.token_hash(authorized.code)


def test_requested_scope_subset_is_what_the_token_gets(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner, scope="blog:read")
    body = assert_token_response(exchange(http, client, authorized), scope="blog:read")
    assert status_of(http, str(body["access_token"])).json()["scopes"] == ["blog:read"]


def test_refresh_rotates_and_keeps_the_grant(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()

    second = assert_token_response(refresh(http, client, first["refresh_token"]))
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    third = assert_token_response(refresh(http, client, str(second["refresh_token"])))

    with db.session() as session:
        grants = session.scalars(select(tables.Grant)).all()
        refresh_tokens = session.scalars(
            select(tables.Token).where(tables.Token.kind == "refresh").order_by(tables.Token.id)
        ).all()
    assert len(grants) == 1 and grants[0].revoked_at is None
    assert [t.rotated_at is not None for t in refresh_tokens] == [True, True, False]
    assert status_of(http, str(third["access_token"])).status_code == 200
    # The old access tokens live on until they expire; only refresh tokens rotate.
    assert status_of(http, first["access_token"]).status_code == 200


@pytest.mark.parametrize("method", ["post", "basic"])
def test_confidential_refresh(db, app, http, method: str) -> None:
    owner = add_owner(db)
    client = add_client(db, public=False)
    first = exchange(http, client, authorize(app, client, owner, pkce=False), method=method).json()
    assert_token_response(refresh(http, client, first["refresh_token"], method=method))


def test_refresh_may_narrow_the_scope(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()
    narrowed = assert_token_response(
        refresh(http, client, first["refresh_token"], scope="articles:read"), scope="articles:read"
    )
    assert status_of(http, str(narrowed["access_token"])).json()["scopes"] == ["articles:read"]


def test_refresh_cannot_widen_the_scope(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner, scope="articles:read")).json()
    response = refresh(http, client, first["refresh_token"], scope="articles:read blog:read")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_scope")
    # Refused before anything was spent: the refresh token still works.
    assert refresh(http, client, first["refresh_token"]).status_code == 200


def test_access_token_expires_after_an_hour_and_refresh_still_works(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    body = exchange(http, client, authorize(app, client, owner)).json()
    db.advance_clock(3599)
    assert status_of(http, body["access_token"]).status_code == 200
    db.advance_clock(2)
    assert status_of(http, body["access_token"]).status_code == 401
    assert_token_response(refresh(http, client, body["refresh_token"]))


def test_refresh_token_lives_thirty_days(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()
    db.advance_clock(30 * 24 * 3600 - 60)
    second = assert_token_response(refresh(http, client, first["refresh_token"]))
    db.advance_clock(30 * 24 * 3600 + 1)  # counted from the rotation that issued it
    expired = refresh(http, client, str(second["refresh_token"]))
    assert expired.status_code == 400
    assert expired.json() == {
        "error": "invalid_grant",
        "error_description": "The refresh token has expired; authorize again.",
    }
