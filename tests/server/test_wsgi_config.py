"""`mkdocs_blogsvc.server.wsgi` in this process: the application a WSGI server builds from
`BLOGSVC_*` variables (each bad one a one-line `DeploymentError`), the shared session key, and
the gunicorn application `server run --workers` runs: its settings, its access log (on stderr,
without query strings) and its worker's own refusals answered as the spec's Error object. The
refusals are made by gunicorn's parser from raw bytes and answered on a socket pair, as its
worker does. (`test_workers.py` runs the same application as real processes.)"""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from gunicorn.http.parser import RequestParser
from gunicorn.http.wsgi import create as gunicorn_environ

from mkdocs_blogsvc.server import wsgi
from mkdocs_blogsvc.server.app import create_app
from mkdocs_blogsvc.server.database import Database, DatabaseError
from mkdocs_blogsvc.server.wsgi import DeploymentError, from_environment, gunicorn_application, session_secret

PEER = ("192.0.2.7", 50000)


def dispose(app: Flask) -> None:
    app.extensions["blogsvc_limiter"].engine.dispose()
    app.extensions["blogsvc_db"].dispose()


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    return {"BLOGSVC_DB": str(tmp_path / "service.db"), "BLOGSVC_SECRET_KEY": "k" * 32}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"BLOGSVC_DB": " "}, "BLOGSVC_DB is not set: give a SQLite file path or a postgresql+psycopg:// URL"),
        ({"BLOGSVC_RATE_LIMITS": "tokens=5/60"}, "BLOGSVC_RATE_LIMITS: unknown rate limit 'tokens' in 'tokens=5/60'"),
        ({"BLOGSVC_PROXY_HOPS": "two"}, "BLOGSVC_PROXY_HOPS='two' is not a number of proxies from 0 to 10: set it"),
        ({"BLOGSVC_PROXY_HOPS": "-1"}, "BLOGSVC_PROXY_HOPS='-1' is not a number of proxies from 0 to 10"),
        ({"BLOGSVC_PROXY_HOPS": "11"}, "BLOGSVC_PROXY_HOPS='11' is not a number of proxies from 0 to 10"),
        ({"BLOGSVC_THREADS": "0"}, "BLOGSVC_THREADS='0' is not a number of threads from 1 to 1024: set it"),
        ({"BLOGSVC_THREADS": "\u00b2"}, "BLOGSVC_THREADS='\u00b2' is not a number of threads from 1 to 1024"),
    ],
    ids=["no-db", "rate-limit", "hops-word", "hops-negative", "hops-over", "threads-zero", "threads-superscript"],
)
def test_each_bad_variable_is_one_line_naming_it_and_its_value(
    environ: dict[str, str], changes: dict[str, str], message: str
) -> None:
    with pytest.raises(DeploymentError) as raised:
        from_environment({**environ, **changes})
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path: Path, environ: dict[str, str]) -> None:
    with pytest.raises(DatabaseError, match=r"^cannot open database .*: folder .* does not exist$"):
        from_environment({**environ, "BLOGSVC_DB": str(tmp_path / "missing" / "service.db")})
    with pytest.raises(DatabaseError, match=r"^unsupported database mysql://"):
        from_environment({**environ, "BLOGSVC_DB": "mysql://u:secret@db/blog"})


def test_the_variables_configure_the_application(environ: dict[str, str]) -> None:
    app = from_environment(
        {
            **environ,
            "BLOGSVC_PUBLIC_URL": "https://blog.example.com/",
            "BLOGSVC_PROXY_HOPS": "1",
            "BLOGSVC_THREADS": "4",
        }
    )
    try:
        assert app.config["SECRET_KEY"] == "k" * 32
        assert app.config["SESSION_COOKIE_SECURE"] is True  # the public URL is https
        assert type(app.wsgi_app).__name__ == "ProxyFix"
        assert app.extensions["blogsvc_db"].writers.slots == 3
    finally:
        dispose(app)


def test_the_module_builds_app_on_first_access(environ: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`wsgi:app`, as a WSGI server imports it: built once from the process's environment."""
    monkeypatch.setattr(wsgi, "_app", None)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    app = wsgi.app
    try:
        assert isinstance(app, Flask) and wsgi.app is app
        assert app.test_client().get("/api/v1/status").status_code == 401
    finally:
        dispose(app)
    with pytest.raises(AttributeError):
        _ = wsgi.application


def test_a_sqlite_session_key_is_a_private_file_every_process_shares(tmp_path: Path) -> None:
    target = str(tmp_path / "service.db")
    first = session_secret(target)
    key_file = tmp_path / "service.db.secret"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(first) == 64
    assert session_secret(target) == first  # read, never made again
    key_file.write_text("short\n")
    with pytest.raises(DeploymentError, match=r"^the session key file .*service.db.secret is damaged: delete it"):
        session_secret(target)


def test_a_database_url_keeps_the_session_key_in_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    first = session_secret(url)  # the database opened for it
    database = Database.open(url)
    try:
        assert session_secret(url, database) == first == database.service_key("session")
    finally:
        database.dispose()
    assert not (tmp_path / "service.db.secret").exists()


def test_the_database_opened_only_for_the_session_key_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    opened: list[Database] = []
    real_open = Database.open

    def recording_open(target: str, **options: Any) -> Database:
        opened.append(real_open(target, **options))
        return opened[-1]

    monkeypatch.setattr(Database, "open", recording_open)
    assert len(session_secret(url)) == 64
    (database,) = opened
    assert database.engine.pool.checkedin() == 0, "the database opened for the key keeps a connection open"


# --- gunicorn (`server run --workers N`) -----------------------------------------------------


@pytest.fixture
def application(tmp_path: Path) -> Iterator[Any]:
    database = Database.from_path(tmp_path / "service.db")
    built: list[Flask] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield gunicorn_application(
            lambda: built.append(create_app(database, secret_key="k" * 32)) or built[-1],
            listener_fd=listener.fileno(),
            workers=3,
            threads=5,
        )
    for app in built:
        dispose(app)
    database.dispose()


def test_gunicorn_settings(application: Any) -> None:
    cfg = application.cfg
    assert (cfg.workers, cfg.threads, cfg.worker_class_str) == (3, 5, "JsonErrorWorker")
    assert cfg.bind[0].startswith("fd://")
    assert cfg.forwarded_allow_ips == []  # no peer sets the scheme; --proxy-hops alone trusts proxies
    assert cfg.access_log_format == '%(h)s - - %(t)s "%(m)s %(U)s" %(s)s'
    if "control_socket_disable" in cfg.settings:
        assert cfg.control_socket_disable is True
    assert isinstance(application.load(), Flask)  # each worker's application, from the factory


def test_the_gunicorn_access_log_is_on_stderr_without_query_strings(
    application: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = application.cfg
    logger = cfg.logger_class(cfg)
    raw = b"GET /authorize?code=secret-code&state=s HTTP/1.1\r\nHost: x\r\n\r\n"
    request = next(iter(RequestParser(cfg, iter([raw]), PEER)))
    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        response, environ = gunicorn_environ(request, server_end, PEER, ("127.0.0.1", 8000), cfg)
        response.start_response("302 FOUND", [("Location", "/")])
        logger.access(response, request, environ, timedelta(milliseconds=3))
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("192.0.2.7 - - [") and err.endswith('] "GET /authorize" 302\n'), err
    assert "secret-code" not in err


def refusal(application: Any, raw: bytes, *, client_gone: bool = False) -> tuple[str, dict[str, str], bytes]:
    """What gunicorn's worker answers when its parser refuses `raw`, read by the client."""
    cfg = application.cfg
    worker = cfg.worker_class(0, os.getpid(), [], application, 30, cfg, cfg.logger_class(cfg))
    try:
        with pytest.raises(Exception) as raised:
            next(iter(RequestParser(cfg, iter([raw]), PEER)))
        server_end, client_end = socket.socketpair()
        with server_end, client_end:
            if client_gone:
                client_end.close()
            worker.handle_error(None, server_end, PEER, raised.value)
            server_end.close()
            received = b"" if client_gone else client_end.makefile("rb").read()
    finally:
        worker.tmp.close()
    if not received:
        return "", {}, b""
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status_line, headers, body


@pytest.mark.parametrize(
    ("raw", "status_line", "error", "named"),
    [
        (
            b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n",
            "HTTP/1.1 414 URI Too Long",
            "request_too_large",
            "Request Line is too large (5014 > 4094)",
        ),
        (
            b"GET / HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(120)) + b"\r\n",
            "HTTP/1.1 431 Request Header Fields Too Large",
            "request_too_large",
            "limit request headers fields",
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",
            "HTTP/1.1 400 Bad Request",
            "invalid_request",
            "CONTENT-LENGTH",
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            "HTTP/1.1 400 Bad Request",
            "invalid_request",
            "CONTENT-LENGTH",
        ),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: bogus\r\n\r\n",
            "HTTP/1.1 501 Not Implemented",
            "not_implemented",
            "Not Implemented: Unsupported transfer coding: 'bogus'",
        ),
    ],
    ids=["request-line", "headers", "two-lengths", "negative-length", "transfer-coding"],
)
def test_gunicorn_refusals_are_the_error_object(
    application: Any, raw: bytes, status_line: str, error: str, named: str
) -> None:
    got_line, headers, body = refusal(application, raw)
    assert got_line == status_line
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    payload = json.loads(body)
    assert payload["error"] == error and named in payload["error_description"], payload


def test_a_gunicorn_refusal_to_a_client_gone_is_let_go(application: Any) -> None:
    assert refusal(application, b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", client_gone=True) == ("", {}, b"")
