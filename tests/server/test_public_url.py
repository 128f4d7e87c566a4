"""`public_url`: the address the service names in media URLs (and so in `contentHash`), in the
OpenAPI document and on the home page, whatever host name a request came through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from flask import Flask

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server import create_app, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.serialize import content_hash, normalize_public_url
from tests.conftest import Owner, add_article, issue_access_token

HOSTS = ("http://localhost:8000", "http://127.0.0.1:8000")
PUBLIC = "https://blog.example:8443"


@pytest.fixture
def article_id(db: Database, owner: Owner) -> str:
    return add_article(
        db,
        owner.blog_id,
        "Hosted",
        content=f"![chart]({tables.MEDIA_PLACEHOLDER}k.png)",
        cover_media_key="c.png",
        inline_media_keys=["k.png"],
    )


def served_through(app: Flask, base_url: str, token: str, path: str) -> Any:
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=base_url) as client:
        response = client.get(path, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return response.json() if response.headers["Content-Type"].startswith("application/json") else response.text


def test_without_public_url_each_host_name_gets_its_own_urls_and_hash(
    db: Database, owner: Owner, article_id: str
) -> None:
    app, token = create_app(db, secret_key="k"), issue_access_token(db, owner)
    first, second = (served_through(app, host, token, f"/api/v1/articles/{article_id}")["article"] for host in HOSTS)
    assert first["coverImageUrl"] == "http://localhost:8000/media/c.png"
    assert second["coverImageUrl"] == "http://127.0.0.1:8000/media/c.png"
    assert first["contentHash"] != second["contentHash"]


def test_with_public_url_every_host_name_gets_the_same_article(db: Database, owner: Owner, article_id: str) -> None:
    app, token = create_app(db, secret_key="k", public_url=PUBLIC + "/"), issue_access_token(db, owner)
    first, second = (served_through(app, host, token, f"/api/v1/articles/{article_id}")["article"] for host in HOSTS)
    assert first == second
    assert first["content"] == f"![chart]({PUBLIC}/media/k.png)"
    assert first["coverImageUrl"] == f"{PUBLIC}/media/c.png"
    assert first["inlineImageUrls"] == [f"{PUBLIC}/media/k.png"]
    assert first["contentHash"] == content_hash(first["title"], first["description"], first["content"], first["tags"])
    listed = served_through(app, HOSTS[0], token, "/api/v1/articles")["articles"]
    assert listed == [first]


def test_with_public_url_the_openapi_document_and_home_page_name_it(db: Database) -> None:
    app = create_app(db, secret_key="k", public_url=PUBLIC)
    document = served_through(app, HOSTS[1], "", "/openapi.json")
    assert document["servers"] == [{"url": PUBLIC}]
    flow = document["components"]["securitySchemes"]["oauth2"]["flows"]["authorizationCode"]
    assert (
        flow["authorizationUrl"] == f"{PUBLIC}/api/oauth/authorize" and flow["tokenUrl"] == f"{PUBLIC}/api/oauth/token"
    )
    home = served_through(app, HOSTS[1], "", "/")
    assert f"<code>{PUBLIC}</code>" in home and f'href="{PUBLIC}/openapi.json"' in home


def test_without_public_url_the_home_page_names_the_address_it_was_reached_at(app: Flask) -> None:
    home = served_through(app, "http://127.0.0.1:8123", "", "/")
    assert "<code>http://127.0.0.1:8123</code>" in home and 'href="http://127.0.0.1:8123/openapi.json"' in home


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://blog.example/", "https://blog.example"),
        (" http://127.0.0.1:8000// ", "http://127.0.0.1:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_public_url_is_normalised(value: str, expected: str) -> None:
    assert normalize_public_url(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "blog.example",
        "ftp://blog.example",
        "https://",
        "https://u:p@blog.example",
        "https://blog.example/?a=1",
        "https://blog.example?a=1",
        "https://blog.example/#top",
        "https://blog.example:99999",
        "https://blog example",
        "https://blog.example/a\tb",
    ],
)
def test_public_url_must_be_an_http_address(db: Database, value: str) -> None:
    with pytest.raises(ValueError, match="invalid public URL"):
        create_app(db, public_url=value)


def test_a_public_url_with_a_path_is_refused(db: Database) -> None:
    """Found by an operator's review: `https://blog.example/svc` was accepted, but the sign-in
    form, the home page and the blog pages link from the host's root, so sign-in broke behind
    a proxy that strips the prefix."""
    with pytest.raises(ValueError) as refused:
        create_app(db, public_url="https://blog.example/svc/")
    assert str(refused.value) == (
        "invalid public URL 'https://blog.example/svc/': the service must be at the root of its host, not under "
        "'/svc'; give it a host name or a port of its own (for example https://blogs.example.com)"
    )


def test_server_run_refuses_a_bad_public_url_before_starting(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["server", "run", "--db", str(tmp_path / "x.db"), "--public-url", "ftp://blog.example"]
    )
    assert result.exit_code == 2
    assert "Invalid value for '--public-url': invalid public URL 'ftp://blog.example'" in result.output
    assert not (tmp_path / "x.db").exists()
