"""The OAuth 2.0 authorization server: Authlib's Flask server with the spec's rules.

`register(app, db)` mounts `POST /api/oauth/token` here and the authorization pages
(`/api/oauth/authorize`, module `pages`). The grants and their RFC 9700 hardening live in
`grants`, the client rules (scopes, loopback redirect URIs) in `clients`, the database work in
`oauth_db`. What this class changes in Authlib's server:

- token responses: `svc_at_`/`svc_rt_` tokens, `expires_in` 3600, always a refresh token, the
  spec's five fields in the spec's order, `Cache-Control: no-store` and `Pragma: no-cache`;
- `invalid_client` is 401 with a `Basic` challenge when the client tried HTTP Basic
  (RFC 6749 5.2), 400 otherwise;
- every error body carries an `error_description`;
- plain `http://` is served: transport security is the deployment's business (a TLS proxy in
  front makes the app see `http` anyway), and tests run the app in-process on `http://testserver`.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any
from urllib.parse import unquote

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Payload, FlaskOAuth2Request
from authlib.oauth2.rfc6749 import OAuth2Request
from authlib.oauth2.rfc6749.errors import (
    InvalidClientError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Error,
    UnsupportedResponseTypeError,
)
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from flask import Flask, Request, Response, current_app
from flask import request as flask_request
from sqlalchemy import select

from mkdocs_blogsvc.server import pages, security, tables
from mkdocs_blogsvc.server.bodies import read_body
from mkdocs_blogsvc.server.clients import OAuthClient, normalize_scope
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.grants import (
    AuthorizationCodeGrant,
    RefreshTokenGrant,
    S256CodeChallenge,
)
from mkdocs_blogsvc.server.oauth_db import current, revoke_grant, transaction
from mkdocs_blogsvc.server.ratelimit import RateLimiter

__all__ = ["ServiceAuthorizationServer", "register", "revoke_grant"]

#: Used when an Authlib error carries no description, so every error body has one.
DEFAULT_DESCRIPTIONS = {
    "invalid_request": "The request is missing a parameter or is malformed.",
    "invalid_client": "Client authentication failed: unknown client_id or wrong client_secret.",
    "invalid_grant": "The authorization code or refresh token is invalid, expired, revoked, or was issued to another client.",
    "unauthorized_client": "This client may not use this grant type.",
    "unsupported_grant_type": "grant_type must be authorization_code or refresh_token.",
    "unsupported_response_type": "response_type must be code.",
    "invalid_scope": "The requested scope is invalid or unavailable for this application.",
    "access_denied": "The user denied the request.",
}
BASIC_CHALLENGE = 'Basic realm="blogsvc", charset="UTF-8"'
#: The token request's parameters (RFC 6749 4.1.3, 6, 2.3.1; RFC 7636 4.5): accepted in the body only.
TOKEN_PARAMETERS = frozenset(
    {
        "grant_type",
        "code",
        "redirect_uri",
        "client_id",
        "client_secret",
        "code_verifier",
        "refresh_token",
        "scope",
    }
)


def register(app: Flask, db: Database) -> None:
    """Attach the token endpoint and the authorization pages to the app."""
    server = ServiceAuthorizationServer(app)
    app.extensions["blogsvc_oauth"] = server

    @app.post("/api/oauth/token")
    def token_endpoint() -> Response:
        refused = _refused_before_authlib(flask_request)
        if refused is not None:
            return server.handle_error_response(None, refused)
        limiter: RateLimiter = app.extensions["blogsvc_limiter"]
        client_id = flask_request.form.get("client_id") or extract_basic_authorization(flask_request.headers)[0]
        if client_id:
            limiter.enforce("token_endpoint", client_id[:100], "for this client at the token endpoint")
        refresh_token = flask_request.form.get("refresh_token")
        if refresh_token:
            limiter.enforce("refresh_token", security.token_hash(refresh_token), "for this refresh token")
        if flask_request.mimetype != "application/x-www-form-urlencoded" or not flask_request.form.get("grant_type"):
            # Authlib reads a JSON body as a form without `grant_type`: `unsupported_grant_type`
            missing = InvalidRequestError(
                "Missing 'grant_type': the token endpoint takes an application/x-www-form-urlencoded body."
            )
            return server.handle_error_response(None, missing)
        with transaction(db):
            response: Response = server.create_token_response()
        return response

    pages.register(app, db, server)


def _refused_before_authlib(request: Request) -> OAuth2Error | None:
    """What Authlib's token endpoint would get wrong: HTTP Basic credentials that are not UTF-8
    (a 500 there), a body that is not UTF-8 (read as no `grant_type`), a parameter given twice
    (the first taken; RFC 6749 3.2 forbids it: `invalid_request`), and a body `client_id` that
    is not the Basic one (two clients in one request)."""
    header = request.headers.get("Authorization", "")
    basic = None
    if header[:6].lower() == "basic ":
        try:
            basic = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except ValueError:  # binascii.Error and UnicodeDecodeError both are
            failed = ClientAuthenticationFailed(basic_used=True)
            failed.description = "The Authorization header's Basic credentials are not base64 of UTF-8 text."
            return failed
    try:
        read_body(current_app.config["MAX_CONTENT_LENGTH"]).decode("utf-8")  # 413 past it, chunked too
    except UnicodeDecodeError:
        return InvalidRequestError("The request body is not UTF-8.")
    in_query = sorted(set(request.args) & TOKEN_PARAMETERS)
    if in_query:
        # Authlib reads some of these from the query too (`request.values`), the rate limit and the
        # checks here from the body only; RFC 6749 2.3.1 and 3.2: they belong in the body.
        return InvalidRequestError(f"Parameter '{in_query[0]}' must be sent in the request body, not in the URL.")
    for name in request.form:
        if len(request.form.getlist(name)) > 1:
            shown = f"Parameter '{name}'" if re.fullmatch(r"\w{1,40}", name, re.ASCII) else "A parameter"
            return InvalidRequestError(f"{shown} is included more than once.")
    basic_client = unquote(basic.split(":", 1)[0]) if basic is not None else None
    body_client = request.form.get("client_id")
    if basic_client is not None and body_client is not None and body_client != basic_client:
        return InvalidRequestError("client_id in the body is not the client of the Authorization header.")
    return None


def generate_bearer_token(
    grant_type: str,
    client: OAuthClient,
    user: Any = None,
    scope: str | None = None,
    expires_in: int | None = None,
    include_refresh_token: bool = True,
) -> dict[str, Any]:
    """The token response body, fields in the spec's order (Authlib's token generator signature)."""
    token: dict[str, Any] = {
        "access_token": security.new_token(security.ACCESS_TOKEN_PREFIX),
        "token_type": "Bearer",
        "expires_in": security.ACCESS_TOKEN_LIFETIME,
    }
    if include_refresh_token:
        token["refresh_token"] = security.new_token(security.REFRESH_TOKEN_PREFIX)
    token["scope"] = scope
    return token


class ServiceOAuth2Request(FlaskOAuth2Request):  # type: ignore[misc]  # untyped base class
    """Authlib's Flask request without its HTTPS-or-loopback check (see the module docstring).

    `OAuth2Request.__init__` runs the check on the URL it is given; it is given the URL with an
    `https` scheme, then the real URL is put back (Authlib reads `uri` nowhere else).
    """

    def __init__(self, request: Request) -> None:
        secure_url = "https" + request.url[len(request.scheme) :]
        OAuth2Request.__init__(self, method=request.method, uri=secure_url, headers=request.headers)
        self.uri = request.url
        self._request = request
        self.payload = FlaskOAuth2Payload(request)


class ClientAuthenticationFailed(InvalidClientError):  # type: ignore[misc]  # untyped base class
    """`invalid_client`: 401 with a Basic challenge if the client sent HTTP Basic, else 400."""

    def __init__(self, *, basic_used: bool) -> None:
        super().__init__(description=DEFAULT_DESCRIPTIONS["invalid_client"], status_code=401 if basic_used else 400)

    def get_headers(self) -> list[tuple[str, str]]:
        headers = list(super(InvalidClientError, self).get_headers())
        if self.status_code == 401:
            headers.append(("WWW-Authenticate", BASIC_CHALLENGE))
        return headers


class ServiceAuthorizationServer(AuthorizationServer):  # type: ignore[misc]  # untyped base class
    def __init__(self, app: Flask) -> None:
        super().__init__(app)
        self.register_grant(AuthorizationCodeGrant, [S256CodeChallenge(required=True)])
        self.register_grant(RefreshTokenGrant)

    def load_config(self, config: Any) -> None:
        super().load_config(config)
        self.scopes_supported = list(security.SCOPES)
        self.register_token_generator("default", generate_bearer_token)

    def query_client(self, client_id: str) -> OAuthClient | None:
        row = current().session.scalar(select(tables.Client).where(tables.Client.client_id == client_id))
        return None if row is None else OAuthClient.from_row(row)

    def create_oauth2_request(self, request: Any) -> ServiceOAuth2Request:
        return ServiceOAuth2Request(flask_request)

    def validate_requested_scope(self, scope: str | None) -> None:
        """Unknown scope names are `invalid_scope`; the client's own limits are checked after."""
        if set(normalize_scope(scope)) - set(security.SCOPES):
            raise InvalidScopeError(f"Unknown scope. Known scopes: {', '.join(security.SCOPES)}.")

    def authenticate_client(self, request: OAuth2Request, methods: list[str], endpoint: str = "token") -> OAuthClient:
        try:
            client: OAuthClient = super().authenticate_client(request, methods, endpoint)
        except InvalidClientError:
            basic_used = extract_basic_authorization(request.headers)[0] is not None
            pkce_client = None if basic_used else self._confidential_client_using_pkce(request)
            if pkce_client is None:
                raise ClientAuthenticationFailed(basic_used=basic_used) from None
            request.auth_method = "none"  # the code's challenge is then checked as for a public client
            return pkce_client
        return client

    def _confidential_client_using_pkce(self, request: OAuth2Request) -> OAuthClient | None:
        """A confidential client that sent no secret, for a code issued with a PKCE challenge or
        a refresh token of a connection made that way: the spec's `client_secret` is "not
        required when using PKCE" (code exchange) and "not required for PKCE clients" (refresh).
        A secret that is sent must still be right."""
        data = request.payload.data
        client = (
            self.query_client(data["client_id"]) if data.get("client_id") and not data.get("client_secret") else None
        )
        if client is None or client.is_public:
            return None
        session = current().session
        codes_with_challenge = select(tables.AuthorizationCode.id).where(
            tables.AuthorizationCode.client_id == client.client_id, tables.AuthorizationCode.code_challenge.is_not(None)
        )
        if data.get("grant_type") == "authorization_code" and data.get("code") and data.get("code_verifier"):
            found = session.scalar(
                codes_with_challenge.where(tables.AuthorizationCode.code_hash == security.token_hash(data["code"]))
            )
        elif data.get("grant_type") == "refresh_token" and data.get("refresh_token"):
            grant_id = session.scalar(
                select(tables.Token.grant_id).where(
                    tables.Token.token_hash == security.token_hash(data["refresh_token"]),
                    tables.Token.kind == "refresh",
                )
            )
            found = (
                None
                if grant_id is None
                else session.scalar(codes_with_challenge.where(tables.AuthorizationCode.grant_id == grant_id))
            )
        else:
            found = None
        return client if found is not None else None

    def get_authorization_grant(self, request: OAuth2Request) -> Any:
        """Authlib's lookup, with a fixed description: its own echoes `response_type`."""
        if request.payload.response_type == "code":
            return super().get_authorization_grant(request)
        redirect_uri = None
        client = self.query_client(request.payload.client_id) if request.payload.client_id else None
        if (
            client is not None
            and request.payload.redirect_uri
            and client.check_redirect_uri(request.payload.redirect_uri)
        ):
            redirect_uri = request.payload.redirect_uri
        if not request.payload.response_type:  # missing, not unsupported (RFC 6749 4.1.2.1)
            raise InvalidRequestError("Missing 'response_type': it must be code.", redirect_uri=redirect_uri)
        raise UnsupportedResponseTypeError(
            request.payload.response_type, DEFAULT_DESCRIPTIONS["unsupported_response_type"], redirect_uri=redirect_uri
        )

    def handle_error_response(self, request: Any, error: OAuth2Error) -> Response:
        if not error.description:
            error.description = DEFAULT_DESCRIPTIONS.get(error.error, "")
        response: Response = super().handle_error_response(request, error)
        return response

    def handle_response(self, status_code: int, payload: Any, headers: list[tuple[str, str]]) -> Response:
        """Like Authlib's, but keeps the payload's key order (Flask's JSON provider sorts keys)."""
        if isinstance(payload, dict):
            payload = json.dumps(payload, separators=(",", ":"))
        return Response(payload, status=status_code, headers=headers)
