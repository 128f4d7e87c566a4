"""PKCE (RFC 7636): S256 only, required of public clients, no downgrade (RFC 9700 4.8.2)."""

from __future__ import annotations

import pytest

from tests.conftest import add_owner
from tests.server.oauth_support import (
    Authorized,
    add_client,
    authorize,
    authorize_url,
    exchange,
    pkce_pair,
    query_of,
)


@pytest.mark.parametrize("method", [None, "plain", "s256", "S512"])
def test_a_challenge_needs_method_s256(db, http, method: str | None) -> None:
    client = add_client(db, public=True)
    _, challenge = pkce_pair()
    response = http.get(authorize_url(client, code_challenge=challenge, code_challenge_method=method))
    assert response.status_code == 302
    params = query_of(response.headers["location"])
    assert params["error"] == "invalid_request"
    assert "S256" in params["error_description"]
    assert params["state"] == "state-123"


def test_a_method_without_a_challenge_is_refused(db, http) -> None:
    client = add_client(db, public=True)
    response = http.get(authorize_url(client, code_challenge_method="S256"))
    assert query_of(response.headers["location"])["error"] == "invalid_request"


def test_a_public_client_must_send_a_challenge(db, http) -> None:
    client = add_client(db, public=True)
    response = http.get(authorize_url(client))
    params = query_of(response.headers["location"])
    assert params["error"] == "invalid_request"
    assert "PKCE" in params["error_description"]


def test_a_confidential_client_may_skip_pkce(db, http) -> None:
    client = add_client(db, public=False)
    response = http.get(authorize_url(client))
    assert response.status_code == 200  # the sign-in page


def test_wrong_verifier_is_invalid_grant(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    other_verifier, _ = pkce_pair()
    response = exchange(http, client, Authorized(authorized.code, other_verifier, authorized.redirect_uri))
    assert (response.status_code, response.json()["error"]) == (400, "invalid_grant")
    # The code was not spent by the failed attempt.
    assert exchange(http, client, authorized).status_code == 200


def test_missing_verifier_is_refused(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    authorized = authorize(app, client, owner)
    response = exchange(http, client, Authorized(authorized.code, None, authorized.redirect_uri))
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")


def test_verifier_without_a_stored_challenge_is_refused(db, app, http) -> None:
    """RFC 9700 4.8.2: a code_verifier for a code issued without a challenge is a downgrade attempt."""
    owner = add_owner(db)
    client = add_client(db, public=False)
    authorized = authorize(app, client, owner, pkce=False)
    verifier, _ = pkce_pair()
    response = exchange(http, client, authorized, method="post", code_verifier=verifier)
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
    assert "code_challenge" in response.json()["error_description"]


def test_confidential_client_with_pkce_must_still_send_the_verifier(db, app, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=False)
    authorized = authorize(app, client, owner, pkce=True)
    response = exchange(http, client, Authorized(authorized.code, None, authorized.redirect_uri), method="basic")
    assert (response.status_code, response.json()["error"]) == (400, "invalid_request")
