"""The flow driven by an independent OAuth client: Authlib's httpx `OAuth2Client`.

If a spec-following client library can authorize, exchange, refresh and call the API, the
service speaks standard OAuth rather than whatever our own client happens to expect.
"""

from __future__ import annotations

import secrets

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client, OAuthError

from mkdocs_blogsvc.server.consent_driver import drive_consent
from tests.conftest import IN_PROCESS_URL, add_owner
from tests.server.oauth_support import ALL_SCOPES, add_client

AUTHORIZE = f"{IN_PROCESS_URL}/api/oauth/authorize"
TOKEN = f"{IN_PROCESS_URL}/api/oauth/token"


@pytest.mark.parametrize(
    ("public", "auth_method"),
    [(True, "none"), (False, "client_secret_basic"), (False, "client_secret_post")],
)
def test_authlib_client_full_flow(db, app, public: bool, auth_method: str) -> None:
    owner = add_owner(db)
    registered = add_client(db, public=public)
    redirect_uri = "http://127.0.0.1:8765/callback"  # a loopback port the client picked
    verifier = secrets.token_urlsafe(48)
    with OAuth2Client(
        client_id=registered.client_id,
        client_secret=registered.secret,
        token_endpoint_auth_method=auth_method,
        scope=ALL_SCOPES,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        transport=httpx.WSGITransport(app=app),
    ) as client:
        url, state = client.create_authorization_url(AUTHORIZE, code_verifier=verifier)
        callback = drive_consent(
            url, username=owner.username, password=owner.password, transport=httpx.WSGITransport(app=app)
        )

        token = client.fetch_token(TOKEN, authorization_response=callback, state=state, code_verifier=verifier)
        assert token["token_type"] == "Bearer" and token["scope"] == ALL_SCOPES
        assert token["access_token"].startswith("svc_at_") and token["refresh_token"].startswith("svc_rt_")
        assert client.get(f"{IN_PROCESS_URL}/api/v1/status").json()["blog"]["slug"] == owner.blog_slug

        first_refresh_token = token["refresh_token"]
        renewed = client.refresh_token(TOKEN)
        assert renewed["refresh_token"] != first_refresh_token
        assert renewed["access_token"] != token["access_token"]
        assert client.get(f"{IN_PROCESS_URL}/api/v1/status").status_code == 200

        with pytest.raises(OAuthError) as reuse:
            client.refresh_token(TOKEN, refresh_token=first_refresh_token)
        assert reuse.value.error == "invalid_grant"
