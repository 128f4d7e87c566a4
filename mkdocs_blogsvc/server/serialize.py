"""An article as the data API shows it (the spec's Article resource).

Stored content refers to hosted images as `tables.MEDIA_PLACEHOLDER + key`; the served content
carries absolute URLs on the service (`<base_url>/media/<key>`), so a client can download every
image without knowing the service's layout. `contentHash` is computed over that served content:
it is the hash of exactly what the client receives and can recompute.

`base_url` is the app's public URL when one is set (`create_app(public_url=...)`, `server run
--public-url`), else the address the request came to. A public URL keeps served content, and so
`contentHash`, the same whichever name or proxy a client reaches the service through.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from json.encoder import encode_basestring as _json_string  # json.dumps' own, ensure_ascii=False
from typing import Any, Protocol
from urllib.parse import urlsplit

from flask import current_app, request

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import tables

#: The app config key holding the normalised public URL (or None).
PUBLIC_URL_CONFIG = "BLOGSVC_PUBLIC_URL"


def normalize_public_url(value: str) -> str:
    """`value` without a trailing slash, once it is an absolute http(s) URL naming only a place.

    Raises ValueError with a one-line message otherwise.
    """
    url = value.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError unless 0 to 65535
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or parts.password is not None
        or parts.query
        or parts.fragment
        or not url.isprintable()
        or " " in url
    ):
        raise ValueError(
            f"invalid public URL {value!r}: give the absolute http(s) address clients use, "
            "without user, query or fragment (for example https://blog.example.com)"
        )
    if parts.path:  # the pages' links and forms, and the routes, start at the host's root
        raise ValueError(
            f"invalid public URL {value!r}: the service must be at the root of its host, not under "
            f"{parts.path!r}; give it a host name or a port of its own (for example https://blogs.example.com)"
        )
    return url


def base_url() -> str:
    """Where the current request's answer says the service is, without a trailing slash:
    the public URL if the app has one, else the scheme, host and mount point the request used."""
    public: str | None = current_app.config.get(PUBLIC_URL_CONFIG)
    return public or request.url_root.rstrip("/")


def media_url(base_url: str, key: str) -> str:
    return f"{base_url}/media/{key}"


def served_content(content: str, base_url: str) -> str:
    """The Markdown body with every media placeholder made an absolute URL."""
    return content.replace(tables.MEDIA_PLACEHOLDER, f"{base_url}/media/")


class ArticleFields(Protocol):
    """What `article_json` reads: an ORM `tables.Article`, or a plain row of `ARTICLE_COLUMNS`
    (the listing and the sync read rows: building ORM objects costs a third of their time)."""

    @property
    def id(self) -> str: ...
    @property
    def slug(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def content(self) -> str: ...
    @property
    def cover_media_key(self) -> str | None: ...
    @property
    def inline_media_keys(self) -> list[str]: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def seo_keywords(self) -> list[str]: ...
    @property
    def seo_score(self) -> float | None: ...
    @property
    def schema_org_json(self) -> dict[str, Any] | None: ...
    @property
    def published_at(self) -> datetime | None: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def view_count(self) -> int: ...


#: The columns `article_json` reads, for queries that select rows rather than ORM objects.
ARTICLE_COLUMNS = (
    tables.Article.id,
    tables.Article.slug,
    tables.Article.title,
    tables.Article.description,
    tables.Article.content,
    tables.Article.cover_media_key,
    tables.Article.inline_media_keys,
    tables.Article.tags,
    tables.Article.seo_keywords,
    tables.Article.seo_score,
    tables.Article.schema_org_json,
    tables.Article.published_at,
    tables.Article.updated_at,
    tables.Article.created_at,
    tables.Article.view_count,
)


def article_json(article: ArticleFields, base_url: str) -> dict[str, Any]:
    """The spec's Article object for `article`, served from `base_url` (no trailing slash).

    `publishedAt` falls back to the creation time only for a row that claims to be published
    without a publication time (written by hand into the database): a 500 would help no one.
    """
    content = served_content(article.content, base_url)
    tags = list(article.tags or [])
    published_at = article.published_at or article.created_at
    return {
        "id": article.id,
        "slug": article.slug,
        "title": article.title,
        "description": article.description,
        "content": content,
        "coverImageUrl": media_url(base_url, article.cover_media_key) if article.cover_media_key else None,
        "inlineImageUrls": [media_url(base_url, key) for key in article.inline_media_keys or []],
        "tags": tags,
        "seoKeywords": list(article.seo_keywords or []),
        "seoScore": article.seo_score,
        "schemaOrgJson": article.schema_org_json,
        "publishedAt": format_timestamp(published_at),
        "updatedAt": format_timestamp(article.updated_at),
        "viewCount": int(article.view_count or 0),
        "contentHash": content_hash(article.title, article.description, content, tags),
    }


def content_hash(title: str, description: str | None, content: str, tags: list[str]) -> str:
    """The article's `contentHash`.

    Rule (the spec leaves it open): SHA-256, lowercase hex, of the UTF-8 bytes of the compact
    JSON array `[title, description, content, tags]` (`json.dumps(..., ensure_ascii=False,
    separators=(",", ":"))`), with `description` as JSON null when absent. A JSON array is a
    concatenation that no field's text can forge, and null differs from "".
    """
    # What that json.dumps writes, put together from its own string encoder: a sync hashes
    # every known article, and json.dumps' setup per call is a third of the work (5.2 against
    # 3.8 us an article: 0.14 s of a 1.5 s sync of 100,000 known articles).
    fields = [_json_string(title), "null" if description is None else _json_string(description), _json_string(content)]
    payload = f"[{','.join(fields)},[{','.join(map(_json_string, tags))}]]"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
