"""Fixtures of the plugin's tests that more than one module uses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tlscert import self_signed

#: The status endpoint's answer of the servers these tests stand up.
STATUS_BODY = {
    "status": "active",
    "blog": {"id": "c1", "name": "B", "slug": "b", "description": "d", "language": "en", "articleCount": 0},
    "scopes": ["blog:read"],
    "connectedAt": "2026-01-02T03:04:05.678Z",
    "lastSyncAt": None,
}


@pytest.fixture
def tls_service(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTPS server on 127.0.0.1 answering the status endpoint, with a self-signed
    certificate for that address; yields its URL and the certificate's PEM file."""
    import http.server
    import ssl
    import threading

    cert_file, key_file = self_signed(tmp_path)

    class Status(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            # the proxy's credentials are for the proxy (the CONNECT) only, never for the service
            leaked = "Proxy-Authorization" in self.headers
            body = json.dumps(
                {"error": "invalid_request", "error_description": "Proxy-Authorization reached the service"}
                if leaked
                else STATUS_BODY
            ).encode()
            self.send_response(400 if leaked else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Status)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}", cert_file
    server.shutdown()
    server.server_close()
