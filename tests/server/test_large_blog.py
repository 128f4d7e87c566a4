"""A large blog, inserted in bulk into the store: a sync with all of them known answers nothing,
a sync after 1,000 changed answers exactly those, and listing and sync are answered from the
blog's index (no sort, no scan of other blogs). 100,000 articles on PostgreSQL, the engine the
Server page recommends for large blogs; 20,000 on SQLite, which runs the same queries (its
100,000-article figures come from tests/benchmarks/bench_large_sync.py)."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, text, update

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.serialize import content_hash
from tests.conftest import Owner, add_owner

pytestmark = [pytest.mark.slow, pytest.mark.postgres]  # SQL behaviour: both engines

#: Articles in the large blog, by engine.
ARTICLES = {"postgresql": 100_000, "sqlite": 20_000}
BATCH = 10_000


def bulk_insert(db: Database, blog_id: str, count: int) -> list[tuple[str, str]]:
    """`count` published articles in batches of `BATCH` rows per short transaction; (id, hash) each."""
    now = db.now()
    known: list[tuple[str, str]] = []
    for start in range(0, count, BATCH):
        rows: list[dict[str, Any]] = []
        for n in range(start, min(start + BATCH, count)):
            article_id = security.new_cuid()
            title, description, content = (
                f"Article {n}",
                f"About article {n}",
                f"# Article {n}\n\nBody of article {n}.\n",
            )
            rows.append(
                {
                    "id": article_id,
                    "blog_id": blog_id,
                    "slug": f"article-{n}",
                    "title": title,
                    "description": description,
                    "content": content,
                    "inline_media_keys": [],
                    "tags": ["bulk"],
                    "seo_keywords": [],
                    "status": "published",
                    "published_at": now - timedelta(seconds=n),
                    "updated_at": now,
                    "created_at": now,
                    "view_count": 0,
                }
            )
            known.append((article_id, content_hash(title, description, content, ["bulk"])))
        with db.session(write=True) as session:
            session.execute(insert(tables.Article), rows)
    return known


def sync(api: httpx.Client, known: list[tuple[str, str]]) -> dict[str, Any]:
    body = json.dumps({"knownArticles": [{"id": i, "contentHash": h} for i, h in known]}).encode()
    response = api.post(
        "/api/v1/sync",
        content=gzip.compress(body, 1),
        headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert response.status_code == 200, response.text[:300]
    answer: dict[str, Any] = response.json()
    return answer


def test_a_large_blog_syncs(api: httpx.Client, db: Database, owner: Owner) -> None:
    articles = ARTICLES["sqlite" if db.is_sqlite else "postgresql"]
    other = add_owner(db, "bob", "bob-blog")
    bulk_insert(db, other.blog_id, 1_000)  # another blog's articles are never read or reported
    known = bulk_insert(db, owner.blog_id, articles)

    unchanged = sync(api, known)
    assert (unchanged["new"], unchanged["updated"], unchanged["deleted"]) == ([], [], [])

    changed_ids = [article_id for article_id, _ in known[1 :: articles // 1_000]]  # 1,000 of them
    with db.session(write=True) as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id.in_(changed_ids))
            .values(content=tables.Article.content + "Edited.\n")
        )
    # The newest article left out (so new), an id the blog never had (so deleted): as many known.
    answer = sync(api, [*known[1:], ("c" + "0" * 24, "gone")])
    assert [a["id"] for a in answer["new"]] == [known[0][0]] and answer["deleted"] == ["c" + "0" * 24]
    updated = answer["updated"]
    assert len(updated) == 1_000
    assert {article["id"] for article in updated} == set(changed_ids)
    assert all(article["content"].endswith("Edited.\n") for article in updated)
    by_id = dict(known)
    assert all(article["contentHash"] != by_id[article["id"]] for article in updated)

    middle = articles // 200  # the page halfway through, pages of 100
    listing = api.get("/api/v1/articles", params={"page": middle, "limit": 100}).json()
    assert listing["pagination"] == {"page": middle, "limit": 100, "total": articles, "totalPages": articles // 100}
    first = (middle - 1) * 100
    assert [a["slug"] for a in listing["articles"]][:2] == [f"article-{first}", f"article-{first + 1}"]


def test_listing_and_sync_read_the_blog_index(db: Database, owner: Owner) -> None:
    """SQLite's plan for the listing query: the composite index, no sort of the rows."""
    from mkdocs_blogsvc.server.api import _newest_first, _published

    if not db.is_sqlite:
        pytest.skip("the plan is read with SQLite's EXPLAIN QUERY PLAN")

    query = _newest_first(_published(owner.blog_id)).limit(100).offset(200)
    with db.session() as session:
        compiled = query.compile(session.get_bind(), compile_kwargs={"literal_binds": True})
        plan = " | ".join(row[-1] for row in session.execute(text(f"EXPLAIN QUERY PLAN {compiled}")))
    assert "ix_articles_blog_listing" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
