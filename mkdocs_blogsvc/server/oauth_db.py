"""The database work of the OAuth endpoints: one transaction per request, token pairs, revocation.

Every OAuth request runs in one transaction (`transaction`), so a refresh either spends the old
refresh token *and* stores the new pair, or does neither. A transaction that may write takes the
write lock at its start (`Database.session(write=True)`), so two refreshes racing with one token
queue up and the conditional UPDATE decides, instead of one failing with "database is locked".
The time of the request is read once, before the transaction starts (`Database.now()`, wall
clock plus test clock), so every row the request writes carries the same instant.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from flask import g
from sqlalchemy import CursorResult, update
from sqlalchemy.orm import Session

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database


@dataclass(frozen=True)
class RequestTransaction:
    """The open transaction of the current OAuth request and the request's `now`."""

    session: Session
    now: datetime


@contextmanager
def transaction(db: Database, *, write: bool = True) -> Iterator[RequestTransaction]:
    """Open the request's transaction; Authlib's callbacks reach it through `current()`.

    `write=False` only for a request known not to write (it then neither waits for nor holds
    SQLite's write lock): the authorization page shown, a sign-in checked.
    """
    now = db.now()
    with db.session(write=write) as session:
        g.blogsvc_oauth = RequestTransaction(session, now)
        try:
            yield g.blogsvc_oauth
        finally:
            g.pop("blogsvc_oauth", None)


def current() -> RequestTransaction:
    """The transaction opened by `transaction` for this request."""
    tx: RequestTransaction = g.blogsvc_oauth
    return tx


def store_token_pair(
    session: Session, grant_id: int, token: dict[str, Any], now: datetime, *, refresh_scope: str | None = None
) -> None:
    """Store the access and refresh token of a token response (hashed) under `grant_id`. The
    refresh token gets `refresh_scope` when given: a refresh that narrows the scope narrows the
    access token only (RFC 6749 6: the new refresh token's scope is the old one's)."""
    lifetimes = {"access": security.ACCESS_TOKEN_LIFETIME, "refresh": security.REFRESH_TOKEN_LIFETIME}
    for kind, lifetime in lifetimes.items():
        scope = refresh_scope if kind == "refresh" and refresh_scope is not None else token["scope"]
        session.add(
            tables.Token(
                grant_id=grant_id,
                kind=kind,
                token_hash=security.token_hash(token[f"{kind}_token"]),
                scope=scope,
                issued_at=now,
                expires_at=now + timedelta(seconds=lifetime),
            )
        )
    session.flush()


def spend_refresh_token(session: Session, token_id: int, now: datetime) -> bool:
    """Mark a refresh token rotated, atomically: True for the one caller that wins.

    A single conditional UPDATE, so two requests presenting the same token cannot both pass,
    whatever the isolation level of the database.
    """
    result = session.execute(
        update(tables.Token)
        .where(tables.Token.id == token_id, tables.Token.revoked_at.is_(None))
        .values(rotated_at=now, revoked_at=now)
    )
    return _rowcount(result) == 1


def spend_authorization_code(session: Session, code_id: int, now: datetime) -> bool:
    """Mark an authorization code used, atomically: True for the one exchange that wins."""
    result = session.execute(
        update(tables.AuthorizationCode)
        .where(tables.AuthorizationCode.id == code_id, tables.AuthorizationCode.used_at.is_(None))
        .values(used_at=now)
    )
    return _rowcount(result) == 1


def revoke_grant(session: Session, grant_id: int, now: datetime) -> None:
    """Revoke a connection and every token it holds (refresh-token or code reuse, RFC 9700 4.14.2)."""
    session.execute(
        update(tables.Grant)
        .where(tables.Grant.id == grant_id, tables.Grant.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    session.execute(
        update(tables.Token)
        .where(tables.Token.grant_id == grant_id, tables.Token.revoked_at.is_(None))
        .values(revoked_at=now)
    )


def _rowcount(result: Any) -> int:
    """Rows matched by an UPDATE (`Session.execute` is typed as returning a plain `Result`)."""
    return cast("CursorResult[Any]", result).rowcount
