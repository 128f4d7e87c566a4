"""Malformed requests, sent byte by byte as an attacker would, to both servers (`server run`
and `server run --workers 2` under gunicorn): each gets one 4xx answer with the spec's Error
object, never a 500, a traceback or silence. And on SQLite, a read answers while the write lock
is held and 16 syncs wait for it."""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_owner, free_port, issue_access_token, start_live_server

pytestmark = pytest.mark.slow


@pytest.fixture(params=["one-process", "workers"], scope="module")
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, str]]:
    """The service on SQLite, as one process or as gunicorn workers, and an access token."""
    path = tmp_path_factory.mktemp(request.param) / "service.db"
    db = Database.from_path(path)
    token = issue_access_token(db, add_owner(db))
    db.dispose()
    server = start_live_server(path, *(["--workers", "2"] if request.param == "workers" else []))
    try:
        yield server, token
    finally:
        server.stop()


def exchange_raw(url: str, data: bytes, *, wait: float = 20) -> tuple[int, dict[str, str], bytes]:
    """Send `data` on a new connection; the first answer's status, headers and body."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=wait) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it may answer and close first
            sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"no answer; got {received[:200]!r}")
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split(" ")[1]), headers, body[:length]


def assert_error(answer: tuple[int, dict[str, str], bytes], status: int, error: str) -> dict[str, Any]:
    code, headers, body = answer
    assert code == status, (code, body[:300])
    assert headers["content-type"].startswith("application/json"), headers
    payload: dict[str, Any] = json.loads(body)
    assert payload["error"] == error and payload["error_description"], payload
    assert "Traceback" not in payload["error_description"]
    return payload


def sync_request(token: str, head: str, body: bytes) -> bytes:
    return (
        f"POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\n{head}\r\n"
    ).encode() + body


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n{}\r\n0\r\n\r\n",  # a chunk size that is not hex
        b"2\r\n{}XX0\r\n\r\n",  # a chunk without its CRLF
        b"-2\r\n{}\r\n0\r\n\r\n",  # a negative chunk size
    ],
    ids=["size-not-hex", "missing-terminator", "negative-size"],
)
def test_a_malformed_chunked_body_is_400(served: tuple[LiveServer, str], body: bytes) -> None:
    server, token = served
    answer = exchange_raw(server.url, sync_request(token, "Transfer-Encoding: chunked\r\n", body))
    assert_error(answer, 400, "invalid_request")
    assert httpx.get(f"{server.url}/api/v1/status", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_a_request_line_over_the_limit_is_414(served: tuple[LiveServer, str]) -> None:
    server, _token = served
    request_line = b"GET /api/v1/articles/" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    payload = assert_error(exchange_raw(server.url, request_line), 414, "request_too_large")
    assert "aaaaaaaaaa" * 10 not in payload["error_description"]  # the line is not echoed


def test_headers_over_the_limits_are_431(served: tuple[LiveServer, str]) -> None:
    server, _token = served
    one_long = b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\nX-Long: " + b"b" * 70_000 + b"\r\n\r\n"
    assert_error(exchange_raw(server.url, one_long), 431, "request_too_large")
    many = b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(150)) + b"\r\n"
    assert_error(exchange_raw(server.url, many), 431, "request_too_large")


def test_a_malformed_request_line_is_400(served: tuple[LiveServer, str]) -> None:
    server, _token = served
    assert_error(exchange_raw(server.url, b"GET\r\n\r\n"), 400, "invalid_request")
    assert_error(exchange_raw(server.url, b"GET / HTTP/9.9x\r\nHost: x\r\n\r\n"), 400, "invalid_request")


def test_negative_and_conflicting_lengths(served: tuple[LiveServer, str]) -> None:
    """gunicorn refuses these itself (400, as JSON). Werkzeug's one-process server reads a
    negative length as none (an empty body: the sync's own 400), takes the first of two
    `Content-Length`s (a 400 for the body it then reads), and lets `Transfer-Encoding: chunked`
    win over a `Content-Length` (RFC 9112 6.3); each time it closes the connection after
    answering, so nothing left over is read as another request."""
    server, token = served
    negative = sync_request(token, "Content-Length: -5\r\n", b"")
    assert_error(exchange_raw(server.url, negative), 400, "invalid_request")
    twice = sync_request(token, "Content-Length: 2\r\nContent-Length: 3\r\n", b"{} ")
    assert_error(exchange_raw(server.url, twice), 400, "invalid_request")
    both = sync_request(
        token,
        "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
        b"14\r\n" + b'{"knownArticles":[]}' + b"\r\n0\r\n\r\n",
    )
    code, headers, body = exchange_raw(server.url, both)
    if code == 200:  # Werkzeug: chunked wins, the whole body was read and answered; the connection closes
        assert headers["connection"] == "close"
    else:
        assert_error((code, headers, body), 400, "invalid_request")


def test_a_status_read_answers_while_16_syncs_wait_for_the_write_lock(served: tuple[LiveServer, str]) -> None:
    """The write lock held (another process writing), 16 syncs queued behind it: a status read
    needs no lock, and a thread is kept free for it, so it answers in well under the writers' 5 s
    lock timeout on both servers. Under gunicorn (2 workers x 4 threads) the bulkhead lets 3
    writers a worker wait for the lock (`bulkhead.slots_for`); the others are refused 503 once
    nothing has moved for `bulkhead.PATIENCE` (1 s), which frees their threads at once. One
    process (Werkzeug) starts a thread per request, and all 16 wait (32 slots).

    The figures are printed. The bound is on the median of the 3 reads: one read may land in the
    bulkhead's patience window or behind a scheduling hiccup of a loaded machine without failing
    the test, while the median still says the reads do not wait for the writers."""
    server, token = served
    headers = {"Authorization": f"Bearer {token}"}
    holder = sqlite3.connect(server.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    def one_sync(_: int) -> tuple[int, float, str | None]:
        begun = time.monotonic()
        with httpx.Client(timeout=60) as http:
            answer = http.post(f"{server.url}/api/v1/sync", json={"knownArticles": []}, headers=headers)
        return answer.status_code, time.monotonic() - begun, answer.headers.get("Retry-After")

    reads: list[float] = []
    try:
        with ThreadPoolExecutor(16) as pool:
            syncs = [pool.submit(one_sync, i) for i in range(16)]
            time.sleep(1.0)  # the syncs reach the service and queue for the lock
            for _ in range(3):
                begun = time.monotonic()
                assert httpx.get(f"{server.url}/api/v1/status", headers=headers, timeout=60).status_code == 200
                reads.append(time.monotonic() - begun)
            holder.execute("ROLLBACK")
            results = [sync.result() for sync in syncs]
    finally:
        holder.close()
    print(
        f"\nstatus reads with the write lock held and 16 syncs queued: {', '.join(f'{t:.3f}' for t in reads)} s; "
        f"syncs: {sorted(code for code, _, _ in results)}, slowest {max(t for _, t, _ in results):.2f} s"
    )
    assert statistics.median(reads) < 1.5, f"the reads waited {reads} s: behind the writers"
    assert {code for code, _, _ in results} <= {200, 503}
    assert all(retry == "2" for code, _, retry in results if code == 503)
    # The writers in the bulkhead's slots got the lock once it was given back.
    assert 200 in {code for code, _, _ in results}
    assert max(t for _, t, _ in results) < 15, "a sync waited far past the 5 s lock timeout"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_stalled_body_is_408_after_the_idle_timeout(tmp_path: Path, workers: str) -> None:
    """A body that stops arriving is refused once it has been idle for `BODY_IDLE_SECONDS` (1 s
    here, set in the server process), on both servers, and the thread it held serves again."""
    path = tmp_path / "service.db"
    db = Database.from_path(path)
    token = issue_access_token(db, add_owner(db))
    db.dispose()
    port = free_port()
    code = (
        "import sys; from mkdocs_blogsvc.server import bodies; bodies.BODY_IDLE_SECONDS = 1.0; "
        "from mkdocs_blogsvc.cli import main; sys.argv[0] = 'mkdocs-blogsvc'; main()"
    )
    log = (tmp_path / "service.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", code, "server", "run", "--db", str(path), "--port", str(port), "--workers", workers],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    server = LiveServer(f"http://127.0.0.1:{port}", path, process)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{server.url}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "service.log").read_text()
                time.sleep(0.1)
        stalled = sync_request(token, "Content-Length: 1000\r\n", b'{"knownArticles":[' + b" " * 100)
        payload = assert_error(exchange_raw(server.url, stalled, wait=30), 408, "request_timeout")
        assert "stopped arriving for 1 seconds" in payload["error_description"]
        assert httpx.get(f"{server.url}/api/v1/status", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    finally:
        server.stop()
        log.close()
