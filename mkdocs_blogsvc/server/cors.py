"""Cross-origin requests (CORS) for what a browser application calls: the token endpoint, the
data endpoints and the OpenAPI document.

The spec's public clients are "single-page or mobile" applications using PKCE: a single-page
application on its own origin exchanges the code and calls the API from JavaScript, which
browsers allow only with CORS headers. Any origin may (`*`): every answer depends on a token or a
code in the request, never on a cookie, so an origin learns nothing it did not send. The
authorization pages (a navigation, with the sign-in cookie) and media files (plain `<img>`) need
none. A preflight (`OPTIONS`) is answered `204` with the path's methods.
"""

from __future__ import annotations

from flask import Flask, Response, request

#: Request headers a cross-origin call may send (gzip-encoded sync bodies included).
ALLOWED_HEADERS = "Authorization, Content-Type, Content-Encoding"
#: Response headers a cross-origin caller may read, besides the always-readable ones.
EXPOSED_HEADERS = "Retry-After, WWW-Authenticate"
#: How long a browser may keep a preflight's answer.
PREFLIGHT_MAX_AGE = "600"


def register(app: Flask) -> None:
    app.after_request(_cors)


def _applies(path: str) -> bool:
    return path.startswith("/api/v1/") or path in ("/api/oauth/token", "/openapi.json")


def _cors(response: Response) -> Response:
    if not _applies(request.path):
        return response
    response.headers["Access-Control-Allow-Origin"] = "*"
    if request.method == "OPTIONS" and response.status_code == 200:  # Flask's own answer: the path exists
        response.status_code = 204
        response.set_data(b"")
        response.headers.pop("Content-Type", None)
        response.headers["Access-Control-Allow-Methods"] = response.headers.get("Allow", "")
        response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
        response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    else:
        response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
    return response
