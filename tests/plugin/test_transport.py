"""The API client's transport (`transport.StdlibTransport`) against real loopback servers:
keep-alive, servers that close, broken answers, and proxies from the environment."""

from __future__ import annotations

import base64
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc import errors
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.transport import StdlibTransport
from tests.conftest import free_port
from tests.hostile import StatusServer, _LoopbackServer, _read_request, wait_for
from tests.plugin.test_api_client import FixedTokens

#: (request line, number of the request on its connection) -> (bytes to send, keep the connection open)
Script = Callable[[str, int], tuple[bytes, bool]]


def answer(body: bytes) -> bytes:
    """A 200 answer with `body` as JSON, its length declared."""
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode("ascii")
        + body
    )


class ScriptedServer(_LoopbackServer):
    """Answers each request with what `script` says, on as many requests per connection as it
    keeps the connection open; records the request lines."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script
        self.requests: list[str] = []
        self.closed = 0  # connections this server closed after an answer

    def handle(self, conn: socket.socket) -> None:
        number = 0
        while (head := _read_request(conn, self.stopped)) is not None:
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            with self._lock:
                self.requests.append(line)
            reply, keep_open = self.script(line, number)
            number += 1
            try:
                conn.sendall(reply)
                if not keep_open:
                    conn.shutdown(socket.SHUT_RDWR)
                    with self._lock:
                        self.closed += 1
                    return
            except OSError:  # the client left, or the server's block ended and closed it
                return


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(transport=StdlibTransport(), timeout=httpx.Timeout(2.0)) as http:
        yield http


def test_requests_to_one_origin_share_a_kept_alive_connection(client: httpx.Client) -> None:
    with ScriptedServer(lambda line, number: (answer(b'{"n": %d}' % number), True)) as server:
        answers = [client.get(f"{server.url}/api/v1/status?i={i}").json()["n"] for i in range(3)]
        with client.stream("GET", f"{server.url}/api/v1/articles") as streamed:
            streamed_body = streamed.read()
    assert answers == [0, 1, 2] and streamed_body == b'{"n": 3}'
    assert server.connections == 1
    assert server.requests[0] == "GET /api/v1/status?i=0 HTTP/1.1"


def test_a_connection_the_server_closed_while_idle_is_not_reused(client: httpx.Client) -> None:
    """A server that closes after each answer without saying so: once it has, the next request
    opens a new connection instead of failing on the dead one. (A server closing at the very
    moment a request is sent is the race of every keep-alive client: the API client retries.)"""
    with ScriptedServer(lambda line, number: (answer(b"{}"), False)) as server:
        first = client.get(f"{server.url}/a")
        assert wait_for(lambda: server.closed == 1)
        second = client.post(f"{server.url}/b", content=b'{"knownArticles": []}')
    assert first.status_code == second.status_code == 200
    assert server.connections == 2


def test_a_connection_on_a_descriptor_above_1023_is_reused(client: httpx.Client) -> None:
    """`select` refuses descriptors above 1023 (a build watching many files may hold that many):
    the idle check must not."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"this system allows {hard} open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    filler = [socket.socket() for _ in range(1030)]
    try:
        with ScriptedServer(lambda line, number: (answer(b'{"n": %d}' % number), True)) as server:
            assert [client.get(f"{server.url}/{i}").json()["n"] for i in range(2)] == [0, 1]
        assert server.connections == 1
    finally:
        for sock in filler:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_body_left_unread_closes_its_connection(client: httpx.Client) -> None:
    big = b"x" * 300_000
    with ScriptedServer(lambda line, number: (answer(big), True)) as server:
        with client.stream("GET", f"{server.url}/big") as response:
            first = next(response.iter_raw())
        assert 0 < len(first) < len(big)
        assert client.get(f"{server.url}/again").content == big
    assert server.connections == 2


def test_a_chunked_answer_is_read_to_its_end_and_its_connection_reused(client: httpx.Client) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"a":\r\n3\r\n 1}\r\n0\r\n\r\n'
    )
    with ScriptedServer(lambda line, number: (chunked, True)) as server:
        assert client.get(f"{server.url}/one").json() == {"a": 1}
        assert client.get(f"{server.url}/two").json() == {"a": 1}
    assert server.connections == 1


@pytest.mark.parametrize(
    "reply",
    [
        answer(b'{"a": 1}')[:-3],  # closed before Content-Length was sent
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # a chunk size that is not hex
        b"SMTP ready\r\n\r\n",  # not HTTP
        b"",  # closed without a word
    ],
    ids=["truncated-body", "bad-chunk", "not-http", "no-answer"],
)
def test_a_broken_answer_is_an_httpx_protocol_error(client: httpx.Client, reply: bytes) -> None:
    with ScriptedServer(lambda line, number: (reply, False)) as server, pytest.raises(httpx.RemoteProtocolError):
        client.get(f"{server.url}/x").read()


def test_errors_name_the_phase_they_happened_in(client: httpx.Client) -> None:
    with pytest.raises(httpx.ConnectError):  # never sent: the token endpoint may retry it
        client.get(f"http://127.0.0.1:{free_port()}/x")
    silent = ScriptedServer(lambda line, number: (b"", True))  # reads the request, answers nothing
    with silent, pytest.raises(httpx.ReadTimeout):
        client.get(f"{silent.url}/x", timeout=httpx.Timeout(0.3))
    with pytest.raises(httpx.UnsupportedProtocol):
        StdlibTransport().handle_request(httpx.Request("GET", "ftp://127.0.0.1/x"))


def test_a_header_that_would_split_the_request_is_refused_before_sending(client: httpx.Client) -> None:
    with ScriptedServer(lambda line, number: (answer(b"{}"), True)) as server:
        with pytest.raises(httpx.LocalProtocolError):
            client.get(f"{server.url}/x", headers={"X-Note": "a\r\nInjected: yes"})
        assert client.get(f"{server.url}/y").status_code == 200
    assert server.requests == ["GET /y HTTP/1.1"]


def test_the_client_maps_a_refused_connection_to_one_clear_line() -> None:
    refused = (
        r"could not reach the Blog Content Service at http://127\.0\.0\.1:\d+: .*\(ConnectError\); check `base_url`"
    )
    with (
        BlogServiceClient(f"http://127.0.0.1:{free_port()}", retries=0) as client,
        pytest.raises(errors.TransportError, match=refused),
    ):
        client.probe("/api/v1/status")


def test_a_proxy_from_the_environment_carries_the_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """`HTTP_PROXY` as httpx honours it: the client sends through the proxy (its own transport),
    not straight to the service."""
    with StatusServer(200) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with BlogServiceClient("http://blog.invalid", retries=0) as client:
            assert client.probe("/api/v1/status").status_code == 200
    assert proxy.requests == ["GET http://blog.invalid/api/v1/status HTTP/1.1"]


def test_no_proxy_sends_its_hosts_straight_to_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    with StatusServer(200) as proxy, ScriptedServer(lambda line, number: (answer(b"{}"), True)) as service:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with BlogServiceClient(service.url, retries=0) as client:
            assert client.probe("/api/v1/status").json == {}
    assert proxy.requests == [] and service.requests == ["GET /api/v1/status HTTP/1.1"]


def test_an_https_service_through_a_proxy_is_reached_by_a_tunnel_with_the_proxys_credentials(
    tls_service: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`HTTPS_PROXY` with a user and password: a `CONNECT` to the service with `Proxy-Authorization`,
    then TLS verified against the service itself (its certificate, through the tunnel)."""
    from tests.hostile import TunnelProxy

    url, cert_file = tls_service
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with TunnelProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"http://ci%40corp:p%3Ass@127.0.0.1:{proxy.port}")
        with BlogServiceClient(url, tokens=FixedTokens("svc_at_one"), retries=0) as client:
            assert client.status().blog.slug == "b"
    (head,) = proxy.heads
    assert head.startswith(f"CONNECT {url.removeprefix('https://')} HTTP/1.")  # 1.0 or 1.1, by Python version
    assert "Proxy-Authorization: Basic " + base64.b64encode(b"ci@corp:p:ss").decode() in head
    assert "svc_at_one" not in head  # the bearer token travels inside the tunnel only


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_proxy_refusing_the_request_is_named_without_its_password(
    monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    """A 407 is the proxy's answer, not the service's: for an https service the tunnel is refused,
    for an http one the request (which then never reached the service)."""
    with StatusServer(407) as proxy:
        monkeypatch.setenv(f"{scheme.upper()}_PROXY", f"http://ci:hunter2@127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with (
            BlogServiceClient(f"{scheme}://blog.invalid", retries=0) as client,
            pytest.raises(errors.TransportError) as caught,
        ):
            client.probe("/api/v1/status")
    message = str(caught.value)
    refusal = "Tunnel connection failed: 407" if scheme == "https" else "407 "
    assert message.startswith(
        f"could not reach the Blog Content Service at {scheme}://blog.invalid: through the proxy "
        f"127.0.0.1:{proxy.port}: {refusal}"
    ), message
    assert "hunter2" not in message and "\n" not in message


def test_a_proxy_dripping_its_answer_costs_at_most_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: proxied requests went through httpx's own transport, whose per-read
    timeout a dripped head resets: the deadline held only without a proxy."""
    import time

    from tests.hostile import EndlessHeadServer

    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with EndlessHeadServer(b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a") as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with BlogServiceClient("http://blog.invalid", tokens=FixedTokens("svc_at_one"), timeout=1.0) as client:
            client.begin_deadline()
            started = time.monotonic()
            with pytest.raises(errors.DeadlineExceeded, match="did not finish within its 1 s"):
                client.sync([])
            assert time.monotonic() - started < 3
        assert proxy.bytes_sent > 0


@pytest.mark.parametrize(
    ("start", "more"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ", b"a"),
        (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n",
            b"X-T: a\r\n",
        ),
    ],
    ids=["dripped-header", "endless-100-continue", "endless-trailers"],
)
def test_an_answer_that_never_ends_inside_http_client_costs_at_most_the_deadline(start: bytes, more: bytes) -> None:
    """Review finding: http.client reads a status line, headers, `100 Continue` heads and a
    chunked body's trailers inside one call, each read with the per-read timeout: a server
    dripping them held a sync with a 1 s deadline for as long as it liked (here 8 s)."""
    import time

    from tests.hostile import EndlessHeadServer

    with (
        EndlessHeadServer(start, more) as server,
        BlogServiceClient(server.url, tokens=FixedTokens("svc_at_one"), timeout=1.0) as client,
    ):
        client.begin_deadline()
        started = time.monotonic()
        with pytest.raises(errors.DeadlineExceeded, match="did not finish within its 1 s"):
            client.sync([])
        assert time.monotonic() - started < 3
        assert server.bytes_sent > 0  # it kept sending: no per-read timeout could fire


def test_proxy_credentials_are_sent_as_httpx_sends_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: the proxy URL's user and password were percent-decoded twice (httpx.URL
    decodes them already), so a password holding `%41` (written `%2541`) was sent as `A`."""
    from tests.hostile import TunnelProxy

    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with TunnelProxy() as proxy:  # answers 405 to anything but CONNECT, after recording its head
        monkeypatch.setenv("HTTP_PROXY", f"http://ci%40corp:p%2541ss%3A@127.0.0.1:{proxy.port}")
        with BlogServiceClient("http://blog.invalid", retries=0) as client:
            client.probe("/api/v1/status")
        httpx.get("http://blog.invalid/api/v1/status")  # httpx's own transport, the same environment
    ours, theirs = (
        [line for line in head.split("\r\n") if line.startswith("Proxy-Authorization:")] for head in proxy.heads
    )
    assert ours == theirs == ["Proxy-Authorization: Basic " + base64.b64encode(b"ci@corp:p%41ss:").decode()]


def test_only_an_http_proxy_goes_through_this_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """This transport speaks plain HTTP to a proxy: an `https://` or `socks5://` proxy must go
    through httpx's own transport, which can speak TLS or SOCKS to it."""
    from mkdocs_blogsvc.transport import proxy_mounts

    for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("HTTPS_PROXY", "https://127.0.0.1:3129")
    mounts = proxy_mounts()
    assert type(mounts["http://"]) is StdlibTransport and type(mounts["https://"]) is httpx.HTTPTransport
