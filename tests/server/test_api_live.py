"""The data endpoints of the real server process (`mkdocs-blogsvc server run`) on a loopback port.

Data is written into the same database file while the server runs, as `server admin` does:
the server sees it at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import httpx
import pytest

from mkdocs_blogsvc.server import media, security, tables
from mkdocs_blogsvc.server.bodies import MAX_SYNC_BODY_BYTES
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, Owner, add_article, add_owner, issue_access_token

pytestmark = pytest.mark.slow


@pytest.fixture
def live_db(live_server: LiveServer) -> Iterator[Database]:
    database = Database.from_path(live_server.db_path)
    yield database
    database.dispose()


@pytest.fixture
def owner(live_db: Database) -> Owner:
    return add_owner(live_db)


@pytest.fixture
def api(live_server: LiveServer, live_db: Database, owner: Owner) -> Iterator[httpx.Client]:
    token = issue_access_token(live_db, owner)
    with httpx.Client(base_url=live_server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        yield client


def test_articles_sync_and_status_over_a_socket(
    live_server: LiveServer, live_db: Database, owner: Owner, api: httpx.Client
) -> None:
    image = resources.files("mkdocs_blogsvc.server").joinpath("sample_media/cover-01.png").read_bytes()
    with live_db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, image)
    article_id = add_article(
        live_db,
        owner.blog_id,
        "Live Post",
        cover_media_key=key,
        inline_media_keys=[key],
        content=f"![cover]({tables.MEDIA_PLACEHOLDER}{key})",
    )
    add_article(live_db, owner.blog_id, "Draft", status="draft")

    listed = api.get("/api/v1/articles")
    assert listed.status_code == 200
    assert listed.headers["Cache-Control"] == "no-store"
    [article] = listed.json()["articles"]
    assert article["id"] == article_id
    assert article["coverImageUrl"] == f"{live_server.url}/media/{key}"
    assert article["content"] == f"![cover]({live_server.url}/media/{key})"
    assert httpx.get(article["coverImageUrl"], timeout=30).content == image  # the URL serves the real image
    assert api.get("/api/v1/articles/live-post").json()["article"] == article

    synced = api.post("/api/v1/sync", json={"knownArticles": [{"id": "old", "contentHash": "x"}]}).json()
    assert [item["id"] for item in synced["new"]] == [article_id]
    assert synced["deleted"] == ["old"]
    status = api.get("/api/v1/status").json()
    assert status["lastSyncAt"] == synced["syncedAt"]
    assert status["blog"]["articleCount"] == 1


def test_admin_changes_and_the_test_clock_reach_the_running_server(
    live_server: LiveServer, live_db: Database, owner: Owner, api: httpx.Client
) -> None:
    assert api.get("/api/v1/articles").json()["pagination"]["total"] == 0
    add_article(live_db, owner.blog_id, "Arrives Later")
    assert api.get("/api/v1/articles").json()["pagination"]["total"] == 1
    advanced = live_server.admin("advance-clock", str(security.ACCESS_TOKEN_LIFETIME + 1))
    assert advanced.returncode == 0, advanced.stderr
    expired = api.get("/api/v1/status")
    assert expired.status_code == 401
    assert expired.json()["error"] == "invalid_token"
    assert 'error="invalid_token"' in expired.headers["WWW-Authenticate"]


def test_json_errors_over_a_socket(api: httpx.Client) -> None:
    missing = api.get("/api/v1/articles/nope")
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    wrong_method = api.delete("/api/v1/sync")
    assert (wrong_method.status_code, wrong_method.json()["error"]) == (405, "method_not_allowed")
    assert wrong_method.headers["Allow"]
    too_large = api.post(
        "/api/v1/sync", content=b" " * (MAX_SYNC_BODY_BYTES + 1), headers={"Content-Type": "application/json"}
    )
    assert (too_large.status_code, too_large.json()["error"]) == (413, "request_too_large")
    malformed = api.post("/api/v1/sync", content=b"{", headers={"Content-Type": "application/json"})
    assert (malformed.status_code, malformed.json()["error"]) == (400, "invalid_request")
    assert api.get("/api/v1/status").status_code == 200  # the server is still fine
