"""The API client: against the real reference service in-process, and with `httpx.MockTransport`
only for what the real service cannot produce on demand (429, 5xx, Retry-After, dropped
connections, broken bodies)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc import api, errors, models, redaction
from mkdocs_blogsvc.api import USER_AGENT, BlogServiceClient
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.images import download_all
from tests.conftest import IN_PROCESS_URL, add_article, add_owner, issue_access_token
from tests.e2e.sites import Service
from tests.hostile import HangUpServer
from tests.imagesamples import photo_like
from tests.plugin.conftest import STATUS_BODY

BASE = "http://service.test"


class FixedTokens:
    """A TokenSource handing out given tokens, recording each refresh_rejected call."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.rejected: list[str] = []

    def access_token(self) -> str:
        return self.tokens[0]

    def refresh_rejected(self, rejected: str) -> str:
        self.rejected.append(rejected)
        self.tokens.pop(0)
        return self.tokens[0]


def mock_client(
    handler: Callable[[httpx.Request], httpx.Response], **kwargs: object
) -> tuple[BlogServiceClient, list[float]]:
    sleeps: list[float] = []
    client = BlogServiceClient(
        BASE,
        transport=httpx.MockTransport(handler),
        tokens=kwargs.pop("tokens", FixedTokens("svc_at_one")),
        sleep=sleeps.append,
        **kwargs,
    )
    return client, sleeps


# --- retries and backoff (MockTransport: the real service never answers 429/503 on demand) ---


def test_5xx_is_retried_with_retry_after_capped() -> None:
    answers = iter(
        [
            httpx.Response(503, headers={"Retry-After": "2"}),
            httpx.Response(429, headers={"Retry-After": "3600"}),
            httpx.Response(200, json=STATUS_BODY),
        ]
    )
    client, sleeps = mock_client(lambda request: next(answers))
    with client:
        assert client.status().blog.slug == "b"
    assert sleeps == [2.0, 10.0]  # Retry-After honoured, each wait capped at 10 s


def test_retries_are_bounded_then_mapped() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(429, json={"error": "rate_limited"})

    client, sleeps = mock_client(handler, retries=2)
    with client, pytest.raises(errors.RateLimited):
        client.status()
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]  # exponential backoff without Retry-After

    client, _ = mock_client(lambda request: httpx.Response(502, text="<html>bad gateway</html>"), retries=1)
    with client, pytest.raises(errors.ServerError) as caught:
        client.status()
    assert caught.value.status_code == 502


def test_connection_errors_are_retried_then_reported_without_httpx() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    client, sleeps = mock_client(handler)
    with client, pytest.raises(errors.TransportError) as caught:
        client.sync([])
    assert len(calls) == 4 and len(sleeps) == 3
    message = str(caught.value)
    assert BASE in message and "base_url" in message and "Connection refused" in message
    assert not isinstance(caught.value.__cause__, httpx.HTTPError) and caught.value.__suppress_context__


def test_a_dropped_connection_is_retried_once_then_succeeds() -> None:
    answers: list[Callable[[httpx.Request], httpx.Response]] = [
        lambda request: (_ for _ in ()).throw(httpx.ReadTimeout("timed out", request=request)),
        lambda request: httpx.Response(200, json=STATUS_BODY),
    ]
    client, sleeps = mock_client(lambda request: answers.pop(0)(request))
    with client:
        assert client.status().status == "active"
    assert sleeps == [0.5]


def test_a_refresh_that_may_have_reached_the_server_is_never_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    client, _ = mock_client(handler)
    with client, pytest.raises(errors.TransportError) as caught:
        client.token_request({"grant_type": "refresh_token", "refresh_token": "svc_rt_secret", "client_id": "c"})
    assert len(calls) == 1
    assert "svc_rt_" not in str(caught.value)


def test_a_token_request_that_never_left_is_retried() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(
            200,
            json={
                "access_token": "svc_at_new",
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": "svc_rt_new",
                "scope": "articles:read",
            },
        )

    client, _ = mock_client(handler)
    with client:
        tokens = client.token_request(
            {"grant_type": "refresh_token", "refresh_token": "svc_rt_x", "client_id": "c"}, now=1000.0
        )
    assert len(calls) == 2
    assert tokens.access_expires_at == 4600.0 and tokens.scope == ("articles:read",)
    assert calls[1].headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert "svc_at_new" not in repr(tokens)


@pytest.mark.parametrize("status", [400, 401, 500, 503])
def test_the_token_endpoint_is_not_retried_on_an_answer(status: int) -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(
            status, json={"error": "invalid_grant", "error_description": "Refresh token svc_rt_leak is invalid"}
        )

    client, sleeps = mock_client(handler)
    with client, pytest.raises(errors.InvalidGrant) as caught:
        client.token_request({"grant_type": "refresh_token", "refresh_token": "svc_rt_leak", "client_id": "c"})
    assert len(calls) == 1 and sleeps == []
    assert "svc_rt_leak" not in str(caught.value)  # even a service that echoes tokens is redacted
    assert caught.value.status_code == status


def test_unknown_oauth_errors_keep_their_code() -> None:
    client, _ = mock_client(lambda request: httpx.Response(400, json={"error": "unsupported_grant_type"}))
    with client, pytest.raises(errors.OAuthError) as caught:
        client.token_request({"grant_type": "password"})
    assert type(caught.value) is errors.OAuthError and caught.value.error_code == "unsupported_grant_type"


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        (httpx.Response(200, text="<html>"), "not JSON"),
        (httpx.Response(200, json={"status": "active"}), "'blog'"),
        (httpx.Response(200, json=[1, 2]), "JSON object"),
    ],
)
def test_broken_answers_are_invalid_responses(response: httpx.Response, fragment: str) -> None:
    client, _ = mock_client(lambda request: response)
    with client, pytest.raises(errors.InvalidResponse, match=fragment):
        client.status()


# --- the 401 dance ---------------------------------------------------------------------------


def test_a_401_refreshes_exactly_once_and_retries_once() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        if request.headers["Authorization"] == "Bearer svc_at_two":
            return httpx.Response(200, json=STATUS_BODY)
        return httpx.Response(401, json={"error": "invalid_token"})

    tokens = FixedTokens("svc_at_one", "svc_at_two")
    client, _ = mock_client(handler, tokens=tokens)
    with client:
        client.status()
    assert seen == ["Bearer svc_at_one", "Bearer svc_at_two"]
    assert tokens.rejected == ["svc_at_one"]


def test_a_second_401_raises_invalid_token_without_a_loop() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(
            401, json={"error": "invalid_token", "error_description": "Access token is missing, expired, or invalid."}
        )

    tokens = FixedTokens("svc_at_one", "svc_at_two")
    client, _ = mock_client(handler, tokens=tokens)
    with client, pytest.raises(errors.InvalidToken, match="expired, or invalid") as caught:
        client.status()
    assert len(calls) == 2 and tokens.rejected == ["svc_at_one"]
    assert "svc_at_" not in str(caught.value)


def test_no_token_source_means_not_logged_in() -> None:
    with (
        BlogServiceClient(BASE, transport=httpx.MockTransport(lambda r: httpx.Response(200))) as client,
        pytest.raises(errors.NotLoggedIn, match="mkdocs-blogsvc login"),
    ):
        client.status()


# --- downloads -------------------------------------------------------------------------------


def test_download_streams_without_credentials_and_enforces_the_limit() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/moved":
            return httpx.Response(302, headers={"Location": "https://cdn.test/img.png"})
        if request.url.path == "/big":
            return httpx.Response(200, content=iter([b"x" * 600, b"x" * 600]))  # no Content-Length
        return httpx.Response(200, content=b"\x89PNG....", headers={"Content-Type": "image/png; charset=binary"})

    client, _ = mock_client(handler)
    with client:
        body, kind = client.download("http://other.test/moved?sig=abc", max_bytes=1000)
        assert (body, kind) == (b"\x89PNG....", "image/png")
        with pytest.raises(errors.InvalidResponse, match="larger than 1000 bytes"):
            client.download("https://cdn.test/big", max_bytes=1000)
        with pytest.raises(errors.InvalidResponse, match="not http"):
            client.download("file:///etc/passwd", max_bytes=1000)
    assert all("Authorization" not in request.headers for request in seen)
    assert seen[0].headers["User-Agent"] == USER_AGENT


def test_download_failures_name_the_image_not_its_query() -> None:
    client, _ = mock_client(lambda request: httpx.Response(404), retries=0)
    with client, pytest.raises(errors.ServiceError, match="image http://img.test/a.png could not") as caught:
        client.download("http://img.test/a.png?X-Amz-Signature=secret", max_bytes=10)
    assert "secret" not in str(caught.value) and caught.value.status_code == 404


def test_an_image_url_httpx_cannot_parse_is_one_failed_image(tmp_path: Path) -> None:
    gif = photo_like(4, 4, fmt="GIF")
    client, sleeps = mock_client(
        lambda request: httpx.Response(200, content=gif, headers={"Content-Type": "image/gif"})
    )
    with client:
        with pytest.raises(errors.InvalidResponse, match=r"not valid, http://cdn:bad/x.png: Invalid port: 'bad'"):
            client.download("http://cdn:bad/x.png?sig=secret", max_bytes=1000)
        result = download_all(client, ["http://cdn:bad/x.png", "http://cdn.test/ok.gif"], Cache(tmp_path))
    assert list(result.saved) == ["http://cdn.test/ok.gif"]
    assert list(result.failed) == ["http://cdn:bad/x.png"] and "Invalid port" in result.failed["http://cdn:bad/x.png"]
    assert sleeps == []  # a URL that cannot be parsed is not retried


@pytest.mark.parametrize(
    "call",
    [
        lambda client: client.status(),
        lambda client: client.sync([]),
        lambda client: client.token_request(
            {"grant_type": "refresh_token", "refresh_token": "svc_rt_x", "client_id": "c"}
        ),
    ],
    ids=["status", "sync", "token"],
)
def test_a_base_url_httpx_cannot_parse_is_a_transport_error(call: Callable[[BlogServiceClient], object]) -> None:
    sleeps: list[float] = []
    client = BlogServiceClient(
        "http://host:abc",
        transport=httpx.MockTransport(lambda request: httpx.Response(500)),
        tokens=FixedTokens("svc_at_one"),
        sleep=sleeps.append,
    )
    with client, pytest.raises(errors.TransportError) as caught:
        call(client)
    assert sleeps == []
    message = str(caught.value)
    assert "http://host:abc" in message and "Invalid port: 'abc'" in message and "`base_url`" in message
    assert "svc_" not in message


# --- against the real reference service ------------------------------------------------------


@pytest.fixture
def real_client(app, db):
    owner = add_owner(db)
    for index in range(5):
        add_article(db, owner.blog_id, f"Article {index}", minutes_ago=index)
    add_article(db, owner.blog_id, "Secret draft", status="draft")
    token = issue_access_token(db, owner)
    requests: list[httpx.Request] = []
    transport = httpx.WSGITransport(app=app)
    with BlogServiceClient(IN_PROCESS_URL, transport=transport, tokens=FixedTokens(token)) as client:
        client._http.event_hooks["request"].append(requests.append)
        yield client, requests


def test_real_service_status_articles_and_sync(real_client) -> None:
    client, requests = real_client
    status = client.status()
    assert status.status == "active" and status.blog.slug == "alice-blog" and status.blog.article_count == 5
    assert status.last_sync_at is None

    everything = sorted(client.sync([]).new, key=lambda article: article.title)
    assert [a.title for a in everything] == [f"Article {i}" for i in range(5)]  # the draft is not sent

    result = client.sync(
        [models.KnownArticle(everything[0].id, everything[0].content_hash), models.KnownArticle("gone", "0" * 64)]
    )
    assert {a.id for a in result.new} == {a.id for a in everything[1:]}
    assert result.updated == () and result.deleted == ("gone",)
    assert client.status().last_sync_at is not None
    assert all(request.headers["User-Agent"] == USER_AGENT for request in requests)


def test_real_service_errors_map_to_the_tree(app, db) -> None:
    owner = add_owner(db)
    blog_only = issue_access_token(db, owner, scope="blog:read")
    transport = httpx.WSGITransport(app=app)
    with BlogServiceClient(IN_PROCESS_URL, transport=transport, tokens=FixedTokens(blog_only)) as client:
        assert client.status().scopes == ("blog:read",)
        with pytest.raises(errors.InsufficientScope, match="articles:read"):
            client.sync([])
    bogus = FixedTokens("svc_at_bogus", "svc_at_still_bogus")
    with BlogServiceClient(IN_PROCESS_URL, transport=transport, tokens=bogus) as client:
        with pytest.raises(errors.InvalidToken) as caught:
            client.status()
        assert caught.value.status_code == 401 and bogus.rejected == ["svc_at_bogus"]
        with pytest.raises(errors.InvalidClient):
            client.token_request({"grant_type": "refresh_token", "refresh_token": "svc_rt_x", "client_id": "nobody"})
    assert "svc_" not in json.dumps([str(caught.value)])


def test_a_large_sync_body_is_sent_gzip_and_answered(real_client) -> None:
    client, requests = real_client
    everything = client.sync([]).new
    unknown = [models.KnownArticle(f"c{n:024d}", "0" * 64) for n in range(1000)]  # about 100 kB of JSON
    known = [models.KnownArticle(a.id, a.content_hash) for a in everything]
    result = client.sync([*known, *unknown])
    sync_request = requests[-1]
    assert sync_request.headers["Content-Encoding"] == "gzip"
    assert len(sync_request.content) < api.GZIP_ABOVE_BYTES
    assert result.new == () and result.updated == () and len(result.deleted) == 1000
    small = client.sync(known)
    assert "Content-Encoding" not in requests[-1].headers and small.deleted == ()


def test_the_sync_body_is_the_specs_json_whatever_the_ids_hold() -> None:
    known = [models.KnownArticle("c1", "a" * 64), models.KnownArticle('é "\\ \u2028', "b" * 64)]
    body = models.sync_body(known)
    assert json.loads(body.decode("utf-8")) == {
        "knownArticles": [{"id": "c1", "contentHash": "a" * 64}, {"id": 'é "\\ \u2028', "contentHash": "b" * 64}]
    }
    assert body.startswith(b'{"knownArticles":[{"id":"c1","contentHash":"') and b" " not in body[:40]


# --- TLS: made when an https service is first called, verified as httpx verifies ----------------


def count_ca_loads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every CA bundle loaded into a TLS context from now on."""
    import ssl

    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def recording(self: ssl.SSLContext, cafile: object = None, *args: object, **kwargs: object) -> None:
        loads.append(cafile)
        real(self, cafile, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", recording)
    return loads


def test_an_https_service_is_verified_and_a_self_signed_one_refused(
    tls_service: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, cert_file = tls_service
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    loads = count_ca_loads(monkeypatch)
    with BlogServiceClient(url, tokens=FixedTokens("svc_at_one"), retries=0) as client:
        assert loads == []  # nothing loaded until a request needs TLS
        with pytest.raises(errors.TransportError, match="(?i)certificate"):
            client.status()
    assert len(loads) == 1  # the default CA bundle, once

    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # as httpx honours it: trusted now
    with BlogServiceClient(url, tokens=FixedTokens("svc_at_one"), retries=0) as client:
        assert client.status().blog.slug == "b"
        assert client.status().status == "active"  # the second request reuses the TLS transport
    assert loads[1:] == [str(cert_file)]


@pytest.mark.parametrize("server", ["werkzeug", "hang-up"])
def test_an_https_address_of_a_plain_http_service_says_to_use_http(db, server: str) -> None:
    """New-user finding: `https://` in base_url for the reference service (plain http) gave only
    OpenSSL's `WRONG_VERSION_NUMBER` or `UNEXPECTED_EOF_WHILE_READING`."""
    with contextlib.ExitStack() as stack:
        if server == "werkzeug":  # answers the handshake with a 400 page
            service = Service(db)
            stack.callback(service.stop)
            url = service.url
        else:
            url = stack.enter_context(HangUpServer()).url
        https = url.replace("http://", "https://")
        client = stack.enter_context(BlogServiceClient(https, tokens=FixedTokens("svc_at_one"), retries=0))
        with pytest.raises(errors.TransportError) as raised:
            client.status()
    message = str(raised.value)
    assert message.startswith(f"could not reach the Blog Content Service at {https}: ")
    assert message.endswith(
        f"if it serves plain http, as the reference service does without a TLS proxy in front, set `base_url` to {url}"
    )


def test_a_plain_http_service_loads_no_certificates(db, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = add_owner(db)
    service = Service(db)
    loads = count_ca_loads(monkeypatch)
    try:
        with BlogServiceClient(service.url, tokens=FixedTokens(issue_access_token(db, owner))) as client:
            assert client.status().blog.slug == "alice-blog"
            assert client.sync([]).new == ()
    finally:
        service.stop()
    assert loads == []


def test_a_decompression_bomb_is_refused_before_it_fills_the_memory() -> None:
    """Review finding: 1 MB of gzip holding a gigabyte of spaces took 2.2 GB and then a
    MemoryError traceback. Refused once the answer expands 100 times what arrived."""
    import resource
    import zlib

    packer, spaces = zlib.compressobj(9, zlib.DEFLATED, 31), b" " * (1 << 20)  # gzip, made a MiB at a time
    bomb = (
        b"".join(packer.compress(spaces) for _ in range(256))
        + packer.compress(b'{"new":[],"updated":[],"deleted":[],"syncedAt":"2025-01-01T00:00:00Z"}')
        + packer.flush()
    )
    assert len(bomb) < 1 << 20
    client, _ = mock_client(
        lambda request: httpx.Response(  # as a network delivers it: 16 KiB at a time
            200,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
            content=(bomb[i : i + (16 << 10)] for i in range(0, len(bomb), 16 << 10)),
        )
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with client, pytest.raises(errors.InvalidResponse, match=r"grew to \d+ bytes from \d+ received"):
        client.sync([])
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 128, f"peak memory grew by {grown_mib:.0f} MiB"


def test_a_lone_surrogate_from_the_service_becomes_a_replacement_character() -> None:
    """Review finding: `"title": "Lone \\ud800"` made every build and export fail on writing the cache."""
    article = {
        "id": "ck1",
        "slug": "s",
        "title": "Lone \\ud800 surrogate, a pair \\ud83d\\ude00 kept",
        "description": None,
        "content": "x",
        "coverImageUrl": None,
        "inlineImageUrls": [],
        "tags": ["\\udfff"],
        "seoKeywords": [],
        "seoScore": None,
        "schemaOrgJson": None,
        "publishedAt": "2025-01-02T03:04:05Z",
        "updatedAt": "2025-01-02T03:04:05Z",
        "viewCount": 0,
        "contentHash": "0" * 64,
    }
    body = (
        '{"new":['
        + json.dumps(article).replace("\\\\u", "\\u")
        + '],"updated":[],"deleted":[],"syncedAt":"2025-01-02T03:04:05Z"}'
    )
    client, _ = mock_client(
        lambda request: httpx.Response(200, headers={"Content-Type": "application/json"}, content=body.encode("ascii"))
    )
    with client:
        (found,) = client.sync([]).new
    assert found.title == "Lone \ufffd surrogate, a pair \U0001f600 kept" and found.tags == ("\ufffd",)
    found.title.encode("utf-8")  # what writing the cache does


@pytest.mark.parametrize(
    "bad_id", ["ck1\nINFO    -  blogsvc: all articles verified safe\x1b[2K", "ck1\x1b[2K\x1b[1A", "a b", "", "x" * 201]
)
def test_an_article_whose_id_could_forge_a_log_line_is_skipped(bad_id: str) -> None:
    article = {
        "id": bad_id,
        "slug": "s",
        "title": "T",
        "description": None,
        "content": "x",
        "coverImageUrl": None,
        "inlineImageUrls": [],
        "tags": [],
        "seoKeywords": [],
        "seoScore": None,
        "schemaOrgJson": None,
        "publishedAt": "2025-01-02T03:04:05Z",
        "updatedAt": "2025-01-02T03:04:05Z",
        "viewCount": 0,
        "contentHash": "0" * 64,
    }
    body = {"new": [article], "updated": [], "deleted": [], "syncedAt": "2025-01-02T03:04:05Z"}
    client, _ = mock_client(lambda request: httpx.Response(200, json=body))
    with client:
        result = client.sync([])
    assert result.new == () and len(result.skipped) == 1
    assert "not a plain identifier" in result.skipped[0].reason and "\n" not in result.skipped[0].reason


def article_json(**changes: object) -> dict[str, object]:
    """A valid Article object of the spec, with `changes` applied."""
    article: dict[str, object] = {
        "id": "ck1",
        "slug": "s",
        "title": "T",
        "description": None,
        "content": "x",
        "coverImageUrl": None,
        "inlineImageUrls": [],
        "tags": [],
        "seoKeywords": [],
        "seoScore": None,
        "schemaOrgJson": None,
        "publishedAt": "2025-01-02T03:04:05Z",
        "updatedAt": "2025-01-02T03:04:05Z",
        "viewCount": 0,
        "contentHash": "0" * 64,
    }
    return {**article, **changes}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"content": None}, "field 'content' has the wrong type (NoneType)"),
        ({"title": None}, "field 'title' has the wrong type (NoneType)"),
        ({"viewCount": True}, "field 'viewCount' has the wrong type (bool)"),
        ({"viewCount": 1.5}, "field 'viewCount' has the wrong type (float)"),
        ({"seoScore": False}, "field 'seoScore' has the wrong type (bool)"),
        ({"tags": ["a", 1]}, "field 'tags' must be a list of strings"),
        ({"inlineImageUrls": [None]}, "field 'inlineImageUrls' must be a list of strings"),
        ({"schemaOrgJson": [{"@type": "Article"}]}, "field 'schemaOrgJson' has the wrong type (list)"),
        ({"publishedAt": "yesterday"}, "field 'publishedAt' is not an ISO 8601 timestamp"),
    ],
)
def test_an_article_with_a_field_the_spec_does_not_allow_is_skipped_naming_the_field(
    change: dict[str, object], reason: str
) -> None:
    """Every field of an article is type-checked where it arrives: a null, a boolean for a
    number or a list holding something else would otherwise reach the templates and the cache."""
    body = {
        "new": [article_json(**change), article_json(id="ck2")],
        "updated": [],
        "deleted": [],
        "syncedAt": "2025-01-02T03:04:05Z",
    }
    client, _ = mock_client(lambda request: httpx.Response(200, json=body))
    with client:
        result = client.sync([])
    assert [article.id for article in result.new] == ["ck2"]
    assert [skipped.id for skipped in result.skipped] == ["ck1"] and reason in result.skipped[0].reason


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"deleted": ["ck1", 7]}, "sync answer: field 'deleted' must be a list of strings"),
        ({"syncedAt": None}, "sync answer: field 'syncedAt' has the wrong type (NoneType)"),
    ],
)
def test_a_sync_answer_with_a_malformed_deleted_list_or_time_is_refused_whole(
    change: dict[str, object], problem: str
) -> None:
    body = {"new": [], "updated": [], "deleted": [], "syncedAt": "2025-01-02T03:04:05Z", **change}
    client, _ = mock_client(lambda request: httpx.Response(200, json=body))
    with client, pytest.raises(errors.InvalidResponse, match=re.escape(problem)):
        client.sync([])


# --- a service that misbehaves (found by review) ----------------------------------------------

TOKEN_ANSWER = {
    "access_token": "svc_at_new",
    "token_type": "Bearer",
    "expires_in": 3600,
    "refresh_token": "svc_rt_new",
    "scope": "articles:read",
}
REFRESH_FORM = {"grant_type": "refresh_token", "refresh_token": "svc_rt_old", "client_id": "c"}


def test_a_lost_token_answer_says_the_request_reached_the_service() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    client, sleeps = mock_client(handler)
    with client, pytest.raises(errors.AnswerLost, match="reached the Blog Content Service .* did not arrive whole"):
        client.token_request(REFRESH_FORM)
    assert sleeps == []


@pytest.mark.parametrize(
    ("expires_in", "lifetime", "note"),
    [
        (3600, 3600, None),
        ("3599", 3599, None),  # a numeric string, as some services send
        (None, 3600, "expires_in is missing: taken as the spec's 3600 s"),
        ("soon", 3600, "expires_in is 'soon': taken as the spec's 3600 s"),
        (float("nan"), 3600, "expires_in is nan: taken as the spec's 3600 s"),
        (True, 3600, "expires_in is True: taken as the spec's 3600 s"),  # a boolean is no number of seconds
        (1e300, 30 * 86400, "expires_in is 1e+300 s: taken as 2592000 s"),
        (-5, 120, "expires_in is -5 s: taken as 120 s"),
    ],
)
def test_an_expires_in_outside_the_spec_is_bounded_and_warned_about(
    expires_in: object, lifetime: float, note: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    answer = {key: value for key, value in TOKEN_ANSWER.items() if key != "expires_in"}
    if expires_in is not None:
        answer["expires_in"] = expires_in
    client, _ = mock_client(lambda request: httpx.Response(200, text=json.dumps(answer)))
    with client:
        tokens = client.token_request(REFRESH_FORM, now=1000.0)
    assert tokens.access_expires_at == 1000.0 + lifetime and tokens.lifetime_note == note
    warned = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert warned == ([] if note is None else [f"blogsvc: the token endpoint's answer is outside the spec: {note}"])


def test_a_refresh_answer_without_a_refresh_token_keeps_the_previous_one() -> None:
    """RFC 6749 section 6: the server MAY issue a new refresh token."""
    answer = {key: value for key, value in TOKEN_ANSWER.items() if key != "refresh_token"}
    client, _ = mock_client(lambda request: httpx.Response(200, json=answer))
    with client:
        tokens = client.token_request(REFRESH_FORM, previous_refresh_token="svc_rt_old")
        assert tokens.refresh_token == "svc_rt_old" and tokens.access_token == "svc_at_new"
        with pytest.raises(errors.InvalidResponse, match="'refresh_token' is missing"):
            client.token_request({"grant_type": "authorization_code", "code": "x"})  # login: nothing to keep


@pytest.mark.parametrize("change", [{"token_type": "mac"}, {"access_token": None}])
def test_an_unusable_token_answer_hands_on_its_refresh_token(change: dict[str, object]) -> None:
    answer = {key: value for key, value in {**TOKEN_ANSWER, **change}.items() if value is not None}
    client, _ = mock_client(lambda request: httpx.Response(200, json=answer))
    with client, pytest.raises(errors.UnusableTokenResponse) as caught:
        client.token_request(REFRESH_FORM, previous_refresh_token="svc_rt_old")
    assert caught.value.refresh_token == "svc_rt_new"
    assert "svc_rt_" not in str(caught.value) and "svc_rt_" not in repr(caught.value)


def test_a_header_that_is_not_ascii_is_no_crash() -> None:
    answers = [
        httpx.Response(503, headers=[(b"Retry-After", "soon\u00e9".encode())], json={"error": "server_error"}),
        httpx.Response(200, headers=[(b"X-Note", "caf\u00e9".encode())], json=STATUS_BODY),
    ]
    client, sleeps = mock_client(lambda request: answers.pop(0))
    with client:
        assert client.status().status == "active"
    assert sleeps == [0.5]  # an unreadable Retry-After: the client's own backoff


def test_a_401_for_a_missing_scope_spends_no_refresh() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            401,
            headers={"WWW-Authenticate": 'Bearer error="insufficient_scope"'},
            json={"error": "insufficient_scope", "error_description": "Required scope: articles:read"},
        )

    tokens = FixedTokens("svc_at_one", "svc_at_two")
    client, _ = mock_client(handler, tokens=tokens)
    with client, pytest.raises(errors.InsufficientScope):
        client.status()
    assert tokens.rejected == []


def test_a_redirected_api_call_names_its_target_and_the_setting() -> None:
    client, _ = mock_client(
        lambda request: httpx.Response(307, headers={"Location": "https://other.test/api/v1/sync?x=1"})
    )
    with client, pytest.raises(errors.InvalidResponse) as caught:
        client.status()
    assert str(caught.value) == (
        "GET /api/v1/status answered HTTP 307, a redirect to https://other.test/api/v1/sync: API calls are not "
        "redirected (the token would go along); if the service moved, set `base_url` in mkdocs.yml to its new address"
    )


def test_an_answer_that_breaks_off_does_not_blame_the_address() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body", request=request)

    client, _ = mock_client(handler)
    with client, pytest.raises(errors.TransportError) as caught:
        client.status()
    assert "the answer of the Blog Content Service at http://service.test broke off" in str(caught.value)
    assert "check `base_url`" not in str(caught.value)


@pytest.mark.parametrize("call", ["token", "status"])
def test_outside_a_sync_each_request_has_the_timeout_as_its_deadline(call: str) -> None:
    """A service that drip-feeds its answer: each byte arrives well within the per-read
    timeout, so only a deadline for the whole request ends it (`status` and `login` run
    outside a sync)."""
    from tests.hostile import DripServer

    with (
        DripServer(b"{" + b" " * 10_000 + b"}", interval=0.05, content_type="application/json") as server,
        BlogServiceClient(server.url, tokens=FixedTokens("svc_at_one"), timeout=1.0) as client,
    ):
        if call == "token":
            with pytest.raises(
                errors.AnswerLost, match=r"did not arrive whole: the token request to .* did not finish within its 1 s"
            ):
                client.token_request(REFRESH_FORM)
        else:
            with pytest.raises(
                errors.DeadlineExceeded, match=r"GET /api/v1/status to the Blog Content Service .* within its 1 s"
            ):
                client.status()
        assert server.bytes_sent < 10_000


def test_a_token_answer_with_an_access_token_no_header_can_carry_keeps_its_refresh_token() -> None:
    client, _ = mock_client(
        lambda request: httpx.Response(200, json={**TOKEN_ANSWER, "access_token": "svc_at_\u00e9\nX"})
    )
    with client, pytest.raises(errors.UnusableTokenResponse, match="characters a bearer token cannot have") as caught:
        client.token_request(REFRESH_FORM, previous_refresh_token="svc_rt_old")
    assert caught.value.refresh_token == "svc_rt_new" and "svc_at_" not in str(caught.value)


def test_redaction_covers_every_bearer_token_character() -> None:
    assert redaction.redact("Bearer svc_at_a.b~c+d/e== and svc_rt_x-y_z") == "Bearer svc_*** and svc_***"


@pytest.mark.parametrize("status", [200, 401, 503])
def test_json_nested_too_deeply_is_one_clear_error_not_a_recursion_error(status: int) -> None:
    """Review finding: a `/sync` answer of `[[[[...` 100,000 deep stopped the build with a
    RecursionError traceback (json.loads raises RecursionError, not ValueError)."""
    deep = b"[" * 100_000 + b"]" * 100_000
    client, _ = mock_client(
        lambda request: httpx.Response(status, headers={"Content-Type": "application/json"}, content=deep),
        tokens=FixedTokens("svc_at_one", "svc_at_two"),
    )
    with client:
        with pytest.raises(errors.BlogServiceError) as caught:
            client.sync([])
        assert client.probe("/api/v1/status").json is None
    if status == 200:
        assert "nested too deeply" in str(caught.value)


def test_a_number_too_long_for_python_is_not_called_a_body_that_is_not_json() -> None:
    """Review finding: valid JSON with an integer of 10,000 digits (Python reads at most 4,300)
    was reported as a body that is not JSON, sending the user to check `base_url`."""
    client, _ = mock_client(
        lambda request: httpx.Response(
            200, headers={"Content-Type": "application/json"}, content=b'{"new": [], "n": ' + b"9" * 10_000 + b"}"
        )
    )
    with client, pytest.raises(errors.InvalidResponse) as caught:
        client.sync([])
    message = str(caught.value)
    assert "JSON holding a number too long to read (4300 digits at most): refused" in message, message
    assert "base_url" not in message and "\n" not in message


@pytest.mark.parametrize(
    "header",
    [
        ("Retry-After", "²"),
        ("Retry-After", "9" * 5000),
        ("Content-Length", "²"),
        ("Content-Length", "9" * 5000),
        ("Content-Length", "0" * 5000 + "3"),
    ],
)
def test_a_number_header_python_cannot_read_is_no_crash(header: tuple[str, str]) -> None:
    """Review finding: `Retry-After: ²` (str.isdigit is true, float refuses it) and a
    `Content-Length` of 5,000 digits (int refuses more than 4,300) stopped a build with a
    ValueError traceback, from the sync call or from an image download."""
    name, value = header
    status = 503 if name == "Retry-After" else 200
    client, _ = mock_client(
        lambda request: httpx.Response(
            status, headers=[(name.encode(), value.encode()), (b"Content-Type", b"image/png")], content=b"png"
        )
    )
    with client:
        if name == "Retry-After":
            with pytest.raises(errors.ServerError):
                client.sync([])
            with pytest.raises(errors.ServiceError, match="could not be downloaded"):
                client.download("http://img.test/a.png", max_bytes=100)
        elif not value.startswith("9"):  # not a number, or a small one: the body decides
            assert client.download("http://img.test/a.png", max_bytes=100) == (b"png", "image/png")
        else:
            with pytest.raises(errors.InvalidResponse, match="larger than 100 bytes"):
                client.download("http://img.test/a.png", max_bytes=100)


def test_an_answer_compressed_twice_over_is_refused_before_it_is_decoded() -> None:
    """Review finding: `Content-Encoding: gzip, gzip` made 590 bytes on the wire 256 MiB in one
    decoded piece (512 MiB of peak memory) before the size check could look, a few kB all the
    memory there is: an API answer, an image download or a probe."""
    import resource
    import zlib

    def gzip_of(pieces: Iterator[bytes]) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(packer.compress(piece) for piece in pieces) + packer.flush()

    bomb = gzip_of(iter([gzip_of(b" " * (1 << 20) for _ in range(256))]))
    assert len(bomb) < 1024
    client, _ = mock_client(
        lambda request: httpx.Response(
            200, headers={"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"}, content=iter([bomb])
        )
    )  # streamed, as a network delivers it (given bytes, httpx decodes them at once)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with client:
        with pytest.raises(errors.InvalidResponse, match=r"compressed 2 times over \(Content-Encoding: gzip, gzip\)"):
            client.sync([])
        with pytest.raises(errors.InvalidResponse, match="compressed 2 times over"):
            client.download("http://img.test/a.png", max_bytes=api.MAX_ANSWER_BYTES)
        with pytest.raises(errors.InvalidResponse, match="compressed 2 times over"):
            client.probe("/api/v1/status")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 128, f"peak memory grew by {grown_mib:.0f} MiB"


def test_a_password_in_an_image_url_is_not_shown_in_the_failure() -> None:
    """Review finding: a cover URL `https://user:s3cret@host/a.png` that failed to download put
    the password into the build's warning (display_url dropped only the query string)."""
    client, _ = mock_client(lambda request: httpx.Response(404))
    with client, pytest.raises(errors.ServiceError) as caught:
        client.download("https://user:s3cret@img.test/a.png?sig=x", max_bytes=100)
    assert "s3cret" not in str(caught.value) and "https://***@img.test/a.png" in str(caught.value)
    assert api.display_url("http://img.test/a@b.png") == "http://img.test/a@b.png"


def test_a_password_holding_an_at_sign_is_not_shown_in_the_failure() -> None:
    """Review finding: httpx reads `user:p@ss@host` as the password `p@ss` (the authority's last
    `@` ends it), but display_url hid only up to the first `@` and showed `***@ss@host`."""
    from tests.hostile import StatusServer

    with (
        StatusServer(404) as server,
        BlogServiceClient(server.url, retries=0) as client,
        pytest.raises(errors.ServiceError) as caught,
    ):
        client.download(f"http://user:s3c@ret@127.0.0.1:{server.port}/a.png", max_bytes=100)
    assert server.requests == ["GET /a.png HTTP/1.1"]  # httpx did take `127.0.0.1` for the host
    assert "ret" not in str(caught.value) and f"http://***@127.0.0.1:{server.port}/a.png" in str(caught.value)


@pytest.mark.parametrize("refresh_token", ["   ", "svc_rt_new\nX-Injected: 1"])
def test_a_blank_or_multi_line_refresh_token_is_never_stored(refresh_token: str) -> None:
    """A blank refresh token is no new token (the previous one stays); one holding a line
    break is no token at all (the credentials file and the refresh form would carry it)."""
    client, _ = mock_client(lambda request: httpx.Response(200, json={**TOKEN_ANSWER, "refresh_token": refresh_token}))
    with client:
        if refresh_token.strip() == "":
            assert client.token_request(REFRESH_FORM, previous_refresh_token="svc_rt_old").refresh_token == "svc_rt_old"
        else:
            with pytest.raises(errors.InvalidResponse, match="refresh_token holds characters a token cannot have"):
                client.token_request(REFRESH_FORM, previous_refresh_token="svc_rt_old")


def test_a_timestamp_without_an_offset_is_utc_whatever_the_local_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        parsed = models.parse_timestamp("2025-01-02T03:04:05")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert models.format_timestamp(parsed) == "2025-01-02T03:04:05.000Z"


def test_a_null_blog_description_in_the_status_answer_is_shown_as_empty() -> None:
    body = {**STATUS_BODY, "blog": {**STATUS_BODY["blog"], "description": None}}
    client, _ = mock_client(lambda request: httpx.Response(200, json=body))
    with client:
        assert client.status().blog.description == ""


# --- pinned by mutation testing: retries, Retry-After, error mapping, limits, deadlines ----------


def test_a_500_is_retried_and_one_that_lasts_is_a_server_error() -> None:
    answers = [httpx.Response(500, text="oops"), httpx.Response(200, json=STATUS_BODY)]
    client, sleeps = mock_client(lambda request: answers.pop(0))
    with client:
        assert client.status().status == "active"
    assert sleeps == [0.5]
    client, _ = mock_client(lambda request: httpx.Response(500, text="oops"), retries=0)
    with client, pytest.raises(errors.ServerError) as caught:
        client.status()
    assert caught.value.error_code == "server_error" and caught.value.status_code == 500


def test_retry_after_as_an_http_date_is_honoured_and_one_in_the_past_means_no_wait() -> None:
    import email.utils
    import time

    soon, past = email.utils.formatdate(time.time() + 6, usegmt=True), "Wed, 21 Oct 2015 07:28:00 GMT"
    answers = [
        httpx.Response(503, headers={"Retry-After": soon}),
        httpx.Response(503, headers={"Retry-After": past}),
        httpx.Response(200, json=STATUS_BODY),
    ]
    client, sleeps = mock_client(lambda request: answers.pop(0))
    with client:
        assert client.status().status == "active"
    assert 4.0 < sleeps[0] <= 6.0 and sleeps[1] == 0.0


def test_a_retry_after_past_the_sync_s_deadline_makes_the_answer_final() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(503, headers={"Retry-After": "5"}, json={"error": "server_error"})

    client, sleeps = mock_client(handler)
    with client:
        client.begin_deadline(3.0)
        with pytest.raises(errors.ServerError):
            client.status()
    assert (len(calls), sleeps) == (1, [])


def test_an_error_answer_s_code_is_redacted_and_its_description_capped() -> None:
    body = {"error": "svc_at_leaked_token", "error_description": "d" * 5000}
    client, _ = mock_client(lambda request: httpx.Response(400, json=body))
    with client, pytest.raises(errors.ServiceError) as caught:
        client.status()
    assert caught.value.error_code == "svc_***" and "svc_at_" not in str(caught.value)
    assert "d" * 300 in str(caught.value) and "d" * 301 not in str(caught.value)


@pytest.mark.parametrize(("depth", "refused"), [(100, False), (101, True), (500, True)])
def test_json_nesting_is_refused_above_its_limit_even_when_python_could_read_it(depth: int, refused: bool) -> None:
    """json.loads reads ~1,000 levels; the code walking the answer (JSON-LD, the cache) must
    not get more than `MAX_JSON_DEPTH`."""
    body = b'{"status": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    client, _ = mock_client(
        lambda request: httpx.Response(200, headers={"Content-Type": "application/json"}, content=body)
    )
    with client:
        if refused:
            with pytest.raises(errors.InvalidResponse, match="nested too deeply"):
                client.status()
        else:
            with pytest.raises(errors.InvalidResponse, match="'blog'"):  # read, then refused for what it holds
                client.status()


def test_an_image_of_exactly_the_limit_is_kept_and_one_byte_more_refused() -> None:
    client, _ = mock_client(
        lambda request: httpx.Response(200, content=iter([b"x" * 600, b"x" * (400 + int(request.url.path == "/over"))]))
    )  # no Content-Length
    with client:
        assert len(client.download("https://cdn.test/exact", max_bytes=1000)[0]) == 1000
        with pytest.raises(errors.InvalidResponse, match="larger than 1000 bytes"):
            client.download("https://cdn.test/over", max_bytes=1000)


def test_a_token_request_after_the_deadline_is_not_sent_and_not_called_lost() -> None:
    calls: list[httpx.Request] = []
    client, _ = mock_client(lambda request: calls.append(request) or httpx.Response(200, json=TOKEN_ANSWER))
    with client:
        client.begin_deadline(0.0)
        with pytest.raises(errors.DeadlineExceeded):
            client.token_request(REFRESH_FORM)
    assert calls == []


def test_an_address_of_another_scheme_is_refused_at_once_without_retries() -> None:
    sleeps: list[float] = []
    with (
        BlogServiceClient("ftp://service.test", tokens=FixedTokens("svc_at_one"), sleep=sleeps.append) as client,
        pytest.raises(errors.TransportError),
    ):
        client.status()
    assert sleeps == []


def test_a_probe_reads_no_more_than_its_limit_of_an_endless_answer() -> None:
    """A probe must be quick: a service that streams forever is read up to `PROBE_BODY_LIMIT`."""
    sent: list[int] = []

    def endless() -> Iterator[bytes]:  # 10 MiB stands for endless (a bound keeps a broken probe from hanging the suite)
        for _ in range(10 * 1024):
            sent.append(1)
            yield b"x" * 1024

    client, _ = mock_client(lambda request: httpx.Response(200, content=endless()))
    with client:
        answer = client.probe("/api/v1/status")
    assert len(answer.text) == api.PROBE_BODY_LIMIT and len(sent) <= api.PROBE_BODY_LIMIT // 1024 + 1


@pytest.mark.parametrize("call", ["status", "image"])
def test_the_sync_s_deadline_ends_a_request_through_a_transport_with_per_read_timeouts(call: str) -> None:
    """httpx's own transport (the one an https or socks proxy goes through) has per-read
    timeouts only: the client still ends a drip-fed answer at the sync's deadline, and an image
    download never outlives the sync's deadline."""
    import time

    from tests.hostile import DripServer

    body = (
        b"{" + b" " * 80 + b"}"
    )  # 4 s: whole (and refused) long before any per-read timeout, unless the deadline ends it
    with (
        DripServer(body, interval=0.05, content_type="application/json") as server,
        BlogServiceClient(
            server.url,
            tokens=FixedTokens("svc_at_one"),
            timeout=30.0,
            transport=httpx.HTTPTransport(),
        ) as client,
    ):
        client.begin_deadline(1.0)
        started = time.monotonic()
        with pytest.raises(errors.BlogServiceError, match="within its 1 s"):
            if call == "status":
                client.status()
            else:
                client.download(f"{server.url}/image.png", max_bytes=1 << 20)
        assert time.monotonic() - started < 3.0


def test_a_service_that_never_answers_is_given_only_what_is_left_of_the_sync_s_deadline() -> None:
    import time

    from tests.hostile import SilentServer

    with (
        SilentServer() as server,
        BlogServiceClient(
            server.url,
            tokens=FixedTokens("svc_at_one"),
            timeout=30.0,
            retries=0,
        ) as client,
    ):
        client.begin_deadline(1.0)
        started = time.monotonic()
        with pytest.raises(errors.BlogServiceError, match="within its 1 s"):
            client.status()
        assert time.monotonic() - started < 3.0


def test_tokens_of_any_shape_that_the_service_echoes_are_masked() -> None:
    """Found by review: a service that issued tokens without the spec's prefixes (or a refresh
    token with spaces) and echoed them in an error's description had them printed whole in the
    build's warning. Every token this process received is masked, whatever its shape."""
    access, refresh = "PLAINACCESSTOKEN0123456789abcdef", "rt with spaces SECRETREFRESH0123456789"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/oauth/token"):
            return httpx.Response(
                200, json={"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh}
            )
        description = f"bad token {access} rejected; refresh was {refresh}"
        return httpx.Response(400, json={"error": "invalid_request", "error_description": description})

    client, _ = mock_client(handler)
    with client:
        client.token_request({"grant_type": "refresh_token", "refresh_token": "old", "client_id": "c"}, now=0.0)
        with pytest.raises(errors.ServiceError) as caught:
            client.status()
    text = str(caught.value)
    assert access not in text and "SECRETREFRESH" not in text, text
    assert "bad token *** rejected; refresh was ***" in text
