"""`drive_consent`: the scripted stand-in for a browser that tests, `demo` and the CLI use."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.errors import ConsentDriverError
from tests.conftest import add_owner
from tests.server.oauth_support import (
    LOOPBACK_CALLBACK,
    add_client,
    authorize_url,
    pkce_pair,
    query_of,
)

CHALLENGE = pkce_pair()[1]


@pytest.fixture
def transport(app) -> httpx.WSGITransport:
    return httpx.WSGITransport(app=app)


def url_for(client, **params: str | None) -> str:
    return authorize_url(client, code_challenge=CHALLENGE, code_challenge_method="S256", **params)


def test_blog_slug_picks_the_blog(db, transport) -> None:
    owner = add_owner(db)
    with db.session(write=True) as session:
        second = tables.Blog(
            id=security.new_cuid(),
            owner_id=owner.user_id,
            name="Another",
            slug="another",
            language="fr",
            created_at=db.now(),
        )
        session.add(second)
    client = add_client(db, public=True)
    location = drive_consent(
        url_for(client), username="alice", password="alice-password", blog_slug="alice-blog", transport=transport
    )
    assert "code" in query_of(location)
    location = drive_consent(
        url_for(client), username="alice", password="alice-password", blog_slug="another", transport=transport
    )
    with db.session() as session:
        chosen = session.scalars(
            select(tables.AuthorizationCode.blog_id).order_by(tables.AuthorizationCode.id.desc())
        ).first()
    assert chosen == second.id


def test_an_unknown_blog_slug_is_an_error(db, transport) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    with pytest.raises(ConsentDriverError, match="'elsewhere' is not among the user's blogs \\(alice-blog\\)"):
        drive_consent(
            url_for(client), username="alice", password="alice-password", blog_slug="elsewhere", transport=transport
        )


def test_a_wrong_password_is_an_error_that_keeps_the_password_out(db, transport) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    with pytest.raises(ConsentDriverError, match="sign-in as 'alice' failed .*Wrong username or password") as failure:
        drive_consent(url_for(client), username="alice", password="guess-123", transport=transport)
    assert "guess-123" not in str(failure.value)


def test_an_error_page_is_an_error(db, transport) -> None:
    client = add_client(db, public=True)
    with pytest.raises(ConsentDriverError, match="HTTP 400: The application that sent you here"):
        drive_consent(url_for(client, client_id="nobody"), username="alice", password="x", transport=transport)


def test_an_immediate_error_redirect_is_returned(db, transport) -> None:
    client = add_client(db, public=True)
    location = drive_consent(url_for(client, scope="unknown"), username="alice", password="x", transport=transport)
    assert location.startswith(LOOPBACK_CALLBACK) and query_of(location)["error"] == "invalid_scope"


def test_approving_without_a_blog_is_an_error(db, transport) -> None:
    with db.session(write=True) as session:
        session.add(
            tables.User(username="erin", password_hash=security.hash_password("erin-password"), created_at=db.now())
        )
    client = add_client(db, public=True)
    with pytest.raises(ConsentDriverError, match="offers no 'approve'.*no blog on this service"):
        drive_consent(url_for(client), username="erin", password="erin-password", transport=transport)
    denied = drive_consent(
        url_for(client), username="erin", password="erin-password", approve=False, transport=transport
    )
    assert query_of(denied)["error"] == "access_denied"
