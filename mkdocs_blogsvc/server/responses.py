"""JSON responses and errors of the data API (`/api/v1/...`).

Every error leaves as `{"error": ..., "error_description": ...}` (the spec's Error object):
views and the bearer check raise `ApiError`, and `api.register` turns it into a response.
Responses are serialised here rather than with `flask.jsonify`, so keys keep the spec's
order whatever the application's JSON provider is configured to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flask import Response


def json_response(payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """`payload` as compact UTF-8 JSON with `Content-Type: application/json`."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Response(body.encode("utf-8"), status=status, headers=dict(headers or {}), mimetype="application/json")


class ApiError(Exception):
    """An error answer: HTTP status, the Error object's `error` code and description, extra headers."""

    def __init__(self, status: int, error: str, description: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status} {error}: {description}")
        self.status = status
        self.error = error
        self.description = description
        self.headers = dict(headers or {})

    def response(self) -> Response:
        return json_response({"error": self.error, "error_description": self.description}, self.status, self.headers)


def invalid_request(description: str) -> ApiError:
    """400 `invalid_request` (RFC 6750 3.1): a malformed parameter or body, named in `description`."""
    return ApiError(400, "invalid_request", description)
