"""JSON responses and errors of the data API (`/api/v1/...`).

Every error leaves as `{"error": ..., "error_description": ...}` (the spec's Error object):
views and the bearer check raise `errors.ApiError`, and `api.register` answers it with
`error_response`.
Responses are serialised here rather than with `flask.jsonify`, so keys keep the spec's
order whatever the application's JSON provider is configured to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flask import Response

from mkdocs_blogsvc.server.errors import ApiError


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """`payload` as compact UTF-8 JSON with `Content-Type: application/json`."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Response(body.encode("utf-8"), status=status, headers=dict(headers or {}), mimetype="application/json")


def error_response(error: ApiError) -> Response:
    """The spec's Error object for `error`, with its status and headers."""
    return json_response({"error": error.error, "error_description": error.description}, error.status, error.headers)


def invalid_request(description: str) -> ApiError:
    """400 `invalid_request` (RFC 6750 3.1): a malformed parameter or body, named in `description`."""
    return ApiError(400, "invalid_request", description)


#: The `error` code of each status the HTTP server itself answers, before the application sees
#: the request (a request line or headers over the server's limits, a malformed request line or
#: header, a length that cannot be trusted); anything else is `server_error`.
PROTOCOL_ERRORS = {
    400: "invalid_request",
    403: "forbidden",
    408: "request_timeout",
    413: "request_too_large",
    414: "request_too_large",
    417: "expectation_failed",
    431: "request_too_large",
    501: "not_implemented",
}


def protocol_error_body(status: int, description: str) -> bytes:
    """The spec's Error object for a refusal of the HTTP server itself, as bytes to write."""
    error = PROTOCOL_ERRORS.get(status, "server_error" if status >= 500 else "invalid_request")
    return json.dumps(
        {"error": error, "error_description": description}, ensure_ascii=True, separators=(",", ":")
    ).encode("ascii")
