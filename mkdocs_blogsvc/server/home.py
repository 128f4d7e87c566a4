"""`GET /`: the page a person sees when they open the service's address in a browser.

It says what the service is, which blogs it hosts and how to connect an application, so the
URL printed by `server run` leads somewhere useful (sign-in itself starts from an application,
at `/api/oauth/authorize`). The address it tells people to configure is `serialize.base_url()`:
the public URL when one is set, so a page seen through a proxy names the address to use.
"""

from __future__ import annotations

from flask import Flask, Response, render_template
from sqlalchemy import func, select

from mkdocs_blogsvc import __version__
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.security import SCOPES
from mkdocs_blogsvc.server.serialize import base_url
from mkdocs_blogsvc.server.tables import Article, Blog


def register(app: Flask, db: Database) -> None:
    """Attach `GET /` to the app."""

    @app.get("/")
    def home() -> Response:
        published = (
            select(Article.blog_id, func.count().label("count"))
            .where(Article.status == "published")
            .group_by(Article.blog_id)
            .subquery()
        )
        with db.session() as session:
            rows = session.execute(
                select(Blog.name, Blog.slug, Blog.language, func.coalesce(published.c.count, 0))
                .outerjoin(published, published.c.blog_id == Blog.id)
                .order_by(Blog.name)
            ).all()
        blogs = [{"name": n, "slug": s, "language": lang, "articles": c} for n, s, lang, c in rows]
        html = render_template("home.html", blogs=blogs, scopes=SCOPES, version=__version__, base_url=base_url())
        response = Response(html, mimetype="text/html")
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
        )
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
