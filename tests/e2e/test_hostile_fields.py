"""Article fields a compromised or careless service may send, found by review: a real Material
build against a service written from the spec (`tests.speclike`) that sends them. Each must
leave a whole site and at most one line, never a traceback, and nothing that runs."""

from __future__ import annotations

import gzip
import logging
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

from mkdocs_blogsvc.config import ENV_REFRESH_TOKEN
from tests.e2e.sites import write_site
from tests.speclike import CLIENT_ID, SpecArticle, SpecService

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def article(number: int, slug: str, **raw: object) -> SpecArticle:
    return SpecArticle(
        id=f"c{number:024d}", slug=slug, title=slug.title(), content=f"Body of {slug}.\n", published_at=START, raw=raw
    )


def test_hostile_dates_and_image_urls_leave_a_whole_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.delenv("CI", raising=False)
    articles = [
        article(1, "plain"),
        # past 2106: MkDocs' gzip header of the sitemap takes the latest page date (a crash, and a half-written site)
        article(2, "from-the-future", updatedAt="2200-01-01T00:00:00.000Z"),
        # past the last date Python has once in UTC: skipped, as an article with a field of the wrong type
        article(3, "out-of-range", publishedAt="9999-12-31T23:59:59.000-14:00"),
        # images that are not web URLs: Material's blog index renders the Markdown of the post again
        article(4, "script-cover", coverImageUrl="javascript:alert(1)"),
        # control characters: a NUL reached <title> and the navigation as it was
        SpecArticle(
            id=f"c{6:024d}",
            slug="controls",
            title="Bad\x00Title\x1b[31m",
            content="Body of controls.\x00\n",
            description="Say\x07 it",
            tags=["tag\x00"],
            published_at=START,
        ),
        article(
            5,
            "data-cover",
            coverImageUrl="data:image/svg+xml,<svg onload=alert(2)>",
            inlineImageUrls=["data:image/png;base64,AAAA", "file:///etc/passwd"],
        ),
    ]
    with SpecService({a.id: a for a in articles}) as service:
        monkeypatch.setenv(ENV_REFRESH_TOKEN, service.refresh_token)
        config = write_site(tmp_path, service.url, material=True, plugin={"client_id": CLIENT_ID})
        for _ in range(2):  # the second build from the cache, as every later build
            build(load_config(str(config)))

    site = tmp_path / "site"
    assert (site / "index.html").is_file() and (site / "blog" / "index.html").is_file()
    sitemap = gzip.decompress((site / "sitemap.xml.gz").read_bytes()).decode()
    today = datetime.now(timezone.utc).date().isoformat()
    lastmods = re.findall(r"<lastmod>([^<]+)</lastmod>", sitemap)
    assert lastmods and max(lastmods) <= today, lastmods  # no date after the build's
    assert "from-the-future" in sitemap and "out-of-range" not in sitemap
    every_page = "\n".join(path.read_text(encoding="utf-8") for path in site.rglob("*.html"))
    assert "javascript:alert" not in every_page and "data:image" not in every_page and "file:///" not in every_page
    assert "Body of data-cover." in every_page and "Body of script-cover." in every_page  # the articles stay
    assert "BadTitle[31m" in every_page and not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", every_page)
    messages = [record.getMessage() for record in caplog.records]
    assert any("timestamp out of range" in m and "9999-12-31" in m for m in messages), messages
    left_out = "cover image URL 'javascript:alert(1)' is not an http(s) URL: left out"
    assert any(left_out in m for m in messages), messages
