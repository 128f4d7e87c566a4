"""The service's tables: the SQLAlchemy 2 ORM models, one class per table.

Secrets are never stored in plain text (see `security`): tokens and authorization codes as
SHA-256 hex digests, passwords and client secrets with scrypt. Datetimes are aware UTC values
in Python whatever the database keeps (`UTCDateTime`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from mkdocs_blogsvc.server.security import SCOPES

#: Stored article content refers to hosted images as `blogsvc-media:<key>`; the data API
#: replaces the prefix with `<base_url>/media/` so served content carries absolute URLs.
MEDIA_PLACEHOLDER = "blogsvc-media:"


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
    __table_args__ = (
        UniqueConstraint("blog_id", "slug"),
        # The listing and the sync read one blog's published articles newest first: this index
        # answers them in order, without sorting (or even reading) the rest of the table.
        Index("ix_articles_blog_listing", "blog_id", "status", "published_at", "id"),
    )
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


class ServiceKey(Base):
    """A secret every process of the service shares (the session signing key), by name."""

    __tablename__ = "service_keys"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class RateCounter(Base):
    """Hits of one rate-limit key in one fixed window (`ratelimit`): shared by every process."""

    __tablename__ = "rate_counters"
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    window: Mapped[int] = mapped_column("window_number", BigInteger, primary_key=True, autoincrement=False)
    count: Mapped[int] = mapped_column(Integer, default=0)
    #: When the window ends (seconds since the epoch, service clock): past rows are deleted.
    expires_at: Mapped[float] = mapped_column(Float, index=True)
