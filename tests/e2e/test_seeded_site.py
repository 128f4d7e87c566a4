"""The seeded sample blog on the real service process, a real login (PKCE, the sign-in and
consent forms), and a Material site built from it, then changed on the service and rebuilt."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from mkdocs_blogsvc import config as site_config
from mkdocs_blogsvc.credentials import CredentialStore
from mkdocs_blogsvc.demo import approve_as, build_site
from mkdocs_blogsvc.login import login
from mkdocs_blogsvc.server import media
from tests.conftest import LiveServer
from tests.e2e.sites import write_site
from tests.e2e.test_build import json_ld, parse, post_page

#: The seed's draft and unpublished articles: never on the site.
HIDDEN = ("Notes on a plugin architecture", "Our old deployment checklist")
NEW_COVER = Path(media.__file__).parent / "sample_media" / "cover-05.png"


def admin(live_server: LiveServer, *args: str) -> dict[str, Any]:
    result = live_server.admin(*args)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def published(live_server: LiveServer, token: str) -> list[dict[str, Any]]:
    """What `GET /api/v1/articles` returns with the site's own credentials (newest first)."""
    response = httpx.get(
        f"{live_server.url}/api/v1/articles",
        params={"limit": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    response.raise_for_status()
    articles: list[dict[str, Any]] = response.json()["articles"]
    return articles


def built_posts(site_dir: Path) -> set[str]:
    """Slugs of the article pages Material's blog plugin built (blog/YYYY/MM/DD/<slug>/)."""
    return {p.parent.name for p in site_dir.glob("blog/20*/**/index.html")}


def listed_links(site_dir: Path) -> set[str]:
    """Slugs the blog's index pages (all of them: Material paginates) link to."""
    pages = [site_dir / "blog" / "index.html", *site_dir.glob("blog/page/*/index.html")]
    text = "".join(page.read_text(encoding="utf-8") for page in pages)
    return set(re.findall(r'href="[^"]*?20\d\d/\d\d/\d\d/([a-z0-9-]+)/"', text))


def check_article_pages(site_dir: Path, articles: list[dict[str, Any]]) -> None:
    """Each article page: its cover image served from the site, JSON-LD equal to schemaOrgJson
    except that its image names the site's copy and its url the page on the site (or, when it
    is null, the plugin's BlogPosting naming the article)."""
    for article in articles:
        page = post_page(site_dir, article["slug"])
        html = page.read_text(encoding="utf-8")
        cover = re.search(r'<img alt="[^"]*"[^>]* src="([^"]+)"', html)
        assert cover and not cover.group(1).startswith("http"), article["slug"]
        cover_file = (page.parent / cover.group(1)).resolve()
        assert site_dir.resolve() in cover_file.parents
        assert cover_file.read_bytes() == httpx.get(article["coverImageUrl"], timeout=10).content, article["slug"]
        (posting,) = json_ld(parse(page))
        if article["schemaOrgJson"] is not None:  # as sent, but naming the site's copy and page
            # as the service sent it, with the article's own title and dates (the seeded
            # blog's edited article carries an older headline in its schemaOrgJson)
            sent = {
                **article["schemaOrgJson"],
                "headline": article["title"],
                "datePublished": article["publishedAt"],
                "dateModified": article["updatedAt"],
            }
            # named the service's cover, or named no image: the site's copy either way
            assert sent.pop("image", article["coverImageUrl"]) == article["coverImageUrl"]
            assert posting.pop("image")["url"] == "https://example.test/site/" + str(  # an ImageObject, sized
                cover_file.relative_to(site_dir.resolve())
            ), article["slug"]
            page_url = "https://example.test/site/" + str(page.parent.relative_to(site_dir)) + "/"
            assert posting.pop("url") == posting.pop("mainEntityOfPage") == page_url
            assert posting == sent, article["slug"]
        else:  # the plugin's own BlogPosting
            assert posting["@type"] == "BlogPosting" and posting["headline"] == article["title"]
            assert posting["datePublished"] == article["publishedAt"]


@pytest.mark.slow
def test_seeded_blog_site_follows_the_service(
    tmp_path: Path, live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    seeded = admin(live_server, "seed", "--base-url", live_server.url)
    config_file = write_site(tmp_path, live_server.url, plugin={"client_id": seeded["client_id"]})
    settings = site_config.load_site_settings(str(config_file))[0]
    login(settings, open_browser=approve_as(seeded["user"], seeded["password"]), timeout=60)
    stored = CredentialStore(settings.credentials_file).load()
    assert stored is not None

    build_site(config_file)
    site_dir = tmp_path / "site"
    articles = published(live_server, stored.access_token)
    slugs = {a["slug"] for a in articles}
    assert len(articles) == seeded["articles"] == 12
    assert "blogsvc: 12 new, 0 updated, 0 deleted, 0 unchanged in " in caplog.text
    assert built_posts(site_dir) == slugs and listed_links(site_dir) == slugs
    every_page = "".join(p.read_text(encoding="utf-8") for p in site_dir.rglob("*.html"))
    assert not any(title in every_page for title in HIDDEN)
    check_article_pages(site_dir, articles)

    edited, unpublished, deleted = articles[0], articles[1], articles[2]
    admin(live_server, "update-article", edited["id"], "--title", "Docs next to the code, revisited")
    admin(live_server, "unpublish", unpublished["id"])
    admin(live_server, "delete-article", deleted["id"])
    added = admin(
        live_server,
        "add-article",
        "--blog",
        seeded["blog"]["slug"],
        "--title",
        "Fresh from the service",
        "--content",
        "Published after the first build.",
        "--cover-image",
        str(NEW_COVER),
    )
    caplog.clear()
    build_site(config_file)
    assert "blogsvc: 1 new, 1 updated, 2 deleted, 9 unchanged in " in caplog.text

    after = published(live_server, stored.access_token)
    expected = slugs - {unpublished["slug"], deleted["slug"]} | {added["slug"]}
    assert {a["slug"] for a in after} == expected
    assert built_posts(site_dir) == expected and listed_links(site_dir) == expected
    changed = [a for a in after if a["id"] in (edited["id"], added["id"])]
    assert len(changed) == 2 and added["schemaOrgJson"] is None
    check_article_pages(site_dir, changed)
    assert "Docs next to the code, revisited" in post_page(site_dir, edited["slug"]).read_text(encoding="utf-8")
    assert (site_dir / "blog" / "index.html").read_text(encoding="utf-8").count("Fresh from the service") >= 1
