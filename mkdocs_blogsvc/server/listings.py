"""What `server admin list-*` shows: one row per user, blog, client, connection or article.

Every kind of thing the service creates can be listed, so that nobody has to read the database
to find an id. Each function returns rows as JSON-ready dicts whose keys are the columns, in
order; the CLI prints them as a table or, with `--json`, as `{"<kind>": [rows]}`. Listings are
ordered oldest first (articles: newest change first), and read in one read transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.content import get_blog
from mkdocs_blogsvc.server.database import Database

Row = dict[str, Any]


def users(db: Database) -> list[Row]:
    """Users with the slugs of the blogs they own."""
    with db.session() as session:
        owned: dict[int, list[str]] = {}
        for owner_id, slug in session.execute(
            select(tables.Blog.owner_id, tables.Blog.slug).order_by(tables.Blog.slug)
        ):
            owned.setdefault(owner_id, []).append(slug)
        return [
            {
                "id": user.id,
                "username": user.username,
                "blogs": owned.get(user.id, []),
                "createdAt": format_timestamp(user.created_at),
            }
            for user in session.scalars(select(tables.User).order_by(tables.User.id))
        ]


def blogs(db: Database) -> list[Row]:
    """Blogs with their owner and how many articles they hold (published, and in all)."""
    with db.session() as session:
        published = func.count(tables.Article.id).filter(tables.Article.status == "published")
        counts = {
            blog_id: (shown, total)
            for blog_id, shown, total in session.execute(
                select(tables.Article.blog_id, published, func.count(tables.Article.id)).group_by(
                    tables.Article.blog_id
                )
            )
        }
        query = (
            select(tables.Blog, tables.User.username)
            .join(tables.User, tables.User.id == tables.Blog.owner_id)
            .order_by(tables.Blog.created_at, tables.Blog.slug)
        )
        return [
            {
                "id": blog.id,
                "slug": blog.slug,
                "name": blog.name,
                "language": blog.language,
                "owner": owner,
                "published": counts.get(blog.id, (0, 0))[0],
                "articles": counts.get(blog.id, (0, 0))[1],
            }
            for blog, owner in session.execute(query)
        ]


def clients(db: Database) -> list[Row]:
    """Registered applications (never their secrets: only a hash is stored)."""
    with db.session() as session:
        return [
            {
                "client_id": client.client_id,
                "name": client.name,
                "public": client.is_public,
                "redirect_uris": list(client.redirect_uris),
                "createdAt": format_timestamp(client.created_at),
            }
            for client in session.scalars(select(tables.Client).order_by(tables.Client.id))
        ]


def connections(db: Database) -> list[Row]:
    """Approved connections (OAuth grants): which application reads which blog for whom."""
    with db.session() as session:
        query = (
            select(tables.Grant, tables.User.username, tables.Blog.slug)
            .join(tables.User, tables.User.id == tables.Grant.user_id)
            .join(tables.Blog, tables.Blog.id == tables.Grant.blog_id)
            .order_by(tables.Grant.id)
        )
        return [
            {
                "id": grant.id,
                "client_id": grant.client_id,
                "user": username,
                "blog": blog_slug,
                "scope": grant.scope,
                "connectedAt": format_timestamp(grant.connected_at),
                "lastSyncAt": None if grant.last_sync_at is None else format_timestamp(grant.last_sync_at),
                "revoked": grant.revoked_at is not None,
            }
            for grant, username, blog_slug in session.execute(query)
        ]


def articles(db: Database, blog_slug: str, *, include_all: bool = False) -> list[Row]:
    """The blog's published articles (every status with `include_all`), most recently changed first."""
    with db.session() as session:
        blog = get_blog(session, blog_slug)
        article = tables.Article
        # Only the columns shown: a blog of 100,000 articles is not read whole (content and all).
        query = select(article.id, article.slug, article.status, article.title, article.updated_at).where(
            article.blog_id == blog.id
        )
        if not include_all:
            query = query.where(article.status == "published")
        query = query.order_by(article.updated_at.desc(), article.id)
        return [
            {
                "id": row.id,
                "slug": row.slug,
                "status": row.status,
                "title": row.title,
                "updatedAt": format_timestamp(row.updated_at),
            }
            for row in session.execute(query)
        ]
