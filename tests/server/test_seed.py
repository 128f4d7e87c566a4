"""The sample blog: what it contains, what the API shows of it, and a second seed refused."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from mkdocs_blogsvc.server import security, seed, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ContentError
from tests.conftest import Owner, issue_access_token

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


@pytest.fixture
def seeded(db: Database) -> dict[str, Any]:
    return seed.seed(db)


@pytest.fixture
def api(db: Database, seeded: dict[str, Any], http: httpx.Client) -> httpx.Client:
    with db.session() as session:
        user = session.query(tables.User).filter_by(username=seeded["user"]).one()
    owner = Owner(user.id, seeded["user"], seeded["password"], seeded["blog"]["id"], seeded["blog"]["slug"])
    http.headers["Authorization"] = f"Bearer {issue_access_token(db, owner)}"
    return http


def published(api: httpx.Client) -> list[dict[str, Any]]:
    return list(api.get("/api/v1/articles", params={"limit": 100}).json()["articles"])


def test_seed_reports_how_to_use_it(db: Database, seeded: dict[str, Any]) -> None:
    assert seeded["user"] == "demo" and seeded["password"] == "demo-password"
    assert seeded["blog"]["slug"] == "demo-blog" and seeded["blog"]["name"] == "Field Notes"
    assert seeded["articles"] >= 12
    with db.session() as session:
        user = session.query(tables.User).filter_by(username="demo").one()
        assert security.verify_password("demo-password", user.password_hash)
        blog = session.get(tables.Blog, seeded["blog"]["id"])
        assert blog is not None and blog.language == "en" and blog.owner_id == user.id and blog.description
        client = session.query(tables.Client).filter_by(client_id=seeded["client_id"]).one()
        assert client.is_public and client.client_secret_hash is None and client.name == "MkDocs Blog Plugin"
        assert "http://127.0.0.1/callback" in client.redirect_uris


def test_published_articles_are_complete_and_realistic(seeded: dict[str, Any], api: httpx.Client) -> None:
    articles = published(api)
    assert len(articles) == seeded["articles"] >= 12
    dates = [a["publishedAt"] for a in articles]
    assert dates == sorted(dates, reverse=True) and len(set(dates)) == len(dates)
    assert len({a["coverImageUrl"] for a in articles}) == len(articles)  # a distinct cover each
    assert sum(bool(a["inlineImageUrls"]) for a in articles) >= 6
    assert [a["description"] for a in articles].count(None) == 1
    assert [a["seoScore"] for a in articles].count(None) == 1
    for a in articles:
        assert a["tags"] and a["seoKeywords"] and 250 <= len(a["content"].split()) <= 900
        assert "## " in a["content"] and "](http" in a["content"]  # headings and a link
        assert a["schemaOrgJson"]["@type"] == "BlogPosting" and a["schemaOrgJson"]["headline"] == a["title"]
        assert a["updatedAt"] >= a["publishedAt"]
        assert a["seoScore"] is None or 0 <= a["seoScore"] <= 10
        for url in a["inlineImageUrls"]:
            assert f"]({url})" in a["content"]  # shown in the body, at the absolute URL
        assert "inline:" not in a["content"] and tables.MEDIA_PLACEHOLDER not in a["content"]
    bodies = "\n".join(a["content"] for a in articles)
    assert "```" in bodies and "| --- |" in bodies


def test_every_image_of_the_seed_is_served(api: httpx.Client) -> None:
    urls = {url for a in published(api) for url in [a["coverImageUrl"], *a["inlineImageUrls"]]}
    for url in urls:
        response = api.get(url.removeprefix("http://testserver"))
        assert response.status_code == 200 and response.headers["Content-Type"] == "image/png"


def test_dates_are_spread_over_past_months(db: Database, api: httpx.Client) -> None:
    articles = published(api)
    now = db.now().strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert all(a["publishedAt"] < now for a in articles)
    oldest = (db.now() - timedelta(days=90)).strftime("%Y-%m-%d")
    assert articles[-1]["publishedAt"] < oldest


def test_the_draft_and_the_unpublished_article_never_appear(db: Database, api: httpx.Client) -> None:
    with db.session() as session:
        hidden = {a.id: a.slug for a in session.query(tables.Article).filter(tables.Article.status != "published")}
    assert len(hidden) == 2
    assert not set(hidden) & {a["id"] for a in published(api)}
    for article_id, slug in hidden.items():
        assert api.get(f"/api/v1/articles/{article_id}").status_code == 404
        assert api.get(f"/api/v1/articles/{slug}").status_code == 404
    sync = api.post("/api/v1/sync", json={"knownArticles": []}).json()
    assert not set(hidden) & {a["id"] for a in sync["new"]}


def test_seeding_twice_is_refused_and_changes_nothing(db: Database, seeded: dict[str, Any]) -> None:
    with db.session() as session:
        before = session.query(tables.Article).count()
    with pytest.raises(ContentError, match="already holds the sample blog"):
        seed.seed(db)
    with db.session() as session:
        assert session.query(tables.Article).count() == before
        assert session.query(tables.Client).count() == 1


def test_base_url_hint_puts_the_cover_in_schema_org(db: Database) -> None:
    seed.seed(db, base_url_hint="http://127.0.0.1:9000/")
    with db.session() as session:
        rows = session.query(tables.Article).filter_by(status="published").all()
    assert all(
        row.schema_org_json and row.schema_org_json["image"] == f"http://127.0.0.1:9000/media/{row.cover_media_key}"
        for row in rows
    )


def test_without_the_hint_schema_org_names_no_image(db: Database, seeded: dict[str, Any]) -> None:
    with db.session() as session:
        rows = session.query(tables.Article).all()
    assert all(row.schema_org_json and "image" not in row.schema_org_json for row in rows)


# --- generate-articles ----------------------------------------------------------------------


def every_article(http: httpx.Client) -> list[dict[str, Any]]:
    """The whole listing, page by page, as a client following the spec reads it."""
    articles: list[dict[str, Any]] = []
    page, pages = 1, 1
    while page <= pages:
        answer = http.get("/api/v1/articles", params={"limit": 100, "page": page}).json()
        pages = answer["pagination"]["totalPages"]
        articles += answer["articles"]
        page += 1
    return articles


def test_generated_articles_are_published_newest_first_and_repeatable(
    db: Database, owner: Owner, http: httpx.Client
) -> None:
    report = seed.generate_articles(db, owner.blog_slug, 250, words=60, covers=True)
    assert report["generated"] == 250 and report["published"] == 250 and report["covers"] is True
    http.headers["Authorization"] = f"Bearer {issue_access_token(db, owner)}"
    articles = every_article(http)
    assert len(articles) == 250 and len({a["slug"] for a in articles}) == 250
    assert [a["slug"] for a in articles[:2]] == ["generated-article-1", "generated-article-2"]
    dates = [a["publishedAt"] for a in articles]
    assert dates == sorted(dates, reverse=True) and len(set(dates)) == 250
    assert report["newest"] == dates[0] and report["oldest"] == dates[-1]
    assert all(58 <= len(a["content"].split()) <= 90 for a in articles)  # 60 words, a title and headings
    assert all(a["tags"] and a["seoKeywords"] and a["description"] and a["coverImageUrl"] for a in articles)
    assert len({a["coverImageUrl"] for a in articles}) == 14
    assert http.get(articles[0]["coverImageUrl"]).headers["Content-Type"] == "image/png"
    with db.session() as session:  # the same number gives the same text, whatever the run
        assert session.query(tables.Media).count() == 14
    again = seed._generated_row(owner.blog_id, 1, 60, db.now(), set())
    assert again["content"] == articles[0]["content"] and again["title"] == articles[0]["title"]


def test_generating_again_numbers_on_and_keeps_slugs_unique(db: Database, owner: Owner) -> None:
    seed.generate_articles(db, owner.blog_slug, 3, words=5)
    report = seed.generate_articles(db, owner.blog_slug, 2, words=5)
    assert report["published"] == 5 and report["covers"] is False
    with db.session() as session:
        slugs = set(session.scalars(select(tables.Article.slug).where(tables.Article.blog_id == owner.blog_id)))
        assert slugs == {f"generated-article-{n}" for n in range(1, 6)}
        assert session.query(tables.Article).filter(tables.Article.cover_media_key.isnot(None)).count() == 0


@pytest.mark.parametrize(
    ("blog", "count", "words", "message"),
    [
        ("nope", 1, 10, "unknown blog 'nope'"),
        (None, 0, 10, "count must be from 1 to 1,000,000, not 0"),
        (None, 5, 0, "words must be from 1 to 100,000, not 0"),
    ],
)
def test_generate_refusals(db: Database, owner: Owner, blog: str | None, count: int, words: int, message: str) -> None:
    with pytest.raises(ContentError, match=re.escape(message)):
        seed.generate_articles(db, blog or owner.blog_slug, count, words=words)
    with db.session() as session:
        assert session.query(tables.Article).count() == 0
