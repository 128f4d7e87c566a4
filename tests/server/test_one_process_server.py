"""`server run`'s one-process server in this process: Werkzeug's threaded server with the
service's request handler (`cli._AccessLog`) on port 0 in a thread, spoken to over raw sockets.
The standard library's own refusals are the spec's Error object, the access log keeps no query
string, and bodies read through Werkzeug's server fail as the spec says (400, 408). Then
`server run` itself: its refusals as one line, and a start, a request and a clean stop on
SIGINT. (`test_cli_server.py` and `test_malformed_traffic.py` do the same to a real process.)"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from werkzeug import serving

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server import bodies, cli
from mkdocs_blogsvc.server.app import create_app
from mkdocs_blogsvc.server.database import Database
from tests.conftest import add_owner, issue_access_token

SYNC_HEAD = "POST /api/v1/sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer {}\r\n"


@pytest.fixture
def port(db: Database) -> Iterator[int]:
    """The service served as `server run` serves it with one process."""
    httpd = serving.make_server(
        "127.0.0.1", 0, create_app(db, secret_key="k" * 32), threaded=True, request_handler=cli._AccessLog
    )
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.socket.getsockname()[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def access_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="werkzeug")
    return caplog


def exchange(port: int, data: bytes, *, shut: bool = False) -> tuple[str, dict[str, str], bytes]:
    """Send `data` on a new connection (then end the sending side if `shut`); the status line,
    headers and everything else until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status_line, headers, body


def error_of(answer: tuple[str, dict[str, str], bytes], status: int) -> dict[str, Any]:
    status_line, headers, body = answer
    assert status_line.split(" ")[1] == str(status), answer
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    payload: dict[str, Any] = json.loads(body)
    return payload


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "werkzeug"]


def test_a_request_line_over_64_kib_is_414_json_and_logged_without_a_path(
    port: int, access_log: pytest.LogCaptureFixture
) -> None:
    answer = exchange(port, b"GET /api/v1/articles/" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    payload = error_of(answer, 414)
    assert payload["error"] == "request_too_large" and "a" * 100 not in payload["error_description"]
    lines = access_lines(access_log)
    assert any(line.endswith('"- -" 414') for line in lines), lines
    assert any("code 414, message Request-URI Too Long" in line for line in lines), lines
    assert not any("a" * 100 in line for line in lines)


def test_a_line_too_short_to_name_a_version_gets_a_status_line_and_headers(port: int) -> None:
    """Python answers an HTTP/0.9-looking line with a bare body; the service answers it with
    a status line, headers and the Error object all the same."""
    answer = exchange(port, b"GET\r\n\r\n")
    assert answer[0] == "HTTP/1.1 400 Bad request syntax ('GET')"
    assert error_of(answer, 400)["error"] == "invalid_request"


def test_a_refused_head_request_has_headers_and_no_body(port: int, access_log: pytest.LogCaptureFixture) -> None:
    many = b"HEAD /api/v1/status HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(150)) + b"\r\n"
    status_line, headers, body = exchange(port, many)
    assert status_line.startswith("HTTP/1.1 431 ") and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) > 0 and body == b""
    assert any(line.endswith('"HEAD /api/v1/status" 431') for line in access_lines(access_log))


def test_the_access_log_keeps_no_query_string(port: int, access_log: pytest.LogCaptureFixture) -> None:
    answer = httpx.get(f"http://127.0.0.1:{port}/api/v1/status?code=secret-code&state=s")
    assert answer.status_code == 401
    lines = access_lines(access_log)
    assert any(line.endswith('"GET /api/v1/status" 401') for line in lines), lines
    assert not any("secret-code" in line for line in lines)


@pytest.mark.parametrize(
    ("framing", "named"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", "Invalid chunk header"),
        (b"-2\r\n{}\r\n0\r\n\r\n", "Negative chunk length not allowed"),
        (b"2\r\n{}XX0\r\n\r\n", "Missing chunk terminating newline"),
    ],
    ids=["not-hex", "negative", "missing-terminator"],
)
def test_bad_chunking_read_by_werkzeug_is_400_naming_the_fault(
    port: int, db: Database, framing: bytes, named: str
) -> None:
    token = issue_access_token(db, add_owner(db))
    request = (SYNC_HEAD.format(token) + "Transfer-Encoding: chunked\r\n\r\n").encode() + framing
    payload = error_of(exchange(port, request), 400)
    assert payload["error"] == "invalid_request"
    assert (
        payload["error_description"]
        == f"The request body could not be read: {named} (check its Content-Length or chunked encoding)"
    )


def test_a_body_cut_short_is_400_and_one_that_stalls_is_408(
    port: int, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = issue_access_token(db, add_owner(db))
    short = (SYNC_HEAD.format(token) + "Content-Length: 30\r\n\r\n").encode() + b'{"knownArticles"'
    payload = error_of(exchange(port, short, shut=True), 400)  # the client ends its side mid-body
    assert payload["error"] == "invalid_request"

    monkeypatch.setattr(bodies, "BODY_IDLE_SECONDS", 0.1)
    payload = error_of(exchange(port, short), 408)  # the client keeps the connection, sends nothing
    assert payload == {
        "error": "request_timeout",
        "error_description": "The request body stopped arriving for 0.1 seconds",
    }


# --- `server run` itself ---------------------------------------------------------------------


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["server", "run", *args])


def test_run_refuses_a_remote_host_an_address_in_use_and_one_it_cannot_take(tmp_path: Path) -> None:
    db = str(tmp_path / "service.db")
    refused = run("--db", db, "--host", "192.0.2.1")
    assert refused.exit_code == 1
    assert refused.output.strip().endswith("pass --allow-remote to do it anyway")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        taken_port = taken.getsockname()[1]
        busy = run("--db", db, "--port", str(taken_port))
    assert busy.exit_code == 1 and len(busy.output.strip().splitlines()) == 1
    assert busy.output.startswith(f"Error: cannot listen on 127.0.0.1:{taken_port}: Address already in use")
    assert busy.output.strip().endswith(
        "stop what uses it (`mkdocs serve` listens on 127.0.0.1:8000 by default too), or pass another --port (0: any free port)"
    )
    absent = run("--db", db, "--host", "192.0.2.1", "--allow-remote", "--port", "0")
    assert absent.exit_code == 1 and absent.output.strip().endswith("check --host and --port"), absent.output
    assert "Traceback" not in refused.output + busy.output + absent.output


def test_run_refuses_a_damaged_session_key_file(tmp_path: Path) -> None:
    db = tmp_path / "service.db"
    Database.from_path(db).dispose()
    (tmp_path / "service.db.secret").write_text("short")
    result = run("--db", str(db), "--port", "0")
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: the session key file {tmp_path / 'service.db.secret'} is damaged: delete it and start again"
    )


@pytest.mark.parametrize("users", [0, 1])
def test_run_serves_until_sigint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, users: int) -> None:
    """`server run` on port 0 in this process (the main thread, where signals are handled):
    a request is answered, SIGINT stops it and the log says so."""
    assert threading.current_thread() is threading.main_thread()
    path = tmp_path / "service.db"
    database = Database.from_path(path)
    for n in range(users):
        add_owner(database, f"user{n}", f"blog-{n}")
    database.dispose()
    started: list[serving.BaseWSGIServer] = []

    def make_server(*args: Any, **kwargs: Any) -> serving.BaseWSGIServer:  # Werkzeug's, noting the server
        started.append(serving.make_server(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(cli, "make_server", make_server)
    answers: list[int] = []
    ports: list[int] = []

    def client() -> None:
        try:
            for _ in range(200):
                if started:
                    break
                threading.Event().wait(0.05)
            ports.append(started[0].socket.getsockname()[1])
            answers.append(httpx.get(f"http://127.0.0.1:{ports[0]}/api/v1/status").status_code)
        finally:
            if started:  # serving, or about to: its handler is installed before it serves
                os.kill(os.getpid(), signal.SIGINT)

    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=client, daemon=True)
    try:
        thread.start()
        result = run("--db", str(path), "--port", "0")
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
        thread.join(10)
    assert result.exit_code == 0, result.output
    assert answers == [401]
    assert result.stdout.startswith(f"Blog Content Service on http://127.0.0.1:{ports[0]} (database ")
    assert result.stderr.endswith("Stopped.\n")
    assert ("No users yet: create the sample blog with" in result.stderr) == (users == 0)
