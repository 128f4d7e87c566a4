"""Fixtures of the plugin's tests that more than one module uses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    import datetime
    import http.server
    import ipaddress
    import ssl
    import threading

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )

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
