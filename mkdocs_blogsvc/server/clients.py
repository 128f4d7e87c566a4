"""Registered applications as Authlib sees them, and the redirect-URI matching rule.

Authlib asks questions of a client object (`ClientMixin`); `OAuthClient` answers them from a
`tables.Client` row. Two answers differ from Authlib's examples on purpose:

- scope: a request is refused (`invalid_scope`) when it names a scope the client may not use,
  rather than silently narrowed, and when it names no scope at all (the spec makes `scope`
  required; RFC 6749 3.3 allows failing instead of applying a default);
- redirect URIs: exact string match, except loopback IP literals whose port is free
  (RFC 8252 7.3: a native app listens on whatever port the OS gives it).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import ClientMixin

from mkdocs_blogsvc.server import security, tables

#: Hosts whose redirect URIs match on any port. `localhost` is deliberately absent: a name can be
#: resolved elsewhere or be firewalled differently, so RFC 8252 8.3 advises IP literals.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1"})
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})


def is_loopback_host(host: str) -> bool:
    """Whether `host` names this machine: `localhost` or any loopback IP (`127.0.0.0/8`, `::1`).

    Broader than `LOOPBACK_HOSTS` on purpose: it decides where plain http is acceptable (a
    registered redirect URI, the address `server run` listens on), not which URIs match on any port.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


CONFIDENTIAL_AUTH_METHODS = frozenset({"client_secret_basic", "client_secret_post"})


def redirect_uri_matches(registered: str, requested: str) -> bool:
    """Whether `requested` may be used for a client that registered `registered`."""
    if requested == registered:
        return True
    want, got = urlsplit(registered), urlsplit(requested)
    try:
        _ = (want.port, got.port)  # a malformed port raises ValueError
    except ValueError:
        return False
    return (
        got.scheme == want.scheme == "http"
        and got.hostname in LOOPBACK_HOSTS
        and got.hostname == want.hostname
        and got.username is None
        and got.password is None
        and got.path == want.path
        and got.query == want.query
        and not got.fragment
    )


def normalize_scope(scope: str | None) -> list[str]:
    """The distinct scopes of a space-separated string, in `security.SCOPES` order (unknown ones last)."""
    names = set((scope or "").split())
    known = [name for name in security.SCOPES if name in names]
    return known + sorted(names - set(known))


@dataclass(frozen=True)
class OAuthClient(ClientMixin):  # type: ignore[misc]  # untyped base class
    """A detached, read-only view of one `tables.Client` row."""

    client_id: str
    name: str
    secret_hash: str | None
    redirect_uris: tuple[str, ...]
    is_public: bool
    allowed_scope: tuple[str, ...]

    @classmethod
    def from_row(cls, row: tables.Client) -> OAuthClient:
        return cls(
            client_id=row.client_id,
            name=row.name,
            secret_hash=row.client_secret_hash,
            redirect_uris=tuple(row.redirect_uris),
            is_public=row.is_public,
            allowed_scope=tuple(normalize_scope(row.allowed_scope)),
        )

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        """None: `redirect_uri` is required in every authorization request (the spec says so)."""
        return None

    def get_allowed_scope(self, scope: str | None) -> str | None:
        """The normalised scope when every requested scope is allowed; None means `invalid_scope`."""
        requested = normalize_scope(scope)
        if not requested or not set(requested) <= set(self.allowed_scope):
            return None
        return " ".join(requested)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(redirect_uri_matches(registered, redirect_uri) for registered in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        return not self.is_public and security.verify_password(client_secret, self.secret_hash)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        """Public clients authenticate with `none` (and prove themselves with PKCE); confidential
        clients with their secret, in the form body or HTTP Basic."""
        if self.is_public:
            return method == "none"
        return method in CONFIDENTIAL_AUTH_METHODS

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in GRANT_TYPES
