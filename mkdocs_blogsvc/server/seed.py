"""The sample blog: `mkdocs-blogsvc server admin --db PATH seed`.

One transaction creates user `demo` (password `demo-password`), the blog "Field Notes"
(`demo-blog`, English), a public client "MkDocs Blog Plugin" for loopback redirects, and the
articles of `sample_articles/` (Markdown with YAML front matter) with the images of
`sample_media/`. Dates are relative to the service clock, so the blog always looks recent;
published articles start with view counts that grow with their age, so the hosted blog looks
read (the draft and the unpublished article have none).

Seeding a database that already holds the sample user or blog is refused (`ContentError`):
the seed never touches data someone may have changed; seed a new database file instead.

`generate_articles` (`server admin generate-articles`) fills an existing blog with many
plain articles quickly, for capacity tests, benchmarks and demos: rows are bulk-inserted in
short transactions, then PostgreSQL is given its statistics and visibility map at once
(`VACUUM (ANALYZE)`) instead of waiting for autovacuum.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import yaml
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import content, media, security, tables
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
        if (
            session.scalar(select(tables.User.id).where(tables.User.username == USERNAME)) is not None
            or session.scalar(select(tables.Blog.id).where(tables.Blog.slug == BLOG["slug"])) is not None
        ):
            raise ContentError(
                f"this database already holds the sample blog (user {USERNAME!r} or blog {BLOG['slug']!r}): "
                "seed a new database file instead"
            )
        content.insert_user(session, USERNAME, password_hash, now)
        blog = content.insert_blog(session, owner=USERNAME, now=now, **BLOG)
        client = content.insert_client(
            session, name=CLIENT_NAME, redirect_uris=CLIENT_REDIRECT_URIS, secret=None, now=now
        )
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
        session,
        blog,
        data,
        now=published_at - timedelta(days=1),
        published_at=None if status == "draft" else published_at,
        status=status,
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


# --- generated articles ---------------------------------------------------------------------

#: `generate-articles` bounds: enough for capacity tests, small enough to fail fast on a typo.
MAX_GENERATED = 1_000_000
MAX_WORDS = 100_000
#: Rows per insert transaction: short transactions, so the service keeps answering meanwhile.
GENERATE_BATCH = 2_000
_WORDS = (
    "service",
    "sync",
    "cache",
    "build",
    "page",
    "article",
    "blog",
    "index",
    "token",
    "client",
    "query",
    "batch",
    "stream",
    "answer",
    "listing",
    "order",
    "publish",
    "draft",
    "cover",
    "image",
    "markdown",
    "heading",
    "table",
    "link",
    "update",
    "change",
    "worker",
    "process",
    "thread",
    "database",
    "schema",
    "migration",
    "request",
    "response",
    "header",
    "body",
    "status",
    "error",
    "limit",
    "window",
    "clock",
    "offset",
    "planner",
    "statistics",
    "vacuum",
    "insert",
    "select",
    "commit",
    "rollback",
    "lock",
    "reader",
    "writer",
    "pool",
    "timeout",
    "retry",
    "deploy",
    "proxy",
    "certificate",
    "release",
    "version",
    "plugin",
    "theme",
    "template",
)
_TAGS = ["capacity", "benchmark", "demo", "notes", "guides", "releases", "operations", "design"]


def generate_articles(
    db: Database,
    blog_slug: str,
    count: int,
    *,
    words: int = 300,
    covers: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Add `count` published articles of about `words` words each to the blog `blog_slug`.

    Articles are numbered on from those the blog holds (titles "Generated article N: ...",
    slugs `generated-article-N`, made unique in the blog), published one minute apart going back
    from now (the newest first), with 1 to 3 tags, SEO keywords and a score. With `covers`, each
    gets one of the sample blog's 14 cover images (stored once). The text is repeatable: the
    same N gives the same article. Inserted `GENERATE_BATCH` rows a transaction: an interrupted
    run keeps the batches already written.
    """
    if not 1 <= count <= MAX_GENERATED:
        raise ContentError(f"count must be from 1 to {MAX_GENERATED:,}, not {count}")
    if not 1 <= words <= MAX_WORDS:
        raise ContentError(f"words must be from 1 to {MAX_WORDS:,}, not {words}")
    now = now or db.now()
    with db.session(write=True) as session:
        blog = content.get_blog(session, blog_slug)
        first = 1 + (session.scalar(select(func.count()).where(tables.Article.blog_id == blog.id)) or 0)
        taken = set(session.scalars(select(tables.Article.slug).where(tables.Article.blog_id == blog.id)))
        cover_keys = (
            [media.store_image(session, blog.id, _media(f"cover-{n:02d}.png")) for n in range(1, 15)] if covers else []
        )
    oldest = now
    for start in range(0, count, GENERATE_BATCH):
        rows = []
        for n in range(first + start, first + min(start + GENERATE_BATCH, count)):
            row = _generated_row(blog.id, n, words, now - timedelta(minutes=n - first + 1), taken)
            row["cover_media_key"] = cover_keys[n % len(cover_keys)] if cover_keys else None
            rows.append(row)
            oldest = row["published_at"]
        with db.session(write=True) as session:
            session.execute(insert(tables.Article), rows)
    _analyze(db)
    with db.session() as session:
        published = session.scalar(
            select(func.count()).where(tables.Article.blog_id == blog.id, tables.Article.status == "published")
        )
    return {
        "blog": blog.slug,
        "generated": count,
        "published": published,
        "words": words,
        "covers": covers,
        "newest": format_timestamp(now - timedelta(minutes=1)),
        "oldest": format_timestamp(oldest),
    }


def _generated_row(blog_id: str, n: int, words: int, published_at: datetime, taken: set[str]) -> dict[str, Any]:
    """Article number `n` of a generated blog, as a row (the same `n` always gives the same text)."""
    rng = random.Random(n)
    topic = " ".join(rng.sample(_WORDS, 3))
    title = f"Generated article {n}: {topic}"
    slug = f"generated-article-{n}"
    suffix = 1
    while slug in taken:  # a slug the blog already holds: -2, -3... as for any article
        suffix += 1
        slug = f"generated-article-{n}-{suffix}"
    taken.add(slug)
    paragraphs: list[str] = []
    left = words
    while left > 0:
        size = min(left, rng.randint(40, 90))
        sentence = " ".join(rng.choices(_WORDS, k=size))
        paragraphs.append(sentence[0].upper() + sentence[1:] + ".")
        left -= size
    sections = [f"## Part {i // 3 + 1}\n\n" + "\n\n".join(paragraphs[i : i + 3]) for i in range(0, len(paragraphs), 3)]
    body = f"# {title}\n\n" + "\n\n".join(sections) + "\n"
    tags = rng.sample(_TAGS, rng.randint(1, 3))
    return {
        "id": security.new_cuid(),
        "blog_id": blog_id,
        "slug": slug,
        "title": title,
        "description": f"A generated article about {topic}.",
        "content": body,
        "cover_media_key": None,
        "inline_media_keys": [],
        "tags": tags,
        "seo_keywords": topic.split(),
        "seo_score": round(rng.uniform(5, 10), 1),
        "schema_org_json": None,
        "status": "published",
        "published_at": published_at,
        "updated_at": published_at,
        "created_at": published_at,
        "view_count": rng.randint(0, 500),
    }


def _analyze(db: Database) -> None:
    """PostgreSQL: statistics for the planner and the visibility map for index-only scans, now
    rather than when autovacuum comes by. SQLite's plans need neither."""
    if db.is_sqlite:
        return
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM (ANALYZE) articles")
