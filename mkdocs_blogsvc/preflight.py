"""What `login` checks before it sends anyone to a browser.

A wrong `base_url` or `client_id` used to show only in the browser (the service's error page, or
nothing at all for a dead address) while the terminal waited five minutes. Two requests to the
spec's own endpoints find these mistakes in seconds, each reported in one line naming the setting:

1. `GET /api/v1/status` without a token. A Blog Content Service answers 401 with an error object
   (the spec: `invalid_token`, "access token missing, expired or invalid"). A dead port does not
   connect; a static site or another application answers something else (404, a 200 page).
2. `GET /api/oauth/authorize` with this login's `client_id`, redirect URI and scope (but a
   throwaway `state` and PKCE challenge, so the probe can never complete a login), redirects not
   followed. A sign-in page (2xx) or a redirect elsewhere (a sign-in service) means accepted.
   RFC 6749 4.1.2.1 forbids redirecting to a redirect URI the service cannot verify, so an unknown
   client or an unregistered redirect URI is answered directly: the reference service shows a 400
   HTML page with `invalid_client: ...` in it, others send the JSON error object. Other refusals
   (`invalid_scope`...) redirect to the redirect URI with `error` in the query.

The spec leaves the authorize endpoint's error answers open, so the error code is read from a JSON
body, from a redirect's query, or from the text of an error page, in that order.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qs, urljoin, urlsplit

from mkdocs_blogsvc import errors
from mkdocs_blogsvc.api import Answer, BlogServiceClient, display_url
from mkdocs_blogsvc.redaction import redact

STATUS_PATH = "/api/v1/status"
AUTHORIZE_PATH = "/api/oauth/authorize"

#: Error codes an authorization endpoint may answer (RFC 6749 4.1.2.1, plus `invalid_client`).
AUTHORIZE_ERRORS = (
    "invalid_client",
    "invalid_request",
    "unauthorized_client",
    "access_denied",
    "unsupported_response_type",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
)
_CODE_IN_TEXT = re.compile(r"\b(" + "|".join(AUTHORIZE_ERRORS) + r")\b(?:\s*[:-]\s*([^\n]{1,300}))?")
_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)
_MAX_DESCRIPTION = 200


def check_service(client: BlogServiceClient) -> None:
    """Fail unless `client.base_url` answers like a Blog Content Service."""
    answer = client.probe(STATUS_PATH)
    code, description = _json_error(answer)
    if answer.status_code == 401 and code is not None:
        return
    base = client.base_url
    what = f"HTTP {answer.status_code} ({answer.content_type or 'no content type'})"
    if code is not None:
        what += f" with the error {_error_text(code, description)}"
    if answer.status_code >= 500:
        raise errors.LoginError(
            f"the service at {base} is failing: GET {STATUS_PATH} answered {what}; try again in a minute, "
            "or check `base_url` in mkdocs.yml if this is not the Blog Content Service"
        )
    hint = "check `base_url` in mkdocs.yml: it must be the service's own address, without /api/..."
    if 300 <= answer.status_code < 400 and answer.location:
        target = urljoin(f"{base}{STATUS_PATH}", answer.location)
        what = f"a redirect to {display_url(target)}"
        if urlsplit(target).path.endswith(STATUS_PATH) and not urlsplit(target).query:
            hint = f"set `base_url` in mkdocs.yml to {target[: -len(STATUS_PATH)]} if that is the service"
    raise errors.ConfigurationError(
        f"base_url {base} is not a Blog Content Service: GET {STATUS_PATH} without a token answered {what}, "
        f"where the service answers HTTP 401 with the error invalid_token; {hint}"
    )


def check_authorization(client: BlogServiceClient, query: Mapping[str, str], *, fixed_port: bool) -> None:
    """Fail unless the authorize endpoint accepts this authorization request's `client_id`,
    `redirect_uri` and `scope`. `query` is the real request's query; its `state` and PKCE
    challenge are replaced by throwaway ones. `fixed_port`: `redirect_port` is set."""
    probe_query = dict(query)
    probe_query["state"] = secrets.token_urlsafe(16)
    probe_query["code_challenge"] = secrets.token_urlsafe(32)
    answer = client.probe(AUTHORIZE_PATH, params=probe_query)
    status = answer.status_code
    if 200 <= status < 300:
        return
    if 300 <= status < 400:
        target = urljoin(f"{client.base_url}{AUTHORIZE_PATH}", answer.location or "")
        if not _same_endpoint(target, query["redirect_uri"]):
            return  # on to a sign-in page, here or at an identity provider
        params = {key: values[0] for key, values in parse_qs(urlsplit(target).query).items()}
        if "error" not in params:
            return
        code: str | None = params["error"]
        description = params.get("error_description", "")
    else:
        code, description = _json_error(answer)
        if code is None:
            code, description = _text_error(answer)
    if code is None:
        raise _unexplained(client.base_url, answer)
    raise _refusal(code, description, base=client.base_url, query=query, fixed_port=fixed_port)


def _refusal(
    code: str, description: str, *, base: str, query: Mapping[str, str], fixed_port: bool
) -> errors.BlogServiceError:
    """The one-line error for an authorization request the service refused with `code`."""
    client_id, redirect_uri, scope = query["client_id"], query["redirect_uri"], query["scope"]
    said = f"({_error_text(code, description)})"
    if code == "invalid_client":
        return errors.ConfigurationError(
            f"the service at {base} does not know client_id {client_id!r} {said}: check `client_id` in "
            "mkdocs.yml (or BLOGSVC_CLIENT_ID), and that `base_url` is the service this client was registered with"
        )
    if code == "invalid_request" and "redirect" in description.lower():
        register = redirect_uri if fixed_port else _without_port(redirect_uri)
        port_hint = (
            "or set `redirect_port` in mkdocs.yml to 0"
            if fixed_port
            else "or set `redirect_port` in mkdocs.yml to the port of the URI the client has"
        )
        return errors.ConfigurationError(
            f"the service at {base} does not accept the redirect URI {redirect_uri} for client_id {client_id!r} "
            f"{said}: register the redirect URI {register} for this client on the service "
            f"(a loopback address matches any port), {port_hint}"
        )
    if code == "invalid_scope":
        return errors.ConfigurationError(
            f"the service at {base} refused the scope {scope!r} for client_id {client_id!r} {said}: set `scope` "
            "in mkdocs.yml to scopes this client may use (the plugin needs articles:read)"
        )
    if code == "unauthorized_client":
        return errors.ConfigurationError(
            f"client_id {client_id!r} may not use the authorization code flow at {base} {said}: register the "
            "site as an application that may, and set `client_id` in mkdocs.yml to its id"
        )
    if code == "unsupported_response_type":
        return errors.ConfigurationError(
            f"the service at {base} does not offer the authorization code flow {said}: check `base_url` in mkdocs.yml"
        )
    if code in ("server_error", "temporarily_unavailable"):
        return errors.LoginError(f"the service at {base} cannot authorize now {said}: try again in a minute")
    return errors.ConfigurationError(
        f"the service at {base} refused the authorization request {said}: check `client_id` ({client_id!r}) "
        f"and `scope` in mkdocs.yml, and the redirect URIs registered for the client ({redirect_uri} must match one)"
    )


def _unexplained(base: str, answer: Answer) -> errors.BlogServiceError:
    what = f"HTTP {answer.status_code} ({answer.content_type or 'no content type'})"
    if answer.status_code == 404:
        return errors.ConfigurationError(
            f"base_url {base} has no authorization endpoint: GET {AUTHORIZE_PATH} answered {what}; "
            "check `base_url` in mkdocs.yml"
        )
    if answer.status_code >= 500:
        return errors.LoginError(
            f"the service at {base} is failing: GET {AUTHORIZE_PATH} answered {what}; try again in a minute"
        )
    return errors.LoginError(
        f"the service at {base} refused the authorization request with {what} and no OAuth error code: "
        "check `client_id` and `scope` in mkdocs.yml and the redirect URIs registered for the client"
    )


def _json_error(answer: Answer) -> tuple[str | None, str]:
    """The spec's error object `{error, error_description}` of a JSON answer, if it is one."""
    body = answer.json
    if not isinstance(body, dict) or not isinstance(body.get("error"), str) or not body["error"]:
        return None, ""
    description = body.get("error_description")
    return body["error"], description if isinstance(description, str) else ""


def _text_error(answer: Answer) -> tuple[str | None, str]:
    """An OAuth error code named in an error page's text (`code: description`), if any."""
    text = html.unescape(_TAG.sub("\n", answer.text))
    found = _CODE_IN_TEXT.search(text)
    if found is None:
        return None, ""
    return found.group(1), (found.group(2) or "").strip()


def _error_text(code: str, description: str) -> str:
    """`code: description` from remote text: one line, tokens scrubbed, length capped."""
    code = redact(" ".join(code.split()))[:60]
    description = redact(" ".join(description.split()))
    if len(description) > _MAX_DESCRIPTION:
        description = description[: _MAX_DESCRIPTION - 3] + "..."
    return f"{code}: {description}" if description else code


def _same_endpoint(url: str, redirect_uri: str) -> bool:
    """Whether `url` goes to `redirect_uri` (scheme, host, port and path; the query aside)."""
    got, want = urlsplit(url), urlsplit(redirect_uri)
    return (got.scheme, got.netloc, got.path) == (want.scheme, want.netloc, want.path)


def _without_port(uri: str) -> str:
    parts = urlsplit(uri)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    return parts._replace(netloc=host or parts.netloc).geturl()
