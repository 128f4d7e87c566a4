"""Request bodies: size limits, gzip, 413 for a body that is too large, and the unread rest of
a body read and dropped (`DrainUnreadInput`).

Limits the spec leaves open ("maximum size of knownArticles and maximum request body size:
not shown"), derived from the largest blog the service promises to sync, 100,000 articles:

- a `knownArticles` entry is about 110 bytes of JSON (`{"id":"c…25","contentHash":"…64"}`),
  so 100,000 entries are about 11 MB: the sync body may be up to `MAX_SYNC_BODY_BYTES`
  (16 MiB) on the wire, and, when sent with `Content-Encoding: gzip`, up to
  `MAX_DECOMPRESSED_BYTES` (16 MiB) once decompressed (the cap that stops a zip bomb: the
  decompressor stops one byte past it);
- every other request body stays within the app's `MAX_CONTENT_LENGTH` (1 MiB).

Beyond a limit the answer is `413 request_too_large` naming the limit, whether the body came with
a `Content-Length` or chunked without one (Werkzeug alone cuts a chunked body at the limit and
hands on the truncated text, which then fails as "not valid JSON").
A `Content-Encoding` other than `gzip` or `identity` is `415 unsupported_media_type`; a body
that is not valid gzip is `400 invalid_request`. A body whose framing breaks (bad chunking, a
body shorter than its length) is `400 invalid_request`, and one that stops arriving for
`BODY_IDLE_SECONDS` is `408 request_timeout`.
The sync endpoint's answers carry `Accept-Encoding: gzip` (RFC 7694), which is how a client
learns that it may compress.
"""

from __future__ import annotations

import contextlib
import zlib
from typing import Any

from flask import request
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from mkdocs_blogsvc.server.errors import ApiError
from mkdocs_blogsvc.server.responses import invalid_request

#: The largest blog the service syncs in one request (`knownArticles` entries).
MAX_KNOWN_ARTICLES = 100_000
#: Sync request bodies, as sent (compressed or not).
MAX_SYNC_BODY_BYTES = 16 * 1024 * 1024
#: A gzip body, once decompressed.
MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024
#: The environ key `read_body` sets when the body could not be read (its framing broke, or it
#: stalled): `DrainUnreadInput` then leaves the connection alone, and the server closes it.
BODY_FAILED = "blogsvc.body_failed"
#: Seconds a request body may pause between two reads before the request is refused (408), as
#: nginx's `client_body_timeout` counts them: a stalled upload otherwise holds a gunicorn thread
#: for as long as its client keeps the connection open. (A body that trickles in gets no total
#: deadline here; the documented TLS proxy buffers whole bodies before the service sees them.)
BODY_IDLE_SECONDS = 30.0


def too_large(limit: int, what: str = "Request body") -> ApiError:
    return ApiError(413, "request_too_large", f"{what} exceeds the limit of {limit} bytes")


def read_body(limit: int) -> bytes:
    """The request body as sent, at most `limit` bytes; 413 beyond it, chunked or not (then
    kept, so that `request.form` reads it too)."""
    request.max_content_length = limit  # a larger Content-Length is refused before reading
    sock = request.environ.get("gunicorn.socket") or request.environ.get("werkzeug.socket")
    previous = sock.gettimeout() if sock is not None else None
    try:
        if sock is not None:
            sock.settimeout(BODY_IDLE_SECONDS)
        data = request.get_data(cache=True)
        # Without a Content-Length (chunked), Werkzeug stops at the limit: is there more? (With one,
        # the length is exact: a body of exactly the limit is whole, whatever the WSGI server.)
        more = len(data) >= limit and request.content_length is None and _more_input()
    except Exception as exc:
        if isinstance(exc, RequestEntityTooLarge):  # by Content-Length, before reading: the body is intact
            raise
        request.environ[BODY_FAILED] = True  # nothing more is read from this connection
        if _timed_out(exc):
            raise ApiError(
                408, "request_timeout", f"The request body stopped arriving for {BODY_IDLE_SECONDS:g} seconds"
            ) from None
        if isinstance(exc, HTTPException):
            framing = exc.__cause__ or exc.__context__
            if not isinstance(framing, (OSError, ValueError)):  # Werkzeug's own answer (a client gone mid-body: 400)
                raise
            exc = framing  # Werkzeug's server's error (bad chunking), which Werkzeug's stream wraps in its 400
        raise malformed_framing(exc) from None
    finally:
        if sock is not None:
            with contextlib.suppress(OSError):  # the connection is gone
                sock.settimeout(previous)
    if more:
        raise too_large(limit)
    return data


def _timed_out(exc: BaseException | None) -> bool:
    """Whether `exc`, or an error it was raised from, is the socket's read timeout."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, TimeoutError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def malformed_framing(exc: Exception) -> ApiError:
    """400 for a body whose framing the WSGI server could not read: a chunk size that is not
    hex, a chunk without its CRLF, a body shorter than its `Content-Length`. gunicorn raises its
    `ParseException`s (`InvalidChunkSize`, `ChunkMissingTerminator`...), Werkzeug's one-process
    server an `OSError` (`Invalid chunk header`), which Werkzeug's `LimitedStream` turns into its
    generic 400 `ClientDisconnected`, raised while handling it; either way the connection is not reused (neither server can tell where
    the next request would start)."""
    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return invalid_request(
        f"The request body could not be read: {reason} (check its Content-Length or chunked encoding)"
    )


def _more_input() -> bool:
    """Whether the client's input goes on after what Werkzeug's limited stream let through."""
    try:
        return bool(request.environ["wsgi.input"].read(1))
    except RequestEntityTooLarge:
        return True


def decoded_body(limit: int, decompressed_limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The body with its `Content-Encoding` (gzip or none) undone, within both limits."""
    raw = read_body(limit)
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding != "gzip":
        raise ApiError(415, "unsupported_media_type", "Content-Encoding must be gzip or identity")
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = decompressor.decompress(raw, decompressed_limit + 1)
        if len(data) > decompressed_limit or decompressor.unconsumed_tail:
            raise too_large(decompressed_limit, "Decompressed request body")
        data += decompressor.flush()
    except zlib.error:
        raise invalid_request("Request body is not valid gzip (Content-Encoding: gzip)") from None
    if not decompressor.eof:
        raise invalid_request("Request body is not valid gzip: the stream is truncated")
    if len(data) > decompressed_limit:
        raise too_large(decompressed_limit, "Decompressed request body")
    return data


#: The most `DrainUnreadInput` reads: past the largest body the service takes, a client is
#: not worth the wait (its connection may then break, as gunicorn would break it).
MAX_DRAINED_BYTES = MAX_SYNC_BODY_BYTES + 1024 * 1024


class DrainUnreadInput:
    """WSGI middleware: read what the application left of the request body, when the server
    bounds the input itself (`wsgi.input_terminated`, as gunicorn and a chunked request on
    Werkzeug do). An answer given without reading the body (a 401, a 413 by Content-Length)
    otherwise leaves it in a kept-alive connection, where gunicorn's gthread worker reads it
    as the next request, and the next request on that connection fails (gunicorn issue 3301)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        try:
            return self.app(environ, start_response)
        finally:
            if environ.get("wsgi.input_terminated") and not environ.get(BODY_FAILED):
                _drain(environ["wsgi.input"])


def _drain(stream: Any) -> None:
    left = MAX_DRAINED_BYTES
    try:
        while left > 0:
            chunk = stream.read(min(64 * 1024, left))
            if not chunk:
                return
            left -= len(chunk)
    except Exception:
        return
