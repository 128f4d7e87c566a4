"""Token requests take their parameters from the body only; the sign-in cookie is `Secure` over
https, and expires with its dialogue. Each test failed before its fix (found by a web-security
review)."""

from __future__ import annotations

import httpx
import pytest

from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from tests.conftest import IN_PROCESS_URL, add_owner, start_of_window
from tests.server.oauth_support import add_client, authorize, authorize_url, pkce_pair


def test_the_token_endpoint_limit_cannot_be_dodged_by_moving_client_id_to_the_query(db: Database) -> None:
    """The limiter keys on the body's client_id, Authlib's `none` authentication reads the query's
    too: a client_id in the URL was authenticated and its refresh token looked up, uncounted."""
    start_of_window(db, 60)
    app = create_app(db, secret_key="k", TESTING=True, rate_limits={"token_endpoint": Limit(2, 60)})
    client = add_client(db, public=True)
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        errors = [
            http.post(
                f"/api/oauth/token?client_id={client.client_id}",
                data={"grant_type": "refresh_token", "refresh_token": f"svc_rt_unknown{i}"},
            ).json()["error"]
            for i in range(4)
        ]
    # Each request is refused before the grant (parameter outside the body) or counted (429).
    assert "invalid_grant" not in errors, errors


def test_a_code_cannot_be_exchanged_with_client_id_in_the_query(db: Database, app, http) -> None:
    """RFC 6749 2.3.1/3.2: token request parameters travel in the body (URLs are logged)."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    answer = http.post(
        f"/api/oauth/token?client_id={client.client_id}",
        data={
            "grant_type": "authorization_code",
            "code": authorized.code,
            "redirect_uri": authorized.redirect_uri,
            "code_verifier": authorized.verifier,
        },
    )
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request")


def test_the_session_cookie_is_secure_when_the_request_came_over_https_through_a_trusted_proxy(db: Database) -> None:
    """`--proxy-hops` trusts X-Forwarded-Proto, so the app knows the browser used https; the
    sign-in cookie must then be `Secure` even without `--public-url`."""
    app = create_app(db, secret_key="k", TESTING=True, proxy_hops=1)
    client = add_client(db, public=True)
    _, challenge = pkce_pair()
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        page = http.get(
            authorize_url(client, code_challenge=challenge, code_challenge_method="S256"),
            headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"},
        )
    assert page.status_code == 200
    assert "Secure" in page.headers["set-cookie"]


@pytest.mark.parametrize("forwarded", [None, "http"])
def test_the_session_cookie_is_not_secure_over_plain_http(db: Database, forwarded: str | None) -> None:
    app = create_app(db, secret_key="k", TESTING=True, proxy_hops=1)
    client = add_client(db, public=True)
    _, challenge = pkce_pair()
    headers = {"X-Forwarded-Proto": forwarded} if forwarded else {}
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        page = http.get(authorize_url(client, code_challenge=challenge, code_challenge_method="S256"), headers=headers)
    assert "Secure" not in page.headers["set-cookie"]
