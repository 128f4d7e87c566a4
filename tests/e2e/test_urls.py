"""Issue 14 as real builds: redirects when an article's URL changes, links between articles,
sitemap `lastmod` and `<link rel="canonical">`, with Material's blog plugin and the built-in theme,
against the reference service on a loopback port."""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from sqlalchemy import update

from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, Owner, add_article, add_owner, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site

SITE_URL = "https://example.test/site/"


class Page(HTMLParser):
    """The parts of a built page these tests read: links, canonical links, meta refresh."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.links: list[str] = []
        self.canonical: list[str] = []
        self.refresh: list[str] = []
        self.text = path.read_text(encoding="utf-8")
        self.feed(self.text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        elif tag == "link" and found.get("rel") == "canonical":
            self.canonical.append(str(found.get("href")))
        elif tag == "meta" and (found.get("http-equiv") or "").lower() == "refresh":
            self.refresh.append(str(found.get("content")))


def make_site(
    tmp_path: Path,
    url: str,
    db: Database,
    owner: Owner,
    *,
    material: bool = True,
    plugin: dict[str, Any] | None = None,
    site_url: str | None = SITE_URL,
) -> Path:
    # full_sync_interval 0: every build asks for every article, so a slug changed on the service
    # (not part of contentHash) shows at the next build; the default waits up to a day.
    options = {"full_sync_interval": 0, **(plugin or {})}
    config = write_site(tmp_path, url, material=material, plugin=options, site_url=site_url)
    write_credentials(tmp_path / "credentials.json", url, issue_access_token(db, owner))
    return config


def run_build(config_file: Path) -> Path:
    config = load_config(str(config_file))
    build(config)
    return Path(config.site_dir)


def page_of(site_dir: Path, slug: str) -> Path | None:
    """The built page whose last URL segment is `slug` (Material puts dates before it)."""
    found = [*site_dir.glob(f"blog/**/{slug}/index.html"), *site_dir.glob(f"blog/**/{slug}.html")]
    assert len(found) <= 1, found
    return found[0] if found else None


def change_slug(db: Database, article_id: str, slug: str) -> None:
    """`server admin update-article ID --slug NEW` through the content layer: the slug moves,
    contentHash stays (it covers title, description, content and tags only)."""
    content.update_article(db, article_id, content.ArticleInput(slug=slug))


def delete(db: Database, article_id: str) -> None:
    with db.session(write=True) as session:
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == article_id))


def follows(redirect: Path, site_dir: Path) -> Path:
    """Where the redirect page at `redirect` sends a browser (its meta refresh), as a file."""
    page = Page(redirect)
    assert len(page.refresh) == 1, page.text
    match = re.fullmatch(r"0;\s*url=(.+)", page.refresh[0])
    assert match, page.refresh
    target = (redirect.parent / match.group(1)).resolve()
    assert site_dir.resolve() in target.parents or target == site_dir.resolve()
    return target / "index.html" if match.group(1).endswith("/") else target


def url_of(site_dir: Path, page: Path) -> str:
    relative = page.relative_to(site_dir).as_posix()
    return relative[: -len("index.html")] if relative.endswith("/index.html") else relative


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_a_changed_slug_redirects_until_the_article_is_deleted(
    tmp_path: Path, service: Service, db: Database, owner: Owner, material: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    moving = add_article(
        db, owner.blog_id, "Moving post", content="# Moving post\n\nThe body that moves.", minutes_ago=10
    )
    add_article(db, owner.blog_id, "Staying post", minutes_ago=5)
    config = make_site(tmp_path, service.url, db, owner, material=material)

    site_dir = run_build(config)
    old = page_of(site_dir, "moving-post")
    assert old is not None and "The body that moves." in old.read_text()
    old_relative = old.relative_to(site_dir)

    change_slug(db, moving, "moved-post")
    site_dir = run_build(config)
    new = page_of(site_dir, "moved-post")
    assert new is not None and "The body that moves." in new.read_text()
    redirect = site_dir / old_relative
    assert redirect.is_file() and "The body that moves." not in redirect.read_text()
    assert follows(redirect, site_dir) == new.resolve()
    page = Page(redirect)
    assert page.canonical == [urljoin(SITE_URL, url_of(site_dir, new))]
    assert [link for link in page.links] == page.refresh[0].split("url=", 1)[1:]
    assert "<script" not in page.text
    assert "blogsvc: 1 redirect page" in caplog.text

    # A fourth build with nothing changed keeps the redirect (the cache remembers the address).
    site_dir = run_build(config)
    assert follows(site_dir / old_relative, site_dir) == new.resolve()

    delete(db, moving)
    site_dir = run_build(config)
    assert page_of(site_dir, "moved-post") is None
    assert not (site_dir / old_relative).exists()
    assert page_of(site_dir, "staying-post") is not None


def test_redirects_false_writes_none(tmp_path: Path, service: Service, db: Database, owner: Owner) -> None:
    moving = add_article(db, owner.blog_id, "Moving post")
    config = make_site(tmp_path, service.url, db, owner, material=False, plugin={"redirects": False})
    site_dir = run_build(config)
    old = page_of(site_dir, "moving-post")
    assert old is not None
    old_relative = old.relative_to(site_dir)
    change_slug(db, moving, "moved-post")
    site_dir = run_build(config)
    assert page_of(site_dir, "moved-post") is not None
    assert not (site_dir / old_relative).exists()


def test_a_page_of_the_site_at_an_old_address_is_never_overwritten(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    moving = add_article(db, owner.blog_id, "Moving post", minutes_ago=10)
    config = make_site(tmp_path, service.url, db, owner, material=False)
    site_dir = run_build(config)
    change_slug(db, moving, "moved-post")
    # The owner writes a page of their own where the article used to be.
    (tmp_path / "docs" / "blog" / "posts" / "moving-post.md").write_text("# My own page\n\nWritten by hand.\n")
    # And another article takes the old slug of a second one.
    second = add_article(db, owner.blog_id, "Second post", minutes_ago=8)
    site_dir = run_build(config)
    change_slug(db, second, "second-renamed")
    add_article(db, owner.blog_id, "Newcomer", slug="second-post", minutes_ago=1)
    site_dir = run_build(config)

    own = site_dir / "blog" / "posts" / "moving-post" / "index.html"
    assert "Written by hand." in own.read_text() and not Page(own).refresh
    taken = site_dir / "blog" / "posts" / "second-post" / "index.html"
    assert "Body of Newcomer." in taken.read_text() and not Page(taken).refresh
    renamed = page_of(site_dir, "second-renamed")
    assert renamed is not None and "Body of Second post." in renamed.read_text()


def shared_slugs(app: Any) -> Any:
    """A filter in front of the reference service that shows article slugs `twin-older` and
    `twin-newer` both as `twin`: the service keeps slugs unique per blog (a unique constraint),
    but the spec does not promise that, and another service may send two articles with one slug."""

    def rename(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        captured: dict[str, Any] = {}

        def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return lambda data: None

        body = b"".join(app(environ, keep))
        if environ["PATH_INFO"].startswith("/api/v1/") and body.startswith(b"{"):
            body = json.dumps(_twin(json.loads(body))).encode("utf-8")
        headers = [(k, v) for k, v in captured["headers"] if k.lower() != "content-length"]
        start_response(captured["status"], [*headers, ("Content-Length", str(len(body)))])
        return iter([body])

    return rename


def _twin(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("slug") in ("twin-older", "twin-newer"):
            value = {**value, "slug": "twin"}
        return {key: _twin(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_twin(item) for item in value]
    return value


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_the_dash_2_page_redirects_when_its_older_namesake_is_deleted(
    tmp_path: Path, db: Database, owner: Owner, material: bool
) -> None:
    older = add_article(
        db, owner.blog_id, "Twin", slug="twin-older", content="# Twin\n\nThe older twin.", minutes_ago=10
    )
    add_article(db, owner.blog_id, "Twin", slug="twin-newer", content="# Twin\n\nThe newer twin.", minutes_ago=5)
    service = Service(db, wrap=shared_slugs)
    try:
        config = make_site(tmp_path, service.url, db, owner, material=material)
        site_dir = run_build(config)
        plain, second = page_of(site_dir, "twin"), page_of(site_dir, "twin-2")
        assert plain is not None and "The older twin." in plain.read_text()
        assert second is not None and "The newer twin." in second.read_text()
        second_relative = second.relative_to(site_dir)

        delete(db, older)
        site_dir = run_build(config)
        plain = page_of(site_dir, "twin")
        assert plain is not None and "The newer twin." in plain.read_text()
        assert follows(site_dir / second_relative, site_dir) == plain.resolve()
    finally:
        service.stop()


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_links_to_articles_on_the_service_point_at_the_site(
    tmp_path: Path, service: Service, db: Database, owner: Owner, material: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    hosted = f"{service.url}/blogs/{owner.blog_slug}"
    add_article(db, owner.blog_id, "Target post", minutes_ago=20)
    target_by_id = add_article(db, owner.blog_id, "Second target", minutes_ago=15)
    add_article(db, owner.blog_id, "Secret draft", status="draft")
    linking = add_article(
        db,
        owner.blog_id,
        "Linking post",
        minutes_ago=1,
        content=(
            "# Linking post\n\n"
            f"Read [the target]({hosted}/target-post#part-2), [by id]({service.url}/api/v1/articles/{target_by_id}) "
            f"and [the draft]({hosted}/secret-draft).\n\n"
            f"```\n[in code]({hosted}/target-post)\n```\n"
        ),
    )
    config = make_site(tmp_path, service.url, db, owner, material=material)
    site_dir = run_build(config)
    page_file = page_of(site_dir, "linking-post")
    target, second = page_of(site_dir, "target-post"), page_of(site_dir, "second-target")
    assert page_file is not None and target is not None and second is not None
    page = Page(page_file)
    local = {(page_file.parent / href.split("#")[0]).resolve(): href for href in page.links if "://" not in href}
    assert local[target.parent.resolve()].endswith("#part-2")
    assert second.parent.resolve() in local
    assert f"{hosted}/secret-draft" in page.links
    assert f"[in code]({hosted}/target-post)" in page.text  # code is shown as written
    assert f"blogsvc: article {linking} links to {hosted}/secret-draft, which is not a published article" in caplog.text

    # The target linked by id moves: the linking page (itself unchanged) is rendered again and
    # follows it; a page with no link to it keeps its file.
    other_page = tmp_path / ".cache" / "blogsvc" / "docs" / "blog" / "posts" / "target-post.md"
    mtime = other_page.stat().st_mtime_ns
    change_slug(db, target_by_id, "second-renamed")
    site_dir = run_build(config)
    page_file, moved = page_of(site_dir, "linking-post"), page_of(site_dir, "second-renamed")
    assert page_file is not None and moved is not None
    local = {(page_file.parent / href.split("#")[0]).resolve() for href in Page(page_file).links if "://" not in href}
    assert moved.parent.resolve() in local and second.parent.resolve() not in local
    assert other_page.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_sitemap_lastmod_is_each_articles_updated_at(
    tmp_path: Path, service: Service, db: Database, owner: Owner, material: bool
) -> None:
    dates = {
        "Old news": datetime(2024, 5, 6, 23, 30, tzinfo=timezone.utc),
        "Fresh news": datetime(2025, 1, 2, 0, 15, tzinfo=timezone.utc),
    }
    ids = {title: add_article(db, owner.blog_id, title, minutes_ago=5) for title in dates}
    with db.session(write=True) as session:
        for title, moment in dates.items():
            session.execute(update(tables.Article).where(tables.Article.id == ids[title]).values(updated_at=moment))
    config = make_site(tmp_path, service.url, db, owner, material=material)
    site_dir = run_build(config)
    namespace = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    entries = {
        urlsplit(url.findtext("s:loc", namespaces=namespace) or "").path: url.findtext(
            "s:lastmod", namespaces=namespace
        )
        for url in ET.parse(site_dir / "sitemap.xml").getroot().findall("s:url", namespace)
    }
    for title, moment in dates.items():
        page = page_of(site_dir, title.lower().replace(" ", "-"))
        assert page is not None
        path = urlsplit(urljoin(SITE_URL, url_of(site_dir, page))).path
        assert entries[path] == moment.strftime("%Y-%m-%d")
    assert entries[urlsplit(SITE_URL).path] != "2024-05-06"  # other pages keep MkDocs' build date


def test_canonical_link_even_when_the_theme_has_none(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    add_article(db, owner.blog_id, "Plain theme post")
    config = make_site(tmp_path, service.url, db, owner, material=False)
    theme = tmp_path / "bare-theme"
    theme.mkdir()
    (theme / "main.html").write_text(
        "<!doctype html><html><head><title>{{ page.title }}</title></head><body>{{ page.content }}</body></html>\n"
    )
    data = yaml.safe_load(config.read_text())
    data["theme"] = {"name": None, "custom_dir": "bare-theme"}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    site_dir = run_build(config)
    page_file = page_of(site_dir, "plain-theme-post")
    assert page_file is not None
    assert Page(page_file).canonical == [urljoin(SITE_URL, url_of(site_dir, page_file))]
    home = Page(site_dir / "index.html")
    assert home.canonical == []  # only the plugin's pages get one: the theme decides for the rest


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_themes_with_a_canonical_link_get_no_second_one(
    tmp_path: Path, service: Service, db: Database, owner: Owner, material: bool
) -> None:
    add_article(db, owner.blog_id, "Themed post")
    site_dir = run_build(make_site(tmp_path, service.url, db, owner, material=material))
    page_file = page_of(site_dir, "themed-post")
    assert page_file is not None
    assert Page(page_file).canonical == [urljoin(SITE_URL, url_of(site_dir, page_file))]


def test_no_site_url_no_canonical_and_relative_redirects(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    moving = add_article(db, owner.blog_id, "Moving post")
    config = make_site(tmp_path, service.url, db, owner, material=False, site_url=None)
    site_dir = run_build(config)
    old = page_of(site_dir, "moving-post")
    assert old is not None
    old_relative = old.relative_to(site_dir)
    change_slug(db, moving, "moved-post")
    site_dir = run_build(config)
    new = page_of(site_dir, "moved-post")
    assert new is not None
    assert Page(new).canonical == []
    redirect = Page(site_dir / old_relative)
    assert redirect.canonical == [
        posixpath.relpath(url_of(site_dir, new), posixpath.dirname(old_relative.as_posix())) + "/"
    ]


def test_slug_changed_with_the_admin_command_on_a_running_service(tmp_path: Path, live_server: LiveServer) -> None:
    """As a user does it: `server admin update-article ID --slug NEW` next to a running service,
    then `mkdocs build` in a process of its own."""
    database = Database.from_path(live_server.db_path)
    owner = add_owner(database)
    moving = add_article(database, owner.blog_id, "Moving post", content="# Moving post\n\nThe body that moves.")
    config = make_site(tmp_path, live_server.url, database, owner, material=False)
    database.dispose()

    def mkdocs_build() -> None:
        result = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr

    mkdocs_build()
    site_dir = tmp_path / "site"
    assert page_of(site_dir, "moving-post") is not None
    changed = live_server.admin("update-article", moving, "--slug", "moved-post")
    assert changed.returncode == 0, changed.stderr
    refused = live_server.admin("update-article", moving, "--slug", "Not A Slug")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    mkdocs_build()
    new = page_of(site_dir, "moved-post")
    assert new is not None and "The body that moves." in new.read_text()
    assert follows(site_dir / "blog" / "posts" / "moving-post" / "index.html", site_dir) == new.resolve()


def test_sync_forget_addresses_drops_the_redirects_of_a_settings_mistake(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from click.testing import CliRunner

    from mkdocs_blogsvc.cli import main

    caplog.set_level(logging.INFO)
    add_article(db, owner.blog_id, "Misplaced post")
    config = make_site(tmp_path, service.url, db, owner, material=False, plugin={"posts_dir": "blog/articles"})
    site_dir = run_build(config)
    mistaken = site_dir / "blog" / "articles" / "misplaced-post" / "index.html"
    assert mistaken.is_file()
    config.write_text(
        config.read_text(encoding="utf-8").replace("posts_dir: blog/articles", "posts_dir: blog/posts"),
        encoding="utf-8",
    )
    site_dir = run_build(config)
    assert mistaken.is_file() and "mkdocs-blogsvc redirect" in mistaken.read_text(encoding="utf-8")

    result = CliRunner().invoke(main, ["sync", "-f", str(config), "--forget-addresses"])
    assert result.exit_code == 0, result.output
    assert "Forgot the earlier addresses of 1 article" in result.output
    caplog.clear()
    site_dir = run_build(config)
    assert not mistaken.exists()
    assert (site_dir / "blog" / "posts" / "misplaced-post" / "index.html").is_file()
    assert "redirect page" not in caplog.text
