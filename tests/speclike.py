"""A Blog Content Service written from the spec alone, on a loopback port, for tests that the
client asks nothing the spec does not state.

What it implements, and nothing more: the token endpoint's refresh grant (form-encoded, with
mandatory rotation), `GET /api/v1/status`, `POST /api/v1/sync` with a JSON body, bearer tokens
on the data endpoints, the spec's Error objects. What it does not know, on purpose, is what the
spec does not show: no gzip request bodies (a `Content-Encoding` header is ignored, so a
compressed body reads as garbage: `400 invalid_request`, as the service that found this did),
no `Accept-Encoding` on its answers, no `Retry-After`, no chunked request bodies (`411`), no
HTTP compression of its answers. Articles live in memory (`articles`), changed by the test.

It runs the standard library's threaded HTTP server on 127.0.0.1:0 in a thread; `requests`
records the method, path and `Content-Encoding` of every request.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from typing_extensions import Self

CLIENT_ID = "speclike-client"
#: A 1x1 PNG, served for every `/media/...` URL (covers).
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def stamp(moment: datetime) -> str:
    """The spec's timestamps: ISO 8601, millisecond precision, UTC, `Z`."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class SpecArticle:
    """An article as the spec's Article resource; `to_json` computes `contentHash`."""

    id: str
    slug: str
    title: str
    content: str
    published_at: datetime
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    cover: bool = False
    #: fields sent as given, over the computed ones: a service that breaks the spec's rules.
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self, base_url: str) -> dict[str, Any]:
        digest = hashlib.sha256(
            "\n".join([self.title, self.description or "", self.content, ",".join(self.tags)]).encode()
        ).hexdigest()
        return {
            "id": self.id,
            "slug": self.slug,
            "title": self.title,
            "description": self.description,
            "content": self.content,
            "coverImageUrl": f"{base_url}/media/{self.id}.png" if self.cover else None,
            "inlineImageUrls": [],
            "tags": self.tags,
            "seoKeywords": [],
            "seoScore": None,
            "schemaOrgJson": None,
            "publishedAt": stamp(self.published_at),
            "updatedAt": stamp(self.published_at),
            "viewCount": 0,
            "contentHash": digest,
            **self.raw,
        }


def make_articles(count: int, *, cover: bool = False, words: int = 12) -> dict[str, SpecArticle]:
    """`count` small articles, newest first, ids shaped like CUIDs."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    made = {}
    for n in range(count):
        article = SpecArticle(
            id=f"c{n:024d}",
            slug=f"article-{n}",
            title=f"Article {n}",
            content=" ".join(f"word{n}x{w}" for w in range(words)) + "\n",
            published_at=start + timedelta(minutes=n),
            description=f"About {n}",
            tags=["spec"],
            cover=cover,
        )
        made[article.id] = article
    return made


class SpecService:
    """The service (see the module doc). `refresh_token` is the one valid refresh token.

    Two departures for tests of what a client does when a service says more than the spec:
    `accept_encoding` is sent as `Accept-Encoding` on every sync answer (RFC 7694), and
    `refuse_codings` answers `415` (with that header, or an empty one) to any body sent with a
    `Content-Encoding` (a service whose proxy advertises what the service behind does not take).
    """

    def __init__(
        self,
        articles: dict[str, SpecArticle] | None = None,
        *,
        accept_encoding: str | None = None,
        refuse_codings: bool = False,
    ) -> None:
        self.articles: dict[str, SpecArticle] = articles or {}
        self.accept_encoding = accept_encoding
        self.refuse_codings = refuse_codings
        self.refresh_token = "svc_rt_" + secrets.token_urlsafe(24)
        self.access_tokens: set[str] = set()
        self.requests: list[tuple[str, str, str | None]] = []
        self.last_sync_at: str | None = None
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                service.handle(self, "GET")

            def do_POST(self) -> None:
                service.handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- one request ---------------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path.split("?", 1)[0]
        with self.lock:
            self.requests.append((method, path, handler.headers.get("Content-Encoding")))
        if handler.headers.get("Transfer-Encoding"):
            return self._send(handler, 411, {"error": "invalid_request", "error_description": "Length required"})
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        if method == "GET" and path.startswith("/media/"):
            return self._send_bytes(handler, 200, PNG, "image/png")
        if method == "POST" and path == "/api/oauth/token":
            return self._token(handler, body)
        if path.startswith("/api/v1/"):
            header = handler.headers.get("Authorization", "")
            if not (header.startswith("Bearer ") and header[7:] in self.access_tokens):
                return self._send(
                    handler,
                    401,
                    {"error": "invalid_token", "error_description": "Access token is missing, expired, or invalid."},
                )
            if method == "GET" and path == "/api/v1/status":
                return self._send(handler, 200, self._status())
            if method == "POST" and path == "/api/v1/sync":
                if self.refuse_codings and handler.headers.get("Content-Encoding"):
                    return self._send(
                        handler,
                        415,
                        {"error": "unsupported_media_type"},
                        {"Accept-Encoding": self.accept_encoding or ""},
                    )
                return self._sync(handler, body)
        return self._send(handler, 404, {"error": "not_found", "error_description": "Not found"})

    def _token(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if form.get("client_id") != CLIENT_ID:
            return self._send(handler, 401, {"error": "invalid_client"})
        with self.lock:
            if form.get("grant_type") != "refresh_token" or form.get("refresh_token") != self.refresh_token:
                return self._send(handler, 400, {"error": "invalid_grant"})
            self.refresh_token = "svc_rt_" + secrets.token_urlsafe(24)  # mandatory rotation
            access = "svc_at_" + secrets.token_urlsafe(24)
            self.access_tokens.add(access)
            answer = {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": self.refresh_token,
                "scope": "articles:read blog:read",
            }
        return self._send(handler, 200, answer)

    def _status(self) -> dict[str, Any]:
        return {
            "status": "active",
            "blog": {
                "id": "cblog00000000000000000000",
                "name": "Spec blog",
                "slug": "spec-blog",
                "description": "",
                "language": "en",
                "articleCount": len(self.articles),
            },
            "scopes": ["articles:read", "blog:read"],
            "connectedAt": "2026-01-01T00:00:00.000Z",
            "lastSyncAt": self.last_sync_at,
        }

    def _sync(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        try:
            known = json.loads(body)["knownArticles"]
            held = {entry["id"]: entry["contentHash"] for entry in known}
        except (ValueError, KeyError, TypeError):  # a gzip body lands here: the spec shows JSON only
            return self._send(handler, 400, {"error": "invalid_request"})
        base = self.url
        with self.lock:
            current = {article_id: article.to_json(base) for article_id, article in self.articles.items()}
            self.last_sync_at = stamp(datetime.now(timezone.utc))
        ordered = sorted(current.values(), key=lambda a: a["publishedAt"], reverse=True)
        extra = {} if self.accept_encoding is None else {"Accept-Encoding": self.accept_encoding}
        return self._send(
            handler,
            200,
            {
                "new": [a for a in ordered if a["id"] not in held],
                "updated": [a for a in ordered if a["id"] in held and held[a["id"]] != a["contentHash"]],
                "deleted": [article_id for article_id in held if article_id not in current],
                "syncedAt": self.last_sync_at,
            },
            extra,
        )

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        SpecService._send_bytes(handler, status, json.dumps(value).encode("utf-8"), "application/json", headers)

    @staticmethod
    def _send_bytes(
        handler: BaseHTTPRequestHandler,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


class SpecLiteral:
    """WSGI filter: the reference service as a spec-literal one sees compression (for benchmarks
    that need the reference service's data and listing). A sync body sent with a
    `Content-Encoding` other than identity is read as the JSON it is not (`400 invalid_request`),
    and no answer says `Accept-Encoding`. `coded` counts the compressed bodies refused."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.coded = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        coding = environ.get("HTTP_CONTENT_ENCODING", "").strip().lower()
        if environ.get("PATH_INFO") == "/api/v1/sync" and coding not in ("", "identity"):
            self.coded += 1
            body = json.dumps({"error": "invalid_request", "error_description": "Request body is not valid JSON"})
            start_response(
                "400 BAD REQUEST", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body.encode("utf-8")]

        def without_accept_encoding(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            return start_response(status, [(k, v) for k, v in headers if k.lower() != "accept-encoding"], *rest)

        return self.app(environ, without_accept_encoding)
