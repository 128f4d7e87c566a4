"""`login`: PKCE, the loopback listener, and the whole flow through the real consent pages."""

from __future__ import annotations

import base64
import hashlib
import re
import stat
import threading
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from mkdocs_blogsvc import errors
from mkdocs_blogsvc.credentials import CredentialStore
from mkdocs_blogsvc.login import LoopbackListener, login, pkce_pair
from tests.conftest import IN_PROCESS_URL, add_owner, free_port
from tests.plugin.auth_helpers import browser, register_client, site_settings


def test_pkce_pair_is_s256_of_a_64_character_verifier() -> None:
    verifier, challenge = pkce_pair()
    assert re.fullmatch(r"[A-Za-z0-9_-]{64}", verifier)  # RFC 7636 4.1: 43 to 128 unreserved chars
    expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == expected and "=" not in challenge and len(challenge) == 43
    assert pkce_pair()[0] != verifier


# --- the listener ----------------------------------------------------------------------------


def deliver(listener: LoopbackListener, query: str) -> httpx.Response:
    return httpx.get(f"{listener.redirect_uri}?{query}", timeout=5)


def test_listener_hands_back_the_code_and_thanks_the_browser() -> None:
    with LoopbackListener("the-state") as listener:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", listener.redirect_uri)
        other = httpx.get(listener.redirect_uri.replace("/callback", "/favicon.ico"), timeout=5)
        assert other.status_code == 404
        assert deliver(listener, "").status_code == 400  # a stray visit does not end the wait
        page = deliver(listener, "code=abc&state=the-state")
        assert listener.wait_for_code(5) == "abc"
    assert page.status_code == 200 and "Approved" in page.text and "close this tab" in page.text
    assert "Connected" not in page.text  # the code is not exchanged yet: claim nothing more
    assert page.headers["Cache-Control"] == "no-store" and page.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    "query",
    ["code=old&state=an-earlier-attempt", "code=abc", "error=access_denied&state=forged", "code=x&state=%C3%A9"],
)
def test_a_redirect_of_another_attempt_is_refused_and_ignored(query: str) -> None:
    with LoopbackListener("the-state") as listener:
        stale = deliver(listener, query)
        with pytest.raises(errors.LoginError, match="no answer from the browser"):
            listener.wait_for_code(0.1)  # nothing was handed on
        deliver(listener, "code=right&state=the-state")
        assert listener.wait_for_code(5) == "right"
    assert stale.status_code == 400 and "from another attempt" in stale.text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("error=access_denied&error_description=The+user+denied&state=s", "you denied access"),
        ("error=invalid_scope&error_description=Unknown+scope&state=s", "invalid_scope: Unknown scope"),
        # what the redirect carries is the service's (or anyone's) text: tokens redacted, length capped
        (
            "error=svc_rt_leaked&error_description=svc_at_leaked+" + "d" * 500 + "&state=s",
            r"\(svc_\*\*\*: svc_\*\*\* d{292}\): check",
        ),
    ],
)
def test_listener_failures_are_login_errors(query: str, message: str) -> None:
    with LoopbackListener("s") as listener:
        page = deliver(listener, query)
        with pytest.raises(errors.LoginError, match=message):
            listener.wait_for_code(5)
    assert page.status_code == 400 and "Login failed" in page.text


def test_listener_error_page_escapes_what_the_redirect_carried() -> None:
    with LoopbackListener("s") as listener:
        page = deliver(listener, "error=x&error_description=%3Cscript%3Ealert(1)%3C/script%3E&state=s")
        with pytest.raises(errors.LoginError):
            listener.wait_for_code(5)
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text


def test_listener_timeout_says_what_to_do() -> None:
    with LoopbackListener("s") as listener, pytest.raises(errors.LoginError) as caught:
        listener.wait_for_code(0.05)
    assert "within 0.05 seconds" in str(caught.value)
    assert "mkdocs-blogsvc login" in str(caught.value) and "--timeout" in str(caught.value)


def test_listener_on_a_configured_port_and_a_busy_one() -> None:
    port = free_port()
    with LoopbackListener("s", port) as listener:
        assert listener.redirect_uri == f"http://127.0.0.1:{port}/callback"
        with pytest.raises(errors.LoginError, match=f"127.0.0.1:{port}.*redirect_port"), LoopbackListener("s", port):
            pass


def test_listener_listens_on_loopback_only() -> None:
    with LoopbackListener("s") as listener:
        assert listener.address[0] == "127.0.0.1"


# --- the whole flow against the real service -------------------------------------------------


class RecordingTransport(httpx.BaseTransport):
    """The in-process service, recording the token requests' forms."""

    def __init__(self, app) -> None:
        self.inner = httpx.WSGITransport(app=app)
        self.token_forms: list[dict[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/oauth/token":
            self.token_forms.append({k: v[0] for k, v in parse_qs(request.read().decode()).items()})
        return self.inner.handle_request(request)


def test_login_through_the_real_consent_pages(app, db, tmp_path: Path) -> None:
    owner = add_owner(db)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    transport, opened = RecordingTransport(app), []
    result = login(
        settings, open_browser=browser(owner, transport=transport, seen=opened), transport=transport, timeout=30
    )

    assert result.status.blog.slug == owner.blog_slug and result.credentials_file == settings.credentials_file
    assert result.status.scopes == ("articles:read", "blog:read")
    query = parse_qs(urlsplit(opened[0]).query)
    assert query["code_challenge_method"] == ["S256"] and query["response_type"] == ["code"]
    assert query["scope"] == ["articles:read blog:read"] and len(query["state"][0]) >= 32
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", query["redirect_uri"][0])

    [form] = transport.token_forms
    assert form["grant_type"] == "authorization_code" and form["client_id"] == client_id
    digest = hashlib.sha256(form["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == query["code_challenge"][0]
    assert "client_secret" not in form and form["redirect_uri"] == query["redirect_uri"][0]

    stored = CredentialStore(settings.credentials_file).load()
    assert (
        stored is not None and stored.access_token.startswith("svc_at_") and stored.refresh_token.startswith("svc_rt_")
    )
    assert (stored.base_url, stored.client_id) == (IN_PROCESS_URL, client_id)
    assert stat.S_IMODE(settings.credentials_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(settings.credentials_file.parent.stat().st_mode) == 0o700
    assert "svc_" not in repr(result)


def test_stray_requests_to_the_listener_do_not_abort_the_login(app, db, tmp_path: Path) -> None:
    owner = add_owner(db)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    transport = httpx.WSGITransport(app=app)
    real_browser, strays = browser(owner, transport=transport), []

    def browser_with_noise(url: str) -> None:
        callback = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        strays.append(httpx.get(callback.replace("/callback", "/favicon.ico"), timeout=5))
        strays.append(httpx.get(f"{callback}?code=stale&state=an-earlier-attempt", timeout=5))
        real_browser(url)

    result = login(settings, open_browser=browser_with_noise, transport=transport, timeout=30)
    assert result.status.blog.slug == owner.blog_slug
    assert [response.status_code for response in strays] == [404, 400]
    assert CredentialStore(settings.credentials_file).load() is not None


def test_login_as_a_confidential_client_sends_its_secret(app, db, tmp_path: Path) -> None:
    owner = add_owner(db)
    client_id, secret = register_client(db, public=False)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id, client_secret=secret)
    transport = RecordingTransport(app)
    login(settings, open_browser=browser(owner, transport=transport), transport=transport, timeout=30)
    assert transport.token_forms[0]["client_secret"] == secret
    assert CredentialStore(settings.credentials_file).load() is not None

    wrong = replace(settings, client_secret="not-the-secret", credentials_file=tmp_path / "other.json")
    with pytest.raises(errors.InvalidClient):
        login(wrong, open_browser=browser(owner, transport=transport), transport=transport, timeout=30)
    assert not (tmp_path / "other.json").exists()


def test_denying_access_stores_nothing(app, db, tmp_path: Path) -> None:
    owner = add_owner(db)
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    transport = httpx.WSGITransport(app=app)
    with pytest.raises(errors.LoginError, match="you denied access"):
        login(
            settings, open_browser=browser(owner, transport=transport, approve=False), transport=transport, timeout=30
        )
    assert not settings.credentials_file.exists()


def test_login_needs_a_client_id(tmp_path: Path) -> None:
    settings = site_settings(tmp_path, IN_PROCESS_URL, None)
    with pytest.raises(errors.ConfigurationError, match="BLOGSVC_CLIENT_ID"):
        login(settings, open_browser=lambda url: None, timeout=1)


def test_an_unusable_credentials_folder_stops_login_before_the_browser(tmp_path: Path) -> None:
    (tmp_path / "site").write_text("a file where the site folder should be\n")
    settings = site_settings(tmp_path, IN_PROCESS_URL, "some-client")  # credentials under site/.blogsvc
    opened: list[str] = []
    with pytest.raises(errors.CredentialsError, match=r"cannot create the folder .*\(Not a directory\)"):
        login(settings, open_browser=opened.append, timeout=1)
    assert opened == []


def test_login_times_out_when_nobody_approves(app, db, tmp_path: Path) -> None:
    client_id, _ = register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id)
    opened = threading.Event()
    with pytest.raises(errors.LoginError, match="no answer from the browser"):
        login(settings, open_browser=lambda url: opened.set(), transport=httpx.WSGITransport(app=app), timeout=0.2)
    assert opened.is_set() and not settings.credentials_file.exists()
