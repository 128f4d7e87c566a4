"""Real logins for the authentication tests: a registered client, the real consent pages driven
over HTTP (`consent_driver`), the real loopback listener. Fixtures are imported by the test
modules that use them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc import config
from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
from mkdocs_blogsvc.login import login
from mkdocs_blogsvc.server import content
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, LiveServer, Owner, add_article, add_owner

LOOPBACK_REDIRECT = "http://127.0.0.1/callback"


@dataclass
class LoggedIn:
    """A site that went through `login`: its settings, what was stored, the blog connected."""

    settings: config.Settings
    stored: StoredCredentials
    blog_slug: str
    owner: Owner


def site_settings(
    tmp_path: Path, base_url: str, client_id: str | None, client_secret: str | None = None
) -> config.Settings:
    return config.Settings(
        base_url=base_url,
        client_id=client_id,
        client_secret=client_secret,
        scope=config.DEFAULT_SCOPE,
        redirect_port=0,
        credentials_file=tmp_path / "site" / ".blogsvc" / "credentials.json",
        blog_dir="blog",
        posts_dir="blog/posts",
        cache_dir=tmp_path / "site" / ".cache" / "blogsvc",
    )


def register_client(db: Database, *, public: bool = True) -> tuple[str, str | None]:
    client = content.create_client(db, name="My MkDocs site", redirect_uris=[LOOPBACK_REDIRECT], public=public)
    return client["client_id"], client["client_secret"]


def browser(
    owner: Owner, *, transport: httpx.BaseTransport | None = None, approve: bool = True, seen: list[str] | None = None
) -> Callable[[str], None]:
    """An `open_browser` that signs in and decides as `owner`, then delivers the redirect to
    the loopback listener over a real socket, as a browser would."""

    def open_browser(url: str) -> None:
        if seen is not None:
            seen.append(url)
        location = drive_consent(
            url,
            username=owner.username,
            password=owner.password,
            blog_slug=owner.blog_slug,
            approve=approve,
            transport=transport,
        )
        httpx.get(location, timeout=10)

    return open_browser


def log_in(db: Database, tmp_path: Path, base_url: str, transport: httpx.BaseTransport | None) -> LoggedIn:
    owner = add_owner(db)
    add_article(db, owner.blog_id, "First post")
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, base_url, client_id)
    login(settings, open_browser=browser(owner, transport=transport), transport=transport, timeout=30)
    stored = CredentialStore(settings.credentials_file).load()
    assert stored is not None
    return LoggedIn(settings, stored, owner.blog_slug, owner)


@pytest.fixture
def logged_in(app, db, tmp_path: Path) -> LoggedIn:
    """A site logged in to the in-process service."""
    return log_in(db, tmp_path, IN_PROCESS_URL, httpx.WSGITransport(app=app))


@pytest.fixture
def live_logged_in(live_server: LiveServer, tmp_path: Path) -> Iterator[LoggedIn]:
    """A site logged in to the service running as a process on a loopback port."""
    database = Database.from_path(live_server.db_path)
    try:
        yield log_in(database, tmp_path, live_server.url, None)
    finally:
        database.dispose()
