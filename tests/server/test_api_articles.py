"""GET /api/v1/articles and GET /api/v1/articles/{idOrSlug}: visibility, order, paging, fields."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.serialize import article_json, content_hash
from tests.conftest import IN_PROCESS_URL, Owner, add_article, add_owner, issue_access_token

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def set_article(db: Database, article_id: str, **values: Any) -> None:
    with db.session(write=True) as session:
        session.execute(update(tables.Article).where(tables.Article.id == article_id).values(**values))


def ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [article["id"] for article in response.json()["articles"]]


def test_lists_only_published_articles_newest_first(api: httpx.Client, db: Database, owner: Owner) -> None:
    old = add_article(db, owner.blog_id, "Old", minutes_ago=30)
    new = add_article(db, owner.blog_id, "New", minutes_ago=1)
    middle = add_article(db, owner.blog_id, "Middle", minutes_ago=10)
    add_article(db, owner.blog_id, "Draft", status="draft")
    add_article(db, owner.blog_id, "Withdrawn", status="unpublished", minutes_ago=5)
    response = api.get("/api/v1/articles")
    assert ids(response) == [new, middle, old]
    assert response.json()["pagination"] == {"page": 1, "limit": 20, "total": 3, "totalPages": 1}
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"


def test_equal_publication_times_are_ordered_by_descending_id(api: httpx.Client, db: Database, owner: Owner) -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    created = [add_article(db, owner.blog_id, f"Tie {n}") for n in range(7)]
    for article_id in created:
        set_article(db, article_id, published_at=moment)
    pages = [ids(api.get("/api/v1/articles", params={"page": page, "limit": 3})) for page in (1, 2, 3)]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [article_id for page in pages for article_id in page] == sorted(created, reverse=True)
    assert pages[0] == ids(api.get("/api/v1/articles", params={"page": 1, "limit": 3}))  # stable on repeat


def test_pagination_defaults_and_pages(api: httpx.Client, db: Database, owner: Owner) -> None:
    created = [add_article(db, owner.blog_id, f"Post {n}", minutes_ago=n) for n in range(25)]
    first = api.get("/api/v1/articles")
    assert ids(first) == created[:20]
    assert first.json()["pagination"] == {"page": 1, "limit": 20, "total": 25, "totalPages": 2}
    second = api.get("/api/v1/articles", params={"page": 2})
    assert ids(second) == created[20:]
    assert second.json()["pagination"] == {"page": 2, "limit": 20, "total": 25, "totalPages": 2}
    small = api.get("/api/v1/articles", params={"page": 3, "limit": 7})
    assert ids(small) == created[14:21]
    assert small.json()["pagination"] == {"page": 3, "limit": 7, "total": 25, "totalPages": 4}
    assert ids(api.get("/api/v1/articles", params={"limit": 100})) == created


@pytest.mark.parametrize("page", ["3", "1000", str(10**30)])
def test_page_past_the_end_is_empty_with_true_totals(api: httpx.Client, db: Database, owner: Owner, page: str) -> None:
    for n in range(5):
        add_article(db, owner.blog_id, f"Post {n}")
    response = api.get("/api/v1/articles", params={"page": page, "limit": 3})
    assert ids(response) == []
    assert response.json()["pagination"] == {"page": int(page), "limit": 3, "total": 5, "totalPages": 2}


def test_empty_blog_has_zero_pages(api: httpx.Client) -> None:
    response = api.get("/api/v1/articles")
    assert response.json() == {"articles": [], "pagination": {"page": 1, "limit": 20, "total": 0, "totalPages": 0}}


@pytest.mark.parametrize(
    ("params", "description"),
    [
        ({"limit": "101"}, "limit must be an integer from 1 to 100"),
        ({"limit": "0"}, "limit must be an integer from 1 to 100"),
        ({"limit": "-5"}, "limit must be an integer from 1 to 100"),
        ({"limit": "ten"}, "limit must be an integer from 1 to 100"),
        ({"limit": "2.5"}, "limit must be an integer from 1 to 100"),
        ({"limit": ""}, "limit must be an integer from 1 to 100"),
        ({"page": "0"}, "page must be an integer of at least 1"),
        ({"page": "-1"}, "page must be an integer of at least 1"),
        ({"page": "first"}, "page must be an integer of at least 1"),
        ({"page": " 2"}, "page must be an integer of at least 1"),
        ({"page": "\u0662"}, "page must be an integer of at least 1"),  # ARABIC-INDIC DIGIT TWO: int() takes it
        ({"page": "9" * 5000}, "page must be an integer of at least 1"),
    ],
)
def test_bad_paging_parameters_are_invalid_requests(
    api: httpx.Client, params: dict[str, str], description: str
) -> None:
    response = api.get("/api/v1/articles", params=params)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": description}
    assert response.headers["Cache-Control"] == "no-store"


def test_article_has_every_field_of_the_spec(api: httpx.Client, db: Database, owner: Owner) -> None:
    content = f"# Cover\n\n![a]({tables.MEDIA_PLACEHOLDER}abc.png) and ![b]({tables.MEDIA_PLACEHOLDER}def.jpg)\n"
    article_id = add_article(
        db,
        owner.blog_id,
        "Full Article",
        content=content,
        description="Summary",
        tags=["python", "mkdocs"],
        seo_keywords=["blog", "sync"],
        seo_score=7.5,
        schema_org_json={"@type": "BlogPosting", "headline": "Full"},
        cover_media_key="cover.png",
        inline_media_keys=["abc.png", "def.jpg"],
        view_count=42,
    )
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    set_article(db, article_id, published_at=moment, updated_at=moment.replace(day=3))
    article = api.get(f"/api/v1/articles/{article_id}").json()["article"]
    served = f"# Cover\n\n![a]({IN_PROCESS_URL}/media/abc.png) and ![b]({IN_PROCESS_URL}/media/def.jpg)\n"
    assert article == {
        "id": article_id,
        "slug": "full-article",
        "title": "Full Article",
        "description": "Summary",
        "content": served,
        "coverImageUrl": f"{IN_PROCESS_URL}/media/cover.png",
        "inlineImageUrls": [f"{IN_PROCESS_URL}/media/abc.png", f"{IN_PROCESS_URL}/media/def.jpg"],
        "tags": ["python", "mkdocs"],
        "seoKeywords": ["blog", "sync"],
        "seoScore": 7.5,
        "schemaOrgJson": {"@type": "BlogPosting", "headline": "Full"},
        "publishedAt": "2026-01-02T03:04:05.678Z",
        "updatedAt": "2026-01-03T03:04:05.678Z",
        "viewCount": 42,
        "contentHash": content_hash("Full Article", "Summary", served, ["python", "mkdocs"]),
    }
    assert article["contentHash"] != content_hash("Full Article", "Summary", content, ["python", "mkdocs"])
    assert api.get("/api/v1/articles").json()["articles"] == [article]


@pytest.mark.parametrize(
    ("title", "description", "content", "tags"),
    [
        ("Plain", "About", "Body.", ["a", "b"]),
        ('Quotes " and \\ backslash', None, "Tabs\tnew\nlines\r\x00\x1f\x7f", []),
        ("Ünïcödé ✓ 🎉", "", "Line\u2028separator\u2029 and </script>", ["ß", "日本語", ""]),
    ],
)
def test_content_hash_is_the_documented_rule(
    title: str, description: str | None, content: str, tags: list[str]
) -> None:
    """SHA-256 of the compact JSON array as json.dumps writes it (service-behaviour.md): what a
    client recomputes, whatever characters the fields hold."""
    payload = json.dumps([title, description, content, tags], ensure_ascii=False, separators=(",", ":"))
    assert content_hash(title, description, content, tags) == hashlib.sha256(payload.encode("utf-8")).hexdigest()


def test_nullable_fields_are_null(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Bare", description=None)
    article = api.get(f"/api/v1/articles/{article_id}").json()["article"]
    assert article["description"] is None
    assert article["coverImageUrl"] is None
    assert article["seoScore"] is None
    assert article["schemaOrgJson"] is None
    assert article["inlineImageUrls"] == [] and article["tags"] == [] and article["seoKeywords"] == []
    assert article["viewCount"] == 0
    assert TIMESTAMP.fullmatch(article["publishedAt"]) and TIMESTAMP.fullmatch(article["updatedAt"])
    assert article["contentHash"] == content_hash("Bare", None, article["content"], [])


def test_media_urls_follow_the_host_that_answers(db: Database, owner: Owner, app: Any) -> None:
    article_id = add_article(
        db, owner.blog_id, "Hosted", content=f"![x]({tables.MEDIA_PLACEHOLDER}k.png)", cover_media_key="c.png"
    )
    token = issue_access_token(db, owner)
    transport = httpx.WSGITransport(app=app)
    with httpx.Client(transport=transport, base_url="https://blog.example:8443") as client:
        article = client.get(f"/api/v1/articles/{article_id}", headers={"Authorization": f"Bearer {token}"}).json()[
            "article"
        ]
    assert article["content"] == "![x](https://blog.example:8443/media/k.png)"
    assert article["coverImageUrl"] == "https://blog.example:8443/media/c.png"


def test_article_json_is_what_the_api_serves(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Same", cover_media_key="c.png", tags=["t"])
    with db.session() as session:
        row = session.get_one(tables.Article, article_id)
    assert api.get(f"/api/v1/articles/{article_id}").json()["article"] == article_json(row, IN_PROCESS_URL)


def test_get_by_id_or_slug(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Hello World")
    by_id = api.get(f"/api/v1/articles/{article_id}")
    by_slug = api.get("/api/v1/articles/hello-world")
    assert by_id.status_code == by_slug.status_code == 200
    assert by_id.json() == by_slug.json()
    assert list(by_id.json()) == ["article"]
    assert by_id.headers["Cache-Control"] == "no-store"


def test_id_wins_over_a_slug_that_equals_another_id(api: httpx.Client, db: Database, owner: Owner) -> None:
    target = add_article(db, owner.blog_id, "Target")
    add_article(db, owner.blog_id, "Impostor", slug=target)
    assert api.get(f"/api/v1/articles/{target}").json()["article"]["title"] == "Target"


@pytest.mark.parametrize("status", ["draft", "unpublished"])
def test_unpublished_articles_are_not_found(api: httpx.Client, db: Database, owner: Owner, status: str) -> None:
    article_id = add_article(db, owner.blog_id, "Hidden Thing", status=status)
    for key in (article_id, "hidden-thing"):
        response = api.get(f"/api/v1/articles/{key}")
        assert response.status_code == 404
        assert response.json() == {"error": "not_found", "error_description": "Article not found"}
        assert response.headers["Cache-Control"] == "no-store"


def test_other_blogs_articles_are_not_found(api: httpx.Client, db: Database) -> None:
    other = add_owner(db, "bob", "bob-blog")
    article_id = add_article(db, other.blog_id, "Bobs Post")
    assert api.get(f"/api/v1/articles/{article_id}").status_code == 404
    assert api.get("/api/v1/articles/bobs-post").status_code == 404
    assert api.get("/api/v1/articles/no-such-article").json()["error"] == "not_found"


def test_repeated_and_unknown_parameters(api: httpx.Client, db: Database, owner: Owner) -> None:
    for n in range(3):
        add_article(db, owner.blog_id, f"Post {n}")
    response = api.get("/api/v1/articles?limit=1&limit=500&sort=oldest")
    assert response.status_code == 200
    assert response.json()["pagination"]["limit"] == 1
