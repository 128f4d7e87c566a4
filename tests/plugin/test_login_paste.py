"""`login` with the redirected address pasted (no browser on this machine): the same state,
redirect URI and PKCE checks as the loopback listener, and nothing saved when a check fails.

The browser here is the consent pages driven over HTTP; the redirect it is sent to is never
requested: the test writes it into the stream `login` reads, as a person pastes it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mkdocs_blogsvc import errors
from mkdocs_blogsvc.credentials import CredentialStore
from mkdocs_blogsvc.login import login
from mkdocs_blogsvc.server.consent_driver import drive_consent
from tests.conftest import IN_PROCESS_URL, Owner, add_article, add_owner
from tests.plugin.auth_helpers import register_client, site_settings


@pytest.fixture
def pipe() -> Iterator[tuple[IO[str], IO[str]]]:
    """A real pipe, as a terminal's standard input is a stream: (what login reads, what we write)."""
    read_fd, write_fd = os.pipe()
    reader, writer = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    yield reader, writer
    for stream in (writer, reader):
        if not stream.closed:
            stream.close()


def paster(writer: IO[str], make_line: Callable[[str, dict[str, str]], str]) -> Callable[[str], None]:
    """An `open_browser` that pastes `make_line(authorize_url, its query)` and never opens anything."""

    def open_browser(url: str) -> None:
        query = {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
        writer.write("\n" + make_line(url, query) + "\n")  # a blank line first: ignored
        writer.flush()

    return open_browser


def approved_by(owner: Owner, transport: httpx.BaseTransport) -> Callable[[str, dict[str, str]], str]:
    def line(url: str, query: dict[str, str]) -> str:
        return drive_consent(
            url, username=owner.username, password=owner.password, blog_slug=owner.blog_slug, transport=transport
        )

    return line


def test_a_pasted_redirect_completes_the_login_without_reaching_the_listener(app, db, tmp_path: Path, pipe) -> None:
    transport = httpx.WSGITransport(app=app)
    owner = add_owner(db)
    add_article(db, owner.blog_id, "First post")
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    reader, writer = pipe
    said: list[str] = []
    result = login(
        settings,
        open_browser=paster(writer, approved_by(owner, transport)),
        transport=transport,
        timeout=30,
        paste=reader,
        echo=said.append,
    )
    assert result.status.blog.slug == owner.blog_slug
    assert CredentialStore(settings.credentials_file).load() is not None
    assert any("paste it here" in line for line in said)


def redirect(query: dict[str, str], **params: str) -> str:
    return f"{query['redirect_uri']}?{urlencode(params)}"


@pytest.mark.parametrize(
    ("make_line", "expected"),
    [
        (lambda q: redirect(q, code="abc", state="not-this-attempt"), "from another login attempt"),
        (lambda q: redirect(q, code="abc"), "from another login attempt"),  # no state at all
        (lambda q: redirect(q, error="access_denied", state=q["state"]), "you denied access"),
        (
            lambda q: redirect(q, error="invalid_scope", error_description="no", state=q["state"]),
            "refused the authorization",
        ),
        (lambda q: redirect(q, state=q["state"]), "carried no authorization code"),
        (lambda q: redirect(q, code="", state=q["state"]), "carried no authorization code"),
        (
            lambda q: redirect(q, code="abc", state=q["state"]).replace("127.0.0.1", "localhost"),
            "is not the redirect to",
        ),
        (lambda q: redirect(q, code="abc", state=q["state"]).replace("/callback", "/other"), "is not the redirect to"),
        (lambda q: redirect(q, code="abc", state=q["state"]).replace("http:", "https:"), "is not the redirect to"),
        (lambda q: "I approved it", "is not the redirect to"),
        (lambda q: "http://127.0.0.1:99999/callback?code=x", "is not the redirect to"),
    ],
    ids=[
        "wrong-state",
        "no-state",
        "denied",
        "error",
        "no-code",
        "empty-code",
        "localhost",
        "other-path",
        "https",
        "not-an-address",
        "bad-port",
    ],
)
def test_a_pasted_address_that_is_not_this_attempts_redirect_is_one_line_and_saves_nothing(
    app,
    db,
    tmp_path: Path,
    pipe,
    make_line: Callable[[dict[str, str]], str],
    expected: str,
) -> None:
    transport = httpx.WSGITransport(app=app)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    reader, writer = pipe
    with pytest.raises(errors.LoginError) as raised:
        login(
            settings,
            open_browser=paster(writer, lambda url, query: make_line(query)),
            transport=transport,
            timeout=30,
            paste=reader,
        )
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert "nothing was saved" in message or "you denied access" in message
    assert "abc" not in message  # never the pasted query (it may carry a code)
    assert not settings.credentials_file.exists()


def test_the_listener_still_wins_when_nothing_is_pasted(app, db, tmp_path: Path, pipe) -> None:
    transport = httpx.WSGITransport(app=app)
    owner = add_owner(db)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    reader, _writer = pipe

    def open_browser(url: str) -> None:
        location = drive_consent(
            url, username=owner.username, password=owner.password, blog_slug=owner.blog_slug, transport=transport
        )
        httpx.get(location, timeout=10)  # the browser's redirect reaches the listener

    login(settings, open_browser=open_browser, transport=transport, timeout=30, paste=reader)
    assert CredentialStore(settings.credentials_file).load() is not None


def test_a_closed_input_leaves_the_listener_waiting(app, db, tmp_path: Path, pipe) -> None:
    transport = httpx.WSGITransport(app=app)
    owner = add_owner(db)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    reader, writer = pipe
    writer.close()  # standard input at its end (`< /dev/null`): only the listener can answer

    def open_browser(url: str) -> None:
        location = drive_consent(
            url, username=owner.username, password=owner.password, blog_slug=owner.blog_slug, transport=transport
        )
        httpx.get(location, timeout=10)

    login(settings, open_browser=open_browser, transport=transport, timeout=30, paste=reader)
    assert CredentialStore(settings.credentials_file).load() is not None
