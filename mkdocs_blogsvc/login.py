"""`mkdocs-blogsvc login`: the Authorization Code flow with PKCE and a loopback redirect.

- PKCE S256 (RFC 7636): a 64-character verifier from `secrets`, challenge = base64url(SHA-256)
  without padding. The service supports S256 only, and public clients have no other proof.
- Loopback redirect (RFC 8252 7.3): a one-shot HTTP listener on `127.0.0.1` (port 0 = any, the
  service matches loopback redirect URIs on any port), path `/callback`; the random `state`
  is checked before the code is used, and a request with another path or state (a favicon
  fetch, an old tab) is answered and ignored: the wait goes on.
- Confidential clients also send `client_secret` (client_secret_post), taken from the settings,
  which take it from BLOGSVC_CLIENT_SECRET so it never sits in mkdocs.yml.

Before the browser opens, `preflight` checks `base_url` and the authorization request, so a
wrong setting fails in seconds with the setting named instead of after the wait.

With no browser on this machine (SSH, a container), `paste` is a text stream (standard input):
the person opens the address on any device, and after approving pastes the address the browser
was sent to (`http://127.0.0.1:PORT/callback?code=...&state=...`, which that device cannot load).
Whichever comes first wins: the redirect reaching the listener or the pasted line. A pasted
line must be this attempt's redirect URI exactly, with its `state`; then the code is exchanged
with the same PKCE verifier and redirect URI. A pasted line that is not (another address, another
state, an error, no code) ends the login in one line, with nothing saved: unlike a stray request
to the listener, it is what the person meant to give.

`open_browser` is the seam: the CLI passes `webbrowser.open`, tests and the demo a function
that drives the consent pages over HTTP and then follows the redirect to the listener.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import queue
import secrets
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from mkdocs_blogsvc import config, errors, models, preflight
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
from mkdocs_blogsvc.redaction import redact

CALLBACK_PATH = "/callback"
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class LoginResult:
    """What a successful login connected, and where the credentials are."""

    status: models.BlogStatus
    credentials_file: Path


def pkce_pair() -> tuple[str, str]:
    """`(code_verifier, code_challenge)` for S256: 48 random bytes give 64 base64url characters."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class _Callback:
    """The query of one request to the callback path."""

    params: dict[str, str]


class LoopbackListener:
    """A one-shot HTTP server on 127.0.0.1 that waits for the authorization redirect.

    Use as a context manager: `redirect_uri` is known once entered, `wait_for_code()` blocks
    until the browser arrives (or the timeout passes) and returns the code.
    """

    def __init__(self, state: str, port: int = 0) -> None:
        self.state = state
        self._port = port
        self._results: queue.Queue[_Callback | errors.LoginError] = queue.Queue()
        self._server: http.server.HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) listened on."""
        if self._server is None:
            raise RuntimeError("the listener is not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.address[1]}{CALLBACK_PATH}"

    def __enter__(self) -> LoopbackListener:
        try:
            self._server = http.server.HTTPServer(("127.0.0.1", self._port), self._handler_class())
        except OSError as exc:
            raise errors.LoginError(
                f"cannot listen on 127.0.0.1:{self._port} for the login redirect ({exc.strerror}): "
                "set `redirect_port` to a free port, or to 0 for any port"
            ) from None
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="blogsvc-login-listener",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def wait_for_code(self, timeout: float) -> str:
        """The authorization code, once a callback with this attempt's `state` arrives
        (callbacks with another state never reach the queue)."""
        try:
            callback = self._results.get(timeout=timeout)
        except queue.Empty:
            raise errors.LoginError(
                f"no answer from the browser within {timeout:g} seconds: run `mkdocs-blogsvc login` "
                "again (and finish the sign-in in the browser, or raise --timeout)"
            ) from None
        if isinstance(callback, errors.LoginError):
            raise callback
        return _code_from(callback.params)

    def read_pasted(self, stream: IO[str]) -> None:
        """Read `stream` in a thread of its own: its first non-blank line is taken as the
        redirected address (`accept_pasted`). The end of the stream leaves the listener waiting."""

        def read() -> None:
            try:
                for line in stream:
                    if line.strip():
                        self.accept_pasted(line)
                        return
            except (OSError, ValueError):  # a closed or unreadable stream: the listener still waits
                return

        threading.Thread(target=read, name="blogsvc-login-paste", daemon=True).start()

    def accept_pasted(self, line: str) -> None:
        """Hand on a pasted redirect address, checked as the listener checks a request: this
        attempt's redirect URI exactly, then its `state`. Anything else ends the wait in one line."""
        self._results.put(self._check_pasted(line.strip()))

    def _check_pasted(self, text: str) -> _Callback | errors.LoginError:
        again = "run `mkdocs-blogsvc login --no-browser` again and paste the whole address the browser shows after you approve"
        try:
            url = urlsplit(text)
            port = url.port
        except ValueError:
            url, port = None, None
        if url is None or f"{url.scheme}://{url.hostname}:{port}{url.path}" != self.redirect_uri or url.fragment:
            address = text.split("?", 1)[0]  # never the query: it may carry a code
            shown = address[:80] + ("..." if len(address) > 80 or "?" in text else "")
            return errors.LoginError(
                f"the pasted text {shown!r} is not the redirect to {self.redirect_uri} (an address starting "
                f"with {self.redirect_uri}?code=): nothing was saved; {again}"
            )
        params = {key: values[0] for key, values in parse_qs(url.query).items()}
        if not secrets.compare_digest(params.get("state", "").encode(), self.state.encode()):
            return errors.LoginError(
                f"the pasted address is from another login attempt (its state does not match this one's): nothing "
                f"was saved; {again}"
            )
        try:
            _code_from(params)
        except errors.LoginError as exc:
            return errors.LoginError(f"{exc} (nothing was saved)")
        return _Callback(params)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        listener = self

        class CallbackHandler(http.server.BaseHTTPRequestHandler):
            """Only a redirect of this attempt (its `state`) is handed on; anything else (a
            favicon fetch, an old tab of an earlier attempt) is answered and ignored."""

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path != CALLBACK_PATH:
                    self._page(404, "Not found", "This address only receives the login redirect.")
                    return
                params = {key: values[0] for key, values in parse_qs(url.query).items()}
                if "code" not in params and "error" not in params:
                    self._page(400, "Nothing to do", "This page expects the redirect from the Blog Content Service.")
                    return
                # Bytes: compare_digest refuses str with non-ASCII characters, which anyone can send.
                if not secrets.compare_digest(params.get("state", "").encode(), listener.state.encode()):
                    self._page(
                        400,
                        "Not this sign-in",
                        "This sign-in link is from another attempt. "
                        "Finish the sign-in in the tab the terminal opened, or run "
                        "mkdocs-blogsvc login again.",
                    )
                    return
                try:
                    _code_from(params)
                except errors.LoginError as exc:
                    self._page(400, "Login failed", f"{exc} You can close this tab.")
                else:
                    # The code is not exchanged yet: promise nothing beyond the approval.
                    self._page(200, "Approved", "Approved. You can close this tab and return to the terminal.")
                listener._results.put(_Callback(params))

            def _page(self, status: int, title: str, text: str) -> None:
                body = _PAGE.format(title=html.escape(title), text=html.escape(text)).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Referrer-Policy", "no-referrer")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Silent: the request line carries the authorization code."""

        return CallbackHandler


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mkdocs-blogsvc: {title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}}
h1{{font-size:1.4rem}}</style></head>
<body><h1>{title}</h1><p>{text}</p></body></html>
"""


def _code_from(params: dict[str, str]) -> str:
    """The code of a callback query whose state matched; `LoginError` for an error redirect."""
    error = params.get("error")
    if error is not None:
        description = redact(params.get("error_description", ""))[:300]
        if error == "access_denied":
            raise errors.LoginError("you denied access on the consent page; run `mkdocs-blogsvc login` to try again")
        detail = f": {description}" if description else ""
        raise errors.LoginError(
            f"the service refused the authorization ({redact(error)[:60]}{detail}): check `client_id` and `scope` "
            "in mkdocs.yml, then run `mkdocs-blogsvc login` again"
        )
    code = params.get("code", "")
    if not code:
        raise errors.LoginError("the login redirect carried no authorization code: run `mkdocs-blogsvc login` again")
    return code


def authorize_query(
    settings: config.Settings, *, client_id: str, redirect_uri: str, state: str, challenge: str
) -> dict[str, str]:
    """The query of the authorization request (spec: GET /api/oauth/authorize)."""
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": settings.scope,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }


def login(
    settings: config.Settings,
    *,
    open_browser: Callable[[str], object] = webbrowser.open,
    timeout: float = DEFAULT_TIMEOUT,
    transport: Any = None,
    echo: Callable[[str], object] = lambda message: None,
    paste: IO[str] | None = None,
) -> LoginResult:
    """Run the whole flow; save the credentials (0600) and return the connected blog.

    Before the browser: the credentials folder is usable, `base_url` is a Blog Content Service,
    and its authorize endpoint accepts this client, redirect URI and scope (`preflight`), so a
    wrong setting fails in seconds, not after the wait. `echo` receives progress lines for people.
    `paste` (standard input, for `--no-browser`): the redirected address may be pasted there
    instead of reaching the listener.
    """
    client_id = settings.require_client_id()
    store = CredentialStore(settings.credentials_file)
    with store.locked():  # an unusable credentials folder fails now, not after the browser step
        pass
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(32)
    with (
        connect(settings, transport=transport) as connection,
        LoopbackListener(state, settings.redirect_port) as listener,
    ):
        query = authorize_query(
            settings, client_id=client_id, redirect_uri=listener.redirect_uri, state=state, challenge=challenge
        )
        preflight.check_service(connection.client)
        preflight.check_authorization(connection.client, query, fixed_port=settings.redirect_port != 0)
        echo(
            f"Checked {settings.base_url}: the Blog Content Service accepts client_id {client_id!r} "
            f"and the redirect URI {listener.redirect_uri}."
        )
        open_browser(f"{settings.base_url}{preflight.AUTHORIZE_PATH}?{urlencode(query)}")
        echo(
            f"Waiting for you to sign in and approve in the browser; the service then sends it to "
            f"{listener.redirect_uri} (at most {timeout:g} seconds). Press Ctrl-C to cancel."
        )
        if paste is not None:
            echo(
                f"On another device (no browser here, SSH, a container)? After you approve, its browser fails "
                f"to load an address starting with {listener.redirect_uri}?code= : copy that whole address "
                "from the address bar, paste it here and press Enter."
            )
            listener.read_pasted(paste)
        code = listener.wait_for_code(timeout)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": listener.redirect_uri,
            "client_id": client_id,
            "code_verifier": verifier,
        }
        if settings.client_secret:
            form["client_secret"] = settings.client_secret
        tokens = connection.client.token_request(form)
        with store.locked():  # a build refreshing at this moment must not overwrite the new pair
            store.save(StoredCredentials.from_token_set(tokens, base_url=settings.base_url, client_id=client_id))
        return LoginResult(connection.client.status(), settings.credentials_file)
