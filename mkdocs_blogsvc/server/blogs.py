"""The hosted blog: `GET /blogs/<blog_slug>/` and `GET /blogs/<blog_slug>/<article_slug>`.

The spec says the service hosts blogs and that `viewCount` counts page views on that hosted
blog. These pages show a blog's published articles (drafts, unpublished articles and unknown
slugs get a 404 page) and every answered GET of an article page adds one view, in one atomic
`UPDATE ... SET view_count = view_count + 1`, so concurrent readers never lose a count. HEAD
requests and robots are not told apart: every GET counts (Flask answers HEAD by running the GET
view, so a HEAD counts too). `viewCount` is not part of `contentHash`, so views never make a
synchronised client download an article again.

What a page shows comes from `serialize.article_json`, the API's own serialisation: the same
content, media URLs and view count a client receives. The Markdown body is the blog owner's
own content; it is rendered with raw HTML escaped, and the pages' Content-Security-Policy runs
no script at all, so a body cannot act on the service's origin (where the sign-in pages live).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import markdown
from flask import Flask, Response, render_template
from sqlalchemy import Select, select, update

from mkdocs_blogsvc.models import parse_timestamp
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.serialize import article_json, base_url
from mkdocs_blogsvc.server.tables import Article, Blog

#: Images may come from anywhere the body names (the API serves the same links); nothing else loads.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; img-src *; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Pages change with every publication and every view: always ask the service again.
    "Cache-Control": "no-cache",
}

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def render_markdown(text: str) -> str:
    """The HTML of an article body: fenced code, tables and sane lists; raw HTML is shown as
    text, never passed through (Python-Markdown's documented recipe: drop its two HTML handlers)."""
    md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists"], output_format="html")
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return str(md.convert(text))


def register(app: Flask, db: Database) -> None:
    """Attach the hosted blog's pages to the app."""

    @app.get("/blogs/<blog_slug>/")
    def blog_index(blog_slug: str) -> Response:
        with db.session() as session:
            blog = session.scalar(select(Blog).where(Blog.slug == blog_slug))
            articles = session.scalars(_newest_first(_published(blog_slug))).all() if blog else []
        if blog is None:
            return _not_found()
        base = base_url()
        return _page("blog_index.html", blog=blog, articles=[_shown(article, base) for article in articles])

    @app.get("/blogs/<blog_slug>/<article_slug>")
    def blog_article(blog_slug: str, article_slug: str) -> Response:
        with db.session() as session:
            article = session.scalar(_published(blog_slug).where(Article.slug == article_slug))
            blog = session.get_one(Blog, article.blog_id) if article else None
        if article is None or blog is None:
            return _not_found()
        shown = _shown(article, base_url())
        body = render_markdown(shown["content"])
        with db.session(write=True) as session:
            session.execute(update(Article).where(Article.id == article.id).values(view_count=Article.view_count + 1))
            shown["viewCount"] = session.scalar(select(Article.view_count).where(Article.id == article.id))
        return _page("blog_article.html", blog=blog, article=shown, body=body)


def _published(blog_slug: str) -> Select[Article]:
    """The published articles of the blog named `blog_slug`: the only rows these pages show."""
    return (
        select(Article)
        .join(Blog, Blog.id == Article.blog_id)
        .where(Blog.slug == blog_slug, Article.status == "published")
    )


def _newest_first(query: Select[Article]) -> Select[Article]:
    """The API's order: newest publication first, equal times in descending id order."""
    return query.order_by(Article.published_at.desc(), Article.id.desc())


def _shown(article: Article, base: str) -> dict[str, Any]:
    """The API's Article object plus the dates a reader sees."""
    data = article_json(article, base)
    data["publishedDate"] = _human_date(parse_timestamp(data["publishedAt"]))
    data["updatedDate"] = _human_date(parse_timestamp(data["updatedAt"]))
    return data


def _human_date(moment: datetime) -> str:
    """`March 4, 2025` (UTC), whatever the process locale; `<time datetime>` carries the exact moment."""
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}"


def _page(template: str, *, status: int = 200, **context: Any) -> Response:
    response = Response(render_template(template, **context), status=status, mimetype="text/html")
    response.headers.update(PAGE_HEADERS)
    return response


def _not_found() -> Response:
    return _page("blog_not_found.html", status=404)
