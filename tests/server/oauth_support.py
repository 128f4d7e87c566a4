"""Helpers of the OAuth tests: register clients, build authorization requests, run the flow."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, Owner

LOOPBACK_CALLBACK = "http://127.0.0.1/callback"
WEB_CALLBACK = "https://app.example/callback"
ALL_SCOPES = "articles:read blog:read"


@dataclass(frozen=True)
class RegisteredClient:
    client_id: str
    secret: str | None
    redirect_uri: str


def add_client(
    db: Database,
    *,
    public: bool,
    redirect_uris: tuple[str, ...] = (LOOPBACK_CALLBACK, WEB_CALLBACK),
    allowed_scope: str = ALL_SCOPES,
    name: str = "Test App",
) -> RegisteredClient:
    """A client straight into the database; confidential ones get a secret (returned in clear)."""
    client_id = f"client-{secrets.token_hex(4)}"
    secret = None if public else secrets.token_urlsafe(24)
    with db.session(write=True) as session:
        session.add(
            tables.Client(
                client_id=client_id,
                client_secret_hash=security.hash_password(secret) if secret else None,
                name=name,
                redirect_uris=list(redirect_uris),
                is_public=public,
                allowed_scope=allowed_scope,
                created_at=db.now(),
            )
        )
    return RegisteredClient(client_id, secret, redirect_uris[0])


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge) per RFC 7636."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorize_url(client: RegisteredClient, **params: str | None) -> str:
    """An authorization request URL; `None` values drop a parameter."""
    query = {
        "client_id": client.client_id,
        "redirect_uri": client.redirect_uri,
        "response_type": "code",
        "scope": ALL_SCOPES,
        "state": "state-123",
    }
    query.update(params)
    return f"{IN_PROCESS_URL}/api/oauth/authorize?" + urlencode({k: v for k, v in query.items() if v is not None})


def query_of(location: str) -> dict[str, str]:
    """The query parameters of a redirect Location, one value each."""
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


@dataclass(frozen=True)
class Authorized:
    code: str
    verifier: str | None
    redirect_uri: str


def authorize(
    app: object,
    client: RegisteredClient,
    owner: Owner,
    *,
    pkce: bool = True,
    redirect_uri: str | None = None,
    scope: str = ALL_SCOPES,
) -> Authorized:
    """Run sign-in and consent in-process; return the authorization code."""
    verifier, challenge = pkce_pair() if pkce else (None, None)
    redirect_uri = redirect_uri or client.redirect_uri
    url = authorize_url(
        client,
        redirect_uri=redirect_uri,
        scope=scope,
        code_challenge=challenge,
        code_challenge_method="S256" if pkce else None,
    )
    location = drive_consent(
        url,
        username=owner.username,
        password=owner.password,
        transport=httpx.WSGITransport(app=app),
    )
    params = query_of(location)
    assert location.startswith(redirect_uri + "?"), location
    assert params["state"] == "state-123"
    return Authorized(params["code"], verifier, redirect_uri)


def client_auth(client: RegisteredClient, method: str) -> tuple[dict[str, str], dict[str, str]]:
    """(form fields, headers) authenticating `client` with `method`: none, post or basic."""
    if method == "basic":
        assert client.secret is not None
        credentials = base64.b64encode(f"{client.client_id}:{client.secret}".encode()).decode()
        return {}, {"Authorization": f"Basic {credentials}"}
    if method == "post":
        assert client.secret is not None
        return {"client_id": client.client_id, "client_secret": client.secret}, {}
    return {"client_id": client.client_id}, {}


def exchange(
    http: httpx.Client, client: RegisteredClient, authorized: Authorized, *, method: str = "none", **extra: str
) -> httpx.Response:
    """POST the code to the token endpoint."""
    fields, headers = client_auth(client, method)
    data = {
        "grant_type": "authorization_code",
        "code": authorized.code,
        "redirect_uri": authorized.redirect_uri,
        **fields,
    }
    if authorized.verifier:
        data["code_verifier"] = authorized.verifier
    data.update(extra)
    return http.post("/api/oauth/token", data=data, headers=headers)


def refresh(
    http: httpx.Client, client: RegisteredClient, refresh_token: str, *, method: str = "none", **extra: str
) -> httpx.Response:
    """POST a refresh request to the token endpoint."""
    fields, headers = client_auth(client, method)
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, **fields, **extra}
    return http.post("/api/oauth/token", data=data, headers=headers)


def status_of(http: httpx.Client, access_token: str) -> httpx.Response:
    """GET /api/v1/status with a bearer token: the data API's view of the token."""
    return http.get("/api/v1/status", headers={"Authorization": f"Bearer {access_token}"})
