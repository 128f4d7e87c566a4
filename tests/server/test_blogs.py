"""The hosted blog: the listing and article pages, and the view count they drive."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask

from mkdocs_blogsvc.server import media, seed, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, Owner, add_article, add_owner, issue_access_token

HOSTILE = "</title><script>alert(1)</script>"


@pytest.fixture
def api(app: Flask, db: Database, owner: Owner) -> Iterator[httpx.Client]:
    """A client of the data API on the same app, with a token for `owner`'s blog."""
    token = issue_access_token(db, owner)
    with httpx.Client(
        transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client


def api_article(api: httpx.Client, article_id: str) -> dict[str, Any]:
    response = api.get(f"/api/v1/articles/{article_id}")
    assert response.status_code == 200
    article: dict[str, Any] = response.json()["article"]
    return article


def stored_views(db: Database, article_id: str) -> int:
    with db.session() as session:
        return session.get_one(tables.Article, article_id).view_count


def store_png(db: Database, blog_id: str, name: str) -> str:
    data = (resources.files("mkdocs_blogsvc.server") / "sample_media" / name).read_bytes()
    with db.session(write=True) as session:
        return media.store_image(session, blog_id, data)


def assert_html_page(response: httpx.Response, status: int = 200) -> None:
    assert response.status_code == status
    assert response.headers["Content-Type"].startswith("text/html")
    assert "script-src" not in response.headers["Content-Security-Policy"]  # default-src 'none': no script runs
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_listing_shows_only_published_articles_newest_first(db: Database, http: httpx.Client, owner: Owner) -> None:
    add_article(db, owner.blog_id, "Older post", minutes_ago=60, description="The older one")
    add_article(db, owner.blog_id, "Newer post", minutes_ago=5, tags=["news"])
    add_article(db, owner.blog_id, "Secret draft", status="draft")
    add_article(db, owner.blog_id, "Withdrawn post", status="unpublished")
    other = add_owner(db, username="bob", blog_slug="bob-blog")
    add_article(db, other.blog_id, "Bob's post")

    page = http.get("/blogs/alice-blog/")

    assert_html_page(page)
    text = page.text
    assert "Alice&#39;s Blog" in text and "The older one" in text and "<li>news</li>" in text
    assert text.index('href="/blogs/alice-blog/newer-post"') < text.index('href="/blogs/alice-blog/older-post"')
    for hidden in ("Secret draft", "secret-draft", "Withdrawn", "withdrawn-post", "Bob"):
        assert hidden not in text
    assert "2 published articles" in text


def test_listing_of_an_unknown_blog_is_a_404_page(http: httpx.Client, owner: Owner) -> None:
    assert_html_page(http.get("/blogs/nobody/"), 404)
    assert http.get("/blogs/alice-blog").status_code == 308  # Flask's redirect to the trailing slash


def test_article_page_shows_what_the_api_serves_and_escapes_the_metadata(
    db: Database, http: httpx.Client, api: httpx.Client, owner: Owner
) -> None:
    cover = store_png(db, owner.blog_id, "cover-02.png")
    inline = store_png(db, owner.blog_id, "inline-pipeline.png")
    body = (
        "Intro with **bold** text.\n\n## A heading\n\n"
        f"![The pipeline]({tables.MEDIA_PLACEHOLDER}{inline})\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n"
        "```python\nprint('<hi>')\n```\n\n"
        "<script>alert(2)</script>\n"
    )
    article_id = add_article(
        db,
        owner.blog_id,
        HOSTILE,
        slug="hostile",
        description="<b>bold claim</b>",
        tags=["<i>tag</i>"],
        content=body,
        cover_media_key=cover,
        inline_media_keys=[inline],
    )
    served = api_article(api, article_id)

    page = http.get("/blogs/alice-blog/hostile")

    assert_html_page(page)
    text = page.text
    assert "<script>" not in text and "<b>" not in text and "<i>" not in text
    assert "<title>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; · Alice&#39;s Blog</title>" in text
    assert "<h1>&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in text
    assert "&lt;b&gt;bold claim&lt;/b&gt;" in text and "<li>&lt;i&gt;tag&lt;/i&gt;</li>" in text
    # The body is rendered Markdown; raw HTML in it is shown as text.
    assert "<strong>bold</strong>" in text and "<h2>A heading</h2>" in text and "<td>1</td>" in text
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in text
    assert "print(&#x27;&lt;hi&gt;&#x27;)" in text or "print('&lt;hi&gt;')" in text
    # Images at the API's own URLs.
    assert served["coverImageUrl"] == f"{IN_PROCESS_URL}/media/{cover}"
    assert f'src="{served["coverImageUrl"]}"' in text
    assert f'<img alt="The pipeline" src="{served["inlineImageUrls"][0]}"' in text
    assert f'datetime="{served["publishedAt"]}"' in text
    assert http.get(served["coverImageUrl"].removeprefix(IN_PROCESS_URL)).status_code == 200


def test_every_get_of_an_article_page_counts_one_view(
    db: Database, http: httpx.Client, api: httpx.Client, owner: Owner
) -> None:
    article_id = add_article(db, owner.blog_id, "Counted")
    assert api_article(api, article_id)["viewCount"] == 0
    for expected in (1, 2, 3):
        page = http.get("/blogs/alice-blog/counted")
        assert page.status_code == 200 and f"{expected} view{'' if expected == 1 else 's'}<" in page.text
        assert api_article(api, article_id)["viewCount"] == expected
    # Neither the listing, the API nor a 404 counts.
    http.get("/blogs/alice-blog/")
    http.get("/blogs/alice-blog/counted-not")
    api.get("/api/v1/articles")
    assert api_article(api, article_id)["viewCount"] == 3
    assert "3 views" in http.get("/blogs/alice-blog/").text


def test_views_do_not_change_the_content_hash_so_sync_answers_nothing(
    db: Database, http: httpx.Client, api: httpx.Client, owner: Owner
) -> None:
    first = add_article(db, owner.blog_id, "First")
    second = add_article(db, owner.blog_id, "Second")
    before = {a["id"]: a["contentHash"] for a in api.post("/api/v1/sync", json={"knownArticles": []}).json()["new"]}
    assert set(before) == {first, second}
    unviewed = api_article(api, first)

    for _ in range(3):
        assert http.get("/blogs/alice-blog/first").status_code == 200

    known = [{"id": article_id, "contentHash": digest} for article_id, digest in before.items()]
    answer = api.post("/api/v1/sync", json={"knownArticles": known}).json()
    assert (answer["new"], answer["updated"], answer["deleted"]) == ([], [], [])
    viewed = api_article(api, first)
    assert viewed["viewCount"] == 3 and viewed["contentHash"] == before[first]
    assert {**viewed, "viewCount": 0} == unviewed  # nothing else changed, updatedAt included


@pytest.mark.parametrize(
    "path",
    [
        "/blogs/alice-blog/secret-draft",
        "/blogs/alice-blog/withdrawn",
        "/blogs/alice-blog/no-such-article",
        "/blogs/alice-blog/bobs-post",  # another blog's article under this blog's address
        "/blogs/no-such-blog/bobs-post",
    ],
)
def test_hidden_and_unknown_articles_are_a_404_page_and_count_nothing(
    db: Database, http: httpx.Client, owner: Owner, path: str
) -> None:
    ids = [
        add_article(db, owner.blog_id, "Secret draft", status="draft"),
        add_article(db, owner.blog_id, "Withdrawn", status="unpublished"),
        add_article(db, add_owner(db, username="bob", blog_slug="bob-blog").blog_id, "Bobs post"),
    ]
    page = http.get(path)
    assert_html_page(page, 404)
    assert "Page not found" in page.text and "Secret" not in page.text and "Withdrawn" not in page.text
    assert [stored_views(db, article_id) for article_id in ids] == [0, 0, 0]


@pytest.mark.postgres  # an atomic UPDATE under contention: SQL behaviour
def test_concurrent_views_are_all_counted(app: Flask, db: Database, owner: Owner) -> None:
    """Threads read the page at once on the file database: the atomic UPDATE loses no view."""
    article_id = add_article(db, owner.blog_id, "Popular")
    threads, per_thread = 8, 5
    start = threading.Barrier(threads)
    failures: list[int] = []

    def reader() -> None:
        with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as client:
            start.wait()
            for _ in range(per_thread):
                status = client.get("/blogs/alice-blog/popular").status_code
                if status != 200:
                    failures.append(status)

    workers = [threading.Thread(target=reader) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert failures == []
    assert stored_views(db, article_id) == threads * per_thread


def test_the_sample_blog_looks_read_and_hides_its_drafts(db: Database, http: httpx.Client) -> None:
    seed.seed(db)
    with db.session() as session:
        rows = session.query(tables.Article).all()
    published = sorted((a for a in rows if a.status == "published"), key=lambda a: a.published_at or a.created_at)
    views = [a.view_count for a in published]
    assert views == sorted(views, reverse=True) and len(set(views)) == len(views) and views[-1] > 0  # older: more
    assert [a.view_count for a in rows if a.status != "published"] == [0, 0]
    listing = http.get("/blogs/demo-blog/")
    assert listing.status_code == 200 and listing.text.count('class="entry"') == len(published)
    newest = published[-1]
    page = http.get(f"/blogs/demo-blog/{newest.slug}")
    assert page.status_code == 200 and f"{newest.view_count + 1:,} views" in page.text


def test_seeded_view_counts_are_the_same_in_every_seed(tmp_path: Path) -> None:
    counts = []
    for name in ("one.db", "two.db"):
        database = Database.from_path(tmp_path / name)
        seed.seed(database)
        with database.session() as session:
            counts.append(sorted((a.slug, a.view_count) for a in session.query(tables.Article)))
        database.dispose()
    assert counts[0] == counts[1]


def test_home_page_links_each_blog(db: Database, http: httpx.Client, owner: Owner) -> None:
    page = http.get("/")
    assert '<a href="/blogs/alice-blog/">Alice&#39;s Blog</a>' in page.text
    assert http.get("/blogs/alice-blog/").status_code == 200
