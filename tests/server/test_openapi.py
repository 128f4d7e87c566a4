"""The served OpenAPI document: a valid OpenAPI 3.1 document, and true of every real answer.

Each answer below is checked against the schema the document gives for its operation and
status (`jsonschema`, resolving the document's `$ref`s), and its documented headers.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mkdocs_blogsvc.server import api, bodies, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import (
    IN_PROCESS_URL,
    Owner,
    add_article,
    add_owner,
    issue_access_token,
    start_of_window,
)
from tests.server.oauth_support import add_client, authorize, exchange, refresh

SPEC_ARTICLE_FIELDS = {
    "id",
    "slug",
    "title",
    "description",
    "content",
    "coverImageUrl",
    "inlineImageUrls",
    "tags",
    "seoKeywords",
    "seoScore",
    "schemaOrgJson",
    "publishedAt",
    "updatedAt",
    "viewCount",
    "contentHash",
}


@pytest.fixture
def document(http: httpx.Client) -> dict[str, Any]:
    response = http.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    return response.json()


@pytest.fixture
def owner(db: Database) -> Owner:
    owner = add_owner(db)
    add_article(
        db,
        owner.blog_id,
        "Full",
        cover_media_key="c.png",
        inline_media_keys=["i.png"],
        tags=["t"],
        seo_keywords=["k"],
        seo_score=9.5,
        schema_org_json={"@type": "BlogPosting"},
        view_count=3,
        content=f"![i]({tables.MEDIA_PLACEHOLDER}i.png)",
    )
    add_article(db, owner.blog_id, "Bare", description=None, minutes_ago=3)
    add_article(db, owner.blog_id, "Draft", status="draft")
    return owner


def escape(segment: str) -> str:
    """A JSON pointer segment (RFC 6901)."""
    return segment.replace("~", "~0").replace("/", "~1")


def assert_documented(document: dict[str, Any], path: str, response: httpx.Response) -> None:
    """`response` has a status, headers and body that the document states for `path`."""
    method = response.request.method.lower()
    responses = document["paths"][path][method]["responses"]
    status = str(response.status_code)
    assert status in responses, f"{method.upper()} {path} answered an undocumented {status}"
    spec = responses[status]
    for name, header in spec.get("headers", {}).items():
        if header.get("required"):
            assert name in response.headers, f"{status} of {path} lacks header {name}"
            Draft202012Validator(header["schema"]).validate(response.headers[name])
    assert set(spec["content"]) == {"application/json"}
    assert response.headers["Content-Type"] == "application/json"
    pointer = "/".join(
        ["#", "paths", escape(path), method, "responses", status, "content", escape("application/json"), "schema"]
    )
    registry = Registry().with_resource(
        "urn:openapi", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    Draft202012Validator({"$ref": f"urn:openapi{pointer}"}, registry=registry).validate(response.json())


def test_document_is_valid_openapi_31(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": IN_PROCESS_URL}]
    assert set(document["paths"]) == {
        "/api/v1/articles",
        "/api/v1/articles/{idOrSlug}",
        "/api/v1/sync",
        "/api/v1/status",
        "/api/oauth/token",
    }


def test_document_states_the_spec_and_the_service_limits(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert set(schemas["Article"]["required"]) == SPEC_ARTICLE_FIELDS == set(schemas["Article"]["properties"])
    assert schemas["SyncRequest"]["properties"]["knownArticles"]["maxItems"] == bodies.MAX_KNOWN_ARTICLES
    limit = document["paths"]["/api/v1/articles"]["get"]["parameters"][1]
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": api.MAX_LIMIT, "default": api.DEFAULT_LIMIT}
    flow = document["components"]["securitySchemes"]["oauth2"]["flows"]["authorizationCode"]
    assert flow["authorizationUrl"] == f"{IN_PROCESS_URL}/api/oauth/authorize"
    assert flow["tokenUrl"] == flow["refreshUrl"] == f"{IN_PROCESS_URL}/api/oauth/token"
    assert set(flow["scopes"]) == {"articles:read", "blog:read"}
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "svc_at_...",
    }


def test_document_needs_no_token_and_names_the_host_that_serves_it(app: Any) -> None:
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="https://blogs.example") as client:
        document = client.get("/openapi.json").json()
    assert document["servers"] == [{"url": "https://blogs.example"}]


def test_data_answers_match_the_document(
    http: httpx.Client, db: Database, owner: Owner, document: dict[str, Any]
) -> None:
    token = issue_access_token(db, owner)
    http.headers["Authorization"] = f"Bearer {token}"
    status_before = http.get("/api/v1/status")
    assert status_before.json()["lastSyncAt"] is None
    assert_documented(document, "/api/v1/status", status_before)
    listed = http.get("/api/v1/articles", params={"limit": 1, "page": 2})
    assert len(listed.json()["articles"]) == 1
    assert_documented(document, "/api/v1/articles", listed)
    assert_documented(document, "/api/v1/articles", http.get("/api/v1/articles", params={"page": 9}))
    assert_documented(document, "/api/v1/articles", http.get("/api/v1/articles", params={"limit": 101}))
    articles = http.get("/api/v1/articles").json()["articles"]
    for article in articles:
        assert_documented(document, "/api/v1/articles/{idOrSlug}", http.get(f"/api/v1/articles/{article['id']}"))
    assert_documented(document, "/api/v1/articles/{idOrSlug}", http.get("/api/v1/articles/draft"))
    known = [{"id": articles[0]["id"], "contentHash": "stale"}, {"id": "gone", "contentHash": "x"}]
    synced = http.post("/api/v1/sync", json={"knownArticles": known})
    assert [len(synced.json()[key]) for key in ("new", "updated", "deleted")] == [1, 1, 1]
    assert_documented(document, "/api/v1/sync", synced)
    assert_documented(document, "/api/v1/sync", http.post("/api/v1/sync", json={"knownArticles": "all"}))
    too_large = http.post(
        "/api/v1/sync", content=b" " * (bodies.MAX_SYNC_BODY_BYTES + 1), headers={"Content-Type": "application/json"}
    )
    assert too_large.status_code == 413
    assert_documented(document, "/api/v1/sync", too_large)
    status_after = http.get("/api/v1/status")
    assert status_after.json()["lastSyncAt"] == synced.json()["syncedAt"]
    assert_documented(document, "/api/v1/status", status_after)


@pytest.mark.parametrize(
    ("method", "path", "template"),
    [
        ("GET", "/api/v1/articles", "/api/v1/articles"),
        ("GET", "/api/v1/articles/x", "/api/v1/articles/{idOrSlug}"),
        ("POST", "/api/v1/sync", "/api/v1/sync"),
        ("GET", "/api/v1/status", "/api/v1/status"),
    ],
)
def test_auth_errors_match_the_document(
    http: httpx.Client, db: Database, owner: Owner, document: dict[str, Any], method: str, path: str, template: str
) -> None:
    body: dict[str, Any] = {"json": {"knownArticles": []}} if method == "POST" else {}
    assert_documented(document, template, http.request(method, path, **body))
    bad = {"Authorization": "Bearer svc_at_nope"}
    assert_documented(document, template, http.request(method, path, headers=bad, **body))
    scoped = {"Authorization": f"Bearer {issue_access_token(db, owner, scope='blog:read')}"}
    answer = http.request(method, path, headers=scoped, **body)
    assert answer.status_code == (200 if template == "/api/v1/status" else 403)
    assert_documented(document, template, answer)


def test_token_answers_match_the_document(
    http: httpx.Client, app: Any, db: Database, owner: Owner, document: dict[str, Any]
) -> None:
    client = add_client(db, public=True)
    issued = exchange(http, client, authorize(app, client, owner))
    assert issued.status_code == 200, issued.text
    assert_documented(document, "/api/oauth/token", issued)
    rotated = refresh(http, client, issued.json()["refresh_token"])
    assert_documented(document, "/api/oauth/token", rotated)
    reused = refresh(http, client, issued.json()["refresh_token"])
    assert reused.json()["error"] == "invalid_grant"
    assert_documented(document, "/api/oauth/token", reused)
    status = http.get("/api/v1/status", headers={"Authorization": f"Bearer {rotated.json()['access_token']}"})
    assert status.status_code == 401  # reuse of a rotated refresh token revoked the whole grant
    assert_documented(document, "/api/v1/status", status)


def test_documented_timestamps_and_hashes_are_what_the_api_sends(
    http: httpx.Client, db: Database, owner: Owner, document: dict[str, Any]
) -> None:
    http.headers["Authorization"] = f"Bearer {issue_access_token(db, owner)}"
    article = http.get("/api/v1/articles").json()["articles"][0]
    schema = document["components"]["schemas"]
    assert re.fullmatch(schema["Timestamp"]["pattern"], article["publishedAt"])
    hashed = json.dumps(
        [article["title"], article["description"], article["content"], article["tags"]],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert hashlib.sha256(hashed.encode()).hexdigest() == article["contentHash"]  # the documented rule, recomputed


def test_refusals_by_rate_encoding_and_size_match_the_document(
    db: Database, owner: Owner, document: dict[str, Any]
) -> None:
    from mkdocs_blogsvc.server.app import create_app
    from mkdocs_blogsvc.server.ratelimit import Limit

    start_of_window(db, 60)
    app = create_app(db, secret_key="test", rate_limits={"token": Limit(1, 60), "token_endpoint": Limit(1, 60)})
    headers = {"Authorization": f"Bearer {issue_access_token(db, owner)}"}
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=IN_PROCESS_URL) as http:
        assert http.get("/api/v1/status", headers=headers).status_code == 200
        limited = http.get("/api/v1/status", headers=headers)
        assert limited.status_code == 429
        assert_documented(document, "/api/v1/status", limited)
        assert http.post("/api/oauth/token", data={"grant_type": "refresh_token", "client_id": "c"}).status_code == 400
        token_limited = http.post("/api/oauth/token", data={"grant_type": "refresh_token", "client_id": "c"})
        assert token_limited.status_code == 429
        assert_documented(document, "/api/oauth/token", token_limited)
    with httpx.Client(
        transport=httpx.WSGITransport(app=create_app(db, secret_key="test")), base_url=IN_PROCESS_URL
    ) as http:
        encoded = http.post(
            "/api/v1/sync",
            headers={**headers, "Content-Encoding": "br", "Content-Type": "application/json"},
            content=b"{}",
        )
        assert encoded.status_code == 415
        assert_documented(document, "/api/v1/sync", encoded)
        large = http.post(
            "/api/oauth/token",
            content=b"a=" + b"x" * (20 << 20),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert large.status_code == 413
        assert_documented(document, "/api/oauth/token", large)
