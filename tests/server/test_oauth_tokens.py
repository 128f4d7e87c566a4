"""The token endpoint's hardening: single-use codes, rotation with reuse detection, client auth."""

from __future__ import annotations

import base64
import threading

import httpx
import pytest
from sqlalchemy import select

from mkdocs_blogsvc.server import create_app, security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.oauth import revoke_grant
from mkdocs_blogsvc.server.oauth_db import spend_authorization_code, spend_refresh_token
from tests.conftest import IN_PROCESS_URL, add_owner
from tests.server.oauth_support import (
    Authorized,
    RegisteredClient,
    add_client,
    authorize,
    exchange,
    refresh,
    status_of,
)

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


def revoked_grants(db: Database) -> list[bool]:
    with db.session() as session:
        return [
            grant.revoked_at is not None for grant in session.scalars(select(tables.Grant).order_by(tables.Grant.id))
        ]


def test_a_reused_code_is_refused_and_revokes_its_tokens(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    tokens = exchange(http, client, authorized).json()

    again = exchange(http, client, authorized)

    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"
    assert "already used" in again.json()["error_description"]
    assert status_of(http, tokens["access_token"]).status_code == 401
    assert refresh(http, client, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    assert revoked_grants(db) == [True]


def test_code_reuse_revokes_only_the_grant_of_that_code(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    first, second = authorize(app, client, owner), authorize(app, client, owner)
    exchange(http, client, first)
    kept = exchange(http, client, second).json()
    exchange(http, client, first)
    assert revoked_grants(db) == [True, False]
    assert status_of(http, kept["access_token"]).status_code == 200


def test_a_code_lives_ten_minutes(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    before = db.now()
    fresh, stale = authorize(app, client, owner), authorize(app, client, owner)
    after = db.now()  # a loaded machine may take seconds to issue them: ages are counted from both ends
    db.advance_clock(570 - (db.now() - before).total_seconds())  # at most 570 s old (30 s to spare)
    assert exchange(http, client, fresh).status_code == 200
    db.advance_clock(601 - (db.now() - after).total_seconds())  # at least 601 s old
    expired = exchange(http, client, stale)
    assert expired.status_code == 400
    assert expired.json() == {
        "error": "invalid_grant",
        "error_description": "The authorization code has expired; authorize again.",
    }


def test_a_code_is_bound_to_its_client_and_redirect_uri(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    other = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    stolen = exchange(http, other, authorized)
    assert (stolen.status_code, stolen.json()["error"]) == (400, "invalid_grant")
    moved = exchange(http, client, Authorized(authorized.code, authorized.verifier, "http://127.0.0.1:9/callback"))
    assert (moved.status_code, moved.json()["error"]) == (400, "invalid_grant")
    assert exchange(http, client, authorized).status_code == 200


def test_an_unknown_code_is_invalid_grant(db, http) -> None:
    client = add_client(db, public=True)
    response = exchange(http, client, Authorized("no-such-code", "v" * 43, client.redirect_uri))
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_grant"
    assert response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"


def test_a_rotated_refresh_token_presented_again_revokes_the_whole_grant(db, app, http) -> None:
    """RFC 9700 4.14.2: the old token may have leaked, so its whole family dies."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()
    second = refresh(http, client, first["refresh_token"]).json()

    replay = refresh(http, client, first["refresh_token"])

    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert "already used" in replay.json()["error_description"]
    assert refresh(http, client, second["refresh_token"]).json()["error"] == "invalid_grant"
    assert status_of(http, second["access_token"]).status_code == 401
    assert status_of(http, first["access_token"]).status_code == 401
    assert revoked_grants(db) == [True]


def test_reuse_detection_marks_every_token_of_the_grant_revoked(db, app, http) -> None:
    """The API refuses the grant's tokens because the grant is revoked; the tokens' own rows
    say so too (RFC 9700 4.14.2: the whole family), so nothing that reads a token alone can
    take a leaked one for live."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()
    refresh(http, client, first["refresh_token"])
    refresh(http, client, first["refresh_token"])
    with db.session() as session:
        tokens = list(session.scalars(select(tables.Token)))
    assert len(tokens) == 4 and all(token.revoked_at is not None for token in tokens)


def test_refresh_token_of_another_client_is_refused(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    other = add_client(db, public=True)
    tokens = exchange(http, client, authorize(app, client, owner)).json()
    response = refresh(http, other, tokens["refresh_token"])
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    assert response.json()["error_description"]
    assert refresh(http, client, tokens["refresh_token"]).status_code == 200


def test_an_access_token_is_not_a_refresh_token(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    tokens = exchange(http, client, authorize(app, client, owner)).json()
    response = refresh(http, client, tokens["access_token"])
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")


def test_revoke_grant_kills_every_token_of_the_grant(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    tokens = exchange(http, client, authorize(app, client, owner)).json()
    now = db.now()
    with db.session(write=True) as session:
        grant_id = session.scalars(select(tables.Grant.id)).one()
        revoke_grant(session, grant_id, now)
    assert status_of(http, tokens["access_token"]).status_code == 401
    response = refresh(http, client, tokens["refresh_token"])
    assert response.json() == {
        "error": "invalid_grant",
        "error_description": "The refresh token was revoked; authorize again.",
    }


def test_concurrent_refreshes_with_one_token_give_exactly_one_success(db: Database) -> None:
    """Four threads, four connections, one database (SQLite file or PostgreSQL): the conditional
    UPDATE lets one through."""
    try:
        app = create_app(db, secret_key="race", TESTING=True)
        owner = add_owner(db)
        client = add_client(db, public=True)
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            token = exchange(http, client, authorize(app, client, owner)).json()["refresh_token"]
        results = _race(app, client, token, contenders=4)
    finally:
        db.dispose()
    assert sorted(r.status_code for r in results) == [200, 400, 400, 400]
    assert all(r.json()["error"] == "invalid_grant" for r in results if r.status_code == 400)
    with db.session() as session:
        spent = session.scalars(select(tables.Token).where(tables.Token.token_hash == security.token_hash(token))).one()
        issued = session.scalars(select(tables.Token).where(tables.Token.kind == "refresh")).all()
    assert spent.rotated_at is not None
    assert len(issued) == 2  # the original and exactly one successor
    # The losers presented a spent token: that is reuse, so the connection is revoked (see README).
    assert revoked_grants(db) == [True]


def _race(app: object, client: RegisteredClient, token: str, *, contenders: int) -> list[httpx.Response]:
    barrier = threading.Barrier(contenders)
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def contend() -> None:
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            barrier.wait()
            response = refresh(http, client, token)
        with lock:
            results.append(response)

    threads = [threading.Thread(target=contend) for _ in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_unknown_client_is_invalid_client_400(db, http) -> None:
    ghost = RegisteredClient("ghost", None, "http://127.0.0.1/callback")
    response = refresh(http, ghost, "svc_rt_x")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client"
    assert "www-authenticate" not in response.headers


def test_wrong_secret_in_the_form_is_invalid_client_400(db, http) -> None:
    client = add_client(db, public=False)
    wrong = RegisteredClient(client.client_id, "wrong-secret", client.redirect_uri)
    response = refresh(http, wrong, "svc_rt_x", method="post")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_client")


def test_wrong_secret_over_basic_is_401_with_a_basic_challenge(db, http) -> None:
    client = add_client(db, public=False)
    wrong = RegisteredClient(client.client_id, "wrong-secret", client.redirect_uri)
    response = refresh(http, wrong, "svc_rt_x", method="basic")
    assert (response.status_code, response.json()["error"]) == (401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic realm=")
    assert response.headers["cache-control"] == "no-store"


def test_a_confidential_client_cannot_skip_its_secret_without_pkce(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=False)
    authorized = authorize(app, client, owner, pkce=False)
    response = exchange(http, client, authorized, method="none")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_client")
    tokens = exchange(http, client, authorized, method="post").json()  # the code was not spent
    response = refresh(http, client, tokens["refresh_token"], method="none")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_client")


def test_a_confidential_client_using_pkce_may_leave_out_its_secret(db, app, http) -> None:
    """The spec's `client_secret`: "Not required when using PKCE" (code exchange), "Not required
    for PKCE clients" (refresh): a connection made with PKCE refreshes without it too."""
    owner = add_owner(db)
    client = add_client(db, public=False)
    authorized = authorize(app, client, owner, pkce=True)
    wrong = RegisteredClient(client.client_id, "wrong-secret", client.redirect_uri)
    response = exchange(http, wrong, authorized, method="post")  # a secret that is sent must be right
    assert (response.status_code, response.json()["error"]) == (400, "invalid_client")
    response = exchange(http, client, authorized, method="none", code_verifier="x" * 43)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    response = exchange(http, client, authorized, method="none")
    assert response.status_code == 200, response.text
    renewed = refresh(http, client, response.json()["refresh_token"], method="none")
    assert renewed.status_code == 200, renewed.text
    assert status_of(http, renewed.json()["access_token"]).status_code == 200


def test_a_public_client_cannot_use_a_secret(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    response = exchange(http, client, authorized, client_secret="anything")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_client")


def test_unsupported_grant_type(db, http) -> None:
    client = add_client(db, public=True)
    response = http.post("/api/oauth/token", data={"grant_type": "password", "client_id": client.client_id})
    assert response.status_code == 400
    assert response.json() == {
        "error": "unsupported_grant_type",
        "error_description": "grant_type must be authorization_code or refresh_token.",
    }


def test_spending_is_a_conditional_update_that_succeeds_once(db, app, http) -> None:
    """The primitive behind rotation and single-use codes, with each call in its own transaction."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    exchange(http, client, authorize(app, client, owner))
    authorize(app, client, owner)  # a second, unspent code
    now = db.now()
    with db.session() as session:
        token_id = session.scalars(select(tables.Token.id).where(tables.Token.kind == "refresh")).one()
        code_id = session.scalars(
            select(tables.AuthorizationCode.id).where(tables.AuthorizationCode.used_at.is_(None))
        ).one()
    outcomes = []
    for _ in range(2):
        with db.session(write=True) as session:
            outcomes.append(
                (spend_refresh_token(session, token_id, now), spend_authorization_code(session, code_id, now))
            )
    assert outcomes == [(True, True), (False, False)]


def test_a_code_exchange_without_redirect_uri_is_a_missing_parameter(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    response = exchange(http, client, authorized, redirect_uri="")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    assert "redirect_uri" in response.json()["error_description"]
    assert exchange(http, client, authorized).status_code == 200  # the code was not spent


@pytest.mark.parametrize(
    "body",
    [
        {"json": {"grant_type": "refresh_token", "refresh_token": "svc_rt_x", "client_id": "c"}},
        {"data": {"refresh_token": "svc_rt_x", "client_id": "c"}},
    ],
)
def test_a_token_request_that_is_not_a_form_with_grant_type_is_invalid_request(http, body) -> None:
    response = http.post("/api/oauth/token", **body)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    assert "grant_type" in response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store" and response.headers["pragma"] == "no-cache"


# --- found by a review against the RFCs -------------------------------------------------------


def test_a_refresh_that_narrows_the_scope_narrows_the_access_token_only(db, app, http) -> None:
    """RFC 6749 6: the new refresh token's scope is identical to the old one's."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    first = exchange(http, client, authorize(app, client, owner)).json()
    assert first["scope"] == "articles:read blog:read"
    narrowed = refresh(http, client, first["refresh_token"], scope="articles:read").json()
    assert narrowed["scope"] == "articles:read"
    widened = refresh(http, client, narrowed["refresh_token"], scope="articles:read blog:read")
    assert widened.status_code == 200, widened.json()
    assert widened.json()["scope"] == "articles:read blog:read"


@pytest.mark.parametrize("credentials", ["//46/w==", "w6k6w6k=", "not base64!"])
def test_basic_credentials_that_are_not_base64_of_utf8_are_invalid_client_401(http, credentials: str) -> None:
    response = http.post(
        "/api/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": "svc_rt_x"},
        headers={"Authorization": f"Basic {credentials}"},
    )
    assert (response.status_code, response.json()["error"]) == (401, "invalid_client")
    assert response.headers["www-authenticate"].startswith("Basic realm=")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "grant_type=authorization_code&grant_type=refresh_token&refresh_token=svc_rt_x&client_id=c",
            "Parameter 'grant_type' is included more than once.",
        ),
        (
            "grant_type=refresh_token&refresh_token=svc_rt_x&refresh_token=svc_rt_y&client_id=c",
            "Parameter 'refresh_token' is included more than once.",
        ),
        (b"grant_type=refresh_token&refresh_token=\xff\xfe&client_id=c", "The request body is not UTF-8."),
    ],
)
def test_repeated_parameters_and_a_body_that_is_not_utf8_are_invalid_request(
    http, body: str | bytes, problem: str
) -> None:
    response = http.post(
        "/api/oauth/token", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert (response.status_code, response.json()) == (400, {"error": "invalid_request", "error_description": problem})


def test_basic_and_body_naming_two_clients_is_invalid_request(db, app, http) -> None:
    owner = add_owner(db)
    confidential = add_client(db, public=False)
    other = add_client(db, public=True)
    tokens = exchange(http, confidential, authorize(app, confidential, owner), method="basic").json()
    response = refresh(http, confidential, tokens["refresh_token"], method="basic", client_id=other.client_id)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    without_secret = http.post(
        "/api/oauth/token",
        headers={"Authorization": "Basic " + base64.b64encode(confidential.client_id.encode()).decode()},
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": other.client_id},
    )
    assert (without_secret.status_code, without_secret.json()["error"]) == (400, "invalid_request")  # no `:` either
    assert refresh(http, confidential, tokens["refresh_token"], method="basic").status_code == 200  # not spent


def test_a_data_request_with_another_auth_scheme_gets_a_challenge_without_error(http) -> None:
    """RFC 6750 3.1: an unsupported authentication method gets no error information."""
    response = http.get("/api/v1/status", headers={"Authorization": "Basic abc"})
    assert response.status_code == 401 and response.headers["www-authenticate"] == 'Bearer realm="blogsvc"'


def test_an_operator_revokes_a_connection_and_its_tokens_die(db, app, http) -> None:
    """Found by an operator's review: a leaked refresh token could not be killed short of SQL
    (`server admin revoke-connection ID`)."""
    from mkdocs_blogsvc.server import content, listings
    from mkdocs_blogsvc.server.errors import ContentError

    owner = add_owner(db)
    client = add_client(db, public=True)
    kept = exchange(http, client, authorize(app, client, owner)).json()
    leaked = exchange(http, client, authorize(app, client, owner)).json()
    (_, connection) = [row["id"] for row in listings.connections(db)]

    assert content.revoke_connection(db, connection) == {
        "id": connection,
        "client_id": client.client_id,
        "revoked": True,
        "alreadyRevoked": False,
    }
    assert status_of(http, leaked["access_token"]).status_code == 401
    assert refresh(http, client, leaked["refresh_token"]).json()["error"] == "invalid_grant"
    assert status_of(http, kept["access_token"]).status_code == 200, "other connections live on"
    assert [row["revoked"] for row in listings.connections(db)] == [False, True]
    assert content.revoke_connection(db, connection)["alreadyRevoked"] is True
    with pytest.raises(ContentError, match="no connection 999: list them with list-connections"):
        content.revoke_connection(db, 999)
