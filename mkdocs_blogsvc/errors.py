"""The one exception tree of the client side (plugin, CLI, API client, cache, sync).

Every failure a user can meet is one of these, with a message that says what went wrong and
what to do next. Raw httpx, OS or JSON exceptions never leave the package: they are mapped here.
The edges translate: `plugin.py` into `mkdocs.exceptions.PluginError`, `cli.py` into
`click.ClickException` (exit status 1).

    BlogServiceError
    ├── ConfigurationError          a setting or environment variable is wrong
    │   └── BadTemplate             a page or head template cannot be loaded or rendered
    ├── CredentialsError            the local credential store
    │   ├── NotLoggedIn             no store and no BLOGSVC_REFRESH_TOKEN: run `login`
    │   ├── CredentialsCorrupt      the store cannot be read: run `login` again
    │   └── ReauthorizationRequired the refresh token was rotated, revoked or expired
    ├── LoginError                  the browser flow failed (timeout, state mismatch, denied)
    ├── CacheBusy                   another process kept the cache locked too long
    ├── CacheUnwritable             the cache folder cannot be created or written
    ├── CacheDamaged                a cache file changed behind the cache's back during a build
    ├── SyncFailed                  a build's sync failed and `on_error: fail` stops the build
    ├── TransportError              the service could not be reached (after retries)
    │   ├── DeadlineExceeded        ... within the sync's deadline (`timeout`), or an image within its own
    │   └── AnswerLost              a request reached it, its answer did not arrive whole
    ├── InvalidResponse             the service answered something that breaks the spec
    │   └── UnusableTokenResponse   a token answer without a usable access token
    └── ServiceError                the service answered with a spec error object
        ├── OAuthError              token endpoint errors (RFC 6749 5.2)
        │   ├── InvalidGrant
        │   ├── InvalidClient
        │   ├── InvalidScope
        │   └── AccessDenied
        ├── InvalidToken            401 from a data endpoint
        ├── InsufficientScope       403 from a data endpoint
        ├── NotFound                404 not_found
        ├── RateLimited             429 that outlasted the retries
        └── ServerError             5xx that outlasted the retries

Messages never contain tokens: exceptions are built from the service's `error` and
`error_description` and from our own text only.
"""

from __future__ import annotations

import os


class BlogServiceError(Exception):
    """Base class of every error of mkdocs-blogsvc."""


class ConfigurationError(BlogServiceError):
    """A setting in mkdocs.yml, a command option or an environment variable is wrong."""


class BadTemplate(ConfigurationError):
    """A template cannot be loaded or rendered; the message names the file and the line."""


class CredentialsError(BlogServiceError):
    """The local credential store is missing, unreadable or no longer accepted."""


class NotLoggedIn(CredentialsError):
    """No credential store exists and no BLOGSVC_REFRESH_TOKEN was given."""


class CredentialsCorrupt(CredentialsError):
    """The credential store exists but cannot be parsed or has an unknown format version."""


class ReauthorizationRequired(CredentialsError):
    """The service refused the refresh token (`invalid_grant`): the user must log in again.

    `reason` is the service's `error_description`; `sent` is False when the token was not even
    sent (expired by this machine's clock)."""

    def __init__(self, message: str, *, reason: str = "", sent: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.sent = sent


class LoginError(BlogServiceError):
    """The interactive Authorization Code flow did not complete."""


class CacheBusy(BlogServiceError):
    """Another process kept the cache locked for longer than `cache.LOCK_TIMEOUT`."""


class CacheUnwritable(BlogServiceError):
    """The cache folder cannot be created or written (permissions, a full disk, a file in the
    way). One message for the plugin, the CLI and the background sync."""

    def __init__(self, folder: str | os.PathLike[str], exc: OSError) -> None:
        self.folder = os.fspath(folder)
        self.reason = exc.strerror or str(exc)
        super().__init__(
            f"the cache in {self.folder} cannot be written ({self.reason}); {storage_fix(exc, 'cache_dir')}"
        )


def storage_fix(exc: OSError, setting: str) -> str:
    """What to do about an OS error on a folder of ours (the cache, the credentials), by its
    cause; `setting` is the mkdocs.yml setting that can point elsewhere."""
    import errno

    elsewhere = f"or set `{setting}` in mkdocs.yml to another folder"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"give the user running the build read and write access to that folder (chown, chmod), {elsewhere}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return "free some space on its disk (or raise this user's quota or file size limit), then run again"
    if exc.errno == errno.EROFS:
        return f"it is on a read-only file system: {elsewhere}"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return f"a file is in the way on that path where a folder should be (it is not a folder): move it, {elsewhere}"
    return "check the folder's permissions and free space"


class CacheDamaged(BlogServiceError):
    """A cache file the check trusted changed during the build (edited behind the cache's back)."""


class NeverSynced(BlogServiceError):
    """`export` without a sync (`--offline`, or `--watch` while the service is down) from a cache
    that holds no sync of the blog: it would export no article and remove the earlier export's."""


class SyncFailed(BlogServiceError):
    """The sync of a build failed and `on_error: fail` says the build must stop."""


class TransportError(BlogServiceError):
    """The service could not be reached: connection refused, DNS failure or timeout."""


class DeadlineExceeded(TransportError):
    """The sync's deadline (`timeout`, retries and pauses included) or an image's own deadline
    passed: a hung, slow or drip-feeding service costs a build at most that long."""


class InvalidResponse(BlogServiceError):
    """The service answered with something the spec does not allow (bad JSON, wrong types)."""


class UnusableTokenResponse(InvalidResponse):
    """A token response the client cannot use (no access token, not Bearer). `refresh_token`
    is the new refresh token it carried, if any: the one sent is spent, so it must be kept."""

    def __init__(self, message: str, *, refresh_token: str | None) -> None:
        super().__init__(message)
        self.refresh_token = refresh_token  # an attribute, not an argument: never in a repr


class AnswerLost(TransportError):
    """A request reached the service but its answer did not arrive whole (the connection broke,
    the deadline passed): for a token request, the service may have spent the code or the
    refresh token sent."""


class ServiceError(BlogServiceError):
    """The service answered with an error object `{error, error_description}`.

    `error_code` is the service's `error`, `description` its `error_description` (may be
    empty), `status_code` the HTTP status.
    """

    error_code: str = "server_error"
    #: The one next step for the person who meets this error (empty: none is known).
    next_step: str = ""

    def __init__(self, description: str = "", *, status_code: int = 0, error_code: str | None = None):
        self.description = description
        self.status_code = status_code
        if error_code is not None:
            self.error_code = error_code
        detail = f": {description}" if description else ""
        step = f"; {self.next_step}" if self.next_step else ""
        super().__init__(f"{self.error_code} (HTTP {status_code}){detail}{step}")


class OAuthError(ServiceError):
    """An error from the token endpoint (RFC 6749 section 5.2)."""


class InvalidGrant(OAuthError):
    """RFC 6749 5.2: the code or refresh token is invalid, expired, revoked or already used."""

    error_code = "invalid_grant"
    next_step = "run `mkdocs-blogsvc login` again"


class InvalidClient(OAuthError):
    """RFC 6749 5.2: client_id unknown or client authentication failed."""

    error_code = "invalid_client"
    next_step = (
        "check `client_id` in mkdocs.yml (or BLOGSVC_CLIENT_ID) against the client registered with the service, "
        "and for a confidential client BLOGSVC_CLIENT_SECRET"
    )


class InvalidScope(OAuthError):
    """RFC 6749 5.2: a requested scope is invalid or unavailable for this client."""

    error_code = "invalid_scope"
    next_step = "set `scope` in mkdocs.yml to scopes this client may use (the plugin needs articles:read), then run `mkdocs-blogsvc login`"


class AccessDenied(OAuthError):
    """RFC 6749 4.1.2.1: the user or the service denied the request."""

    error_code = "access_denied"
    next_step = (
        "run `mkdocs-blogsvc login` again and approve, or ask the service's operator whether this client may connect"
    )


class InvalidToken(ServiceError):
    """RFC 6750 3.1: the access token is missing, expired or invalid (HTTP 401)."""

    error_code = "invalid_token"
    next_step = (
        "the service refused an access token it had just issued; if it keeps doing so, "
        "run `mkdocs-blogsvc login` to start a new connection"
    )


class InsufficientScope(ServiceError):
    """RFC 6750 3.1: the access token lacks the scope the endpoint requires (HTTP 403)."""

    error_code = "insufficient_scope"
    next_step = (
        "add the scope to `scope` in mkdocs.yml (default: articles:read blog:read), then run `mkdocs-blogsvc login`"
    )


class NotFound(ServiceError):
    """The article does not exist or is not published (HTTP 404)."""

    error_code = "not_found"


class RateLimited(ServiceError):
    """HTTP 429 still answered after the bounded retries."""

    error_code = "rate_limited"
    next_step = "the service limits requests: try again in a few minutes"


class ServerError(ServiceError):
    """HTTP 5xx still answered after the bounded retries."""

    error_code = "server_error"
    next_step = "the service is failing: try again later, or tell its operator"


#: `error` codes of the spec's tables, mapped to their exception class.
ERROR_CLASSES: dict[str, type[ServiceError]] = {
    cls.error_code: cls
    for cls in (
        InvalidGrant,
        InvalidClient,
        InvalidScope,
        AccessDenied,
        InvalidToken,
        InsufficientScope,
        NotFound,
    )
}


class SiteUnwritable(BlogServiceError):
    """A file the plugin writes into site_dir itself (a redirect page) cannot be written."""


#: What every message of the plugin starts with; added here only (`prefixed`), never by hand.
PREFIX = "blogsvc: "


def prefixed(message: object) -> str:
    """A message as the plugin shows it outside its logger (a `PluginError`): with the prefix, once."""
    text = str(message)
    return text if text.startswith(PREFIX) else PREFIX + text
