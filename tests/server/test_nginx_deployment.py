"""The documented production shape, run for real: Debian's nginx with TLS (a certificate made
here) in front of `server run --workers 2` on PostgreSQL with `--public-url https://...` and
`--proxy-hops 1`, nginx's `server` block taken from the Server page itself.

Checked through it: a sign-in and consent complete, and the sign-in cookie is `Secure`; the
per-address sign-in limit keys on the real client's address (two clients on two loopback
addresses, behind one proxy address) and ignores an `X-Forwarded-For` sent from outside; slow
request bodies are buffered by nginx, so stalled uploads do not hold the workers' threads; and a
sync body of several MiB passes the proxy's body limit.

nginx runs unprivileged on a free high port, with its configuration, pid file, logs and
temporary files in the test's folder (`-p`, `-c`, `daemon off`). Skipped, saying so, where
nginx is not installed (`.ci/install-system-packages` installs it).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_owner, free_port, issue_access_token
from tests.server.oauth_support import (
    Authorized,
    add_client,
    authorize_url,
    exchange,
    pkce_pair,
    query_of,
)
from tests.tlscert import self_signed

pytestmark = pytest.mark.slow

SERVER_PAGE = Path(__file__).parents[2] / "example-site" / "docs" / "reference" / "server.md"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def documented_server_block() -> str:
    """The nginx `server { ... }` block of the Server page, as an operator would copy it."""
    blocks = re.findall(r"```nginx\n(.*?)```", SERVER_PAGE.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1, "the Server page shows one nginx configuration"
    return str(blocks[0])


def nginx_config(folder: Path, port: int, backend: int, cert: Path, key: Path) -> str:
    """The documented block on this test's port, certificate and backend, in a configuration
    that keeps everything nginx writes in `folder`."""
    block = documented_server_block()
    replacements = [
        (r"listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        (r"ssl_certificate\s+\S+;", f"ssl_certificate {cert};"),
        (r"ssl_certificate_key\s+\S+;", f"ssl_certificate_key {key};"),
        (r"proxy_pass http://127\.0\.0\.1:8000;", f"proxy_pass http://127.0.0.1:{backend};"),
        (r"server_name \S+;", "server_name 127.0.0.1;"),
    ]
    for pattern, replacement in replacements:
        block, count = re.subn(pattern, replacement, block)
        assert count == 1, f"the documented nginx block has no {pattern!r}"
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # As root, nginx's workers would switch to `nobody`, who cannot enter the test's folder.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    return (
        f"{user}daemon off;\nworker_processes 1;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} info;\n"
        f"events {{ worker_connections 256; }}\nhttp {{\n    access_log {folder / 'access.log'};\n{temp}\n{block}}}\n"
    )


@dataclass
class Deployment:
    url: str
    service: LiveServer
    db: Database
    tls: ssl.SSLContext
    nginx: subprocess.Popen[bytes]
    folder: Path

    def client(self, source: str = "127.0.0.1") -> httpx.Client:
        """A client of nginx from a loopback `source` address (127.0.0.2... stand for other hosts)."""
        return httpx.Client(base_url=self.url, transport=self.transport(source), timeout=30, follow_redirects=False)

    def transport(self, source: str = "127.0.0.1") -> httpx.HTTPTransport:
        return httpx.HTTPTransport(verify=self.tls, local_address=source)


@pytest.fixture
def deployment(tmp_path: Path, postgres_url: str) -> Iterator[Deployment]:
    if NGINX is None:
        pytest.skip("nginx is not installed: `apt-get install nginx` (.ci/install-system-packages does it)")
    folder = tmp_path / "nginx"
    folder.mkdir()
    cert, key = self_signed(folder)
    port, backend = free_port(), free_port()
    url = f"https://127.0.0.1:{port}"
    db = Database.open(postgres_url)
    service = _start_backend(tmp_path, postgres_url, backend, url)
    (folder / "nginx.conf").write_text(nginx_config(folder, port, backend, cert, key))
    log = (folder / "nginx.out").open("wb")
    nginx = subprocess.Popen([NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf")], stdout=log, stderr=log)
    tls = ssl.create_default_context(cafile=str(cert))
    try:
        deadline = time.monotonic() + 20
        while True:
            if nginx.poll() is not None:
                raise RuntimeError(
                    f"nginx exited: {(folder / 'nginx.out').read_text()} {(folder / 'error.log').read_text()}"
                )
            try:
                httpx.get(f"{url}/openapi.json", verify=tls, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield Deployment(url, service, db, tls, nginx, folder)
    finally:
        nginx.terminate()
        try:
            nginx.wait(timeout=10)
        except subprocess.TimeoutExpired:
            nginx.kill()
            nginx.wait()
        log.close()
        service.stop()
        db.dispose()


def _start_backend(tmp_path: Path, database_url: str, port: int, public_url: str) -> LiveServer:
    """`server run --workers 2` as the Server page runs it behind nginx, on `port`."""
    log_path = tmp_path / "service.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mkdocs_blogsvc",
                "server",
                "run",
                "--db",
                database_url,
                "--port",
                str(port),
                "--workers",
                "2",
                "--threads",
                "4",
                "--public-url",
                public_url,
                "--proxy-hops",
                "1",
                "--rate-limit",
                "signin_address=3/900",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    server = LiveServer(f"http://127.0.0.1:{port}", tmp_path / "service.db", process, database_url)
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')}")
        try:
            httpx.get(f"{server.url}/openapi.json", timeout=1)
            return server
        except httpx.TransportError:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.1)


def sign_in_attempt(http: httpx.Client, url: str, username: str, password: str, **headers: str) -> httpx.Response:
    page = http.get(url, headers=headers)
    csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    return http.post(url, data={"csrf_token": csrf, "username": username, "password": password}, headers=headers)


def test_a_sign_in_completes_through_nginx_with_a_secure_cookie(deployment: Deployment) -> None:
    owner = add_owner(deployment.db)
    client = add_client(deployment.db, public=True)
    verifier, challenge = pkce_pair()
    url = authorize_url(client, code_challenge=challenge, code_challenge_method="S256").replace(
        "http://testserver", deployment.url
    )
    with deployment.client() as http:
        page = http.get(url)
        cookie = page.headers["set-cookie"]
        assert "Secure" in cookie and "HttpOnly" in cookie, cookie
        assert f'action="{deployment.url}' in page.text or 'action="/' in page.text
    location = drive_consent(url, username=owner.username, password=owner.password, transport=deployment.transport())
    code = query_of(location)["code"]
    with deployment.client() as http:
        tokens = exchange(http, client, Authorized(code, verifier, client.redirect_uri)).json()
        status = http.get("/api/v1/status", headers={"Authorization": f"Bearer {tokens['access_token']}"})
        assert status.status_code == 200 and status.json()["blog"]["slug"] == owner.blog_slug
        # A sync body of several MiB passes the proxy's body limit (nginx's default is 1 MiB).
        known = [{"id": f"c{i:024d}", "contentHash": "0" * 64} for i in range(40_000)]
        sync = http.post(
            "/api/v1/sync", json={"knownArticles": known}, headers={"Authorization": f"Bearer {tokens['access_token']}"}
        )
        assert sync.status_code == 200, sync.text[:300]
        assert len(sync.json()["deleted"]) == 40_000
        assert http.get("/openapi.json").json()["servers"][0]["url"].startswith(deployment.url)


def test_per_address_limits_see_the_real_client_not_the_proxy_or_a_spoofed_header(deployment: Deployment) -> None:
    """Two clients (127.0.0.2 and 127.0.0.3) reach the service through nginx, which connects from
    127.0.0.1: the limit (3 failed sign-ins per address) locks out the first alone, although it
    sends a new X-Forwarded-For with every attempt, and nginx's access log names both."""
    client = add_client(deployment.db, public=True)
    url = authorize_url(client, code_challenge="x" * 43, code_challenge_method="S256").replace(
        "http://testserver", deployment.url
    )
    with deployment.client("127.0.0.2") as attacker, deployment.client("127.0.0.3") as other:
        for attempt in range(3):  # each with another username: the per-account limit stays out of it
            answer = sign_in_attempt(
                attacker, url, f"user{attempt}", "guess", **{"X-Forwarded-For": f"10.0.0.{attempt}"}
            )
            assert answer.status_code == 200 and "Wrong username or password." in answer.text
        locked = sign_in_attempt(attacker, url, "user9", "guess", **{"X-Forwarded-For": "10.9.9.9"})
        assert locked.status_code == 429 and "Too many failed sign-ins for this address" in locked.text
        elsewhere = sign_in_attempt(other, url, "user9", "guess")
        assert elsewhere.status_code == 200 and "Wrong username or password." in elsewhere.text
    access_log = (deployment.folder / "access.log").read_text()
    assert "127.0.0.2 " in access_log and "127.0.0.3 " in access_log


def test_slow_bodies_are_buffered_by_nginx(deployment: Deployment) -> None:
    """24 uploads that send their headers and half a body, then stall: more than the service's
    2 workers x 4 threads. nginx holds them (it reads a whole body before it passes a request
    on), so the service answers others as usual; without a proxy each would hold a thread."""
    owner = add_owner(deployment.db)
    token = issue_access_token(deployment.db, owner)
    stalled: list[ssl.SSLSocket] = []
    try:
        for _ in range(24):
            raw = socket.create_connection(("127.0.0.1", int(deployment.url.rsplit(":", 1)[1])), timeout=10)
            sock = deployment.tls.wrap_socket(raw, server_hostname="127.0.0.1")
            sock.sendall(
                f"POST /api/v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode()
                + b'{"knownArticles":['
                + b" " * 400
            )
            stalled.append(sock)
        time.sleep(1)
        with deployment.client() as http:
            for _ in range(3):
                answer = http.get("/api/v1/status", headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 200
        # The stalled uploads never reached the service: its access log has no sync.
        assert "/api/v1/sync" not in (deployment.service.db_path.parent / "service.log").read_text()
    finally:
        for sock in stalled:
            sock.close()
