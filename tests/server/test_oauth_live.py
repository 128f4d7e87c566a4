"""OAuth against the real `mkdocs-blogsvc server run` process on a loopback port.

Users, blogs and clients are created with `server admin`, as a user would; the pages are driven
over real HTTP; the test clock is moved by the admin command and seen by the running server.
"""

from __future__ import annotations

import json
import secrets
from urllib.parse import urlencode

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client

from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_owner
from tests.server.oauth_support import ALL_SCOPES, add_client, pkce_pair, query_of

pytestmark = pytest.mark.slow


def admin_json(server: LiveServer, *args: str) -> dict[str, object]:
    result = server.admin(*args)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


def setup_account(server: LiveServer, *, public: bool) -> dict[str, object]:
    """User dana, blog `dana` and a client, created with `server admin` as a user would."""
    admin_json(server, "create-user", "--username", "dana", "--password", "dana-password")
    admin_json(server, "create-blog", "--owner", "dana", "--name", "Dana Writes", "--slug", "dana", "--language", "en")
    args = ["create-client", "--name", "Live App", "--redirect-uri", "http://127.0.0.1/callback"]
    return admin_json(server, *args, *(["--public"] if public else []))


def setup_account_directly(server: LiveServer, *, public: bool) -> dict[str, object]:
    """The same through the ORM on the server's database file (faster than three processes)."""
    db = Database.from_path(server.db_path)
    try:
        add_owner(db, "dana", "dana")
        client = add_client(db, public=public, redirect_uris=("http://127.0.0.1/callback",))
    finally:
        db.dispose()
    return {"client_id": client.client_id, "client_secret": client.secret}


def test_live_pkce_flow_with_refresh(live_server: LiveServer) -> None:
    client = setup_account(live_server, public=True)
    verifier, challenge = pkce_pair()
    redirect_uri = "http://127.0.0.1:40123/callback"
    url = f"{live_server.url}/api/oauth/authorize?" + urlencode(
        {
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": ALL_SCOPES,
            "state": "live",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    location = drive_consent(url, username="dana", password="dana-password", blog_slug="dana")
    params = query_of(location)
    assert location.startswith(redirect_uri + "?") and params["state"] == "live"

    token_url = f"{live_server.url}/api/oauth/token"
    tokens = httpx.post(
        token_url,
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": redirect_uri,
            "client_id": client["client_id"],
            "code_verifier": verifier,
        },
    )
    assert tokens.status_code == 200, tokens.text
    assert tokens.headers["cache-control"] == "no-store"
    body = tokens.json()
    status = httpx.get(f"{live_server.url}/api/v1/status", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert status.json()["blog"]["slug"] == "dana"

    renewed = httpx.post(
        token_url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": body["refresh_token"],
            "client_id": client["client_id"],
        },
    )
    assert renewed.status_code == 200
    replay = httpx.post(
        token_url,
        data={
            "grant_type": "refresh_token",
            "refresh_token": body["refresh_token"],
            "client_id": client["client_id"],
        },
    )
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")


def test_live_confidential_flow_with_authlib_client(live_server: LiveServer) -> None:
    client = setup_account_directly(live_server, public=False)
    assert client["client_secret"]
    with OAuth2Client(
        client_id=client["client_id"],
        client_secret=client["client_secret"],
        scope=ALL_SCOPES,
        redirect_uri="http://127.0.0.1:40124/callback",
        code_challenge_method="S256",
    ) as oauth:
        verifier = secrets.token_urlsafe(48)
        url, state = oauth.create_authorization_url(f"{live_server.url}/api/oauth/authorize", code_verifier=verifier)
        callback = drive_consent(url, username="dana", password="dana-password")
        oauth.fetch_token(
            f"{live_server.url}/api/oauth/token", authorization_response=callback, state=state, code_verifier=verifier
        )
        assert oauth.get(f"{live_server.url}/api/v1/status").status_code == 200
        oauth.refresh_token(f"{live_server.url}/api/oauth/token")
        assert oauth.get(f"{live_server.url}/api/v1/status").status_code == 200


def test_live_code_expiry_by_the_admin_test_clock_and_the_error_page(live_server: LiveServer) -> None:
    client = setup_account_directly(live_server, public=True)
    verifier, challenge = pkce_pair()
    redirect_uri = "http://127.0.0.1/callback"
    url = f"{live_server.url}/api/oauth/authorize?" + urlencode(
        {
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "scope": "articles:read",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    code = query_of(drive_consent(url, username="dana", password="dana-password"))["code"]
    admin_json(live_server, "advance-clock", "601")
    response = httpx.post(
        f"{live_server.url}/api/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": client["client_id"],
            "code_verifier": verifier,
        },
    )
    assert response.json() == {
        "error": "invalid_grant",
        "error_description": "The authorization code has expired; authorize again.",
    }

    page = httpx.get(
        f"{live_server.url}/api/oauth/authorize",
        params={
            "client_id": client["client_id"],
            "redirect_uri": "http://evil.example/",
            "response_type": "code",
            "scope": "articles:read",
        },
    )
    assert page.status_code == 400 and "location" not in page.headers
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
