"""Bearer-token checks of the data API (RFC 6750).

The token is accepted in the `Authorization` header only. RFC 6750 also allows a form field or
an `access_token` query parameter, but both end up in logs, proxies and browser history
(RFC 6750 5.3, RFC 9700 2.5), and the spec names the header alone: a token sent any other way
is treated as no token at all.

An access token is valid when its SHA-256 is stored with kind "access", it is neither revoked nor
expired by the service's clock (`Database.now()`, which includes the test clock), and its grant
(the OAuth connection) is not revoked. The grant fixes the one blog the token can see.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

from flask import current_app, request
from sqlalchemy import select

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ApiError
from mkdocs_blogsvc.server.ratelimit import RateLimiter

P = ParamSpec("P")
R = TypeVar("R")

REALM = "blogsvc"
INVALID_TOKEN_DESCRIPTION = "Access token is missing, expired, or invalid."
#: RFC 6750 2.1 `b64token`, the syntax of a Bearer credential.
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@dataclass(frozen=True)
class Access:
    """What a valid access token lets the request see: one grant, one blog, some scopes."""

    grant_id: int
    blog_id: str
    scopes: tuple[str, ...]
    client_id: str = ""
    #: The token's SHA-256 (never the token): the key of its rate limit.
    token_hash: str = ""


def invalid_token(*, credentials_sent: bool) -> ApiError:
    """401 `invalid_token`. With no credentials at all, or another scheme's, the challenge
    carries no error (RFC 6750 3.1)."""
    challenge = f'Bearer realm="{REALM}"'
    if credentials_sent:
        challenge += f', error="invalid_token", error_description="{INVALID_TOKEN_DESCRIPTION}"'
    return ApiError(401, "invalid_token", INVALID_TOKEN_DESCRIPTION, {"WWW-Authenticate": challenge})


def insufficient_scope(scope: str) -> ApiError:
    """403 `insufficient_scope`, naming the scope in the body and in the challenge (RFC 6750 3.1)."""
    description = f"Required scope: {scope}"
    challenge = (
        f'Bearer realm="{REALM}", error="insufficient_scope", error_description="{description}", scope="{scope}"'
    )
    return ApiError(403, "insufficient_scope", description, {"WWW-Authenticate": challenge})


def bearer_credentials(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header; raises 401 `invalid_token` otherwise."""
    if not header or not header.strip():
        raise invalid_token(credentials_sent=False)
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer":  # auth schemes are case-insensitive
        raise invalid_token(credentials_sent=False)  # another scheme: no error details (RFC 6750 3.1)
    if not _B64TOKEN.fullmatch(value):
        raise invalid_token(credentials_sent=True)
    return value


def authenticate(db: Database, header: str | None) -> Access:
    """The `Access` of a valid access token in `header`; raises 401 `invalid_token` otherwise."""
    raw = bearer_credentials(header)
    now = db.now()
    # One statement: read outside a transaction (no BEGIN and COMMIT round trips per request).
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        row = connection.execute(
            select(tables.Token.scope, tables.Grant.id, tables.Grant.blog_id, tables.Grant.client_id)
            .join(tables.Grant, tables.Grant.id == tables.Token.grant_id)
            .where(
                tables.Token.token_hash == security.token_hash(raw),
                tables.Token.kind == "access",
                tables.Token.revoked_at.is_(None),
                tables.Token.expires_at > now,
                tables.Grant.revoked_at.is_(None),
            )
        ).first()
    if row is None:
        raise invalid_token(credentials_sent=True)
    scope, grant_id, blog_id, client_id = row
    return Access(
        grant_id=grant_id,
        blog_id=blog_id,
        scopes=tuple(scope.split()),
        client_id=client_id,
        token_hash=security.token_hash(raw),
    )


def require_token(scope: str | None) -> Callable[[Callable[Concatenate[Access, P], R]], Callable[P, R]]:
    """Decorate a view: it runs only with a valid access token (holding `scope`, unless None),
    and receives the token's `Access` as its first argument."""

    def decorator(view: Callable[Concatenate[Access, P], R]) -> Callable[P, R]:
        @functools.wraps(view)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            access = authenticate(current_app.extensions["blogsvc_db"], request.headers.get("Authorization"))
            limiter: RateLimiter = current_app.extensions["blogsvc_limiter"]
            limiter.enforce_all(
                [
                    ("token", access.token_hash, "for this access token"),
                    ("client", access.client_id, "for this application"),
                ]
            )
            if scope is not None and scope not in access.scopes:
                raise insufficient_scope(scope)
            return view(access, *args, **kwargs)

        return wrapper

    return decorator
