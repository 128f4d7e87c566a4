"""The sample blog: `mkdocs-blogsvc server admin --db PATH seed`.

One transaction creates user `demo` (password `demo-password`), the blog "Field Notes"
(`demo-blog`, English), a public client "MkDocs Blog Plugin" for loopback redirects, and the
articles of `sample_articles/` (Markdown with YAML front matter) with the images of
`sample_media/`. Dates are relative to the service clock, so the blog always looks recent;
published articles start with view counts that grow with their age, so the hosted blog looks
read (the draft and the unpublished article have none).

Seeding a database that already holds the sample user or blog is refused (`ContentError`):
the seed never touches data someone may have changed; seed a new database file instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ContentError

USERNAME = "demo"
PASSWORD = "demo-password"
BLOG = {
    "slug": "demo-blog",
    "name": "Field Notes",
    "language": "en",
    "description": "Notes from a small team that builds documentation tools and the services behind them.",
}
CLIENT_NAME = "MkDocs Blog Plugin"
#: Loopback redirect URIs match on any port (RFC 8252 7.3), so `login` may listen anywhere.
CLIENT_REDIRECT_URIS = ["http://127.0.0.1/callback", "http://[::1]/callback"]

_PACKAGE = resources.files("mkdocs_blogsvc.server")


def seed(db: Database, *, base_url_hint: str | None = None) -> dict[str, Any]:
    """Create the sample blog and return what a person needs to use it.

    `base_url_hint` (the address the service will be reached at) adds absolute cover URLs to
    the articles' schema.org `image`; without it `schemaOrgJson` names no image, since a stored
    URL cannot follow the server to another address.
    """
    now = db.now()
    password_hash = content.new_password_hash(USERNAME, PASSWORD)  # scrypt before the write lock
    with db.session(write=True) as session:
        if session.scalar(select(tables.User.id).where(tables.User.username == USERNAME)) is not None or \
                session.scalar(select(tables.Blog.id).where(tables.Blog.slug == BLOG["slug"])) is not None:
            raise ContentError(
                f"this database already holds the sample blog (user {USERNAME!r} or blog {BLOG['slug']!r}): "
                "seed a new database file instead"
            )
        content.insert_user(session, USERNAME, password_hash, now)
        blog = content.insert_blog(session, owner=USERNAME, now=now, **BLOG)
        client = content.insert_client(session, name=CLIENT_NAME, redirect_uris=CLIENT_REDIRECT_URIS, secret=None, now=now)
        published = 0
        for index, path in enumerate(sorted(_files("sample_articles", ".md"), key=lambda p: p.name)):
            article = _insert_sample(session, blog, path, index, now, base_url_hint)
            published += article.status == "published"
        return {
            "user": USERNAME,
            "password": PASSWORD,
            "blog": {"id": blog.id, "slug": blog.slug, "name": blog.name},
            "client_id": client.client_id,
            "articles": published,
        }


def _files(folder: str, suffix: str) -> list[Traversable]:
    return [entry for entry in _PACKAGE.joinpath(folder).iterdir() if entry.name.endswith(suffix)]


def _media(name: str) -> bytes:
    return (_PACKAGE / "sample_media" / name).read_bytes()


def _insert_sample(
    session: Session, blog: tables.Blog, path: Traversable, index: int, now: datetime, base_url: str | None
) -> tables.Article:
    _, front, body = path.read_text(encoding="utf-8").split("---\n", 2)
    meta = yaml.safe_load(front)
    status = meta.get("status", "published")
    published_at = now - timedelta(days=meta["days_ago"], hours=index % 5, minutes=7 * index)
    data = content.ArticleInput(
        title=meta["title"],
        content=body.strip() + "\n",
        description=meta["description"],
        tags=meta["tags"],
        seo_keywords=meta["seo_keywords"],
        seo_score=meta["seo_score"],
        cover_image=_media(meta["cover"]),
        inline_images=[_media(name) for name in meta.get("inline", [])],
    )
    article = content.insert_article(
        session, blog, data, now=published_at - timedelta(days=1),
        published_at=None if status == "draft" else published_at, status=status,
    )
    if status != "draft":
        article.updated_at = published_at + timedelta(days=meta.get("updated_days_after", 0))
    if status == "published":
        article.view_count = _sample_views(meta["days_ago"], index)
    article.schema_org_json = _blog_posting(article, blog, base_url)
    return article


def _sample_views(days_ago: int, index: int) -> int:
    """A plausible, repeatable view count: older articles have had more readers.

    Sample articles are at least 8 days apart, so the spread term (under 29) never reverses the order.
    """
    return 24 * days_ago + (37 * index) % 29


def _blog_posting(article: tables.Article, blog: tables.Blog, base_url: str | None) -> dict[str, Any]:
    """A schema.org BlogPosting for the article, as a content platform would generate it."""
    posting: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": article.title,
        "keywords": ", ".join(article.seo_keywords),
        "inLanguage": blog.language,
        "wordCount": len(article.content.split()),
        "author": {"@type": "Organization", "name": blog.name},
        "publisher": {"@type": "Organization", "name": blog.name},
    }
    if article.description:
        posting["description"] = article.description
    if article.published_at is not None:
        posting["datePublished"] = format_timestamp(article.published_at)
        posting["dateModified"] = format_timestamp(article.updated_at)
    if base_url and article.cover_media_key:
        posting["image"] = f"{base_url.rstrip('/')}/media/{article.cover_media_key}"
    return posting
