"""The httpx transport of the API client: HTTP/1.1 over the standard library's `http.client`.

Why not httpx's own transport: it imports httpcore, h11 and anyio, about 14 ms of every build
(in a no-change build of 200 articles, a sixth of the plugin's own time: see the Performance
page), while `http.client` is imported by httpx itself.
httpx stays the client: its API, redirects, timeouts, decoding, exceptions, and the proxies the
environment names (`proxy_mounts`). This transport only moves bytes, straight to the server or
through an `http://` proxy (a `CONNECT` tunnel for https, the absolute URL for http; other
proxies go through httpx's own transport): a pool of keep-alive connections per origin, TLS set up as
httpx sets it up (`httpx.create_ssl_context`: certifi, or `SSL_CERT_FILE` / `SSL_CERT_DIR`),
made on the first https request only, and every `http.client` and socket error raised as the
httpx exception of the phase it happened in (a `ConnectError` means the request never left).

The read timeout is a **total** for the answer here, not httpx's per-read timeout: http.client
reads the status line, headers, chunk sizes and trailers in many small reads inside one call,
and a per-read timeout resets with each, so a server dripping its headers (or endless
`100 Continue` heads, or trailer lines) would hold a request forever where no caller could check
a deadline. The API client always asks for what is left of its deadline as the read timeout.
"""

from __future__ import annotations

import base64
import http.client
import io
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx

#: Idle keep-alive connections kept per origin (image downloads run a few threads at once).
MAX_IDLE_PER_ORIGIN = 8
#: Largest piece handed on from a response body: what has arrived, up to this.
CHUNK_BYTES = 64 * 1024

Origin = tuple[str, str, int]
_PROTOCOL_ERRORS = (http.client.HTTPException, ValueError)  # ValueError: a malformed chunk size


def proxy_mounts() -> dict[str, httpx.BaseTransport | None]:
    """The proxies the environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`),
    for `httpx.Client(mounts=...)`: httpx reads them only for a client without a transport of
    its own. Read the way httpx reads them; the hosts `NO_PROXY` exempts (None) go through the
    client's transport. An `http://` proxy is reached through this transport, so the read
    timeout stays a total there too; any other (`https://`, `socks5://`) through httpx's own."""
    # httpx's own reading of the environment (private, and stable: 0.28.1 is httpx's last release)
    from httpx._utils import get_environment_proxies

    transports: dict[str, httpx.BaseTransport] = {}  # one pool per proxy, whatever the patterns

    def through(proxy: str) -> httpx.BaseTransport:
        if proxy not in transports:
            url = httpx.URL(proxy)
            transports[proxy] = StdlibTransport(proxy=url) if url.scheme == "http" else httpx.HTTPTransport(proxy=proxy)
        return transports[proxy]

    return {pattern: None if proxy is None else through(proxy) for pattern, proxy in get_environment_proxies().items()}


class StdlibTransport(httpx.BaseTransport):
    """HTTP/1.1 connections for `httpx.Client(transport=...)`, straight to the server or through
    the `http://` proxy given. Thread-safe."""

    def __init__(self, proxy: httpx.URL | None = None) -> None:
        self._idle: dict[Origin, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self._proxy = proxy
        #: where connections go instead of the server, with a proxy
        self._proxy_address = None if proxy is None else (proxy.host, proxy.port or 80)
        #: `Proxy-Authorization` from the proxy URL's user and password, as httpx sends it
        #: (`httpx.URL` has already percent-decoded them: decoding again would turn a `%41` in a
        #: password into an `A`)
        self._proxy_headers: dict[str, str] = {}
        if proxy is not None and proxy.userinfo:
            credentials = f"{proxy.username}:{proxy.password or ''}".encode()
            self._proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials).decode("ascii")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
        origin = (url.scheme, url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        connection = self._reuse(origin) or self._connect(origin, timeouts.get("connect"))
        # an http URL through a proxy: the proxy is told the whole URL (RFC 9112 3.2.2)
        via_proxy = self._proxy is not None and url.scheme == "http"
        target = f"http://{url.netloc.decode('ascii')}{url.raw_path.decode('ascii')}" if via_proxy else None
        try:
            response = self._exchange(
                connection, request, timeouts, target=target, extra_headers=self._proxy_headers if via_proxy else {}
            )
        except BaseException:
            connection.close()
            raise
        if via_proxy and response.status == 407:  # the proxy's own refusal: the request never reached the server
            connection.close()
            raise httpx.ConnectError(self._via(f"{response.status} {response.reason}"))
        return httpx.Response(
            response.status,
            headers=[(name.encode("latin-1"), value.encode("latin-1")) for name, value in response.getheaders()],
            stream=_ResponseBody(self, origin, connection, response),
            extensions={
                "http_version": b"HTTP/1.0" if response.version == 10 else b"HTTP/1.1",
                "reason_phrase": response.reason.encode("latin-1", "replace"),
            },
        )

    def close(self) -> None:
        with self._lock:
            idle, self._idle = [c for pool in self._idle.values() for c in pool], {}
        for connection in idle:
            connection.close()

    # --- connections -------------------------------------------------------------------------

    def _reuse(self, origin: Origin) -> http.client.HTTPConnection | None:
        """An idle connection to `origin` the server has not closed meanwhile, or None."""
        while True:
            with self._lock:
                pool = self._idle.get(origin)
                if not pool:
                    return None
                connection = pool.pop()
            sock = connection.sock
            # readable while idle: the server closed it (or sent what nobody asked for)
            if sock is not None and not _readable(sock):
                return connection
            connection.close()

    def _release(self, origin: Origin, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            pool = self._idle.setdefault(origin, [])
            if len(pool) < MAX_IDLE_PER_ORIGIN:
                pool.append(connection)
                return
        connection.close()

    def _connect(self, origin: Origin, timeout: float | None) -> http.client.HTTPConnection:
        scheme, host, port = origin
        if self._proxy_address is not None:  # the connection goes to the proxy
            host, port = self._proxy_address
        try:
            if scheme == "https":
                connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                    host, port, timeout=timeout, context=self._tls_context()
                )
                if self._proxy is not None:  # CONNECT, then TLS with the server itself
                    connection.set_tunnel(origin[1], origin[2], headers=self._proxy_headers)
            else:
                connection = http.client.HTTPConnection(host, port, timeout=timeout)
            connection.connect()
            # duck-typed: http.client only sends, reads through `makefile`, sets timeouts and closes
            connection.sock = _TimedSocket(connection.sock)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(self._via(str(exc) or "timed out while connecting")) from exc
        except OSError as exc:  # refused, unknown host, TLS handshake or certificate, tunnel refused
            raise httpx.ConnectError(self._via(str(exc) or type(exc).__name__)) from exc
        return connection

    def _via(self, reason: str) -> str:
        """`reason`, naming the proxy (never its user or password) when there is one."""
        if self._proxy_address is None:
            return reason
        return f"through the proxy {self._proxy_address[0]}:{self._proxy_address[1]}: {reason}"

    def _tls_context(self) -> ssl.SSLContext:
        with self._lock:
            if self._tls is None:  # loading the CA bundle is most of the cost of a TLS context
                self._tls = httpx.create_ssl_context()
            return self._tls

    # --- one exchange ------------------------------------------------------------------------

    @staticmethod
    def _exchange(
        connection: http.client.HTTPConnection,
        request: httpx.Request,
        timeouts: dict[str, float | None],
        *,
        target: str | None,
        extra_headers: dict[str, str],
    ) -> http.client.HTTPResponse:
        """Send `request` exactly as httpx built it (headers, framing) and read the answer's head;
        `target` replaces the URL's path in the request line."""
        body = request.read()
        sock = connection.sock
        assert isinstance(sock, _TimedSocket)  # connected by `_connect`, or checked by `_reuse`
        try:
            sock.settimeout(timeouts.get("write"))
            connection.putrequest(
                request.method,
                target or request.url.raw_path.decode("ascii"),
                skip_host=True,
                skip_accept_encoding=True,
            )
            for name, value in request.headers.raw:
                connection.putheader(name, value)
            for text_name, text_value in extra_headers.items():
                connection.putheader(text_name, text_value)
            chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
            connection.endheaders(body or None, encode_chunked=chunked)
        except TimeoutError as exc:
            raise httpx.WriteTimeout(str(exc) or "timed out while sending") from exc
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__) from exc
        except ValueError as exc:  # a character http.client refuses in the request line or a header
            raise httpx.LocalProtocolError(str(exc)) from exc
        try:
            sock.settimeout(timeouts.get("read"))
            sock.limit(timeouts.get("read"))  # head and body together: see the module's docstring
            return connection.getresponse()
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out while waiting for the answer") from exc
        except _PROTOCOL_ERRORS as exc:  # RemoteDisconnected included: no answer at all
            raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc


class _TimedSocket:
    """A connected socket whose reads after `limit(seconds)` all end within those seconds
    together: each read may wait only for what is left."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._ends: float | None = None

    def __getattr__(self, name: str) -> Any:  # sendall, settimeout, fileno, close...
        return getattr(self._sock, name)

    def limit(self, seconds: float | None) -> None:
        self._ends = None if seconds is None else time.monotonic() + seconds

    def makefile(self, mode: str) -> io.BufferedReader:
        assert mode == "rb"  # all http.client asks for (`HTTPResponse`)
        # the socket's own file underneath: it keeps the socket open until the answer is read,
        # even after http.client closed the connection (`Connection: close`)
        return io.BufferedReader(_TimedReader(self, self._sock.makefile("rb", buffering=0)))

    def before_read(self) -> None:
        if self._ends is not None:
            left = self._ends - time.monotonic()
            if left <= 0:
                raise TimeoutError("the answer did not arrive whole within the read timeout")
            self._sock.settimeout(left)


class _TimedReader(io.RawIOBase):
    """`socket.makefile`'s raw file, each read given only what is left of the time limit."""

    def __init__(self, sock: _TimedSocket, raw: io.RawIOBase) -> None:
        super().__init__()
        self._sock, self._raw = sock, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int | None:  # type: ignore[override]  # stdlib types it narrower
        self._sock.before_read()
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _readable(sock: socket.socket) -> bool:
    """Whether `sock` has something to read now (`poll` where there is one: `select` refuses
    descriptors above 1023)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _ResponseBody(httpx.SyncByteStream):
    """A response body read as it arrives; the connection goes back to the pool when the body
    was read to its end and the server keeps it open, and is closed otherwise."""

    def __init__(
        self,
        transport: StdlibTransport,
        origin: Origin,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
    ) -> None:
        self._transport, self._origin, self._connection, self._response = transport, origin, connection, response
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        response = self._response
        try:
            while chunk := response.read1(CHUNK_BYTES):
                yield chunk
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out while reading the answer") from exc
        except _PROTOCOL_ERRORS as exc:  # IncompleteRead: a chunked answer cut short
            raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__) from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        if response.length:  # http.client ends a body cut short like a whole one: check the length
            raise httpx.RemoteProtocolError(
                f"the server closed the connection {response.length} bytes before the end of the answer"
            )
        self._done = True

    def close(self) -> None:
        self._response.close()  # its file only: the socket stays with the connection
        connection = self._connection
        if self._done and not self._response.will_close and connection.sock is not None:
            self._transport._release(self._origin, connection)
        else:
            connection.close()
