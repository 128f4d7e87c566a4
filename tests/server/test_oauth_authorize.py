"""The authorization endpoint: error page or redirect, redirect-URI matching, scopes, the pages."""

from __future__ import annotations

import re

import httpx
import pytest

from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.clients import redirect_uri_matches
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import add_owner
from tests.server.oauth_support import (
    LOOPBACK_CALLBACK,
    add_client,
    authorize_url,
    pkce_pair,
    query_of,
)

CHALLENGE = pkce_pair()[1]


def pkce_url(client, **params: str | None) -> str:
    return authorize_url(client, code_challenge=CHALLENGE, code_challenge_method="S256", **params)


def csrf_of(page: httpx.Response) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert match, page.text
    return match.group(1)


def sign_in(http: httpx.Client, url: str, username: str = "alice", password: str = "alice-password") -> httpx.Response:
    page = http.get(url)
    return http.post(url, data={"csrf_token": csrf_of(page), "username": username, "password": password})


# --- invalid client or redirect URI: an error page, never a redirect (RFC 6749 4.1.2.1) -----------


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "no-such-client"},
        {"client_id": None},
        {"redirect_uri": "https://evil.example/callback"},
        {"redirect_uri": None},
        {"redirect_uri": 'https://evil.example/"quoted\\\u00e9'},
        {"redirect_uri": "http://localhost:8000/callback"},
    ],
    ids=["unknown-client", "no-client", "unregistered-uri", "no-uri", "hostile-uri", "localhost-is-not-loopback"],
)
def test_untrusted_client_or_redirect_uri_gets_an_error_page(db, http, params: dict[str, str | None]) -> None:
    client = add_client(db, public=True)
    response = http.get(pkce_url(client, **params))
    assert response.status_code == 400
    assert "location" not in response.headers
    assert response.headers["content-type"].startswith("text/html")
    assert "This authorization request is not valid" in response.text
    assert "evil.example" not in response.text  # the page never links to the untrusted address


def test_unknown_response_type_with_an_unknown_client_gets_the_error_page(db, http) -> None:
    client = add_client(db, public=True)
    response = http.get(pkce_url(client, client_id="nobody", response_type="token"))
    assert response.status_code == 400 and "location" not in response.headers


# --- every other error redirects with error, error_description and state ----------------------


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"response_type": None}, "invalid_request"),  # missing, not unsupported (RFC 6749 4.1.2.1)
        ({"scope": "articles:write"}, "invalid_scope"),
        ({"scope": None}, "invalid_scope"),
        ({"scope": ""}, "invalid_scope"),
    ],
)
def test_other_errors_redirect_with_the_state(db, http, params: dict[str, str | None], error: str) -> None:
    client = add_client(db, public=True)
    response = http.get(pkce_url(client, **params))
    assert response.status_code == 302
    location = response.headers["location"]
    assert location.startswith(LOOPBACK_CALLBACK + "?")
    assert query_of(location) == {
        "error": error,
        "error_description": query_of(location)["error_description"],
        "state": "state-123",
    }
    assert query_of(location)["error_description"]


def test_a_scope_the_client_may_not_use_is_invalid_scope(db, http) -> None:
    client = add_client(db, public=True, allowed_scope="articles:read")
    assert http.get(pkce_url(client, scope="articles:read")).status_code == 200
    refused = http.get(pkce_url(client, scope="articles:read blog:read"))
    assert query_of(refused.headers["location"])["error"] == "invalid_scope"


def test_without_state_the_redirect_carries_none(db, http) -> None:
    client = add_client(db, public=True)
    response = http.get(pkce_url(client, scope="nope", state=None))
    assert "state" not in query_of(response.headers["location"])


# --- loopback redirect URIs: any port (RFC 8252 7.3) ------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "requested", "matches"),
    [
        ("http://127.0.0.1/callback", "http://127.0.0.1:53127/callback", True),
        ("http://127.0.0.1:8000/callback", "http://127.0.0.1:9/callback", True),
        ("http://[::1]/callback", "http://[::1]:61000/callback", True),
        ("http://127.0.0.1/callback", "http://127.0.0.1:5/other", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:5/callback?x=1", False),
        ("http://127.0.0.1/callback", "http://[::1]:5/callback", False),
        ("http://127.0.0.1/callback", "https://127.0.0.1:5/callback", False),
        ("http://127.0.0.1/callback", "http://user@127.0.0.1:5/callback", False),
        ("http://127.0.0.1/callback", "http://127.0.0.1:5/callback#frag", False),  # RFC 6749 3.1.2: no fragment
        ("https://127.0.0.1/callback", "https://127.0.0.1:5/callback", False),  # the port rule is for http only
        ("http://127.0.0.1/callback", "http://127.0.0.1:99999/callback", False),
        ("http://localhost/callback", "http://localhost:5000/callback", False),
        ("https://app.example/callback", "https://app.example:8443/callback", False),
        ("https://app.example/callback", "https://app.example/callback", True),
        ("https://app.example/callback", "https://app.example/callback/", False),
    ],
)
def test_redirect_uri_matching(registered: str, requested: str, matches: bool) -> None:
    assert redirect_uri_matches(registered, requested) is matches


def test_a_loopback_redirect_uri_with_any_port_completes_the_flow(db, app) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True, redirect_uris=("http://[::1]/callback",))
    url = pkce_url(client, redirect_uri="http://[::1]:49152/callback")
    location = drive_consent(
        url, username=owner.username, password=owner.password, transport=httpx.WSGITransport(app=app)
    )
    assert location.startswith("http://[::1]:49152/callback?code=")


# --- the pages ---------------------------------------------------------------------------------


def test_pages_and_redirects_forbid_framing_and_caching(db, http) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    responses = [
        http.get(url),
        sign_in(http, url),
        http.get(url),
        http.get(authorize_url(client, client_id="nope")),
        http.get(pkce_url(client, scope="nope")),
    ]
    assert [r.status_code for r in responses] == [200, 303, 200, 400, 302]
    for response in responses:
        assert response.headers["x-frame-options"] == "DENY"
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp
        assert response.headers["cache-control"] == "no-store"


def test_sign_in_page_then_consent_page(db, http) -> None:
    add_owner(db)
    client = add_client(db, public=True, name="Acme <Publisher>")
    url = pkce_url(client)

    first = http.get(url)
    assert first.status_code == 200
    assert 'name="username"' in first.text and 'name="password"' in first.text

    signed_in = sign_in(http, url)
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == url.removeprefix("http://testserver")

    consent = http.get(url)
    assert consent.status_code == 200
    assert "Acme &lt;Publisher&gt;" in consent.text  # named, and escaped
    assert "Read your published articles" in consent.text and "Read your blog&#39;s details" in consent.text
    assert '<select id="blog_id" name="blog_id"' in consent.text
    assert 'data-slug="alice-blog"' in consent.text
    assert 'name="decision" value="approve"' in consent.text and 'name="decision" value="deny"' in consent.text
    assert "alice" in consent.text and "127.0.0.1" in consent.text


def test_wrong_password_shows_the_sign_in_page_again(db, http) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    for username, password in [("alice", "wrong"), ("nobody", "alice-password")]:
        response = sign_in(http, url, username, password)
        assert response.status_code == 200
        assert "Wrong username or password." in response.text
        assert 'name="password"' in response.text
    assert 'name="blog_id"' not in http.get(url).text


def test_posts_without_the_csrf_token_are_refused(db, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    page = http.get(url)
    for token in ["", "forged", csrf_of(page) + "x", "\u00e9t\u00e9"]:
        response = http.post(url, data={"csrf_token": token, "username": "alice", "password": "alice-password"})
        assert response.status_code == 400
        assert "This form has expired" in response.text
    sign_in(http, url)
    consent = http.get(url)
    forged = http.post(url, data={"decision": "approve", "blog_id": owner.blog_id, "csrf_token": "forged"})
    assert forged.status_code == 400 and "location" not in forged.headers
    approved = http.post(url, data={"decision": "approve", "blog_id": owner.blog_id, "csrf_token": csrf_of(consent)})
    assert approved.status_code == 302 and "code=" in approved.headers["location"]


def test_a_session_from_another_client_cannot_post(db, app, http) -> None:
    """The CSRF token lives in the signed session cookie: a fresh browser has none to match."""
    owner = add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    token = csrf_of(http.get(url))
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://testserver") as stranger:
        response = stranger.post(url, data={"csrf_token": token, "decision": "approve", "blog_id": owner.blog_id})
    assert response.status_code == 400


def test_deny_redirects_with_access_denied(db, app) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    location = drive_consent(
        pkce_url(client),
        username=owner.username,
        password=owner.password,
        approve=False,
        transport=httpx.WSGITransport(app=app),
    )
    params = query_of(location)
    assert location.startswith(LOOPBACK_CALLBACK + "?")
    assert params["error"] == "access_denied" and params["state"] == "state-123" and "code" not in params


def test_cancel_on_the_sign_in_page_is_a_denial(db, http) -> None:
    client = add_client(db, public=True)
    url = pkce_url(client)
    response = http.post(url, data={"csrf_token": csrf_of(http.get(url)), "decision": "deny"})
    assert query_of(response.headers["location"])["error"] == "access_denied"


def test_approve_without_signing_in_shows_the_sign_in_page(db, http) -> None:
    owner = add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    response = http.post(
        url, data={"csrf_token": csrf_of(http.get(url)), "decision": "approve", "blog_id": owner.blog_id}
    )
    assert response.status_code == 200 and 'name="password"' in response.text


def test_a_blog_of_another_user_cannot_be_chosen(db, http) -> None:
    add_owner(db)
    bob = add_owner(db, "bob", "bob-blog")
    client = add_client(db, public=True)
    url = pkce_url(client)
    sign_in(http, url)
    consent = http.get(url)
    assert "bob-blog" not in consent.text
    response = http.post(url, data={"csrf_token": csrf_of(consent), "decision": "approve", "blog_id": bob.blog_id})
    assert response.status_code == 400
    assert "Choose one of your blogs." in response.text


def test_a_user_without_blogs_is_told_so(db, http) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    with_blogless_user(db)
    url = pkce_url(client)
    sign_in(http, url, "carol", "carol-password")
    page = http.get(url)
    assert "You have no blog on this service yet" in page.text
    assert 'value="approve"' not in page.text and 'value="deny"' in page.text


def with_blogless_user(db: Database) -> None:
    with db.session(write=True) as session:
        session.add(
            tables.User(username="carol", password_hash=security.hash_password("carol-password"), created_at=db.now())
        )


def test_use_another_account(db, app, http) -> None:
    add_owner(db)
    bob = add_owner(db, "bob", "bob-blog")
    client = add_client(db, public=True)
    url = pkce_url(client)
    sign_in(http, url)
    switched = http.post(url, data={"csrf_token": csrf_of(http.get(url)), "switch_account": "1"})
    assert switched.status_code == 303
    assert 'name="password"' in http.get(url).text
    sign_in(http, url, bob.username, bob.password)
    assert 'data-slug="bob-blog"' in http.get(url).text


def test_the_session_is_a_signed_cookie(db, http) -> None:
    add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    cookie = sign_in(http, url).headers["set-cookie"]
    assert cookie.startswith("session=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert 'name="blog_id"' in http.get(url).text
    value = http.cookies["session"]
    http.cookies.clear()
    http.cookies.set("session", value[:-4] + ("AAAA" if not value.endswith("AAAA") else "BBBB"))
    assert 'name="password"' in http.get(url).text  # a tampered cookie is no session


@pytest.mark.parametrize("name", ["state", "scope", "client_id", "redirect_uri", "response_type", "code_challenge"])
def test_a_parameter_given_twice_is_refused(db, http, name: str) -> None:
    """RFC 6749 3.1: no parameter more than once. Which `state` (or address) to answer with
    cannot be known for those Authlib checks first: the error page; the others redirect."""
    client = add_client(db, public=True)
    url = pkce_url(client)
    value = dict(httpx.URL(url).params)[name]
    response = http.get(f"{url}&{httpx.QueryParams({name: value})}")
    if name == "code_challenge":
        assert response.status_code == 302 and query_of(response.headers["location"])["error"] == "invalid_request"
    else:
        assert response.status_code == 400 and "location" not in response.headers


def test_a_sign_in_expires_after_an_hour_even_for_a_copied_cookie(db, http, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a security review: "Use another account" cannot revoke a copy of the signed
    cookie, which Flask accepted for 31 days; a sign-in now lasts one authorization dialogue."""
    import itsdangerous

    add_owner(db)
    client = add_client(db, public=True)
    url = pkce_url(client)
    sign_in(http, url)
    assert 'name="blog_id"' in http.get(url).text
    signed_at = itsdangerous.TimestampSigner.get_timestamp
    monkeypatch.setattr(itsdangerous.TimestampSigner, "get_timestamp", lambda self: signed_at(self) + 3601)
    sign_in_page = http.get(url)  # an hour and a second later
    assert 'name="password"' in sign_in_page.text and 'name="blog_id"' not in sign_in_page.text
