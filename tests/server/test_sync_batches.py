"""The sync's second pass loads articles by primary key (`load_published`), a batch of ids
at a time; a first sync reads them whole in one pass; the listing reads a page in one
statement. Across batch boundaries the answers keep the spec's order (newest
publication first, equal times by descending id), hold every published article of the blog
once, and never a draft, an unpublished article or another blog's."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, update

from mkdocs_blogsvc.server import security, sync_answer, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_owner

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres

#: Over two batches of the sync's second pass (`sync_answer.BATCH`, 500), and 12 listing pages.
PUBLISHED = 1_150


def insert_articles(db: Database, owner: Owner, other: Owner) -> list[str]:
    """`PUBLISHED` published articles, three to a publication time, with drafts, unpublished
    articles and another blog's articles in between; the published ids in the spec's order."""
    now = db.now()
    rows: list[dict[str, Any]] = []
    expected: list[tuple[Any, str]] = []
    for n in range(PUBLISHED):
        published_at = now - timedelta(seconds=n // 3)  # equal times: the id decides
        for blog_id, status in (
            (owner.blog_id, "published"),
            (other.blog_id, "published"),
            *([(owner.blog_id, "draft"), (owner.blog_id, "unpublished")] if n % 50 == 0 else []),
        ):
            article_id = security.new_cuid()
            rows.append(
                {
                    "id": article_id,
                    "blog_id": blog_id,
                    "slug": f"{status}-{n}",
                    "title": f"Article {n}",
                    "description": None,
                    "content": f"Body {n}.\n",
                    "inline_media_keys": [],
                    "tags": ["t"],
                    "seo_keywords": [],
                    "status": status,
                    "published_at": published_at if status == "published" else None,
                    "updated_at": now,
                    "created_at": now,
                    "view_count": 0,
                }
            )
            if blog_id == owner.blog_id and status == "published":
                expected.append((published_at, article_id))
    with db.session(write=True) as session:
        session.execute(insert(tables.Article), rows)
    return [article_id for _, article_id in sorted(expected, reverse=True)]


def sync(api: httpx.Client, known: list[dict[str, str]]) -> dict[str, Any]:
    response = api.post("/api/v1/sync", json={"knownArticles": known})
    assert response.status_code == 200, response.text[:300]
    answer: dict[str, Any] = response.json()
    return answer


def test_sync_and_listing_keep_order_across_batches(api: httpx.Client, db: Database, owner: Owner) -> None:
    expected = insert_articles(db, owner, add_owner(db, "bob", "bob-blog"))

    first = sync(api, [])
    assert [article["id"] for article in first["new"]] == expected
    assert first["updated"] == [] and first["deleted"] == []

    pages: list[dict[str, Any]] = []
    for page in range(1, 13):
        listing = api.get("/api/v1/articles", params={"page": page, "limit": 100}).json()
        assert listing["pagination"] == {"page": page, "limit": 100, "total": PUBLISHED, "totalPages": 12}
        assert len(listing["articles"]) == (50 if page == 12 else 100)
        pages += listing["articles"]
    assert pages == first["new"]  # the same articles, whole, in the same order
    assert api.get("/api/v1/articles", params={"page": 13, "limit": 100}).json()["articles"] == []
    odd = [api.get("/api/v1/articles", params={"page": page, "limit": 97}).json()["articles"] for page in (1, 6, 12)]
    assert [[a["id"] for a in articles] for articles in odd] == [expected[0:97], expected[485:582], expected[1067:1150]]

    changed = expected[3::7]  # 164 of them, on both sides of the batch boundaries
    with db.session(write=True) as session:
        session.execute(update(tables.Article).where(tables.Article.id.in_(changed)).values(content="Edited.\n"))
    known = [{"id": article["id"], "contentHash": article["contentHash"]} for article in first["new"][1:]]
    answer = sync(api, [*known, {"id": "c" + "0" * 24, "contentHash": "gone"}])
    assert [article["id"] for article in answer["new"]] == expected[:1]
    assert [article["id"] for article in answer["updated"]] == [
        i for i in expected if i in set(changed) and i != expected[0]
    ]
    assert all(article["content"] == "Edited.\n" for article in answer["updated"])
    assert answer["deleted"] == ["c" + "0" * 24]


def test_load_published_keeps_the_given_order_and_only_the_blogs_published(db: Database, owner: Owner) -> None:
    other = add_owner(db, "bob", "bob-blog")
    now = db.now()
    ids = {name: security.new_cuid() for name in ("a", "draft", "pulled", "theirs", "b", "c")}
    rows = [
        {
            "id": article_id,
            "blog_id": other.blog_id if name == "theirs" else owner.blog_id,
            "slug": name,
            "title": name,
            "description": None,
            "content": "",
            "inline_media_keys": [],
            "tags": [],
            "seo_keywords": [],
            "status": {"draft": "draft", "pulled": "unpublished"}.get(name, "published"),
            "published_at": now,
            "updated_at": now,
            "created_at": now,
            "view_count": 0,
        }
        for name, article_id in ids.items()
    ]
    with db.session(write=True) as session:
        session.execute(insert(tables.Article), rows)
    asked = [ids["c"], ids["draft"], "c" + "0" * 24, ids["a"], ids["theirs"], ids["pulled"], ids["b"]]
    with db.session() as session:
        loaded = sync_answer.load_published(session, owner.blog_id, asked)
        assert [article.id for article in loaded] == [ids["c"], ids["a"], ids["b"]]
        assert sync_answer.load_published(session, owner.blog_id, []) == []


def test_sync_leaves_out_an_article_unpublished_during_its_second_pass(
    api: httpx.Client,
    db: Database,
    owner: Owner,
    monkeypatch: Any,
) -> None:
    """PostgreSQL (read committed) sees the change: the article is not sent. SQLite reads one
    snapshot for the whole sync: it was published in that snapshot, so it is sent as it was.
    (One article is known: a first sync has no second pass, it reads each article once.)"""
    expected = insert_articles(db, owner, add_owner(db, "bob", "bob-blog"))
    known = sync(api, [])["new"][0]
    pulled = expected[700]
    load = sync_answer.load_published

    def unpublish_first(session: Any, blog_id: str, ids: list[str]) -> list[Any]:
        if pulled in ids:
            with db.session(write=True) as writer:
                writer.execute(update(tables.Article).where(tables.Article.id == pulled).values(status="unpublished"))
        return load(session, blog_id, ids)

    monkeypatch.setattr(sync_answer, "load_published", unpublish_first)
    sent = [article["id"] for article in sync(api, [{"id": known["id"], "contentHash": known["contentHash"]}])["new"]]
    assert sent == [i for i in expected[1:] if db.is_sqlite or i != pulled]
