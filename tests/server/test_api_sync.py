"""POST /api/v1/sync (rules 1 to 3 of the spec, malformed bodies) and GET /api/v1/status."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, select, update

from mkdocs_blogsvc.models import format_timestamp, parse_timestamp
from mkdocs_blogsvc.server import bodies, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, add_owner

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


def sync(api: httpx.Client, known: list[dict[str, str]]) -> dict[str, Any]:
    response = api.post("/api/v1/sync", json={"knownArticles": known})
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    return response.json()


def known_from(articles: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"id": article["id"], "contentHash": article["contentHash"]} for article in articles]


def test_empty_known_list_returns_everything_published_as_new(api: httpx.Client, db: Database, owner: Owner) -> None:
    """Rule 2."""
    older = add_article(db, owner.blog_id, "Older", minutes_ago=5)
    newer = add_article(db, owner.blog_id, "Newer", minutes_ago=1)
    add_article(db, owner.blog_id, "Draft", status="draft")
    add_article(db, owner.blog_id, "Pulled", status="unpublished")
    result = sync(api, [])
    assert [article["id"] for article in result["new"]] == [newer, older]
    assert result["updated"] == [] and result["deleted"] == []
    assert list(result) == ["new", "updated", "deleted", "syncedAt"]
    assert result["new"] == api.get("/api/v1/articles").json()["articles"]


def test_unchanged_articles_appear_nowhere(api: httpx.Client, db: Database, owner: Owner) -> None:
    """Rule 1: feeding a sync's answer back gives nothing to do."""
    for n in range(3):
        add_article(db, owner.blog_id, f"Post {n}", tags=["x"])
    first = sync(api, [])
    assert sync(api, known_from(first["new"])) | {"syncedAt": None} == {
        "new": [],
        "updated": [],
        "deleted": [],
        "syncedAt": None,
    }


def test_new_updated_and_deleted(api: httpx.Client, db: Database, owner: Owner) -> None:
    same = add_article(db, owner.blog_id, "Same")
    edited = add_article(db, owner.blog_id, "Edited")
    retitled = add_article(db, owner.blog_id, "Retitled")
    retagged = add_article(db, owner.blog_id, "Retagged")
    unpublished = add_article(db, owner.blog_id, "Unpublished")
    drafted = add_article(db, owner.blog_id, "Drafted")
    removed = add_article(db, owner.blog_id, "Removed")
    theirs = add_article(db, add_owner(db, "bob", "bob-blog").blog_id, "Theirs")
    known = [
        *known_from(sync(api, [])["new"]),
        {"id": theirs, "contentHash": "0" * 64},
        {"id": "never-existed", "contentHash": "0" * 64},
    ]
    with db.session(write=True) as session:
        article = tables.Article
        session.execute(update(article).where(article.id == edited).values(content="A new body."))
        session.execute(update(article).where(article.id == retitled).values(title="A New Title"))
        session.execute(update(article).where(article.id == retagged).values(tags=["fresh"]))
        session.execute(update(article).where(article.id == unpublished).values(status="unpublished"))
        session.execute(update(article).where(article.id == drafted).values(status="draft"))
        session.execute(delete(article).where(article.id == removed))
    brand_new = add_article(db, owner.blog_id, "Brand New")
    result = sync(api, known)
    assert [item["id"] for item in result["new"]] == [brand_new]
    assert {item["id"] for item in result["updated"]} == {edited, retitled, retagged}
    gone = {unpublished, drafted, removed, theirs, "never-existed"}
    assert result["deleted"] == [entry["id"] for entry in known if entry["id"] in gone]  # in request order
    assert len(result["deleted"]) == 5
    current = {item["id"]: item for item in api.get("/api/v1/articles").json()["articles"]}
    assert all(item == current[item["id"]] for item in result["updated"])  # full current data
    assert same not in json.dumps(result)


def test_a_wrong_hash_counts_as_updated(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Post")
    result = sync(api, [{"id": article_id, "contentHash": "not a hash at all"}])
    assert [item["id"] for item in result["updated"]] == [article_id]
    assert result["new"] == [] and result["deleted"] == []


def test_sync_records_last_sync_at(api: httpx.Client, db: Database) -> None:
    """Rule 3, by the service's clock (the test clock included)."""
    connected = api.get("/api/v1/status").json()["connectedAt"]
    assert api.get("/api/v1/status").json()["lastSyncAt"] is None
    first = sync(api, [])["syncedAt"]
    assert api.get("/api/v1/status").json()["lastSyncAt"] == first
    assert api.get("/api/v1/status").json()["connectedAt"] == connected  # a sync is not a new connection
    db.advance_clock(1800)
    second = sync(api, [])["syncedAt"]
    assert second > first
    assert api.get("/api/v1/status").json()["lastSyncAt"] == second
    assert abs((db.now() - parse_timestamp(second)).total_seconds()) < 60


def test_repeated_ids_are_reported_once(api: httpx.Client, db: Database, owner: Owner) -> None:
    same = add_article(db, owner.blog_id, "Same")
    mixed = add_article(db, owner.blog_id, "Mixed")
    stale_first = add_article(db, owner.blog_id, "Stale first")
    current = {item["id"]: item["contentHash"] for item in sync(api, [])["new"]}
    known = [
        {"id": same, "contentHash": current[same]},
        {"id": "gone", "contentHash": "a"},
        {"id": mixed, "contentHash": current[mixed]},
        {"id": same, "contentHash": current[same]},
        {"id": mixed, "contentHash": "stale"},
        {"id": "gone", "contentHash": "b"},
        {"id": stale_first, "contentHash": "stale"},
        {"id": stale_first, "contentHash": current[stale_first]},
    ]
    result = sync(api, known)
    assert result["new"] == []
    # Two different copies, whichever comes last: send the true one.
    assert sorted(item["id"] for item in result["updated"]) == sorted([mixed, stale_first])
    assert result["deleted"] == ["gone"]


def test_extra_keys_are_ignored(api: httpx.Client, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "Post")
    body = {"knownArticles": [{"id": "gone", "contentHash": "x", "title": "extra"}], "cursor": 5}
    response = api.post("/api/v1/sync", json=body)
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["new"]] == [article_id]
    assert response.json()["deleted"] == ["gone"]


def test_the_maximum_number_of_known_articles_is_accepted(api: httpx.Client) -> None:
    known = [{"id": f"id{n}", "contentHash": "0" * 64} for n in range(10_000)]
    assert len(sync(api, known)["deleted"]) == 10_000


def post_raw(api: httpx.Client, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return api.post("/api/v1/sync", content=body, headers={"Content-Type": content_type})


@pytest.mark.parametrize(
    ("body", "content_type", "description"),
    [
        (b'{"knownArticles": []}', "text/plain", "Content-Type must be application/json"),
        (b"knownArticles=", "application/x-www-form-urlencoded", "Content-Type must be application/json"),
        (b"", "application/json", "Request body is not valid JSON (Expecting value at line 1, column 1)"),
        (
            b'{"knownArticles": []}\n{knownArticles: []}',
            "application/json",
            "Request body is not valid JSON (Extra data at line 2, column 1)",
        ),
        (b'{"knownArticles": [NaN]}', "application/json", "Request body is not valid JSON (NaN is not a JSON value)"),
        (b'{"knownArticles": ["\xff"]}', "application/json", "Request body is not UTF-8 text"),
        (b"[" * 100_000, "application/json", "Request body is not valid JSON (nested too deeply)"),
        (b'{"n": ' + b"9" * 5000 + b"}", "application/json", "knownArticles is required (an array, possibly empty)"),
        (
            b'{"knownArticles": -Infinity}',
            "application/json",
            "Request body is not valid JSON (-Infinity is not a JSON value)",
        ),
        (b"[]", "application/json", "Request body must be a JSON object with a knownArticles array"),
        (b"null", "application/json", "Request body must be a JSON object with a knownArticles array"),
        (b"{}", "application/json", "knownArticles is required (an array, possibly empty)"),
        (b'{"knownarticles": []}', "application/json", "knownArticles is required (an array, possibly empty)"),
        (b'{"knownArticles": null}', "application/json", "knownArticles must be an array"),
        (b'{"knownArticles": {"id": "a"}}', "application/json", "knownArticles must be an array"),
        (b'{"knownArticles": "a"}', "application/json", "knownArticles must be an array"),
        (
            b'{"knownArticles": ["a"]}',
            "application/json",
            "knownArticles[0] must be an object with string fields id and contentHash",
        ),
        (
            b'{"knownArticles": [{"id": "a", "contentHash": "h"}, []]}',
            "application/json",
            "knownArticles[1] must be an object with string fields id and contentHash",
        ),
        (b'{"knownArticles": [{"contentHash": "h"}]}', "application/json", "knownArticles[0].id must be a string"),
        (
            b'{"knownArticles": [{"id": 7, "contentHash": "h"}]}',
            "application/json",
            "knownArticles[0].id must be a string",
        ),
        (b'{"knownArticles": [{"id": "a"}]}', "application/json", "knownArticles[0].contentHash must be a string"),
        (
            b'{"knownArticles": [{"id": "a", "contentHash": null}]}',
            "application/json",
            "knownArticles[0].contentHash must be a string",
        ),
    ],
)
def test_malformed_bodies_are_invalid_requests(
    api: httpx.Client, body: bytes, content_type: str, description: str
) -> None:
    response = post_raw(api, body, content_type)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_request", "error_description": description}
    assert response.headers["Content-Type"] == "application/json"
    assert api.get("/api/v1/status").json()["lastSyncAt"] is None  # a refused sync is no sync


def test_json_with_a_charset_parameter_is_accepted(api: httpx.Client) -> None:
    assert post_raw(api, b'{"knownArticles": []}', "application/json; charset=utf-8").status_code == 200


def test_exactly_the_maximum_of_known_articles_is_accepted(api: httpx.Client) -> None:
    known = [{"id": f"{n}", "contentHash": ""} for n in range(bodies.MAX_KNOWN_ARTICLES)]
    result = sync(api, known)
    assert len(result["deleted"]) == bodies.MAX_KNOWN_ARTICLES == 100_000


def test_too_many_known_articles(api: httpx.Client) -> None:
    known = [{"id": f"{n}", "contentHash": ""} for n in range(100_001)]
    response = api.post("/api/v1/sync", json={"knownArticles": known})
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "knownArticles has 100001 entries; the maximum is 100000",
    }


def test_body_over_the_sync_limit_is_413(api: httpx.Client) -> None:
    body = json.dumps({"knownArticles": [], "padding": "x" * bodies.MAX_SYNC_BODY_BYTES}).encode()
    response = post_raw(api, body)
    assert response.status_code == 413
    assert response.json() == {
        "error": "request_too_large",
        "error_description": "Request body exceeds the limit of 16777216 bytes",
    }
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"


def test_status_reports_the_connection(api: httpx.Client, db: Database, owner: Owner) -> None:
    add_article(db, owner.blog_id, "One")
    add_article(db, owner.blog_id, "Two")
    add_article(db, owner.blog_id, "Draft", status="draft")
    add_article(db, owner.blog_id, "Pulled", status="unpublished")
    add_article(db, add_owner(db, "bob", "bob-blog").blog_id, "Bob's")
    with db.session() as session:
        grant = session.scalars(select(tables.Grant).where(tables.Grant.blog_id == owner.blog_id)).one()
    response = api.get("/api/v1/status")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    assert response.json() == {
        "status": "active",
        "blog": {
            "id": owner.blog_id,
            "name": "Alice's Blog",
            "slug": "alice-blog",
            "description": "Notes",
            "language": "en",
            "articleCount": 2,
        },
        "scopes": ["articles:read", "blog:read"],
        "connectedAt": format_timestamp(grant.connected_at),
        "lastSyncAt": None,
    }


def test_status_of_a_blog_with_nothing_published_counts_zero(api: httpx.Client, db: Database, owner: Owner) -> None:
    add_article(db, owner.blog_id, "Draft", status="draft")
    assert api.get("/api/v1/status").json()["blog"]["articleCount"] == 0


def test_status_takes_no_body_or_parameters_into_account(api: httpx.Client) -> None:
    plain = api.get("/api/v1/status").json()
    assert api.get("/api/v1/status", params={"page": "x", "blog": "other"}).json() == plain
