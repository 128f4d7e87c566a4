"""Request bodies as gunicorn hands them to the service, in-process: the request is parsed by
gunicorn's own parser from raw bytes (or from a socket) and its WSGI environ built by gunicorn,
then the real application answers it. Bad chunking is a 400, a body past the limit a 413
(by `Content-Length` or chunked), a stalled body a 408, and the unread rest of a body is
drained, within a cap. (`test_malformed_traffic.py` sends the same bytes to real processes.)"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from flask import Flask
from gunicorn.config import Config
from gunicorn.http import wsgi as gunicorn_wsgi
from gunicorn.http.parser import RequestParser
from werkzeug.test import EnvironBuilder

from mkdocs_blogsvc.server import bodies
from mkdocs_blogsvc.server.app import MAX_REQUEST_BYTES
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, issue_access_token

PEER = ("127.0.0.1", 50000)
TOKEN_HEAD = b"POST /api/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"


@pytest.fixture
def conn() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair: the server's end (`gunicorn.socket`) and the client's."""
    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        yield server_end, client_end


def gunicorn_environ(source: Iterable[bytes] | socket.socket, server_end: socket.socket) -> dict[str, Any]:
    """The WSGI environ gunicorn builds for the first request read from `source`."""
    cfg = Config()
    request = next(iter(RequestParser(cfg, source, PEER)))
    _response, environ = gunicorn_wsgi.create(request, server_end, PEER, ("127.0.0.1", 8000), cfg)
    return environ


def call(app: Flask, environ: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The application's status and JSON answer (called directly: the environ is not copied)."""
    status: list[str] = []
    chunks = app(environ, lambda line, _headers, _exc_info=None: status.append(line))
    body = b"".join(chunks)
    return int(status[0].split(" ")[0]), json.loads(body) if body else {}


def chunked(body: bytes) -> bytes:
    return b"Transfer-Encoding: chunked\r\n\r\n%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


@pytest.mark.parametrize(
    ("framing", "named"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", "Invalid chunk size: b'zz'"),
        (b"2\r\nabXX0\r\n\r\n", "Invalid chunk terminator"),
    ],
    ids=["size-not-hex", "missing-terminator"],
)
def test_bad_chunking_is_400_and_the_connection_is_left_alone(
    app: Flask, conn: tuple[socket.socket, socket.socket], framing: bytes, named: str
) -> None:
    server_end, _client = conn
    server_end.settimeout(7.0)
    environ = gunicorn_environ([TOKEN_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + framing], server_end)
    status, answer = call(app, environ)
    assert status == 400 and answer["error"] == "invalid_request"
    description = answer["error_description"]
    assert description.startswith("The request body could not be read: ") and named in description
    assert description.endswith("(check its Content-Length or chunked encoding)")
    assert environ[bodies.BODY_FAILED] is True  # not drained: nothing more is read from it
    assert server_end.gettimeout() == 7.0  # the idle timeout was the body's only


def test_a_content_length_past_the_limit_is_413_before_the_body_is_read(
    app: Flask, conn: tuple[socket.socket, socket.socket]
) -> None:
    head = TOKEN_HEAD + b"Content-Length: %d\r\n\r\n" % (MAX_REQUEST_BYTES + 1)
    environ = gunicorn_environ([head, b"grant_type=x"], conn[0])
    status, answer = call(app, environ)
    assert (status, answer["error"]) == (413, "request_too_large")
    assert answer["error_description"] == f"Request body exceeds the limit of {MAX_REQUEST_BYTES} bytes"
    assert bodies.BODY_FAILED not in environ  # the framing is intact: what was sent is drained
    assert environ["wsgi.input"].read() == b""


def test_a_chunked_body_is_413_one_byte_past_the_limit_and_whole_at_it(
    app: Flask, conn: tuple[socket.socket, socket.socket]
) -> None:
    over = gunicorn_environ([TOKEN_HEAD + chunked(b"a" * (MAX_REQUEST_BYTES + 1))], conn[0])
    status, answer = call(app, over)
    assert (status, answer["error"]) == (413, "request_too_large")
    assert f"limit of {MAX_REQUEST_BYTES} bytes" in answer["error_description"]

    at_limit = b"grant_type=client_credentials&pad=" + b"a" * (MAX_REQUEST_BYTES - 34)
    assert len(at_limit) == MAX_REQUEST_BYTES
    status, answer = call(app, gunicorn_environ([TOKEN_HEAD + chunked(at_limit)], conn[0]))
    assert status != 413 and answer["error"] != "request_too_large"  # read whole: the grant is judged


def test_a_body_that_stops_arriving_is_408(
    app: Flask, conn: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Headers and 3 of 10 bytes, then nothing: the idle timeout (made short) ends the wait."""
    monkeypatch.setattr(bodies, "BODY_IDLE_SECONDS", 0.05)
    server_end, client_end = conn
    client_end.sendall(TOKEN_HEAD + b"Content-Length: 10\r\n\r\nabc")
    environ = gunicorn_environ(server_end, server_end)
    status, answer = call(app, environ)
    assert (status, answer) == (
        408,
        {"error": "request_timeout", "error_description": "The request body stopped arriving for 0.05 seconds"},
    )
    assert environ[bodies.BODY_FAILED] is True
    assert server_end.gettimeout() is None  # blocking again, as gunicorn left it


def test_a_sync_body_past_its_limit_is_413_and_exactly_at_it_is_read(
    app: Flask, db: Database, owner: Owner, conn: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sync endpoint's own limit (made small here), with gzip on top."""
    monkeypatch.setattr("mkdocs_blogsvc.server.api.MAX_SYNC_BODY_BYTES", 64)
    head = (
        b"POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer %s\r\n" % issue_access_token(db, owner).encode()
    )
    body = b'{"knownArticles":[]}'.ljust(64)
    status, answer = call(app, gunicorn_environ([head + chunked(body)], conn[0]))
    assert status == 200 and answer["deleted"] == []
    status, answer = call(app, gunicorn_environ([head + chunked(body + b" ")], conn[0]))
    assert (status, answer["error"]) == (413, "request_too_large")
    assert answer["error_description"] == "Request body exceeds the limit of 64 bytes"


def test_an_unread_body_is_drained_and_a_broken_one_is_given_up(
    app: Flask, conn: tuple[socket.socket, socket.socket]
) -> None:
    """A 401 answered without reading the body: the body is read off the connection (else
    gunicorn would take it for the next request); one whose chunking breaks on the way is let
    go, and the 401 still answers."""
    head = b"POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    environ = gunicorn_environ([head + chunked(b'{"knownArticles":[]}')], conn[0])
    status, answer = call(app, environ)
    assert (status, answer["error"]) == (401, "invalid_token")
    assert environ["wsgi.input"].read() == b""  # all of it was read

    broken = gunicorn_environ([head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"], conn[0])
    status, answer = call(app, broken)
    assert (status, answer["error"]) == (401, "invalid_token")


def test_draining_stops_at_its_cap(app: Flask) -> None:
    """A client sending more than the largest body the service takes is not waited for."""
    stream = io.BytesIO(b"x" * (bodies.MAX_DRAINED_BYTES + 1024 * 1024))
    environ = EnvironBuilder(path="/api/v1/sync", method="POST", input_stream=stream).get_environ()
    environ["wsgi.input_terminated"] = True  # the server bounds the input (chunked)
    status, answer = call(app, environ)
    assert (status, answer["error"]) == (401, "invalid_token")
    assert stream.tell() == bodies.MAX_DRAINED_BYTES
