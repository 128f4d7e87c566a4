"""The service's resources as frozen dataclasses, parsed and type-checked once at the edge.

`from_json` raises `InvalidResponse` naming the field that broke the spec; the rest of the
package can then trust every attribute. `Article.to_json` gives back the spec's camelCase
object, which is what the cache stores.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar
from urllib.parse import urlsplit

import msgspec

from mkdocs_blogsvc.errors import InvalidResponse, UnusableTokenResponse
from mkdocs_blogsvc.fileio import compact_json
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.redaction import hold

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Any:  # for the type checker only (no typing_extensions at run time)
        return lambda function: function


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def per_article(cls: type[T]) -> type[T]:
    """A frozen dataclass to the type checker (mypy refuses any assignment to a field;
    `dataclasses.replace` makes changed copies), built at run time like a plain one with slots:
    for the records made for every article of every build, where a frozen dataclass's
    `__init__` (one `object.__setattr__` per field) cost 2 µs more each, 0.1 s a build at
    10,000 articles. Hashable like a frozen dataclass."""
    return dataclass(slots=True, unsafe_hash=True)(cls)


def parse_timestamp(value: str) -> datetime:
    """Parse the spec's ISO 8601 timestamps (`2026-01-02T03:04:05.678Z`) into aware UTC datetimes."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidResponse(f"not an ISO 8601 timestamp: {value[:40]!r}") from exc
    if parsed.tzinfo is timezone.utc:  # the usual `Z`: twice per article of every build
        return parsed
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last date Python has
        raise InvalidResponse(f"timestamp out of range: {value[:40]!r}") from None


def is_web_url(url: str) -> bool:
    """An absolute http(s) URL with a host: the only image URL a page may show or the plugin
    fetch (`javascript:`, `data:`, `file:` and relative URLs are not)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _web_urls(article_id: str, what: str, urls: Sequence[str]) -> tuple[str, ...]:
    """The image URLs a page may use; the others are left out, each said once."""
    kept = tuple(url for url in urls if is_web_url(url))
    for url in urls:
        if url not in kept:
            log.info(f"article {article_id}: its {what} URL {url[:80]!r} is not an http(s) URL: left out")
    return kept


#: Longest article id accepted (ids name files and show in messages: a line feed or an escape
#: sequence in one could forge a log line).
MAX_ID_LENGTH = 200


def _get(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str, *, nullable: bool = False) -> Any:
    if key not in data:
        raise InvalidResponse(f"{what}: field {key!r} is missing")
    value = data[key]
    if value is None and nullable:
        return None
    # bool is an int subclass: a number field must not accept true/false.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise InvalidResponse(f"{what}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _str_list(data: Mapping[str, Any], key: str, what: str) -> tuple[str, ...]:
    value = _get(data, key, list, what)
    if not all(isinstance(item, str) for item in value):
        raise InvalidResponse(f"{what}: field {key!r} must be a list of strings")
    return tuple(value)


#: Control characters no page shows (C0 but tab, line feed and carriage return; DEL): a NUL in a
#: title reached `<title>` and the navigation as it was.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _text(value: str) -> str:
    """An article's text without control characters."""
    return _CONTROL_CHARACTERS.sub("", value)


def _timestamp(data: Mapping[str, Any], key: str, what: str, *, nullable: bool = False) -> datetime | None:
    value = _get(data, key, str, what, nullable=nullable)
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except InvalidResponse as exc:
        raise InvalidResponse(f"{what}: field {key!r} is {exc}") from None


@dataclass(frozen=True, slots=True)
class Article:
    """One published article, as the spec's Article resource."""

    id: str
    slug: str
    title: str
    description: str | None
    content: str
    cover_image_url: str | None
    inline_image_urls: tuple[str, ...]
    tags: tuple[str, ...]
    seo_keywords: tuple[str, ...]
    seo_score: float | None
    schema_org_json: dict[str, Any] | None
    published_at: datetime
    updated_at: datetime
    view_count: int
    content_hash: str

    @classmethod
    def from_json(cls, data: Any) -> Article:
        if not isinstance(data, dict):
            raise InvalidResponse("article is not a JSON object")
        raw_id = data.get("id")
        what = f"article {raw_id!r}" if isinstance(raw_id, str) else "article"
        published = _timestamp(data, "publishedAt", what)
        updated = _timestamp(data, "updatedAt", what)
        assert published is not None and updated is not None
        article_id = _get(data, "id", str, what)
        if not (
            0 < len(article_id) <= MAX_ID_LENGTH
            and article_id.isprintable()
            and not any(c.isspace() for c in article_id)
        ):
            raise InvalidResponse(
                f"{what} has an id that is not a plain identifier (printable, no spaces, at most {MAX_ID_LENGTH})"
            )
        description = _get(data, "description", str, what, nullable=True)
        cover = _get(data, "coverImageUrl", str, what, nullable=True)
        covers = _web_urls(article_id, "cover image", [cover] if cover is not None else [])
        return cls(
            id=article_id,
            slug=_get(data, "slug", str, what),
            title=_text(_get(data, "title", str, what)),
            description=_text(description) if description is not None else None,
            content=_text(_get(data, "content", str, what)),
            cover_image_url=covers[0] if covers else None,
            inline_image_urls=_web_urls(article_id, "inline image", _str_list(data, "inlineImageUrls", what)),
            tags=tuple(_text(tag) for tag in _str_list(data, "tags", what)),
            seo_keywords=tuple(_text(keyword) for keyword in _str_list(data, "seoKeywords", what)),
            seo_score=_get(data, "seoScore", (int, float), what, nullable=True),
            schema_org_json=_get(data, "schemaOrgJson", dict, what, nullable=True),
            published_at=published,
            updated_at=updated,
            view_count=_get(data, "viewCount", int, what),
            content_hash=_get(data, "contentHash", str, what),
        )

    def to_json(self) -> dict[str, Any]:
        """The spec's camelCase object (what the cache stores and `from_json` reads back)."""
        return {
            "id": self.id,
            "slug": self.slug,
            "title": self.title,
            "description": self.description,
            "content": self.content,
            "coverImageUrl": self.cover_image_url,
            "inlineImageUrls": list(self.inline_image_urls),
            "tags": list(self.tags),
            "seoKeywords": list(self.seo_keywords),
            "seoScore": self.seo_score,
            "schemaOrgJson": self.schema_org_json,
            "publishedAt": format_timestamp(self.published_at),
            "updatedAt": format_timestamp(self.updated_at),
            "viewCount": self.view_count,
            "contentHash": self.content_hash,
        }


class Listed(Protocol):
    """What slugs and links between articles need: an `Article` or its `ArticleSummary`."""

    @property
    def id(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def published_at(self) -> datetime: ...


#: A timestamp with its offset (compared with the service's, which are all aware).
_Aware = Annotated[datetime, msgspec.Meta(tz=True)]


class ArticleSummary(msgspec.Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    """What a build needs of a cached article besides rendering it: where its page goes (id,
    slug, the title for a made-up slug, dates) and which images it wants. The cache manifest
    keeps one per article, so a build with nothing changed reads no article file. A msgspec
    `Struct`: the manifest's JSON is decoded straight into it (`Manifest.decode`), fields
    checked and dates parsed in C."""

    #: the article's id: the manifest's key, not part of the summary's JSON (set when read).
    id: str = ""
    slug: str
    title: str
    published_at: _Aware
    updated_at: _Aware
    cover_image_url: str | None
    #: the cover's URL first, then the inline images', each once.
    image_urls: tuple[str, ...]

    @classmethod
    def of(cls, article: Article) -> ArticleSummary:
        cover = (article.cover_image_url,) if article.cover_image_url else ()
        return cls(
            id=article.id,
            slug=article.slug,
            title=article.title,
            published_at=article.published_at,
            updated_at=article.updated_at,
            cover_image_url=article.cover_image_url,
            image_urls=tuple(dict.fromkeys((*cover, *article.inline_image_urls))),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "title": self.title,
            "publishedAt": format_timestamp(self.published_at),
            "updatedAt": format_timestamp(self.updated_at),
            "coverImageUrl": self.cover_image_url,
            "imageUrls": list(self.image_urls),
        }


def format_timestamp(moment: datetime) -> str:
    """UTC, millisecond precision, `Z` suffix: the format of the spec's samples."""
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class KnownArticle(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    """One `{id, contentHash}` entry of the sync request (encoded by msgspec: `sync_body`)."""

    id: str
    content_hash: str


@dataclass(frozen=True)
class SkippedArticle:
    """An article of a sync answer that broke the spec and was left out, with the reason."""

    id: str | None
    reason: str


@dataclass(frozen=True)
class SyncResult:
    """The answer of `POST /api/v1/sync`.

    An article with a field of the wrong type does not fail the whole sync: it is left out of
    `new`/`updated` and listed in `skipped`, so the caller can warn with its id.
    """

    new: tuple[Article, ...]
    updated: tuple[Article, ...]
    deleted: tuple[str, ...]
    synced_at: datetime
    skipped: tuple[SkippedArticle, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> SyncResult:
        if not isinstance(data, dict):
            raise InvalidResponse("sync answer is not a JSON object")
        skipped: list[SkippedArticle] = []

        def articles(key: str) -> tuple[Article, ...]:
            parsed = []
            for item in _get(data, key, list, "sync answer"):
                try:
                    parsed.append(Article.from_json(item))
                except InvalidResponse as exc:
                    item_id = item.get("id") if isinstance(item, dict) else None
                    skipped.append(SkippedArticle(item_id if isinstance(item_id, str) else None, str(exc)))
            return tuple(parsed)

        new, updated = articles("new"), articles("updated")
        deleted = _str_list(data, "deleted", "sync answer")
        _refuse_contradictions(new + updated, deleted)
        synced_at = _timestamp(data, "syncedAt", "sync answer")
        assert synced_at is not None
        return cls(new, updated, deleted, synced_at, tuple(skipped))


def _refuse_contradictions(changed: tuple[Article, ...], deleted: tuple[str, ...]) -> None:
    """An answer naming an article twice, or as changed and as deleted, leaves no way to tell
    which is right: it is refused whole (the cache stays as it is)."""
    seen: set[str] = set()
    for article in changed:
        if article.id in seen:
            raise InvalidResponse(f"sync answer: article {article.id!r} is listed twice among new and updated")
        seen.add(article.id)
    both = seen.intersection(deleted)
    if both:
        raise InvalidResponse(f"sync answer: article {min(both)!r} is listed as changed and as deleted")


@dataclass(frozen=True)
class Blog:
    id: str
    name: str
    slug: str
    description: str
    language: str
    article_count: int


@dataclass(frozen=True)
class BlogStatus:
    """The answer of `GET /api/v1/status`."""

    status: str
    blog: Blog
    scopes: tuple[str, ...]
    connected_at: datetime
    last_sync_at: datetime | None

    @classmethod
    def from_json(cls, data: Any) -> BlogStatus:
        if not isinstance(data, dict) or not isinstance(data.get("blog"), dict):
            raise InvalidResponse("status answer is not a JSON object with a 'blog' object")
        blog, what = data["blog"], "status blog"
        connected_at = _timestamp(data, "connectedAt", "status")
        assert connected_at is not None
        return cls(
            status=_get(data, "status", str, "status"),
            blog=Blog(
                id=_get(blog, "id", str, what),
                name=_get(blog, "name", str, what),
                slug=_get(blog, "slug", str, what),
                # The spec types description as string; a null is tolerated and shown as empty.
                description=_get(blog, "description", str, what, nullable=True) or "",
                language=_get(blog, "language", str, what),
                article_count=_get(blog, "articleCount", int, what),
            ),
            scopes=_str_list(data, "scopes", "status"),
            connected_at=connected_at,
            last_sync_at=_timestamp(data, "lastSyncAt", "status", nullable=True),
        )


#: RFC 6750 2.1 (b64token): what a bearer token may hold, sent in a header as it is.
ACCESS_TOKEN_SYNTAX = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: RFC 6749 A.17: visible ASCII and spaces.
REFRESH_TOKEN_SYNTAX = re.compile(r"[\x20-\x7e]+")


@dataclass(frozen=True)
class TokenSet:
    """A token response, with absolute expiry times computed from the client's clock.

    `repr()` never shows the tokens (they would end up in logs and tracebacks).
    """

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    access_expires_at: float
    refresh_expires_at: float
    scope: tuple[str, ...]
    token_type: str = "Bearer"
    #: Why `expires_in` was not taken as given (outside the spec), for a warning; None if it was.
    lifetime_note: str | None = None

    #: The spec's token lifetimes; the token response carries the access token's only.
    ACCESS_LIFETIME = 3600
    REFRESH_LIFETIME = 30 * 24 * 3600
    #: The shortest access token lifetime believed: a shorter one would have every data call of
    #: a build spend a refresh token (the client refreshes a minute before expiry). A token the
    #: service really expires sooner is refused once, then refreshed once.
    MIN_ACCESS_LIFETIME = 120

    @classmethod
    def from_token_response(
        cls, data: Any, *, now: float | None = None, previous_refresh_token: str | None = None
    ) -> TokenSet:
        """The token response as the client can use it. Without a new `refresh_token`, the
        previous one stays (RFC 6749 section 6). When the answer is unusable but carries a new
        refresh token, `UnusableTokenResponse` hands that token on: the old one is spent."""
        if not isinstance(data, dict):
            raise InvalidResponse("token response is not a JSON object")
        now = time.time() if now is None else now
        what = "token response"
        hold(*(data.get(key) for key in ("access_token", "refresh_token") if isinstance(data.get(key), str)))
        refresh_token = data.get("refresh_token")
        if not (isinstance(refresh_token, str) and refresh_token.strip()):
            if previous_refresh_token is None:
                raise InvalidResponse(f"{what}: field 'refresh_token' is missing")
            refresh_token = previous_refresh_token
        if not REFRESH_TOKEN_SYNTAX.fullmatch(refresh_token):
            raise InvalidResponse(f"{what}: refresh_token holds characters a token cannot have")
        try:
            token_type = _get(data, "token_type", str, what)
            if token_type.lower() != "bearer":
                raise InvalidResponse(f"{what}: token_type {token_type[:40]!r} is not Bearer")
            access_token = _get(data, "access_token", str, what)
            if not ACCESS_TOKEN_SYNTAX.fullmatch(access_token):  # it goes into a header as it is
                raise InvalidResponse(f"{what}: access_token holds characters a bearer token cannot have")
        except InvalidResponse as exc:
            raise UnusableTokenResponse(str(exc), refresh_token=refresh_token) from None
        lifetime, note = _access_lifetime(data.get("expires_in"))
        scope = data.get("scope")
        return cls(
            access_token=access_token,
            refresh_token=refresh_token,
            access_expires_at=now + lifetime,
            refresh_expires_at=now + cls.REFRESH_LIFETIME,
            scope=tuple(scope.split()) if isinstance(scope, str) else (),
            token_type="Bearer",
            lifetime_note=note,
        )

    def replace(self, **changes: Any) -> TokenSet:
        return dataclasses.replace(self, **changes)


def _access_lifetime(value: Any) -> tuple[float, str | None]:
    """`expires_in` as seconds the client believes, and a note when that is not the value as
    given: a numeric string is read as its number (some services send one); a missing, non-finite
    or unreadable value is the spec's 3600; the result lies between `MIN_ACCESS_LIFETIME` and
    the refresh token's lifetime (a far-off expiry would not even be a date)."""
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        shown = "missing" if value is None else repr(value)[:40]
        return float(
            TokenSet.ACCESS_LIFETIME
        ), f"expires_in is {shown}: taken as the spec's {TokenSet.ACCESS_LIFETIME} s"
    lifetime = min(max(number, TokenSet.MIN_ACCESS_LIFETIME), TokenSet.REFRESH_LIFETIME)
    if lifetime != number:
        return lifetime, f"expires_in is {number:g} s: taken as {lifetime:.0f} s"
    return lifetime, None


def sync_body(known: Sequence[KnownArticle]) -> bytes:
    """The JSON body of a sync request, compact UTF-8: `{"knownArticles": [...]}` (encoded by
    msgspec from the structs: at 10,000 known articles 0.6 ms, where `json.dumps` of their
    dicts took 21 ms)."""
    return compact_json({"knownArticles": known})
