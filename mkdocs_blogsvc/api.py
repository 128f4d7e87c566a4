"""The HTTP client of the Blog Content Service: typed results, bounded retries, error mapping.

This module and its default transport (`transport.StdlibTransport`, HTTP/1.1 on `http.client`)
are the only ones that import httpx, so a later switch of HTTP library stays local.
Every httpx exception is turned into `errors.TransportError` (`httpx.InvalidURL` too, which is
not an `httpx.HTTPError`; an image URL from the service that cannot be parsed is
`errors.InvalidResponse`), every spec error object into its `errors.ServiceError` subclass,
every answer that breaks the spec into `errors.InvalidResponse`. Tokens travel in headers and form bodies only, never in URLs or
messages.

Deadlines: a sync calls `begin_deadline()` first; from then on every request, retry, backoff
pause and `Retry-After` wait fits inside that one deadline (`timeout`, default 30 s), and every
response body, API answers included, is read in chunks against it, so a service that hangs or
drip-feeds cannot hold a build longer. Each image download also has its own total deadline
(`MAX_IMAGE_SECONDS`, never past the sync's): a per-read timeout alone resets with every byte.

Retry policy (why it differs by request):
- data calls (GET/POST /api/v1/...) and image downloads retry connection errors, timeouts,
  429 and 5xx with exponential backoff, honouring `Retry-After` (each wait capped);
- the token endpoint is retried only when the request surely never left this machine
  (connect errors). A refresh token is single use: a retry of a refresh the server already
  processed would present a rotated token, which revokes the whole grant. 4xx is never retried.
"""

from __future__ import annotations

import email.utils
import gzip
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import httpx

from mkdocs_blogsvc import __version__, errors, models
from mkdocs_blogsvc.deadline import Deadline
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.redaction import redact
from mkdocs_blogsvc.transport import StdlibTransport, proxy_mounts

USER_AGENT = f"mkdocs-blogsvc/{__version__} (+https://pypi.org/project/mkdocs-blogsvc/)"

#: Sync bodies larger than this are sent gzip-compressed (`Content-Encoding: gzip`), but only to
#: a service that said it takes gzip request bodies (`RequestEncodings`): about 600 known
#: articles; a 100,000-article list (11 MB) becomes about 6 MB on the wire.
GZIP_ABOVE_BYTES = 64 * 1024
#: Longest single wait between two attempts, whatever `Retry-After` asks for.
MAX_RETRY_WAIT = 10.0
#: First backoff step; doubled on each further attempt.
BACKOFF_BASE = 0.5
#: Longest total time for one image download (less when the sync's deadline comes first).
MAX_IMAGE_SECONDS = 20.0

#: What OpenSSL says when the other end of an https address answers in plain http (a 400 page,
#: or closing the connection).
_NOT_TLS = re.compile(r"WRONG_VERSION_NUMBER|UNEXPECTED_EOF_WHILE_READING|HTTP_REQUEST|RECORD_LAYER_FAILURE")
#: httpx errors raised before the request was written: safe to retry even a refresh.
_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
_MAX_DESCRIPTION = 300


class TokenSource(Protocol):
    """Where data calls take their access token from (`credentials.TokenManager`)."""

    def access_token(self) -> str:
        """A token believed valid (refreshing first if it is about to expire)."""

    def refresh_rejected(self, rejected: str) -> str:
        """The service answered 401 to `rejected`: return a fresh token (refresh at most once)."""


#: Largest API answer, decoded (a cold sync of 100,000 short articles is about 200 MB).
MAX_ANSWER_BYTES = 1 << 30
#: Above `EXPANSION_CHECKED_ABOVE` decoded bytes, a compressed answer may be at most this many
#: times larger than what arrived: JSON compresses 5 to 20 times, a decompression bomb (1 MB
#: of gzip that holds a gigabyte of spaces) a thousand times, and is refused before it fills
#: the memory.
MAX_EXPANSION = 100
EXPANSION_CHECKED_ABOVE = 16 << 20
#: How much of a probed answer's body is read (enough for any error object or error page).
PROBE_BODY_LIMIT = 64 * 1024
#: Longest wait for one probe: a check that answers "nothing is there" must be quick.
PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Answer:
    """One HTTP answer as it came, for checks that judge what a server is (`preflight`).

    `json` is the parsed body when it is JSON (else None); `text` the first
    `PROBE_BODY_LIMIT` bytes decoded; `location` the `Location` header of a redirect.
    """

    status_code: int
    content_type: str
    location: str | None
    json: Any
    text: str


class RequestEncodings:
    """What each service (by base URL) said of compressed request bodies, remembered for as long
    as this object lives. Thread-safe.

    The spec shows plain JSON bodies only, so nothing is compressed until a service says it takes
    gzip: an `Accept-Encoding` header on one of its answers (RFC 7694: the codings it accepts in
    requests; empty, none). A 415 to a gzipped body takes gzip back for good."""

    def __init__(self) -> None:
        self._gzip: dict[str, bool] = {}
        self._refused: set[str] = set()
        self._lock = threading.Lock()

    def takes_gzip(self, base_url: str) -> bool:
        """Whether the service at `base_url` said it takes gzip request bodies (never, by default)."""
        with self._lock:
            return self._gzip.get(base_url, False)

    def learn(self, base_url: str, accept_encoding: str) -> None:
        """Remember an `Accept-Encoding` header the service sent, unless it refused gzip once."""
        takes = accepts_gzip(accept_encoding)
        with self._lock:
            self._gzip[base_url] = takes and base_url not in self._refused

    def refuse_gzip(self, base_url: str) -> None:
        """The service answered 415 to a gzip body: never send it one again."""
        with self._lock:
            self._refused.add(base_url)
            self._gzip[base_url] = False


#: The memory of this process: a `mkdocs serve` session learns at its first sync and
#: compresses from its second (a `mkdocs build` syncs once, so it sends its body plain).
PROCESS_ENCODINGS = RequestEncodings()


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an `Accept-Encoding` value (RFC 9110 12.5.3) accepts gzip: `gzip` or `x-gzip`
    with a weight above 0, or `*` above 0 when gzip is not named; an empty value accepts none."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, _, parameters = item.strip().partition(";")
        coding = coding.strip().lower()
        if not coding:
            continue
        weight = 1.0
        name, _, value = parameters.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                weight = float(value.strip())
            except ValueError:
                weight = 0.0  # a weight that cannot be read is not a yes
        weights["gzip" if coding == "x-gzip" else coding] = weight
    if "gzip" in weights:
        return weights["gzip"] > 0
    return weights.get("*", 0.0) > 0


class BlogServiceClient:
    """One connection pool to one service. Thread-safe (image downloads run in threads).

    `tokens` may be set after construction (the token manager needs the client for refreshes,
    and the client needs the manager for data calls).
    """

    def __init__(
        self,
        base_url: str,
        *,
        tokens: TokenSource | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        encodings: RequestEncodings | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: what each service said of compressed request bodies: the process's memory, unless the
        #: caller brings its own, or its own transport (a test's service is not the process's)
        self.encodings = (
            encodings if encodings is not None else (PROCESS_ENCODINGS if transport is None else RequestEncodings())
        )
        self.tokens = tokens
        self._timeout = timeout
        self.retries = max(0, retries)
        self._sleep = sleep
        #: the deadline of the sync under way (`begin_deadline`), None outside a sync.
        self.deadline: Deadline | None = None
        self._http = httpx.Client(
            transport=transport if transport is not None else StdlibTransport(),
            mounts=proxy_mounts() if transport is None else None,  # given a transport, httpx reads no proxies
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            follow_redirects=False,
        )

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BlogServiceClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BlogServiceClient({self.base_url!r})"

    def begin_deadline(self, seconds: float | None = None) -> Deadline:
        """Start the one deadline of a sync: `seconds` (default: `timeout`) for everything
        that follows, retries and pauses included."""
        self.deadline = Deadline(
            self._timeout if seconds is None else seconds,
            what=f"the sync with the Blog Content Service at {self.base_url}",
        )
        return self.deadline

    def _timeout_for(self, deadline: Deadline | None) -> httpx.Timeout | None:
        """httpx's per-operation timeouts, never longer than what is left of `deadline`."""
        if deadline is None:
            return None
        left = deadline.timeout(self._timeout)
        return httpx.Timeout(left, connect=min(left, 10.0))

    def _pause(self, wait: float, deadline: Deadline | None) -> bool:
        """Wait before a retry; False when the wait would pass the deadline (give up now)."""
        if deadline is not None and wait >= deadline.remaining():
            return False
        self._sleep(wait)
        return True

    # --- data endpoints --------------------------------------------------------------------

    def status(self) -> models.BlogStatus:
        """`GET /api/v1/status`: the connected blog and the token's scopes."""
        return models.BlogStatus.from_json(self._authorized("GET", "/api/v1/status"))

    def sync(self, known: Sequence[models.KnownArticle]) -> models.SyncResult:
        """`POST /api/v1/sync` with the articles held locally; the service answers the differences.

        The body is plain JSON, as the spec shows it. Above `GZIP_ABOVE_BYTES` it is gzipped
        only when this service said it takes gzip bodies (`Accept-Encoding` on an answer, RFC
        7694); a 415 to a gzipped body sends it again plain, and the service is not sent gzip
        again by this process."""
        path = "/api/v1/sync"
        body = models.sync_body(known)
        plain = {"Content-Type": "application/json"}
        response = None
        if len(body) > GZIP_ABOVE_BYTES and self.encodings.takes_gzip(self.base_url):
            # level 1: hashes barely compress further (10,000 known: 448 kB in 10 ms, level 6 430 kB in 23 ms)
            response = self._authorized_response(
                "POST",
                path,
                content=gzip.compress(body, compresslevel=1),
                headers={**plain, "Content-Encoding": "gzip"},
            )
            if response.status_code == 415:  # RFC 7694 3: the coding is refused; say it once, then plain
                self.encodings.refuse_gzip(self.base_url)
                log.info(
                    "the service at %s refused a gzip-compressed sync body (HTTP 415): sending it "
                    "uncompressed, now and for the rest of this process",
                    self.base_url,
                )
                response = None
        if response is None:
            response = self._authorized_response("POST", path, content=body, headers=plain)
        if "Accept-Encoding" in response.headers:
            self.encodings.learn(self.base_url, response.headers["Accept-Encoding"])
        return models.SyncResult.from_json(self._answer(response, "POST", path))

    # --- images ----------------------------------------------------------------------------

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
        """Fetch an image: `(body, content type)`. No credentials are sent (images may live
        on another host); redirects are followed; a body above `max_bytes` is an error."""
        if not url.lower().startswith(("http://", "https://")):
            raise errors.InvalidResponse(f"image URL {display_url(url)} is not http or https")
        own = min(self._timeout, MAX_IMAGE_SECONDS)
        what = f"the download of image {display_url(url)}"
        limit = (
            "the `timeout` setting" if own == self._timeout else f"each image's limit, at most {MAX_IMAGE_SECONDS:g} s"
        )
        deadline = (
            self.deadline.within(own, what=what, limit=limit)
            if self.deadline
            else Deadline(own, what=what, limit=limit)
        )
        for attempt in range(self.retries + 1):
            try:
                with self._http.stream(
                    "GET",
                    url,
                    headers={"Accept": "image/*"},
                    follow_redirects=True,
                    timeout=self._timeout_for(deadline) or httpx.USE_CLIENT_DEFAULT,
                ) as response:
                    if self._should_retry(response, attempt) and self._pause_fits(response, attempt, deadline):
                        wait = self._wait_for(response, attempt)
                    elif not response.is_success:
                        raise errors.ServiceError(
                            f"image {display_url(url)} could not be downloaded",
                            status_code=response.status_code,
                            error_code="image_unavailable",
                        )
                    else:
                        return self._read_limited(response, url, max_bytes, deadline), _content_type(response)
            except httpx.InvalidURL as exc:
                raise errors.InvalidResponse(
                    f"the service sent an image URL that is not valid, {display_url(url)}: {_detail(exc)}"
                ) from None
            except httpx.HTTPError as exc:
                deadline.check()  # a timeout because the deadline came: say so
                if attempt >= self.retries or isinstance(exc, httpx.UnsupportedProtocol):
                    raise self._transport_error(exc, what=f"image {display_url(url)}") from None
                wait = _backoff(attempt)
            if not self._pause(wait, deadline):
                raise errors.DeadlineExceeded(f"{what} ran out of time before its next attempt")
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause_fits(self, response: httpx.Response, attempt: int, deadline: Deadline | None) -> bool:
        """Whether the wait before retrying `response` fits in the deadline (`Retry-After` is
        respected only within it)."""
        return deadline is None or self._wait_for(response, attempt) < deadline.remaining()

    @staticmethod
    def _read_limited(response: httpx.Response, url: str, max_bytes: int, deadline: Deadline | None = None) -> bytes:
        declared = _header_number(response.headers.get("Content-Length", ""))
        if declared is not None and declared > max_bytes:
            raise errors.InvalidResponse(f"image {display_url(url)} is larger than {max_bytes} bytes")
        _refuse_stacked_encodings(response, url)
        body = bytearray()
        for chunk in response.iter_bytes():
            if deadline is not None:
                deadline.check()  # a total deadline: a byte at a time never resets it
            body += chunk
            if len(body) > max_bytes:
                raise errors.InvalidResponse(f"image {display_url(url)} is larger than {max_bytes} bytes")
        return bytes(body)

    # --- probes ----------------------------------------------------------------------------

    def probe(self, path: str, *, params: Mapping[str, str] | None = None) -> Answer:
        """One unauthenticated `GET` of `path`: no retries, no redirects followed, a short
        timeout, the body read up to `PROBE_BODY_LIMIT`. For checking what answers at
        `base_url` before a user is sent to a browser."""
        url = f"{self.base_url}{path}"
        timeout = httpx.Timeout(min(self._timeout, PROBE_TIMEOUT))
        try:
            with self._http.stream("GET", url, params=params, timeout=timeout) as response:
                _refuse_stacked_encodings(response, url)
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) >= PROBE_BODY_LIMIT:
                        break
                content_type = _content_type(response)
                status, location = response.status_code, response.headers.get("Location")
                encoding = response.encoding or "utf-8"
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from None
        try:
            text = bytes(body[:PROBE_BODY_LIMIT]).decode(encoding, errors="replace")
        except LookupError:  # a charset Python does not know
            text = bytes(body[:PROBE_BODY_LIMIT]).decode("utf-8", errors="replace")
        parsed: Any = None
        if content_type.endswith("json"):
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                parsed = None
        return Answer(status, content_type, location, parsed, text)

    # --- token endpoint --------------------------------------------------------------------

    def token_request(
        self,
        form: Mapping[str, str],
        auth: tuple[str, str] | None = None,
        *,
        now: float | None = None,
        previous_refresh_token: str | None = None,
    ) -> models.TokenSet:
        """`POST /api/oauth/token` (form-encoded). Retried only if the request never left:
        codes and refresh tokens are single use, so an answer lost on the way back is
        `AnswerLost`. `auth` sends HTTP Basic client authentication; `previous_refresh_token`
        stays when a refresh answer brings no new one (RFC 6749 section 6)."""
        url = f"{self.base_url}/api/oauth/token"
        issued_at = time.time() if now is None else now  # before sending: expiry errs early
        deadline = self._deadline_of_request("the token request")
        attempt = 0
        while True:
            deadline.check()  # outside the try: a deadline passed before sending is no lost answer
            try:
                response = self._request(
                    "POST", url, {}, deadline, data=dict(form), auth=auth or httpx.USE_CLIENT_DEFAULT
                )
                break
            except _NEVER_SENT as exc:
                if attempt >= self.retries or isinstance(exc, httpx.UnsupportedProtocol):
                    raise self._transport_error(exc) from None
                if not self._pause(_backoff(attempt), deadline):
                    raise self._transport_error(exc) from None
                attempt += 1
            except httpx.InvalidURL as exc:
                raise self._transport_error(exc) from None
            except (httpx.HTTPError, errors.DeadlineExceeded) as exc:
                # a read timeout at the deadline is the deadline's (the transport's timeout is what was left of it)
                late = isinstance(exc, errors.DeadlineExceeded) or deadline.expired
                reason = str(deadline.exceeded()) if late else f"{_detail(exc)} ({type(exc).__name__})"
                raise errors.AnswerLost(
                    f"the token request reached the Blog Content Service at {self.base_url}, but its answer "
                    f"did not arrive whole: {reason}"
                ) from None
        if not response.is_success:
            raise _service_error(response, default=errors.OAuthError)
        tokens = models.TokenSet.from_token_response(
            _json(response, "the token endpoint"), now=issued_at, previous_refresh_token=previous_refresh_token
        )
        if tokens.lifetime_note is not None:
            log.warning("the token endpoint's answer is outside the spec: %s", tokens.lifetime_note)
        return tokens

    def _deadline_of_request(self, what: str) -> Deadline:
        """The sync's deadline; outside a sync, `timeout` for this request alone, so a service
        that drip-feeds its answer holds no command longer than that."""
        if self.deadline is not None:
            return self.deadline
        return Deadline(self._timeout, what=f"{what} to the Blog Content Service at {self.base_url}")

    # --- plumbing --------------------------------------------------------------------------

    def _authorized(self, method: str, path: str, **kwargs: Any) -> Any:
        """A data call with the bearer token, its answer's JSON (`_answer`)."""
        return self._answer(self._authorized_response(method, path, **kwargs), method, path)

    def _authorized_response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A data call with the bearer token; one refresh and one retry on 401, never more."""
        if self.tokens is None:
            raise errors.NotLoggedIn("this client has no credentials: run `mkdocs-blogsvc login`")
        token = self.tokens.access_token()
        response = self._send(method, path, token, **kwargs)
        if response.status_code == 401 and not _lacks_scope(response):  # a refresh cannot add a scope
            token = self.tokens.refresh_rejected(token)
            response = self._send(method, path, token, **kwargs)
        return response

    @staticmethod
    def _answer(response: httpx.Response, method: str, path: str) -> Any:
        """The JSON of a data call's answer; a redirect, an error or a body that is not JSON raise."""
        if response.is_redirect:
            raise errors.InvalidResponse(
                f"{method} {path} answered HTTP {response.status_code}, a redirect to "
                f"{display_url(response.headers.get('Location', '(no Location)'))}: API calls are not redirected "
                "(the token would go along); if the service moved, set `base_url` in mkdocs.yml to its new address"
            )
        if not response.is_success:
            raise _service_error(response, default=errors.ServiceError)
        return _json(response, f"{method} {path}")

    def _send(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        """One request with bounded retries on connection errors, 429 and 5xx."""
        url = f"{self.base_url}{path}"
        headers = {**kwargs.pop("headers", {}), "Authorization": f"Bearer {token}"}
        deadline = self._deadline_of_request(f"{method} {path}")
        for attempt in range(self.retries + 1):
            try:
                response = self._request(method, url, headers, deadline, **kwargs)
            except httpx.InvalidURL as exc:
                raise self._transport_error(exc) from None
            except httpx.HTTPError as exc:
                deadline.check()  # the timeout was the deadline's: say so
                if attempt >= self.retries or isinstance(exc, httpx.UnsupportedProtocol):
                    raise self._transport_error(exc) from None
                if not self._pause(_backoff(attempt), deadline):
                    raise self._transport_error(exc) from None
                continue
            if not self._should_retry(response, attempt):
                return response
            if not self._pause(self._wait_for(response, attempt), deadline):
                return response  # `Retry-After` beyond the deadline: this answer is final
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(
        self, method: str, url: str, headers: dict[str, str], deadline: Deadline | None, **kwargs: Any
    ) -> httpx.Response:
        """One request whose answer is read in chunks, checking `deadline` between them and
        its size as decoded (`_check_size`)."""
        timeout = self._timeout_for(deadline) or httpx.USE_CLIENT_DEFAULT
        with self._http.stream(method, url, headers=headers, timeout=timeout, **kwargs) as streamed:
            _refuse_stacked_encodings(streamed, url)
            body = bytearray()
            for chunk in streamed.iter_bytes():
                if deadline is not None:
                    deadline.check()
                body += chunk
                _check_size(len(body), streamed.num_bytes_downloaded, url)
            # the body is decoded already: the rebuilt answer must not claim an encoding
            # as bytes: a header decoded as Latin-1 would not encode again as ASCII
            kept = [
                (k, v)
                for k, v in streamed.headers.raw
                if k.lower() not in (b"content-encoding", b"content-length", b"transfer-encoding")
            ]
            return httpx.Response(streamed.status_code, headers=kept, content=bytes(body), request=streamed.request)

    def _should_retry(self, response: httpx.Response, attempt: int) -> bool:
        return attempt < self.retries and (response.status_code == 429 or response.status_code >= 500)

    @staticmethod
    def _wait_for(response: httpx.Response, attempt: int) -> float:
        retry_after = _retry_after(response.headers.get("Retry-After"))
        return min(MAX_RETRY_WAIT, retry_after if retry_after is not None else _backoff(attempt))

    def _transport_error(
        self, exc: httpx.HTTPError | httpx.InvalidURL, *, what: str | None = None
    ) -> errors.TransportError:
        kind = type(exc).__name__
        detail = _detail(exc)
        if what is not None:
            return errors.TransportError(f"could not download {what}: {detail} ({kind})")
        if isinstance(exc, httpx.InvalidURL):
            return errors.TransportError(
                f"cannot send a request to the Blog Content Service at {self.base_url}: the address is "
                f"not a valid URL ({detail}); check `base_url` in mkdocs.yml"
            )
        if isinstance(exc, httpx.TimeoutException):
            hint = "the service did not answer in time: check that it is up, or raise `timeout` in mkdocs.yml"
        elif not isinstance(exc, _NEVER_SENT):
            return errors.TransportError(
                f"the answer of the Blog Content Service at {self.base_url} broke off: {detail} ({kind}); "
                "try again later, and if it persists, check the service and any proxy in between"
            )
        elif self.base_url.startswith("https:") and _NOT_TLS.search(detail):
            hint = (
                "the service does not answer in TLS (https) at that address; if it serves plain http, as the "
                f"reference service does without a TLS proxy in front, set `base_url` to http:{self.base_url[6:]}"
            )
        else:
            hint = "check `base_url` in mkdocs.yml, that the service is running, and your network or proxy"
        return errors.TransportError(
            f"could not reach the Blog Content Service at {self.base_url}: {detail} ({kind}); {hint}"
        )


def _detail(exc: Exception) -> str:
    """An httpx exception's text for a message (token-looking parts scrubbed, length capped)."""
    return redact(str(exc))[:_MAX_DESCRIPTION] or type(exc).__name__


def _backoff(attempt: int) -> float:
    return min(MAX_RETRY_WAIT, BACKOFF_BASE * 2.0**attempt)


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` as seconds (delta-seconds or an HTTP date), or None when absent/unparsable."""
    if not value:
        return None
    seconds = _header_number(value)
    if seconds is not None:
        return float(seconds)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _header_number(value: str) -> int | None:
    """A header's number (`Content-Length`, `Retry-After`): ASCII digits only, as HTTP spells
    them (`str.isdigit` also takes "²" and "١", which `int` and `float` refuse), any length
    (`int` refuses more than 4,300 digits), at most 10**18; None when it is not one."""
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def _refuse_stacked_encodings(response: httpx.Response, url: str) -> None:
    """Refuse an answer compressed more than once (`Content-Encoding: gzip, gzip`). httpx
    decodes each piece that arrives through every layer at once, before any size check can
    look: two layers of gzip turn 600 bytes into 256 MiB, and a few kB into all the memory.
    One layer expands a piece at most about a thousand times, which `_check_size` (and the
    image limit) then catch."""
    codings = [c.strip().lower() for c in response.headers.get("Content-Encoding", "").split(",")]
    codings = [c for c in codings if c not in ("", "identity")]
    if len(codings) > 1:
        raise errors.InvalidResponse(
            f"the answer of {display_url(url)} is compressed {len(codings)} times over "
            f"(Content-Encoding: {', '.join(codings)[:60]}): refused, a decompression bomb hides that way; "
            "check the service and any proxy in between"
        )


def _check_size(decoded: int, received: int, url: str) -> None:
    if decoded > MAX_ANSWER_BYTES or (decoded > EXPANSION_CHECKED_ABOVE and decoded > MAX_EXPANSION * max(received, 1)):
        raise errors.InvalidResponse(
            f"the answer of {display_url(url)} grew to {decoded} bytes from {received} received "
            f"(at most {MAX_ANSWER_BYTES} bytes, and {MAX_EXPANSION} times what arrived): refused"
        )


def _json(response: httpx.Response, what: str) -> Any:
    try:
        value = response.json()
        if _nests_deeper(value, MAX_JSON_DEPTH):
            raise RecursionError  # read, but the code walking it (JSON-LD, the cache) would run out of stack
        # JSON may spell a lone UTF-16 surrogate (`"\ud800"`), which no UTF-8 file can hold
        return _without_lone_surrogates(value) if _SURROGATE_ESCAPE.search(response.content) else value
    except RecursionError:  # `[[[[...` nested hundreds or thousands deep: not an answer the spec allows
        raise errors.InvalidResponse(
            f"{what} answered HTTP {response.status_code} with JSON nested too deeply (more than {MAX_JSON_DEPTH} "
            "levels): refused; the service is broken or not the Blog Content Service, tell its operator"
        ) from None
    except ValueError as exc:
        if not isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):  # JSON, past Python's int digits
            raise errors.InvalidResponse(
                f"{what} answered HTTP {response.status_code} with JSON holding a number too long to read "
                f"({sys.get_int_max_str_digits()} digits at most): refused; the service is broken or not the Blog "
                "Content Service, tell its operator"
            ) from None
        kind = response.headers.get("Content-Type", "no content type")
        raise errors.InvalidResponse(
            f"{what} answered HTTP {response.status_code} with a body that is not JSON ({kind}); check that "
            "`base_url` in mkdocs.yml is the Blog Content Service itself, not a web page or a proxy's sign-in page"
        ) from None


#: How deep lists and objects may nest in the service's JSON: far deeper than its data
#: (`schemaOrgJson` included) needs, and shallow enough for the code that walks it recursively.
MAX_JSON_DEPTH = 100


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether lists and objects nest in `value` more than `limit` deep (walked level by level,
    without recursion)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
    return any(isinstance(node, (dict, list)) for node in level)


#: A `\uD800` to `\uDFFF` escape in JSON text.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _without_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate replaced by U+FFFD (pairs stay the characters they
    spell), so that writing an article to the cache cannot fail on it."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(key): _without_lone_surrogates(item) for key, item in value.items()}
    return value


_STATUS_CLASSES: dict[int, type[errors.ServiceError]] = {
    401: errors.InvalidToken,
    403: errors.InsufficientScope,
    404: errors.NotFound,
    429: errors.RateLimited,
}


def _service_error(response: httpx.Response, *, default: type[errors.ServiceError]) -> errors.ServiceError:
    """The exception for an error answer: by the spec's `error` code first, else by HTTP status."""
    try:
        body = _without_lone_surrogates(response.json())
    except (ValueError, RecursionError):
        body = None
    code = body.get("error") if isinstance(body, dict) else None
    description = body.get("error_description") if isinstance(body, dict) else None
    description = redact(description)[:_MAX_DESCRIPTION] if isinstance(description, str) else ""
    status = response.status_code
    if isinstance(code, str) and code in errors.ERROR_CLASSES:
        return errors.ERROR_CLASSES[code](description, status_code=status)
    cls = errors.ServerError if status >= 500 else _STATUS_CLASSES.get(status, default)
    generic = cls in (errors.ServiceError, errors.OAuthError)
    code_text = redact(code)[:60] if isinstance(code, str) and code else f"http_{status}"
    return cls(description, status_code=status, error_code=code_text if generic else None)


def _lacks_scope(response: httpx.Response) -> bool:
    """A 401 that names `insufficient_scope` (RFC 6750 uses 403 for it; some services send 401)."""
    challenge = response.headers.get("WWW-Authenticate", "")
    return "insufficient_scope" in challenge or isinstance(
        _service_error(response, default=errors.ServiceError), errors.InsufficientScope
    )


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("Content-Type", "")
    return value.split(";")[0].strip().lower()


#: `user:password@` after a URL's scheme: up to the last `@` of the authority, as httpx and urllib read it.
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")


def display_url(url: str) -> str:
    """A URL fit for a log line or a message: without query string and fragment (signed image
    URLs carry their secret there), a user name and password replaced by `***`, and at most
    100 characters."""
    shown = _USERINFO.sub(r"\1***@", url.split("#", 1)[0].split("?", 1)[0])
    return shown if len(shown) <= 100 else shown[:97] + "..."
