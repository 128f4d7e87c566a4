"""Persistence of the reference service: SQLAlchemy 2 models, the engine, the test clock.

SQLite by default (WAL mode, so a running server and `server admin` commands share one
database file and see each other's writes at once); any SQLAlchemy URL works.

Secrets are never stored in plain text: tokens and authorization codes as SHA-256 hex digests
(they are long random strings, so a fast hash is enough), passwords and client secrets with
scrypt (they may be guessable).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    event,
    select,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

ACCESS_TOKEN_PREFIX = "svc_at_"
REFRESH_TOKEN_PREFIX = "svc_rt_"
ACCESS_TOKEN_LIFETIME = 3600
REFRESH_TOKEN_LIFETIME = 30 * 24 * 3600
AUTHORIZATION_CODE_LIFETIME = 600
SCOPES = {
    "articles:read": "Read your published articles (list, fetch and synchronise them)",
    "blog:read": "Read your blog's details (name, description, language)",
}
#: Stored article content refers to hosted images as `blogsvc-media:<key>`; the data API
#: replaces the prefix with `<base_url>/media/` so served content carries absolute URLs.
MEDIA_PLACEHOLDER = "blogsvc-media:"
#: The connection execution option `Database.session(write=True)` sets: the transaction may write.
WRITE_TRANSACTION = "blogsvc_write"


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out, whatever the database keeps (SQLite keeps naive)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime, dict[str, Any]: JSON, list[str]: JSON}


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(150), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]


class Blog(Base):
    __tablename__ = "blogs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(200))
    slug: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    language: Mapped[str] = mapped_column(String(2))
    created_at: Mapped[datetime]


class Client(Base):
    """A registered application. Public clients have no secret and must use PKCE."""

    __tablename__ = "clients"
    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64), unique=True)
    client_secret_hash: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(200))
    redirect_uris: Mapped[list[str]]
    is_public: Mapped[bool] = mapped_column(Boolean, default=False)
    allowed_scope: Mapped[str] = mapped_column(Text, default=" ".join(SCOPES))
    created_at: Mapped[datetime]


class Media(Base):
    """An image hosted by the service, served at `/media/<key>`."""

    __tablename__ = "media"
    key: Mapped[str] = mapped_column(String(80), primary_key=True)
    blog_id: Mapped[str] = mapped_column(ForeignKey("blogs.id"))
    content_type: Mapped[str] = mapped_column(String(100))
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Article(Base):
    """An article in any state. Only `status == "published"` ever leaves the data API."""

    __tablename__ = "articles"
    __table_args__ = (UniqueConstraint("blog_id", "slug"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    blog_id: Mapped[str] = mapped_column(ForeignKey("blogs.id"), index=True)
    slug: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    cover_media_key: Mapped[str | None] = mapped_column(String(80))
    inline_media_keys: Mapped[list[str]] = mapped_column(default=list)
    tags: Mapped[list[str]] = mapped_column(default=list)
    seo_keywords: Mapped[list[str]] = mapped_column(default=list)
    seo_score: Mapped[float | None] = mapped_column(Float)
    schema_org_json: Mapped[dict[str, Any] | None]
    status: Mapped[str] = mapped_column(String(20), default="published")  # published|draft|unpublished
    published_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    created_at: Mapped[datetime]
    view_count: Mapped[int] = mapped_column(Integer, default=0)


class Grant(Base):
    """One approved connection (client, user, blog, scope): the family of its tokens.

    `connectedAt` and `lastSyncAt` of the status endpoint live here. Revoking a grant kills
    every token of the family (refresh-token reuse, RFC 9700 4.14.2; code reuse, RFC 6749 4.1.2).
    """

    __tablename__ = "grants"
    id: Mapped[int] = mapped_column(primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    blog_id: Mapped[str] = mapped_column(ForeignKey("blogs.id"))
    scope: Mapped[str] = mapped_column(Text)
    connected_at: Mapped[datetime]
    last_sync_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class AuthorizationCode(Base):
    __tablename__ = "authorization_codes"
    id: Mapped[int] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    client_id: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    blog_id: Mapped[str] = mapped_column(ForeignKey("blogs.id"))
    redirect_uri: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(Text)
    code_challenge: Mapped[str | None] = mapped_column(String(128))
    code_challenge_method: Mapped[str | None] = mapped_column(String(10))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]
    #: The grant created when the code was exchanged, revoked if the code is presented again.
    grant_id: Mapped[int | None] = mapped_column(ForeignKey("grants.id"))


class Token(Base):
    """An access or refresh token, stored as the SHA-256 of its value."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(primary_key=True)
    grant_id: Mapped[int] = mapped_column(ForeignKey("grants.id"), index=True)
    kind: Mapped[str] = mapped_column(String(10))  # "access" | "refresh"
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(Text)
    issued_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    #: Set when a refresh token is spent by rotation (as opposed to revoked).
    rotated_at: Mapped[datetime | None]


class ClockOffset(Base):
    """The test clock: seconds added to the wall clock, shared by every process on the database."""

    __tablename__ = "clock"
    id: Mapped[int] = mapped_column(primary_key=True)
    offset_seconds: Mapped[float] = mapped_column(Float, default=0.0)


class Database:
    """The engine, a session factory and the clock of one service database."""

    def __init__(self, url: str) -> None:
        self.url = url
        is_sqlite = url.startswith("sqlite")
        self.engine: Engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30} if is_sqlite else {},
        )
        if is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _begin)
        Base.metadata.create_all(self.engine)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Database:
        return cls(f"sqlite:///{os.fspath(path)}")

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception.

        `write=True` is for every transaction that may write. On SQLite it takes the write lock
        at BEGIN (`BEGIN IMMEDIATE`): writers queue up (waiting up to the busy timeout) instead
        of failing with "database is locked" when a transaction that has read tries to write
        after another one committed. Reads (the default) use a deferred BEGIN and, in WAL mode,
        neither wait for nor block anyone.
        """
        with self.sessions() as session, session.begin():
            if write:
                # Options of the session's first connection apply before its BEGIN.
                session.connection(execution_options={WRITE_TRANSACTION: True})
            yield session

    def now(self) -> datetime:
        """The service's notion of now: wall clock plus the test clock's offset."""
        # Read outside any transaction (AUTOCOMMIT: the "begin" listener issues no BEGIN), so it
        # can be called anywhere, even inside the caller's own write transaction.
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            offset = connection.scalar(select(ClockOffset.offset_seconds).where(ClockOffset.id == 1))
        return datetime.now(timezone.utc) + timedelta(seconds=offset or 0.0)

    def advance_clock(self, seconds: float) -> float:
        """Move the test clock forward; returns the new total offset in seconds."""
        with self.session(write=True) as session:
            clock = session.get(ClockOffset, 1)
            if clock is None:
                clock = ClockOffset(id=1, offset_seconds=0.0)
                session.add(clock)
            clock.offset_seconds += seconds
            return clock.offset_seconds

    def dispose(self) -> None:
        self.engine.dispose()


def _begin(connection: Any) -> None:
    """Start SQLite transactions ourselves (pysqlite's own handling is off, see `_sqlite_pragmas`):
    `BEGIN IMMEDIATE` for write transactions, a deferred `BEGIN` for reads, none in AUTOCOMMIT."""
    options = connection.get_execution_options()
    if options.get("isolation_level") == "AUTOCOMMIT":
        return
    connection.exec_driver_sql("BEGIN IMMEDIATE" if options.get(WRITE_TRANSACTION) else "BEGIN")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # let the "begin" listener issue BEGIN
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


# --- secrets ---------------------------------------------------------------------------------


def new_token(prefix: str) -> str:
    """`prefix` + 256 random bits, URL-safe (well above the 160 bits asked for)."""
    return prefix + secrets.token_urlsafe(32)


def token_hash(value: str) -> str:
    """How tokens and codes are stored: the SHA-256 hex digest of the UTF-8 value."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str) -> str:
    """scrypt with a 16-byte random salt, in the form `scrypt$n$r$p$salt$hash` (base64)."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, dklen=32, **_SCRYPT)
    encode = base64.b64encode
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${encode(salt).decode()}${encode(digest).decode()}"


def verify_password(password: str, stored: str | None) -> bool:
    """Constant-time check of a password (or client secret) against `hash_password` output."""
    if not stored:
        return False
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode("utf-8"), salt=base64.b64decode(salt), dklen=len(expected), n=int(n), r=int(r), p=int(p)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# --- identifiers and hashes ---------------------------------------------------------------

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_cuid_lock = threading.Lock()
_cuid_counter = secrets.randbelow(36**4)
_FINGERPRINT = hashlib.sha256(f"{os.getpid()}{secrets.token_hex(8)}".encode()).hexdigest()


def new_cuid() -> str:
    """A collision-resistant id in the CUID2 shape: a letter, then 24 lowercase base-36 characters.

    Like CUID2 it hashes a timestamp, a counter, a per-process fingerprint and random bytes, so
    ids leak neither creation order nor the host.
    """
    global _cuid_counter
    with _cuid_lock:
        _cuid_counter = (_cuid_counter + 1) % 36**4
        counter = _cuid_counter
    material = f"{time.time_ns()}{counter}{_FINGERPRINT}{secrets.token_hex(16)}".encode()
    number = int.from_bytes(hashlib.sha3_512(material).digest(), "big")
    body = []
    for _ in range(24):
        number, digit = divmod(number, 36)
        body.append(_BASE36[digit])
    return _BASE36[10 + secrets.randbelow(26)] + "".join(body)


def content_hash(title: str, description: str | None, content: str, tags: list[str]) -> str:
    """The article's `contentHash`.

    Rule (the spec leaves it open): SHA-256, lowercase hex, of the UTF-8 bytes of the compact
    JSON array `[title, description, content, tags]` (`json.dumps(..., ensure_ascii=False,
    separators=(",", ":"))`), with `description` as JSON null when absent. A JSON array is a
    concatenation that no field's text can forge, and null differs from "".
    """
    payload = json.dumps([title, description, content, list(tags)], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
