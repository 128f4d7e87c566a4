"""CORS for browser applications (`server/cors.py`), and the token endpoint's cache headers on
every answer it gives, refusals included."""

from __future__ import annotations

import httpx

from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, issue_access_token

ORIGIN = {"Origin": "https://app.example"}


def test_a_preflight_of_the_data_endpoints_allows_any_origin_with_a_bearer_token(http: httpx.Client) -> None:
    answer = http.options(
        "/api/v1/articles",
        headers={**ORIGIN, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"},
    )
    assert answer.status_code == 204 and answer.content == b""
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "GET" in answer.headers["access-control-allow-methods"]
    assert "Authorization" in answer.headers["access-control-allow-headers"]
    assert int(answer.headers["access-control-max-age"]) > 0


def test_a_preflight_of_sync_allows_json_and_gzip_bodies(http: httpx.Client) -> None:
    """The plugin's own request, from a browser: a JSON body, gzip-encoded past 64 KiB."""
    answer = http.options(
        "/api/v1/sync",
        headers={
            **ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,content-encoding",
        },
    )
    assert answer.status_code == 204
    assert "POST" in answer.headers["access-control-allow-methods"]
    allowed = {name.strip().lower() for name in answer.headers["access-control-allow-headers"].split(",")}
    assert allowed == {"authorization", "content-type", "content-encoding"}
    assert answer.headers["access-control-max-age"] == "600"


def test_a_preflight_of_the_token_endpoint_allows_post(http: httpx.Client) -> None:
    answer = http.options("/api/oauth/token", headers={**ORIGIN, "Access-Control-Request-Method": "POST"})
    assert answer.status_code == 204 and "POST" in answer.headers["access-control-allow-methods"]
    assert answer.headers["access-control-allow-origin"] == "*"


def test_answers_and_refusals_carry_the_cors_headers(http: httpx.Client, db: Database, owner: Owner) -> None:
    token = issue_access_token(db, owner)
    ok = http.get("/api/v1/status", headers={**ORIGIN, "Authorization": f"Bearer {token}"})
    refused = http.get("/api/v1/status", headers={**ORIGIN, "Authorization": "Bearer svc_at_wrong"})
    for answer in (ok, refused):
        assert answer.headers["access-control-allow-origin"] == "*"
        assert "WWW-Authenticate" in answer.headers["access-control-expose-headers"]
    assert (ok.status_code, refused.status_code) == (200, 401)
    assert http.get("/openapi.json", headers=ORIGIN).headers["access-control-allow-origin"] == "*"


def test_pages_media_and_unknown_paths_get_no_preflight_answer(http: httpx.Client, owner: Owner) -> None:
    assert "access-control-allow-origin" not in http.get(f"/blogs/{owner.blog_slug}/", headers=ORIGIN).headers
    assert "access-control-allow-origin" not in http.get("/api/oauth/authorize", headers=ORIGIN).headers
    unknown = http.options("/api/v1/nothing-here", headers={**ORIGIN, "Access-Control-Request-Method": "GET"})
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"


def test_every_answer_of_the_token_endpoint_is_no_store(http: httpx.Client) -> None:
    answers = [
        http.get("/api/oauth/token"),  # 405
        http.post(
            "/api/oauth/token",
            content=b"a=" + b"x" * (20 << 20),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        ),  # 413
        http.post("/api/oauth/token", data={"grant_type": "password", "client_id": "c"}),  # 400
    ]
    assert [answer.status_code for answer in answers] == [405, 413, 400]
    for answer in answers:
        assert answer.headers["cache-control"] == "no-store" and answer.headers["pragma"] == "no-cache"
        assert answer.headers["content-type"].startswith("application/json")
