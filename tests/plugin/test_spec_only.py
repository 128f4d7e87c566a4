"""The API client speaks only the spec unless the service says more: sync bodies go plain, and
gzip only to a service that said it takes gzip (`Accept-Encoding` on an answer, RFC 7694),
with a 415 answered by sending the body plain. Against a service written from the spec alone
(`tests.speclike`) and against the reference service."""

from __future__ import annotations

import logging

import httpx
import pytest

from mkdocs_blogsvc import api as api_module
from mkdocs_blogsvc import models
from mkdocs_blogsvc.api import BlogServiceClient, RequestEncodings, accepts_gzip
from tests.conftest import IN_PROCESS_URL, add_article, add_owner, issue_access_token
from tests.speclike import SpecService, make_articles

TOKEN = "svc_at_speclike"


class OneToken:
    def access_token(self) -> str:
        return TOKEN

    def refresh_rejected(self, rejected: str) -> str:
        raise AssertionError("the token is valid")


def known(result: models.SyncResult) -> list[models.KnownArticle]:
    return [models.KnownArticle(a.id, a.content_hash) for a in result.new]


def test_2000_known_articles_go_plain_to_a_service_that_knows_only_the_spec() -> None:
    with SpecService(make_articles(2000)) as service:
        service.access_tokens.add(TOKEN)
        encodings = RequestEncodings()
        with BlogServiceClient(service.url, tokens=OneToken(), encodings=encodings) as client:
            first = client.sync([])
            held = known(first)
            service.articles.pop(held[0].id)
            service.articles[held[1].id].content = "Edited.\n"
            second = client.sync(held)  # about 220 kB of knownArticles
            third = client.sync(held)
    assert len(first.new) == 2000
    assert [a.id for a in second.updated] == [held[1].id] and second.deleted == (held[0].id,) and second.new == ()
    assert third.updated == second.updated  # every build picks the change up, whatever its size
    syncs = [r for r in service.requests if r[1] == "/api/v1/sync"]
    assert len(syncs) == 3 and all(encoding is None for _method, _path, encoding in syncs)
    assert not encodings.takes_gzip(service.url)


def test_a_415_to_a_gzip_body_sends_it_plain_and_is_remembered(caplog: pytest.LogCaptureFixture) -> None:
    """A service that says gzip (a proxy in front, say) but refuses it: the sync still succeeds,
    and the service is not sent gzip again by this process, by any client."""
    caplog.set_level(logging.INFO, logger="mkdocs.plugins.blogsvc")
    with SpecService(make_articles(1000), accept_encoding="gzip", refuse_codings=True) as service:
        service.access_tokens.add(TOKEN)
        encodings = RequestEncodings()
        with BlogServiceClient(service.url, tokens=OneToken(), encodings=encodings) as client:
            held = known(client.sync([]))  # learns "gzip" from the answer
            assert encodings.takes_gzip(service.url)
            assert client.sync(held).new == ()  # gzip, 415, then plain
        with BlogServiceClient(service.url, tokens=OneToken(), encodings=encodings) as client:
            assert client.sync(held).new == ()  # the next build of this process: plain at once
    codings = [encoding for _method, path, encoding in service.requests if path == "/api/v1/sync"]
    assert codings == [None, "gzip", None, None]
    assert not encodings.takes_gzip(service.url)
    assert "refused a gzip-compressed sync body (HTTP 415)" in caplog.text


def test_the_reference_service_says_it_takes_gzip_and_is_sent_gzip(app, db) -> None:
    owner = add_owner(db)
    add_article(db, owner.blog_id, "One")
    requests: list[httpx.Request] = []
    encodings = RequestEncodings()

    class Token(OneToken):
        def access_token(self) -> str:
            return token

    token = issue_access_token(db, owner)
    unknown = [models.KnownArticle(f"c{n:024d}", "0" * 64) for n in range(1000)]  # about 100 kB
    with BlogServiceClient(
        IN_PROCESS_URL, transport=httpx.WSGITransport(app=app), tokens=Token(), encodings=encodings
    ) as client:
        client._http.event_hooks["request"].append(requests.append)
        client.sync(unknown)  # nothing said yet: plain
        assert "Content-Encoding" not in requests[-1].headers and encodings.takes_gzip(IN_PROCESS_URL)
        assert len(client.sync(unknown).deleted) == 1000
        assert (
            requests[-1].headers["Content-Encoding"] == "gzip"
            and len(requests[-1].content) < api_module.GZIP_ABOVE_BYTES
        )


def test_the_reference_service_names_gzip_on_its_sync_answers_and_its_415(api: httpx.Client) -> None:
    assert api.post("/api/v1/sync", json={"knownArticles": []}).headers["Accept-Encoding"] == "gzip"
    refused = api.post(
        "/api/v1/sync", content=b"{}", headers={"Content-Type": "application/json", "Content-Encoding": "br"}
    )
    assert refused.status_code == 415 and refused.headers["Accept-Encoding"] == "gzip"
    assert "Accept-Encoding" not in api.get("/api/v1/status").headers


@pytest.mark.parametrize(
    ("value", "takes"),
    [
        ("gzip", True),
        ("GZIP", True),
        ("x-gzip", True),
        ("identity, gzip;q=0.5", True),
        ("*", True),
        ("", False),
        ("identity", False),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("*, gzip;q=0", False),
        ("br", False),
        ("gzip;q=nonsense", False),
        ("*;q=0", False),
    ],
)
def test_accept_encoding_is_read_as_rfc_9110_spells_it(value: str, takes: bool) -> None:
    assert accepts_gzip(value) is takes


def test_a_client_with_no_transport_of_its_own_shares_the_process_memory() -> None:
    with BlogServiceClient("http://127.0.0.1:9") as client:
        assert client.encodings is api_module.PROCESS_ENCODINGS
    with BlogServiceClient(
        "http://127.0.0.1:9", transport=httpx.MockTransport(lambda r: httpx.Response(200))
    ) as client:
        assert client.encodings is not api_module.PROCESS_ENCODINGS
