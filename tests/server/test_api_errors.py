"""Errors under /api/ are the spec's JSON Error object, never an HTML page; other paths keep theirs."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.bodies import MAX_SYNC_BODY_BYTES
from mkdocs_blogsvc.server.database import Database
from tests.conftest import add_owner, issue_access_token


def assert_json_error(response: httpx.Response, status: int, error: str, description: str) -> None:
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {"error": error, "error_description": description}


@pytest.mark.parametrize(
    "path", ["/api/v1/nothing", "/api/v1/articles/a/b", "/api/v2/articles", "/api/", "/api/v1/articles/", "/api/v1"]
)
def test_unknown_api_paths_are_json_404(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert_json_error(response, 404, "not_found", "No endpoint at this path")
    if path.startswith("/api/v1"):
        assert response.headers["Cache-Control"] == "no-store"


def test_api_v1_answers_are_never_cached(http: httpx.Client) -> None:
    assert http.get("/api/v1/nothing").headers["Cache-Control"] == "no-store"
    assert http.delete("/api/v1/status").headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/v1/status", {"GET", "HEAD", "OPTIONS"}),
        ("POST", "/api/v1/articles", {"GET", "HEAD", "OPTIONS"}),
        ("PUT", "/api/v1/articles/x", {"GET", "HEAD", "OPTIONS"}),
        ("GET", "/api/v1/sync", {"POST", "OPTIONS"}),
    ],
)
def test_wrong_method_is_json_405_with_allow(http: httpx.Client, method: str, path: str, allowed: set[str]) -> None:
    response = http.request(method, path)
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert response.json()["error_description"].startswith(f"Method {method} is not allowed here; allowed: ")
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == allowed


def test_the_authorization_endpoint_keeps_html_error_pages(http: httpx.Client) -> None:
    """A browser navigates there: its refusals are pages, not the data API's JSON."""
    response = http.delete("/api/oauth/authorize")
    assert response.status_code == 405
    assert response.headers["Content-Type"].startswith("text/html")


def test_oversized_body_is_json_413_even_before_authentication_matters(http: httpx.Client, db: Database) -> None:
    token = issue_access_token(db, add_owner(db))
    response = http.post(
        "/api/v1/sync",
        content=b"{" + b" " * MAX_SYNC_BODY_BYTES,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert_json_error(
        response, 413, "request_too_large", f"Request body exceeds the limit of {MAX_SYNC_BODY_BYTES} bytes"
    )


def test_unexpected_failure_is_json_500_without_details(tmp_path: Path) -> None:
    """A real fault (the articles table is gone), with exceptions not propagated as in production."""
    db = Database.from_path(tmp_path / "broken.db")
    token = issue_access_token(db, add_owner(db))
    with db.session(write=True) as session:
        session.execute(text("DROP TABLE articles"))
    app = create_app(db, secret_key="x")
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://testserver") as client:
        response = client.get("/api/v1/articles", headers={"Authorization": f"Bearer {token}"})
    assert_json_error(response, 500, "server_error", "The server hit an unexpected error; it has been logged")
    assert response.headers["Cache-Control"] == "no-store"
    assert "no such table" not in response.text
    db.dispose()


def test_pages_outside_api_keep_their_own_errors(http: httpx.Client) -> None:
    response = http.get("/no-such-page-anywhere")
    assert response.status_code == 404
    assert not response.headers["Content-Type"].startswith("application/json")
