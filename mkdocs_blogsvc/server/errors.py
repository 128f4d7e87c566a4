"""Every error the reference service raises on purpose, in one tree.

```
ReferenceServiceError        root: catch this to catch any refusal of the service's own code
│                            (no name is shared with the client's tree, `mkdocs_blogsvc.errors`)
├── ContentError             a content operation refused (bad slug, unknown blog, empty title...):
│   │                        one line for the person who typed the command (`server admin`, seed)
│   └── ImageError           bytes that are not an image the service hosts (too large, SVG...)
├── ApiError                 an error answer of the data API: HTTP status, the spec's `error`
│                            code and description, extra headers; `api.register` sends it
├── ConsentDriverError       the sign-in and consent pages did not go as a script expected
│                            (`consent_driver`, used by tests and `mkdocs-blogsvc demo`)
├── DatabaseError            the database cannot be opened or reached (one line naming it)
│   ├── StaleDatabase        its schema is not this version's: run `server admin migrate`
│   └── WritersQueued        SQLite: this process's write slots are full and the lock does not
│                            move (`bulkhead`); answered 503 with Retry-After like a lock timeout
├── ratelimit.CountersUnavailable  the rate-limit counters cannot be written (sign-in fails closed)
└── wsgi.DeploymentError     the BLOGSVC_* environment does not describe a service (it names
                             the variable); defined next to the WSGI entry point it guards
```

Outside the tree, on purpose: the OAuth endpoints' errors are Authlib's `OAuth2Error` classes
(`oauth.ClientAuthenticationFailed` is one), because Authlib turns them into the RFC 6749 answers
itself; and database failures stay SQLAlchemy's `SQLAlchemyError`, which the CLI turns into one
line. The CLI (`server/cli.py`) is the edge where `ContentError` becomes a `click` error.
"""

from __future__ import annotations

from collections.abc import Mapping


class ReferenceServiceError(Exception):
    """The root of the reference service's own errors."""


class ContentError(ReferenceServiceError):
    """A refused content operation; the message is one line meant for the person who asked."""


class ImageError(ContentError):
    """The bytes are not an image the service hosts; the message says why, in one line."""


class ApiError(ReferenceServiceError):
    """An error answer: HTTP status, the Error object's `error` code and description, extra headers."""

    def __init__(self, status: int, error: str, description: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status} {error}: {description}")
        self.status = status
        self.error = error
        self.description = description
        self.headers = dict(headers or {})


class ConsentDriverError(ReferenceServiceError):
    """The pages did not go as expected (no form, failed sign-in, unknown blog, error page)."""


class DatabaseError(ReferenceServiceError):
    """The database cannot be opened or reached; the message names it (never its password)."""


class StaleDatabase(DatabaseError):
    """The database's schema revision is not the one this version uses."""


class WritersQueued(DatabaseError):
    """Every write slot of this process waits for SQLite's write lock (`bulkhead`): refused at
    once, answered like a lock timeout (503 with `Retry-After`, `faults.py`)."""
