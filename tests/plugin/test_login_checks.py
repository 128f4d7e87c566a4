"""`login` checks `base_url` and the authorization request before it waits for a browser.

In-process against the reference service and small WSGI stand-ins (another implementation's
JSON errors, a static site, a proxy); then `mkdocs-blogsvc login --no-browser` as a real process
against a wrong client_id, a closed port and a static site, and Ctrl-C while it waits.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from mkdocs_blogsvc import errors, preflight
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.login import login
from mkdocs_blogsvc.server import content
from mkdocs_blogsvc.server.database import Database
from tests.conftest import IN_PROCESS_URL, LiveServer, free_port, with_default_sigint
from tests.plugin.auth_helpers import register_client, site_settings

#: What a test allows a failing `login` to take; the checks themselves take well under a second.
SUBPROCESS_GUARD = 15
#: Seconds a signalled process may take to end: a whole interpreter shutting down, on a machine
#: that may be loaded ten deep (a hang still fails, only later).
STOP_GUARD = 60

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wsgi(
    status: str, body: bytes, content_type: str = "text/html", headers: tuple[tuple[str, str], ...] = ()
) -> WsgiApp:
    """A WSGI app that answers every request the same way (a static site, a proxy...)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        start_response(status, [("Content-Type", content_type), *headers])
        return [body]

    return app


def client_for(app: Any, base_url: str = IN_PROCESS_URL) -> BlogServiceClient:
    return BlogServiceClient(base_url, transport=httpx.WSGITransport(app=app))


def query(
    client_id: str, *, redirect_uri: str = "http://127.0.0.1:49152/callback", scope: str = "articles:read blog:read"
) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": "the-real-state",
        "code_challenge": "c" * 43,
        "code_challenge_method": "S256",
    }


# --- is base_url a Blog Content Service? -------------------------------------------------------


def test_the_reference_service_passes_both_checks(app, db) -> None:
    client_id, _ = register_client(db)
    with client_for(app) as client:
        preflight.check_service(client)
        preflight.check_authorization(client, query(client_id), fixed_port=False)


@pytest.mark.parametrize(
    ("site", "answered"),
    [
        (wsgi("404 Not Found", b"<h1>Not found</h1>"), "answered HTTP 404 (text/html)"),
        (wsgi("200 OK", b"<!doctype html><title>My SPA</title>"), "answered HTTP 200 (text/html)"),
        (wsgi("401 Unauthorized", b"<p>Login required</p>"), "answered HTTP 401 (text/html)"),
    ],
    ids=["static-site", "single-page-app", "html-login-wall"],
)
def test_something_else_at_base_url_names_base_url(site: WsgiApp, answered: str) -> None:
    with client_for(site, "http://docs.example") as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_service(client)
    message = str(caught.value)
    assert message.startswith("base_url http://docs.example is not a Blog Content Service: GET /api/v1/status")
    assert answered in message and "invalid_token" in message and "check `base_url` in mkdocs.yml" in message
    assert "\n" not in message


def test_a_redirect_to_https_suggests_the_new_base_url() -> None:
    proxy = wsgi("301 Moved Permanently", b"", headers=(("Location", "https://blog.example/api/v1/status"),))
    with client_for(proxy, "http://blog.example") as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_service(client)
    assert "a redirect to https://blog.example/api/v1/status" in str(caught.value)
    assert "set `base_url` in mkdocs.yml to https://blog.example if that is the service" in str(caught.value)


def test_a_failing_service_is_not_called_a_wrong_base_url() -> None:
    down = wsgi("503 Service Unavailable", b'{"error":"server_error"}', "application/json")
    with client_for(down) as client, pytest.raises(errors.LoginError) as caught:
        preflight.check_service(client)
    assert not isinstance(caught.value, errors.ConfigurationError)
    assert "is failing" in str(caught.value) and "HTTP 503" in str(caught.value) and "server_error" in str(caught.value)


def test_a_closed_port_names_base_url() -> None:
    port = free_port()  # bound once, then released: nothing listens there
    with (
        BlogServiceClient(f"http://127.0.0.1:{port}", retries=0) as client,
        pytest.raises(errors.TransportError) as caught,
    ):
        preflight.check_service(client)
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "check `base_url` in mkdocs.yml" in str(caught.value)


# --- does the authorize endpoint accept this client? -------------------------------------------


def test_an_unknown_client_id_is_named_with_the_services_code(app, db) -> None:
    register_client(db)
    with client_for(app) as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_authorization(client, query("not-a-client"), fixed_port=False)
    message = str(caught.value)
    assert "does not know client_id 'not-a-client'" in message
    assert "(invalid_client: The client does not exist on this server.)" in message
    assert "check `client_id` in mkdocs.yml (or BLOGSVC_CLIENT_ID)" in message and "\n" not in message


def test_an_unregistered_redirect_uri_says_what_to_register(app, db) -> None:
    client = content.create_client(db, name="Site", redirect_uris=["http://127.0.0.1/oauth-done"], public=True)
    with client_for(app) as service, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_authorization(service, query(client["client_id"]), fixed_port=False)
    message = str(caught.value)
    assert "does not accept the redirect URI http://127.0.0.1:49152/callback" in message
    assert "invalid_request: The redirect_uri is not registered for this application." in message
    assert (
        "register the redirect URI http://127.0.0.1/callback for this client" in message
        and "`redirect_port`" in message
    )

    with client_for(app) as service, pytest.raises(errors.ConfigurationError) as fixed:
        preflight.check_authorization(service, query(client["client_id"]), fixed_port=True)
    assert "register the redirect URI http://127.0.0.1:49152/callback" in str(fixed.value)


def test_a_refused_scope_comes_back_in_the_redirect_and_names_scope(app, db) -> None:
    client_id, _ = register_client(db)
    with client_for(app) as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_authorization(client, query(client_id, scope="articles:write"), fixed_port=False)
    message = str(caught.value)
    assert "refused the scope 'articles:write'" in message and "(invalid_scope: Unknown scope." in message
    assert "set `scope` in mkdocs.yml" in message


def test_the_probe_never_carries_the_real_state_or_challenge(app, db) -> None:
    client_id, _ = register_client(db)
    seen: list[httpx.URL] = []
    inner = httpx.WSGITransport(app=app)

    def recording(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return inner.handle_request(request)

    with BlogServiceClient(IN_PROCESS_URL, transport=httpx.MockTransport(recording)) as client:
        preflight.check_authorization(client, query(client_id), fixed_port=False)
    [url] = seen
    assert url.params["client_id"] == client_id and url.params["redirect_uri"] == "http://127.0.0.1:49152/callback"
    assert url.params["state"] != "the-real-state" and url.params["code_challenge"] != "c" * 43


def json_authorize_error(status: str, error: dict[str, str]) -> WsgiApp:
    """Another implementation: the status endpoint as the spec says, JSON errors at authorize."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/api/v1/status":
            start_response("401 Unauthorized", [("Content-Type", "application/json")])
            return [b'{"error":"invalid_token","error_description":"Access token is missing, expired, or invalid."}']
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(error).encode()]

    return app


def test_json_errors_of_another_implementation_are_read_too() -> None:
    other = json_authorize_error(
        "401 Unauthorized", {"error": "invalid_client", "error_description": "client_id not recognised"}
    )
    with client_for(other) as client:
        preflight.check_service(client)
        with pytest.raises(
            errors.ConfigurationError,
            match=r"does not know client_id 'abc' \(invalid_client: client_id not recognised\)",
        ):
            preflight.check_authorization(client, query("abc"), fixed_port=False)


def test_remote_error_text_is_one_line_without_tokens() -> None:
    other = json_authorize_error(
        "400 Bad Request",
        {"error": "invalid_request", "error_description": "bad\nredirect svc_rt_secret123 " + "x" * 500},
    )
    with client_for(other) as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_authorization(client, query("abc"), fixed_port=False)
    message = str(caught.value)
    assert (
        "\n" not in message and "svc_rt_secret123" not in message and "svc_***" in message and "x" * 300 not in message
    )


def test_an_authorize_path_that_is_missing_names_base_url() -> None:
    with (
        client_for(json_authorize_error("404 Not Found", {})) as client,
        pytest.raises(errors.ConfigurationError) as caught,
    ):
        preflight.check_authorization(client, query("abc"), fixed_port=False)
    assert "has no authorization endpoint" in str(caught.value) and "check `base_url`" in str(caught.value)


def test_a_redirect_to_a_sign_in_service_is_accepted() -> None:
    sso = wsgi("302 Found", b"", headers=(("Location", "https://sso.example/login?next=x"),))
    with client_for(sso) as client:
        preflight.check_authorization(client, query("abc"), fixed_port=False)


# --- login runs the checks before the browser --------------------------------------------------


def test_login_with_a_wrong_client_id_never_opens_the_browser(app, db, tmp_path: Path) -> None:
    register_client(db)
    settings = site_settings(tmp_path, IN_PROCESS_URL, "a-typo")
    opened: list[str] = []
    with pytest.raises(errors.ConfigurationError, match="invalid_client"):
        login(settings, open_browser=opened.append, transport=httpx.WSGITransport(app=app), timeout=300)
    assert opened == [] and not settings.credentials_file.exists()


def test_login_reports_the_checks_and_how_to_cancel(app, db, tmp_path: Path) -> None:
    client_id, _ = register_client(db)
    settings = replace(site_settings(tmp_path, IN_PROCESS_URL, client_id), redirect_port=free_port())
    lines: list[str] = []
    with pytest.raises(errors.LoginError, match="no answer from the browser"):
        login(
            settings,
            open_browser=lambda url: None,
            transport=httpx.WSGITransport(app=app),
            timeout=0.2,
            echo=lines.append,
        )
    redirect_uri = f"http://127.0.0.1:{settings.redirect_port}/callback"
    assert (
        lines[0]
        == f"Checked {IN_PROCESS_URL}: the Blog Content Service accepts client_id {client_id!r} and the redirect URI {redirect_uri}."
    )
    assert lines[1].startswith("Waiting for you to sign in and approve in the browser")
    assert redirect_uri in lines[1] and "at most 0.2 seconds" in lines[1] and "Press Ctrl-C to cancel." in lines[1]


# --- `mkdocs-blogsvc login --no-browser` as a user runs it ---------------------------------------


def write_site(folder: Path, base_url: str, client_id: str) -> Path:
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "index.md").write_text("# Home\n")
    (folder / "mkdocs.yml").write_text(
        f"site_name: Checks\nplugins:\n  - blogsvc:\n      base_url: {base_url}\n      client_id: {client_id}\n"
    )
    return folder / "mkdocs.yml"


def run_login(config_file: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BLOGSVC_")}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs_blogsvc", "login", "--no-browser", "-f", str(config_file)],
        check=False,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_GUARD,
        env=env,
    )


def assert_one_line_failure(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Open this address" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    for text in expected:
        assert text in line
    return line


@pytest.mark.slow
def test_cli_login_with_a_wrong_client_id(live_server: LiveServer, tmp_path: Path) -> None:
    database = Database.from_path(live_server.db_path)
    try:
        register_client(database)
    finally:
        database.dispose()
    result = run_login(write_site(tmp_path / "site", live_server.url, "wrong-client"))
    assert_one_line_failure(result, "client_id 'wrong-client'", "invalid_client", "check `client_id` in mkdocs.yml")


@pytest.mark.slow
def test_cli_login_with_base_url_on_a_closed_port(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_login(write_site(tmp_path / "site", url, "some-client"))
    assert_one_line_failure(result, url, "check `base_url` in mkdocs.yml", "ConnectError")


@pytest.fixture
def static_site(tmp_path: Path) -> Iterator[str]:
    """A plain static site on a loopback port, as `python -m http.server` serves one."""
    root = tmp_path / "public"
    root.mkdir()
    (root / "index.html").write_text("<!doctype html><title>Docs</title><h1>Docs</h1>\n")

    def handler(*args: Any) -> http.server.SimpleHTTPRequestHandler:
        return http.server.SimpleHTTPRequestHandler(*args, directory=str(root))

    class Quiet(http.server.ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    server = Quiet(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.slow
def test_cli_login_with_base_url_on_a_static_site(static_site: str, tmp_path: Path) -> None:
    result = run_login(write_site(tmp_path / "site", static_site, "some-client"))
    assert_one_line_failure(
        result,
        f"base_url {static_site} is not a Blog Content Service",
        "HTTP 404 (text/html)",
        "check `base_url` in mkdocs.yml",
    )


@pytest.mark.slow
def test_cli_login_can_be_cancelled_with_ctrl_c(live_server: LiveServer, tmp_path: Path) -> None:
    database = Database.from_path(live_server.db_path)
    try:
        client_id, _ = register_client(database)
    finally:
        database.dispose()
    config_file = write_site(tmp_path / "site", live_server.url, client_id)
    process = subprocess.Popen(
        with_default_sigint([sys.executable, "-m", "mkdocs_blogsvc", "login", "--no-browser", "-f", str(config_file)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if "Press Ctrl-C to cancel" in line:
                break
        assert any(line.startswith(f"Checked {live_server.url}") for line in seen), seen
        process.send_signal(signal.SIGINT)
        err = process.communicate(timeout=STOP_GUARD)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()  # and its pipes closed, not left to the next test's warnings
    assert process.returncode == 130
    assert "Traceback" not in err and "Login cancelled: nothing was saved." in err
    assert not (tmp_path / "site" / ".blogsvc" / "credentials.json").exists()


# --- found by mutation testing -------------------------------------------------------------------


def authorize_answer(
    status: str, body: bytes, content_type: str = "text/html", headers: tuple[tuple[str, str], ...] = ()
) -> WsgiApp:
    """Another implementation: the status endpoint as the spec says, this answer at authorize."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/api/v1/status":
            start_response("401 Unauthorized", [("Content-Type", "application/json")])
            return [b'{"error":"invalid_token"}']
        start_response(status, [("Content-Type", content_type), *headers])
        return [body]

    return app


def test_a_status_endpoint_answering_500_is_a_failing_service() -> None:
    with (
        client_for(wsgi("500 Internal Server Error", b"oops", "text/plain")) as client,
        pytest.raises(errors.LoginError) as caught,
    ):
        preflight.check_service(client)
    assert not isinstance(caught.value, errors.ConfigurationError) and "is failing" in str(caught.value)


def test_a_redirect_to_the_status_path_with_a_query_suggests_no_base_url() -> None:
    proxy = wsgi("302 Found", b"", headers=(("Location", "https://sso.example/api/v1/status?next=1"),))
    with client_for(proxy, "http://blog.example") as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_service(client)
    assert "set `base_url` in mkdocs.yml to" not in str(caught.value)
    assert "it must be the service's own address" in str(caught.value)


@pytest.mark.parametrize("body", [b'{"error": 42}', b'{"error": ""}', b'{"error": ["invalid_token"]}'])
def test_a_status_answer_whose_error_is_no_code_is_no_blog_content_service(body: bytes) -> None:
    with (
        client_for(wsgi("401 Unauthorized", body, "application/json")) as client,
        pytest.raises(errors.ConfigurationError, match="is not a Blog Content Service"),
    ):
        preflight.check_service(client)


@pytest.mark.parametrize(
    "location",
    [
        "https://sso.example/login?error=login_required",  # a sign-in service's own query
        "http://127.0.0.1:49152/callback?code=abc&state=s",  # approved at once: a code, no error
    ],
)
def test_redirects_without_a_refusal_for_this_client_are_accepted(location: str) -> None:
    with client_for(authorize_answer("302 Found", b"", headers=(("Location", location),))) as client:
        preflight.check_authorization(client, query("abc"), fixed_port=False)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"error": "invalid_request", "error_description": "code_challenge is missing"},
            "refused the authorization request (invalid_request: code_challenge is missing): check `client_id`",
        ),
        ({"error": "temporarily_unavailable"}, "cannot authorize now (temporarily_unavailable): try again in a minute"),
        (
            {"error": "invalid_client", "error_description": {"not": "text"}},
            "does not know client_id 'abc' (invalid_client):",
        ),
        ({"error": "svc_at_abcdefghijklmnop"}, "(svc_***)"),
    ],
)
def test_authorize_refusals_are_named(error: dict[str, Any], expected: str) -> None:
    app = authorize_answer("400 Bad Request", json.dumps(error).encode(), "application/json")
    with client_for(app) as client, pytest.raises(errors.BlogServiceError) as caught:
        preflight.check_authorization(client, query("abc"), fixed_port=False)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (b"<p>invalid_client: client &#39;abc&#39; is unknown</p>", "(invalid_client: client 'abc' is unknown)"),
        (b'<script>var codes = "access_denied";</script><p>invalid_client: unknown</p>', "(invalid_client: unknown)"),
        (b"<p>see my_server_error_page</p>", "with HTTP 400 (text/html) and no OAuth error code"),
    ],
)
def test_error_pages_are_read_as_text(page: bytes, expected: str) -> None:
    with (
        client_for(authorize_answer("400 Bad Request", page)) as client,
        pytest.raises(errors.BlogServiceError) as caught,
    ):
        preflight.check_authorization(client, query("abc"), fixed_port=False)
    assert expected in str(caught.value)


def test_an_ipv6_redirect_uri_to_register_keeps_its_brackets() -> None:
    refusal = {"error": "invalid_request", "error_description": "redirect_uri not registered"}
    app = authorize_answer("400 Bad Request", json.dumps(refusal).encode(), "application/json")
    with client_for(app) as client, pytest.raises(errors.ConfigurationError) as caught:
        preflight.check_authorization(
            client, query("abc", redirect_uri="http://[::1]:49152/callback"), fixed_port=False
        )
    assert "register the redirect URI http://[::1]/callback for this client" in str(caught.value)
