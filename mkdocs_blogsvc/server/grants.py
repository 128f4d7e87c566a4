"""Authlib's grants, adapted to the spec and to RFC 9700 (OAuth 2.0 Security Best Current Practice).

Where these classes depart from Authlib's defaults, and why:

- `S256CodeChallenge`: Authlib accepts `plain` and defaults a missing method to it; the spec
  allows S256 only. Public clients must send a challenge (checked at the authorization request,
  so the user is never asked to approve a flow that cannot finish).
- `AuthorizationCodeGrant`: the code is spent by a conditional UPDATE; a code presented again
  revokes the grant created from it (RFC 6749 4.1.2). The exchange creates the grant (the
  connection reported by the status endpoint) and its first token pair.
- `RefreshTokenGrant`: a new refresh token on every refresh (Authlib issues none by default); the
  old one is spent by a conditional UPDATE in the transaction that stores the new pair, instead
  of Authlib's save-then-revoke; a spent refresh token presented again revokes the whole grant
  (RFC 9700 4.14.2).

Error descriptions never echo request values: Authlib refuses descriptions with characters
outside RFC 6749's set, so echoing a hostile value would turn a 400 into a 500.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from authlib.oauth2.rfc6749 import AuthorizationCodeMixin, OAuth2Request, TokenMixin, grants
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError
from authlib.oauth2.rfc6749.hooks import hooked
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7636.challenge import compare_s256_code_challenge
from sqlalchemy import select, update

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.clients import OAuthClient, normalize_scope
from mkdocs_blogsvc.server.oauth_db import (
    current,
    revoke_grant,
    spend_authorization_code,
    spend_refresh_token,
    store_token_pair,
)

#: `none` is accepted for public clients only (`OAuthClient.check_endpoint_auth_method`).
TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
CODE_REUSED = "The authorization code was already used; the tokens issued from it are revoked."
REFRESH_TOKEN_REUSED = (
    "The refresh token was already used, so it may have leaked: "
    "the connection is revoked and the user must authorize again."
)


@dataclass(frozen=True)
class Approval:
    """What the user decided on the consent page: who approved, for which blog."""

    user_id: int
    blog_id: str


class S256CodeChallenge(CodeChallenge):  # type: ignore[misc]  # untyped base class
    """PKCE (RFC 7636) with S256 as the only method, required of public clients."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD: ClassVar[list[str]] = ["S256"]
    CODE_CHALLENGE_METHODS: ClassVar[dict[str, Callable[[str, str], bool]]] = {"S256": compare_s256_code_challenge}

    def validate_code_challenge(self, grant: grants.AuthorizationCodeGrant, redirect_uri: Any) -> None:
        data = grant.request.payload.data
        if data.get("code_challenge") and data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256 ('plain' is not supported).")
        super().validate_code_challenge(grant, redirect_uri)
        client: OAuthClient = grant.request.client
        if client.is_public and not data.get("code_challenge"):
            raise InvalidRequestError(
                "Public clients must use PKCE: send code_challenge with code_challenge_method=S256."
            )

    def validate_code_verifier(self, grant: grants.AuthorizationCodeGrant, result: Any) -> None:
        """Refuse a verifier for a code issued without a challenge (downgrade, RFC 9700 4.8.2).

        Recent Authlib releases check this too; it is stated here so that it holds on every release.
        """
        code: IssuedCode = grant.request.authorization_code
        if grant.request.form.get("code_verifier") and not code.code_challenge:
            raise InvalidRequestError("A code_verifier was sent, but the authorization request had no code_challenge.")
        super().validate_code_verifier(grant, result)


@dataclass(frozen=True)
class IssuedCode(AuthorizationCodeMixin):  # type: ignore[misc]  # untyped base class
    """An unspent, unexpired authorization code, as Authlib and `S256CodeChallenge` read it."""

    id: int
    user_id: int
    blog_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass(frozen=True)
class LiveRefreshToken(TokenMixin):  # type: ignore[misc]  # untyped base class
    """A refresh token that may still be spent."""

    id: int
    grant_id: int
    client_id: str
    scope: str

    def check_client(self, client: OAuthClient) -> bool:
        return self.client_id == client.client_id

    def get_scope(self) -> str:
        return self.scope


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]  # untyped base class
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_ENDPOINT_AUTH_METHODS

    @staticmethod
    def validate_authorization_redirect_uri(request: OAuth2Request, client: OAuthClient) -> str:
        """Require `redirect_uri` (the spec does) and match it by `OAuthClient.check_redirect_uri`."""
        redirect_uri: str | None = request.payload.redirect_uri
        if not redirect_uri:
            raise InvalidRequestError("Missing 'redirect_uri' parameter.")
        if not client.check_redirect_uri(redirect_uri):
            raise InvalidRequestError("The redirect_uri is not registered for this application.")
        return redirect_uri

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        tx = current()
        approval: Approval = request.user
        challenge = request.payload.data.get("code_challenge") or None
        tx.session.add(
            tables.AuthorizationCode(
                code_hash=security.token_hash(code),
                client_id=request.client.client_id,
                user_id=approval.user_id,
                blog_id=approval.blog_id,
                redirect_uri=request.payload.redirect_uri,
                scope=request.scope,
                code_challenge=challenge,
                code_challenge_method="S256" if challenge else None,
                created_at=tx.now,
                expires_at=tx.now + timedelta(seconds=security.AUTHORIZATION_CODE_LIFETIME),
            )
        )

    def query_authorization_code(self, code: str, client: OAuthClient) -> IssuedCode | None:
        # Authlib calls this after the client and `code` checks, then compares `redirect_uri`: a
        # missing one is a missing parameter (`invalid_request`), not a wrong one (`invalid_grant`).
        if not self.request.payload.data.get("redirect_uri"):
            raise InvalidRequestError("Missing 'redirect_uri' parameter.")
        tx = current()
        row = tx.session.scalar(
            select(tables.AuthorizationCode).where(
                tables.AuthorizationCode.code_hash == security.token_hash(code),
                tables.AuthorizationCode.client_id == client.client_id,
            )
        )
        if row is None:
            return None
        if row.used_at is not None:
            if row.grant_id is not None:
                revoke_grant(tx.session, row.grant_id, tx.now)
            raise InvalidGrantError(CODE_REUSED)
        if row.expires_at <= tx.now:
            raise InvalidGrantError("The authorization code has expired; authorize again.")
        return IssuedCode(
            row.id,
            row.user_id,
            row.blog_id,
            row.redirect_uri,
            row.scope,
            row.code_challenge,
            row.code_challenge_method,
        )

    @hooked  # type: ignore[untyped-decorator]  # Authlib is untyped
    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        """Spend the code, create the grant, issue its first token pair: one transaction."""
        tx = current()
        code: IssuedCode = self.request.authorization_code
        if not spend_authorization_code(tx.session, code.id, tx.now):
            # Lost a race with another exchange of this code (possible on databases that do not
            # serialise writers the way SQLite does): it counts as reuse.
            grant_id = tx.session.scalar(
                select(tables.AuthorizationCode.grant_id).where(tables.AuthorizationCode.id == code.id)
            )
            if grant_id is not None:
                revoke_grant(tx.session, grant_id, tx.now)
            raise InvalidGrantError(CODE_REUSED)
        grant = tables.Grant(
            client_id=self.request.client.client_id,
            user_id=code.user_id,
            blog_id=code.blog_id,
            scope=code.scope,
            connected_at=tx.now,
        )
        tx.session.add(grant)
        tx.session.flush()
        tx.session.execute(
            update(tables.AuthorizationCode).where(tables.AuthorizationCode.id == code.id).values(grant_id=grant.id)
        )
        token: dict[str, Any] = self.generate_token(scope=code.scope, include_refresh_token=True)
        store_token_pair(tx.session, grant.id, token, tx.now)
        return 200, token, self.TOKEN_RESPONSE_HEADER


class RefreshTokenGrant(grants.RefreshTokenGrant):  # type: ignore[misc]  # untyped base class
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_ENDPOINT_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> LiveRefreshToken | None:
        tx = current()
        row = tx.session.execute(
            select(tables.Token, tables.Grant)
            .join(tables.Grant, tables.Token.grant_id == tables.Grant.id)
            .where(tables.Token.token_hash == security.token_hash(refresh_token), tables.Token.kind == "refresh")
        ).first()
        if row is None:
            return None
        token, grant = row
        if token.rotated_at is not None:
            revoke_grant(tx.session, grant.id, tx.now)
            raise InvalidGrantError(REFRESH_TOKEN_REUSED)
        if token.revoked_at is not None or grant.revoked_at is not None:
            raise InvalidGrantError("The refresh token was revoked; authorize again.")
        if token.expires_at <= tx.now:
            raise InvalidGrantError("The refresh token has expired; authorize again.")
        return LiveRefreshToken(token.id, grant.id, grant.client_id, token.scope)

    @hooked  # type: ignore[untyped-decorator]  # Authlib is untyped
    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        """Spend the refresh token and store the new pair in one transaction (same grant).

        The scope was checked by Authlib (a subset of the old token's) before anything is written,
        so no error can leave the old token spent without a new one issued.
        """
        tx = current()
        old: LiveRefreshToken = self.request.refresh_token
        scope = " ".join(normalize_scope(self.request.payload.scope)) or old.scope
        if not spend_refresh_token(tx.session, old.id, tx.now):
            revoke_grant(tx.session, old.grant_id, tx.now)
            raise InvalidGrantError(REFRESH_TOKEN_REUSED)
        token: dict[str, Any] = self.generate_token(scope=scope, include_refresh_token=True)
        store_token_pair(tx.session, old.grant_id, token, tx.now, refresh_scope=old.scope)
        return 200, token, self.TOKEN_RESPONSE_HEADER
