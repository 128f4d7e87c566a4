"""`mkdocs-blogsvc server run` as a real process: startup line, admin changes seen at once,
clean exit on SIGTERM and Ctrl-C, refusals, and sign-ins that survive a restart."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx
import pytest

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.wsgi import session_secret
from tests.conftest import LiveServer, Owner, issue_access_token, start_live_server

pytestmark = pytest.mark.slow


def server_command(db_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "mkdocs_blogsvc", "server", "run", "--db", str(db_path), *args]


def seeded_owner(server: LiveServer) -> tuple[dict[str, object], Owner]:
    result = server.admin("seed")
    assert result.returncode == 0, result.stderr
    seeded = json.loads(result.stdout)
    database = Database.from_path(server.db_path)
    try:
        with database.session() as session:
            user_id = session.query(tables.User.id).filter_by(username="demo").scalar()
    finally:
        database.dispose()
    blog = seeded["blog"]
    assert isinstance(blog, dict)
    return seeded, Owner(user_id, "demo", "demo-password", blog["id"], blog["slug"])


def test_a_running_server_sees_admin_changes_at_once(live_server: LiveServer) -> None:
    seeded, owner = seeded_owner(live_server)
    database = Database.from_path(live_server.db_path)
    try:
        token = issue_access_token(database, owner)
    finally:
        database.dispose()
    api = httpx.Client(base_url=live_server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    with api:
        assert api.get("/api/v1/status").json()["blog"]["articleCount"] == seeded["articles"]

        added = live_server.admin(
            "add-article",
            "--blog",
            "demo-blog",
            "--title",
            "Fresh off the press",
            "--content",
            "New!",
            "--base-url",
            live_server.url,
        )
        assert added.returncode == 0, added.stderr
        article = json.loads(added.stdout)
        newest = api.get("/api/v1/articles", params={"limit": 1}).json()["articles"][0]
        assert newest == {key: value for key, value in article.items() if key != "status"}

        assert live_server.admin("unpublish", article["id"]).returncode == 0
        assert api.get(f"/api/v1/articles/{article['id']}").status_code == 404

        assert live_server.admin("advance-clock", "3601").returncode == 0
        expired = api.get("/api/v1/status")
        assert expired.status_code == 401 and expired.json()["error"] == "invalid_token"


def test_home_page_and_hosted_images_over_a_socket(live_server: LiveServer) -> None:
    seeded_owner(live_server)
    home = httpx.get(f"{live_server.url}/", timeout=30)
    assert home.status_code == 200 and "Field Notes" in home.text and "/openapi.json" in home.text
    database = Database.from_path(live_server.db_path)
    try:
        with database.session() as session:
            key = (
                session.query(tables.Article.cover_media_key)
                .filter(tables.Article.cover_media_key.is_not(None))
                .limit(1)
                .scalar()
            )
    finally:
        database.dispose()
    image = httpx.get(f"{live_server.url}/media/{key}", timeout=30)
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert image.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert image.headers.get_list("Date") and len(image.headers.get_list("Date")) == 1


@pytest.mark.parametrize(
    ("stop_signal", "workers"), [(signal.SIGTERM, "1"), (signal.SIGINT, "1"), (signal.SIGTERM, "2")]
)
def test_signals_stop_the_server_cleanly(tmp_path: Path, stop_signal: signal.Signals, workers: str) -> None:
    server = start_live_server(tmp_path / "stop.db", "--workers", workers)
    try:
        server.process.send_signal(stop_signal)
        assert server.process.wait(timeout=15) == 0
    finally:
        server.stop()
    log = (tmp_path / "stop.log").read_text()
    assert "Stopped." in log and "Traceback" not in log


def test_startup_line_names_the_address_and_the_database(tmp_path: Path) -> None:
    db_path = tmp_path / "line.db"
    process = subprocess.Popen(
        server_command(db_path, "--port", "0"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"Blog Content Service on (http://127\.0\.0\.1:(\d+)) \(database (.+)\)\n", line)
        assert match and match.group(3) == str(db_path)
        assert httpx.get(f"{match.group(1)}/", timeout=30).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
    assert process.returncode == 0
    assert f"mkdocs-blogsvc server admin --db {db_path} seed" in stderr  # the hint for an empty database


def test_public_url_is_announced_and_served(tmp_path: Path) -> None:
    db_path = tmp_path / "public.db"
    command = server_command(db_path, "--port", "0", "--public-url", "https://blog.example:8443/")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(
            r"Blog Content Service on (http://127\.0\.0\.1:\d+) \(database .+, public URL https://blog\.example:8443\)\n",
            line,
        )
        assert match, line
        document = httpx.get(f"{match.group(1)}/openapi.json", timeout=30).json()
        assert document["servers"] == [{"url": "https://blog.example:8443"}]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=15)
    assert process.returncode == 0


def test_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    result = subprocess.run(
        server_command(tmp_path / "x.db", "--host", "0.0.0.0"), capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Error: refusing to listen on 0.0.0.0") and "--allow-remote" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            server_command(tmp_path / "x.db", "--port", str(port)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}: ") and "Traceback" not in result.stderr
    assert result.stderr.rstrip().endswith("or pass another --port (0: any free port)"), result.stderr


def test_session_key_is_private_and_stable(tmp_path: Path) -> None:
    db_path = tmp_path / "k.db"
    first = session_secret(str(db_path))
    assert session_secret(str(db_path)) == first and len(first) >= 32
    key_file = tmp_path / "k.db.secret"
    assert key_file.read_text() == first
    if os.name == "posix":
        assert key_file.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.db.secret"]  # no staging file left


def _run_in_process(*args: str) -> Any:
    from click.testing import CliRunner

    from mkdocs_blogsvc.cli import main

    return CliRunner().invoke(main, ["server", "run", "--port", "0", *args])


@pytest.mark.parametrize("kind", ["folder", "dangling-link"])
def test_a_key_file_that_cannot_be_read_is_one_line(tmp_path: Path, kind: str) -> None:
    """Found by review: a folder or a dangling link where the key file goes was a traceback."""
    key_file = tmp_path / "k.db.secret"
    if kind == "folder":
        key_file.mkdir()
    else:
        key_file.symlink_to(tmp_path / "nowhere" / "key")
    result = _run_in_process("--db", str(tmp_path / "k.db"))
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: cannot read the session key file {key_file} (")
    assert result.stderr.endswith("remove what is there (a new key is made) or make it readable, and start again\n")


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ([], 2, "Error: Missing option '--db': name the database, such as server run --db blogs.db"),
        (["--db", "{tmp}/x.db", "--host", "nosuch.invalid"], 1, "Error: cannot listen on nosuch.invalid: "),
        (["--db", "{tmp}"], 1, "check --db: a file this user can read and write, in a folder it can write to"),
    ],
    ids=["no-db", "host-typo", "folder-as-db"],
)
def test_run_names_what_to_fix(tmp_path: Path, args: list[str], status: int, message: str) -> None:
    """Found by review: `--host` with a typo was refused as a remote address, a folder as `--db`
    and a missing `--db` gave no next step."""
    result = _run_in_process(*(arg.format(tmp=tmp_path) for arg in args))
    assert result.exit_code == status, result.output
    assert message in result.stderr.splitlines()[-1], result.stderr
    assert "Traceback" not in result.output


def test_a_sign_in_survives_a_restart(tmp_path: Path) -> None:
    server = start_live_server(tmp_path / "restart.db")
    try:
        seeded, _ = seeded_owner(server)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(b"v" * 50).digest()).rstrip(b"=").decode()
        query = urlencode(
            {
                "client_id": seeded["client_id"],
                "redirect_uri": "http://127.0.0.1:5999/callback",
                "response_type": "code",
                "scope": "articles:read",
                "state": "s",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        with httpx.Client(timeout=30) as browser:
            sign_in = browser.get(f"{server.url}/api/oauth/authorize?{query}")
            assert 'name="password"' in sign_in.text
            form = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', sign_in.text))
            action = re.search(r'<form[^>]*action="([^"]*)"', sign_in.text)
            target = urljoin(str(sign_in.url), action.group(1).replace("&amp;", "&") if action else "")
            signed_in = browser.post(target, data={**form, "username": "demo", "password": "demo-password"})
            assert signed_in.is_redirect

            server.stop()
            server = start_live_server(tmp_path / "restart.db")
            consent = browser.get(f"{server.url}/api/oauth/authorize?{query}")
            assert 'name="decision"' in consent.text and 'name="password"' not in consent.text
    finally:
        server.stop()


def test_a_log_file_of_several_workers_keeps_every_line_whole(tmp_path: Path) -> None:
    """`2> blogsvc.log` (a file opened without O_APPEND, as a shell or systemd's `file:` opens it):
    gunicorn's access log must write through the same descriptor as every other line, or the
    two offsets overwrite each other ("Stopped." over the first access line)."""
    server = start_live_server(tmp_path / "logs.db", "--workers", "2")
    try:
        for path in ("/openapi.json", "/openapi.json", "/no-such-page"):
            httpx.get(f"{server.url}{path}", timeout=30)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=15) == 0
    finally:
        server.stop()
    lines = (tmp_path / "logs.log").read_text().splitlines()
    access = re.compile(r'127\.0\.0\.1 - - \[[^\]]+\] "GET /[\w./-]*" \d{3}')
    assert lines[-1] == "Stopped.", lines
    others = [line for line in lines[:-1] if not access.fullmatch(line) and not line.startswith("No users yet: ")]
    assert others == [], lines
    assert sum('"GET /no-such-page" 404' in line for line in lines) == 1, lines


@pytest.mark.parametrize("workers", ["1", "2"])
def test_forwarded_headers_are_ignored_without_proxy_hops(tmp_path: Path, workers: str) -> None:
    """`--proxy-hops 0` (the default) trusts no proxy, with one process and with gunicorn alike
    (gunicorn would take `X-Forwarded-Proto` from any loopback peer by itself)."""
    server = start_live_server(tmp_path / "hops.db", "--workers", workers)
    try:
        spoofed = {"X-Forwarded-Proto": "https", "X-Forwarded-Ssl": "on", "X-Forwarded-For": "203.0.113.7"}
        answer = httpx.get(f"{server.url}/openapi.json", headers=spoofed, timeout=30)
        assert answer.json()["servers"] == [{"url": server.url}]
    finally:
        server.stop()
