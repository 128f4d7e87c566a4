"""Faults answered as faults: a busy or unreachable database is 503 with `Retry-After`.

A request waits at most `Database.lock_timeout` (`REQUEST_LOCK_TIMEOUT`, 5 s, in the running
service) for a lock or a pooled connection. Past it the driver fails, and the request is
answered `503 temporarily_unavailable` with `Retry-After` and the spec's Error object (under
`/api/`; a short text page elsewhere), never `500 server_error` after a long wait. Clients
(the plugin included) retry a 503 after `Retry-After`, within their deadline.

Which failures count: SQLite's "database is locked"/"busy" and "unable to open", and, on a
database server, every `OperationalError` (refused or lost connection, `lock_timeout`,
statement cancelled) and SQLAlchemy's pool `TimeoutError`; and on SQLite a writer the process's
bulkhead refuses at once (`WritersQueued`: its write slots wait for a lock that does not move,
`bulkhead`), which gets the same answer without waiting. Anything else stays a 500.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, request
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from mkdocs_blogsvc.server.errors import WritersQueued
from mkdocs_blogsvc.server.responses import json_response

#: Seconds a client is asked to wait before trying again.
RETRY_AFTER_SECONDS = 2
UNAVAILABLE = "temporarily_unavailable"
DESCRIPTION = "The service is busy (a database lock or connection wait timed out); retry after {seconds} seconds"

log = logging.getLogger(__name__)


def register(app: Flask) -> None:
    """Answer a database lock or connection timeout, or a writer beyond the bulkhead, with 503
    in every view of `app`."""
    app.register_error_handler(OperationalError, _operational)
    app.register_error_handler(PoolTimeout, _unavailable)
    app.register_error_handler(WritersQueued, _unavailable)


def is_transient(error: OperationalError) -> bool:
    """True for a wait that timed out or a connection that failed: retrying later may succeed."""
    if type(error.orig).__module__.startswith("sqlite3"):
        text = str(error.orig).lower()
        return any(word in text for word in ("locked", "busy", "unable to open"))
    return True


def _operational(error: OperationalError) -> Response:
    if not is_transient(error):
        raise error
    return _unavailable(error)


def _unavailable(error: Exception) -> Response:
    log.warning("503 for %s %s: %s", request.method, request.path, str(getattr(error, "orig", error)).splitlines()[0])
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}
    description = DESCRIPTION.format(seconds=RETRY_AFTER_SECONDS)
    if request.path.startswith("/api/"):
        return json_response({"error": UNAVAILABLE, "error_description": description}, 503, headers)
    return Response(f"Service busy: {description}.\n", status=503, headers=headers, mimetype="text/plain")
