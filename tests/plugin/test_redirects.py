"""Address history and redirect pages (`redirects`), without MkDocs: the builds are in
tests/e2e/test_urls.py."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mkdocs_blogsvc import redirects
from mkdocs_blogsvc.manifest import Address, AddressRecord
from mkdocs_blogsvc.redirects import MAX_ADDRESSES, Redirect

T0 = datetime(2025, 3, 4, 12, 0, tzinfo=timezone.utc)


def at(name: str, directory_urls: bool = True) -> Address:
    return (
        Address(f"blog/{name}/", f"blog/{name}/index.html")
        if directory_urls
        else Address(f"blog/{name}.html", f"blog/{name}.html")
    )


def test_remember_moves_the_current_address_last_and_caps_the_history() -> None:
    history = redirects.remember((), at("a"), T0)
    history = redirects.remember(history, at("b"), T0 + timedelta(1))
    assert redirects.remember(history, at("b"), T0 + timedelta(5)) == history  # still there: unchanged
    history = redirects.remember(history, at("a"), T0 + timedelta(2))
    assert [(r.url, r.since) for r in history] == [("blog/b/", T0 + timedelta(1)), ("blog/a/", T0 + timedelta(2))]
    for number in range(MAX_ADDRESSES + 5):
        history = redirects.remember(history, at(f"n{number}"), T0)
    assert len(history) == MAX_ADDRESSES and history[-1].url == f"blog/n{MAX_ADDRESSES + 4}/"


def test_record_json_round_trip_and_refusals() -> None:
    record = AddressRecord("blog/a/", "blog/a/index.html", T0)
    assert AddressRecord.from_json(record.to_json()) == record
    for bad in (
        {"url": "x/", "path": "../../etc/passwd", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "x/", "path": "/etc/passwd", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "x/", "path": "a\\b.html", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "x/", "path": "a//b.html", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "x/", "path": "C:/b.html", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "https://evil.example/", "path": "a.html", "since": "2025-01-01T00:00:00.000Z"},
        {"url": "x/", "path": "a.html", "since": "yesterday"},
        {"url": 1, "path": "a.html", "since": "2025-01-01T00:00:00.000Z"},
        "blog/a/",
    ):
        with pytest.raises(ValueError):
            AddressRecord.from_json(bad)


def test_plan_redirects_old_addresses_to_the_current_page() -> None:
    history = {"A": redirects.remember(redirects.remember((), at("old"), T0), at("new"), T0 + timedelta(1))}
    assert redirects.plan(history, {"A": at("new")}) == [Redirect(at("old"), at("new"), "A")]
    # An article without a page in this build has no redirects (nothing to point at).
    assert redirects.plan(history, {}) == []


def test_plan_never_redirects_a_current_page_and_the_last_holder_wins() -> None:
    # A was at x, then y; B took x, then moved to z: x goes to B (who had it last), y to A.
    a = (
        AddressRecord("blog/x/", "blog/x/index.html", T0),
        AddressRecord("blog/y/", "blog/y/index.html", T0 + timedelta(1)),
    )
    b = (
        AddressRecord("blog/x/", "blog/x/index.html", T0 + timedelta(2)),
        AddressRecord("blog/z/", "blog/z/index.html", T0 + timedelta(3)),
    )
    assert redirects.plan({"A": a, "B": b}, {"A": at("y"), "B": at("z")}) == [Redirect(at("x"), at("z"), "B")]
    # Now C's page is at x: no redirect there at all.
    assert redirects.plan({"A": a, "B": b, "C": ()}, {"A": at("y"), "B": at("z"), "C": at("x")}) == []


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        (at("old"), at("new"), "../new/"),
        (Address("blog/2025/03/04/old/", "blog/2025/03/04/old/index.html"), at("new"), "../../../../new/"),
        (at("old", False), at("new", False), "new.html"),
        (at("old"), at("new", False), "../new.html"),  # use_directory_urls switched off
        (at("old", False), at("new"), "new/"),
    ],
)
def test_relative_url(source: Address, target: Address, expected: str) -> None:
    assert redirects.relative_url(target, source) == expected


class Parsed(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text += data


def test_page_follows_the_mkdocs_redirects_convention() -> None:
    html = redirects.page(
        Redirect(at("old"), at("new"), "A"), title='Fish & "chips" <b>', site_url="https://ex.test/site", language="pt"
    )
    parsed = Parsed(html)
    tags = {tag: attrs for tag, attrs in parsed.tags}
    assert tags["html"] == {"lang": "pt"}
    assert tags["link"] == {"rel": "canonical", "href": "https://ex.test/site/blog/new/"}
    assert tags["meta"] in ({"charset": "utf-8"}, {"http-equiv": "refresh", "content": "0; url=../new/"})
    assert {"http-equiv": "refresh", "content": "0; url=../new/"} in [a for t, a in parsed.tags if t == "meta"]
    assert {"name": "robots", "content": "noindex"} in [a for t, a in parsed.tags if t == "meta"]
    assert tags["a"] == {"href": "../new/"}
    assert 'Fish & "chips" <b>' in parsed.text and "<b>" not in html and "script" not in html
    assert html.startswith(redirects.MARKER)
    # Without site_url the canonical link is relative too.
    plain = Parsed(redirects.page(Redirect(at("old"), at("new"), "A"), title="t", site_url=None, language=None))
    assert dict(plain.tags)["link"]["href"] == "../new/"


def test_write_never_overwrites_a_page_and_updates_its_own(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "blog" / "taken").mkdir(parents=True)
    (site / "blog" / "taken" / "index.html").write_text("<html>a real page</html>")
    free = Redirect(at("free"), at("new"), "A")
    taken = Redirect(at("taken"), at("new"), "A")
    first = redirects.write(
        site,
        [
            (free, redirects.page(free, title="t", site_url=None, language=None)),
            (taken, redirects.page(taken, title="t", site_url=None, language=None)),
        ],
    )
    assert first.written == ["blog/free/index.html"] and first.occupied == ["blog/taken/index.html"]
    assert (site / "blog" / "taken" / "index.html").read_text() == "<html>a real page</html>"
    assert 'url=../new/"' in (site / "blog" / "free" / "index.html").read_text()
    # A dirty build finds its own redirect page: same content is left, a new target replaces it.
    again = redirects.write(site, [(free, redirects.page(free, title="t", site_url=None, language=None))])
    assert (again.written, again.unchanged) == ([], 1)
    moved = Redirect(at("free"), at("newer"), "A")
    third = redirects.write(site, [(moved, redirects.page(moved, title="t", site_url=None, language=None))])
    assert third.written == ["blog/free/index.html"]
    assert 'url=../newer/"' in (site / "blog" / "free" / "index.html").read_text()


def test_write_never_leaves_the_site_nor_follows_or_replaces_a_symlink(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "blog" / "linked").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text(redirects.MARKER + "\nsomeone else's file")  # even one that looks like ours
    (site / "blog" / "linked" / "index.html").symlink_to(elsewhere)
    outside = Redirect(Address("../outside/", "../outside/index.html"), at("new"), "A")
    linked = Redirect(at("linked"), at("new"), "A")
    report = redirects.write(
        site, [(r, redirects.page(r, title="t", site_url=None, language=None)) for r in (outside, linked)]
    )
    assert report.written == [] and report.occupied == ["blog/linked/index.html"]
    assert not (tmp_path / "outside").exists()
    assert (site / "blog" / "linked" / "index.html").is_symlink()
    assert elsewhere.read_text() == redirects.MARKER + "\nsomeone else's file"
