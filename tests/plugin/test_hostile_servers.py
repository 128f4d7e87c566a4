"""The stand-in hostile services behave as the deadline tests need them to."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.hostile import DripServer, SilentServer, StatusServer, wait_for


def test_silent_server_accepts_and_never_answers() -> None:
    with SilentServer() as server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(server.url + "/api/v1/status", timeout=httpx.Timeout(0.3))
        assert server.connections == 1
    with pytest.raises(OSError):  # closed with its block
        socket.create_connection(("127.0.0.1", server.port), timeout=0.5).close()


def test_drip_server_sends_one_byte_per_read() -> None:
    body = b"\x89PNG\r\n\x1a\n" + bytes(range(8))
    with DripServer(body, interval=0.01) as server:
        # A per-read timeout far longer than the pause never fires: every read gets a byte.
        with httpx.stream("GET", server.url + "/media/a.png", timeout=httpx.Timeout(5.0)) as response:
            assert response.headers["content-type"] == "image/png"
            chunks = list(response.iter_raw())
        assert b"".join(chunks) == body
        assert len(chunks) > 1
        assert server.requests == ["GET /media/a.png HTTP/1.1"]
        assert wait_for(lambda: server.bytes_sent == len(body))


def test_drip_server_stops_when_the_client_leaves() -> None:
    with DripServer(b"x" * 1000, interval=0.01) as server:
        with httpx.stream("GET", server.url + "/big.png", timeout=httpx.Timeout(5.0)) as response:
            next(response.iter_raw())
        assert wait_for(lambda: server.connections == 1)
    assert server.bytes_sent < 1000


def test_retry_after_is_respected_only_within_the_deadline() -> None:
    """A 429 asking for 60 s when the sync has 5 s left: no wait, no retry, one clear error.
    Asking for 0 s: retried, as many times as the client retries."""
    from mkdocs_blogsvc.api import BlogServiceClient
    from mkdocs_blogsvc.errors import RateLimited, ServerError

    class Tokens:
        def access_token(self) -> str:
            return "svc_at_test"

        def refresh_rejected(self, rejected: str) -> str:
            raise AssertionError("no 401 here")

    with StatusServer(429, {"Retry-After": "60"}) as busy:
        client = BlogServiceClient(busy.url, tokens=Tokens(), timeout=5, retries=3)
        client.begin_deadline()
        with pytest.raises(RateLimited):
            client.sync([])
        client.close()
        assert len(busy.requests) == 1
    with StatusServer(503, {"Retry-After": "0"}) as unavailable:
        client = BlogServiceClient(unavailable.url, tokens=Tokens(), timeout=5, retries=3)
        client.begin_deadline()
        with pytest.raises(ServerError):
            client.sync([])
        client.close()
        assert unavailable.requests == ["POST /api/v1/sync HTTP/1.1"] * 4
