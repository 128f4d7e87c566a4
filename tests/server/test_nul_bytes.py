"""A NUL byte in an identifier (an article id, a client_id, a blog slug, a username) finds
nothing, with the same answer on SQLite and PostgreSQL (whose text cannot hold NUL: psycopg
refused such a parameter, and the service answered 500)."""

from __future__ import annotations

import httpx
import pytest

from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, issue_access_token
from tests.server.oauth_support import add_client, authorize_url, pkce_pair

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


@pytest.mark.parametrize(
    ("method", "path", "form", "status", "error"),
    [
        ("GET", "/api/v1/articles/a%00b", None, 404, "not_found"),
        (
            "POST",
            "/api/oauth/token",
            {
                "grant_type": "authorization_code",
                "code": "c",
                "client_id": "a\0b",
                "redirect_uri": "http://127.0.0.1/callback",
                "code_verifier": "v" * 43,
            },
            400,
            "invalid_client",
        ),
        (
            "POST",
            "/api/oauth/token",
            {"grant_type": "refresh_token", "refresh_token": "svc_rt_a\0b", "client_id": "test-client"},
            400,
            "invalid_client",
        ),
        (
            "GET",
            "/api/oauth/authorize?response_type=code&client_id=a%00b&redirect_uri=http://127.0.0.1/callback",
            None,
            400,
            None,
        ),
        ("GET", "/blogs/a%00b/", None, 404, None),
    ],
)
def test_a_nul_byte_in_an_identifier_finds_nothing(
    http: httpx.Client,
    db: Database,
    owner: Owner,
    method: str,
    path: str,
    form: dict[str, str] | None,
    status: int,
    error: str | None,
) -> None:
    token = issue_access_token(db, owner)
    answer = http.request(
        method, path, data=form, headers={"Authorization": f"Bearer {token}"} if "/v1/" in path else None
    )
    assert answer.status_code == status, answer.text
    if error is not None:
        assert answer.json()["error"] == error
    if "/token" in path:
        assert answer.headers["Cache-Control"] == "no-store"


def test_a_nul_byte_in_the_username_is_a_failed_sign_in(http: httpx.Client, db: Database, owner: Owner) -> None:
    client = add_client(db, public=True)
    _verifier, challenge = pkce_pair()
    url = authorize_url(client, code_challenge=challenge, code_challenge_method="S256").removeprefix(
        "http://testserver"
    )
    page = http.get(url)
    assert page.status_code == 200, page.text
    csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    answer = http.post(
        url,
        data={
            "username": owner.username[:3] + "\0" + owner.username[3:],
            "password": owner.password,
            "csrf_token": csrf,
        },
    )
    assert answer.status_code == 200 and "Wrong username or password." in answer.text, answer.text
