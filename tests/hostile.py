"""Stand-in hostile services on loopback sockets, for tests of deadlines.

- `SilentServer` accepts every connection and never sends a byte (a hung service, a black-holed
  load balancer): only a deadline on the client's side ends the wait.
- `DripServer` answers every request with `200` and a body sent one byte at a time, a pause
  between bytes: each read succeeds, so a per-read timeout that resets with every byte never
  fires; only a total deadline ends it.

Both run on threads, listen on 127.0.0.1 with a free port, count what they saw, and close
every connection when their `with` block ends.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self


class _LoopbackServer:
    """Accept loop on 127.0.0.1:0; `handle(conn)` runs on its own thread for each connection."""

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stopped = threading.Event()
        self.connections = 0
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Self:
        thread = threading.Thread(target=self._accept, name=f"{type(self).__name__}-{self.port}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.stopped.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._open.clear()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._open.append(conn)
            worker = threading.Thread(target=self.handle, args=(conn,), daemon=True)
            worker.start()
            self._threads.append(worker)

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError


class SilentServer(_LoopbackServer):
    """Accepts connections and never answers."""

    def handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(0.2)
        except OSError:  # closed by `stop` before this thread began
            return
        while not self.stopped.is_set():  # read and discard what the client sends, say nothing
            try:
                if conn.recv(65536) == b"":
                    return
            except TimeoutError:
                continue
            except OSError:
                return


def _read_request(conn: socket.socket, stopped: threading.Event) -> bytes | None:
    """The request head (up to the blank line), or None if the client went away (or `stop`
    closed the connection before this thread began)."""
    try:
        conn.settimeout(0.2)
    except OSError:
        return None
    data = b""
    while b"\r\n\r\n" not in data:
        if stopped.is_set():
            return None
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


class DripServer(_LoopbackServer):
    """Answers every request with `200`, `content_type` and `body`, one byte every `interval` s."""

    def __init__(self, body: bytes, *, interval: float = 0.5, content_type: str = "image/png") -> None:
        super().__init__()
        self.body = body
        self.interval = interval
        self.content_type = content_type
        self.requests: list[str] = []
        self.bytes_sent = 0

    def handle(self, conn: socket.socket) -> None:
        head = _read_request(conn, self.stopped)
        if head is None:
            return
        with self._lock:
            self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
        header = (
            f"HTTP/1.1 200 OK\r\nContent-Type: {self.content_type}\r\n"
            f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
        ).encode("ascii")
        try:
            conn.sendall(header)
            for index in range(len(self.body)):
                if self.stopped.wait(self.interval):
                    return
                conn.sendall(self.body[index : index + 1])
                with self._lock:
                    self.bytes_sent += 1
        except OSError:
            return  # the client gave up: what a deadline is for


def wait_for(condition: object, timeout: float = 5.0) -> bool:
    """Poll `condition()` until it is true or `timeout` seconds pass (for server-side counters)."""
    assert callable(condition)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


class HangUpServer(_LoopbackServer):
    """Reads what the client sends first, then closes the connection without a word (a plain
    http server meeting a TLS handshake, as gunicorn does)."""

    def handle(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class StatusServer(_LoopbackServer):
    """Answers every request with `status`, `headers` and a JSON error body (a service that
    keeps saying 429 or 503), counting the requests."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.status = status
        self.headers = headers or {}
        self.requests: list[str] = []

    def handle(self, conn: socket.socket) -> None:
        while True:
            head = _read_request(conn, self.stopped)
            if head is None:
                return
            lines = head.split(b"\r\n")
            length = next(
                (int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:")), 0
            )
            body_seen = len(head.split(b"\r\n\r\n", 1)[1])
            while body_seen < length:  # drain the request body
                try:
                    body_seen += len(conn.recv(length - body_seen))
                except OSError:
                    return
            with self._lock:
                self.requests.append(lines[0].decode("latin-1"))
            body = b'{"error": "rate_limited", "error_description": "slow down"}'
            extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
            reply = (
                f"HTTP/1.1 {self.status} Busy\r\nContent-Type: application/json\r\n{extra}"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode("ascii") + body
            try:
                conn.sendall(reply)
            except OSError:
                return


class EndlessHeadServer(_LoopbackServer):
    """Answers every request with `start`, then `more` every `interval` s for `seconds`: an
    answer that never ends where http.client reads it inside one call (a header dripped a byte
    at a time, endless `100 Continue` heads, endless trailer lines of a chunked body)."""

    def __init__(self, start: bytes, more: bytes, *, interval: float = 0.1, seconds: float = 8.0) -> None:
        super().__init__()
        self.start, self.more, self.interval, self.seconds = start, more, interval, seconds
        self.bytes_sent = 0

    def handle(self, conn: socket.socket) -> None:
        if _read_request(conn, self.stopped) is None:
            return
        ends = time.monotonic() + self.seconds
        try:
            conn.sendall(self.start)
            while time.monotonic() < ends and not self.stopped.wait(self.interval):
                conn.sendall(self.more)
                with self._lock:
                    self.bytes_sent += len(self.more)
        except OSError:
            return  # the client gave up: what a deadline is for


class TunnelProxy(_LoopbackServer):
    """An HTTP proxy that only tunnels (`CONNECT host:port`), as corporate proxies in front of
    https do; records each request's head (request line and headers)."""

    def __init__(self) -> None:
        super().__init__()
        self.heads: list[str] = []

    def handle(self, conn: socket.socket) -> None:
        head = _read_request(conn, self.stopped)
        if head is None:
            return
        with self._lock:
            self.heads.append(head.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
        method, target = head.split(b" ", 2)[:2]
        if method != b"CONNECT":
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = target.decode("ascii").rpartition(":")
        with socket.create_connection((host, int(port)), timeout=5) as upstream:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            forward = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
            forward.start()
            _pipe(conn, upstream)
            forward.join(timeout=5)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until either closes."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
