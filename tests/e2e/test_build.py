"""Real MkDocs builds (Material + blog plugin, the plain `mkdocs` theme, ProperDocs) against the
reference service served over HTTP on a loopback port."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from sqlalchemy import update

from mkdocs_blogsvc import cache as cache_module
from mkdocs_blogsvc import connection
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.server import media, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, Owner, add_article, issue_access_token
from tests.e2e.sites import Service, snapshot, write_credentials, write_site
from tests.plugin.auth_helpers import LoggedIn

PNG = (Path(media.__file__).parent / "sample_media" / "cover-01.png").read_bytes()
EVIL = "</script><script>alert(1)</script>"
SCHEMA = {"@context": "https://schema.org", "@type": "BlogPosting", "headline": "Cover story", "about": "a < b & c"}


def cover_article(db: Database, owner: Owner, title: str, **fields: Any) -> str:
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, PNG)
    return add_article(db, owner.blog_id, title, cover_media_key=key, **fields)


def site(tmp_path: Path, service: Service, db: Database, owner: Owner, **kwargs: Any) -> Path:
    config = write_site(tmp_path, service.url, **kwargs)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    return config


def run_build(config_file: Path, *, strict: bool = False) -> None:
    build(load_config(str(config_file), strict=strict))


class Scripts(HTMLParser):
    """Collects every <script> element: (attributes, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._current: dict[str, str | None] | None = None
        self.meta: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._current = dict(attrs)
            self.scripts.append((self._current, ""))
        elif tag == "meta":
            self.meta.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._current = None


def parse(page: Path) -> Scripts:
    parser = Scripts()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def json_ld(parsed: Scripts) -> list[Any]:
    return [json.loads(text) for attrs, text in parsed.scripts if attrs.get("type") == "application/ld+json"]


def meta_property(parsed: Scripts, name: str) -> list[str | None]:
    return [m.get("content") for m in parsed.meta if m.get("property") == name or m.get("name") == name]


def post_page(site_dir: Path, slug: str) -> Path:
    found = [p for p in site_dir.glob(f"blog/**/{slug}/index.html")]
    assert len(found) == 1, sorted(str(p.relative_to(site_dir)) for p in site_dir.rglob("index.html"))
    return found[0]


def test_material_blog_site(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    stale = {**SCHEMA, "headline": "An older title", "dateModified": "2020-01-02T03:04:05Z"}  # written before an edit
    cover_article(
        db, owner, "Cover story", schema_org_json=stale, tags=["news"], seo_keywords=["kw one"], minutes_ago=10
    )
    add_article(db, owner.blog_id, "Second post", minutes_ago=5)
    add_article(db, owner.blog_id, "Secret draft", status="draft")
    config = site(tmp_path, service, db, owner)
    docs_before = snapshot(tmp_path / "docs")

    run_build(config)
    site_dir = tmp_path / "site"
    index = (site_dir / "blog" / "index.html").read_text()
    assert "Cover story" in index and "Second post" in index and "Secret draft" not in index
    assert "blogsvc: 2 new, 0 updated, 0 deleted, 0 unchanged in " in caplog.text

    page = post_page(site_dir, "cover-story")
    parsed = parse(page)
    page_url = "https://example.test/site/" + str(page.parent.relative_to(site_dir)) + "/"
    # the service's fields as sent; the page on the site, the cover's copy on the site, and the
    # article's own title and dates (as the heading and the Open Graph tags show them); the cover
    # as an ImageObject with its size, as og:image:width and og:image:height give it
    cover_object = {"@type": "ImageObject", "url": meta_property(parsed, "og:image")[0], "width": 1200, "height": 630}
    assert (meta_property(parsed, "og:image:width"), meta_property(parsed, "og:image:height")) == (["1200"], ["630"])
    assert json_ld(parsed) == [
        {
            **SCHEMA,
            "url": page_url,
            "mainEntityOfPage": page_url,
            "image": cover_object,
            "headline": "Cover story",
            "datePublished": meta_property(parsed, "article:published_time")[0],
            "dateModified": meta_property(parsed, "article:modified_time")[0],
        }
    ]
    cover = re.search(r'<img alt="Cover story"[^>]* src="([^"]+)"', page.read_text())  # width, height between
    assert cover and not cover.group(1).startswith("http")
    assert (page.parent / cover.group(1)).resolve().read_bytes() == PNG
    image_url = meta_property(parsed, "og:image")[0]
    assert image_url and image_url.startswith("https://example.test/site/blog/images/") and image_url.endswith(".png")
    assert meta_property(parsed, "og:title") == ["Cover story"] and meta_property(parsed, "og:type") == ["article"]
    assert meta_property(parsed, "og:url") == [
        "https://example.test/site/" + str(page.parent.relative_to(site_dir)) + "/"
    ]
    assert meta_property(parsed, "article:tag") == ["news"] and meta_property(parsed, "keywords") == ["kw one"]
    assert meta_property(parsed, "article:published_time")[0].endswith("Z")
    assert snapshot(tmp_path / "docs") == docs_before, "the plugin never writes into docs_dir"


def test_a_page_has_the_same_bytes_whatever_the_cache_holds(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: the JSON-LD's keys came in the service's order at the first build and
    sorted (as the cached article file holds them) once the head was computed again, so a
    deploy saw every such page change with nothing changed on the service."""
    cover_article(
        db,
        owner,
        "Cover story",
        schema_org_json={"@type": "BlogPosting", "headline": "H", "about": "A", "@context": "https://schema.org"},
    )
    config = site(tmp_path, service, db, owner)
    run_build(config)
    first = post_page(tmp_path / "site", "cover-story").read_bytes()
    (tmp_path / ".cache" / "blogsvc" / "outputs.pack").unlink()  # the head tags computed from the cache
    run_build(config)
    assert post_page(tmp_path / "site", "cover-story").read_bytes() == first


def test_changes_then_no_change_then_service_down(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    edit = cover_article(db, owner, "Will change", minutes_ago=9)
    hide = add_article(db, owner.blog_id, "Will hide", minutes_ago=8)
    gone = cover_article(db, owner, "Will go", minutes_ago=7, slug="will-go")
    add_article(db, owner.blog_id, "Stays", minutes_ago=6)
    config = site(tmp_path, service, db, owner)
    run_build(config)
    site_dir = tmp_path / "site"
    assert post_page(site_dir, "will-hide") and post_page(site_dir, "will-go")

    with db.session(write=True) as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id == edit)
            .values(title="Changed title", updated_at=db.now() + timedelta(minutes=1))
        )
        session.execute(update(tables.Article).where(tables.Article.id == hide).values(status="unpublished"))
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    add_article(db, owner.blog_id, "Brand new", minutes_ago=1)
    caplog.clear()
    run_build(config)
    assert "blogsvc: 1 new, 1 updated, 2 deleted, 1 unchanged in " in caplog.text
    shown = {p.parent.name for p in site_dir.glob("blog/20*/**/index.html")}
    assert shown == {"will-change", "stays", "brand-new"}
    assert "Changed title" in post_page(site_dir, "will-change").read_text()

    cache_before = snapshot(tmp_path / ".cache")
    service.requests.clear()
    caplog.clear()
    run_build(config)
    assert service.requests.count("/api/v1/sync") == 1 and len(service.requests) == 1
    assert "blogsvc: 0 new, 0 updated, 0 deleted, 3 unchanged in " in caplog.text
    assert snapshot(tmp_path / ".cache") == cache_before, "a no-change build rewrites no file"

    service.stop()
    caplog.clear()
    run_build(config)
    assert "the sync with" in caplog.text and "built from the cache (3 articles)" in caplog.text
    assert {p.parent.name for p in site_dir.glob("blog/20*/**/index.html")} == shown
    with pytest.raises(Abort, match="warnings in strict mode"):
        run_build(config, strict=True)


#: `mkdocs build` in a fresh process, then the modules it imported that a build with nothing
#: changed must not need (the test process itself has imported everything: the sanitiser, image
#: code, and httpx's own transport with httpcore, h11 and anyio), and the CA bundles loaded into
#: TLS contexts (most of a small sync's cost; a service on plain http needs none).
BUILD_AND_LIST_MODULES = """
import json, ssl, sys
loaded = []
load_verify_locations = ssl.SSLContext.load_verify_locations
def counting(self, *args, **kwargs):
    loaded.append(1)
    return load_verify_locations(self, *args, **kwargs)
ssl.SSLContext.load_verify_locations = counting
from mkdocs.__main__ import cli
cli.main(args=["build", "-q", "-f", sys.argv[1]], prog_name="mkdocs", standalone_mode=False)
modules = [name for name in ("mkdocs_blogsvc.sanitize", "nh3", "mkdocs_blogsvc.images", "concurrent.futures", "PIL",
                             "mkdocs_blogsvc.export", "httpcore", "h11", "anyio")
           if name in sys.modules]
print(json.dumps(sorted(modules) + ["CA bundle"] * len(loaded)))
"""


def test_a_build_with_nothing_changed_loads_no_sanitiser_image_code_httpcore_or_ca_bundle(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """What makes a no-change build cheap, checked where it counts (a new process, as users run
    it): the pages and their sanitised HTML come from the cache, no image is fetched, the export
    code is not loaded (the plugin reads only its record, `exportrecord`), the sync
    goes through the client's own transport (`transport.StdlibTransport`, not httpcore), and a
    service on plain http loads no CA bundle. The site is the same as after the first build."""
    cover_article(db, owner, "Pictured", content="# Pictured\n\nHello <b>there</b><script>alert(1)</script>")
    add_article(db, owner.blog_id, "Plain", minutes_ago=3)
    config = site(tmp_path, service, db, owner)

    def build_listing_modules() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", BUILD_AND_LIST_MODULES, str(config)],
            check=False,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout.strip().splitlines()[-1]))

    first = build_listing_modules()  # everything new: sanitised, images downloaded
    assert {"mkdocs_blogsvc.sanitize", "nh3", "mkdocs_blogsvc.images", "PIL"} <= set(first)  # PIL: image headers
    assert not {"httpcore", "h11", "anyio", "CA bundle"} & set(first)  # images came through the same transport
    built = snapshot(tmp_path / "site")
    service.requests.clear()
    assert build_listing_modules() == []
    assert service.requests == ["/api/v1/sync"]
    again = snapshot(tmp_path / "site")  # the sitemap too: pages in one order whatever the sync's
    assert {path: data for path, (_mtime, data) in again.items() if not path.endswith("sitemap.xml.gz")} == {
        path: data for path, (_mtime, data) in built.items() if not path.endswith("sitemap.xml.gz")
    }
    page = post_page(tmp_path / "site", "pictured").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in page and "<b>there</b>" in page
    assert json_ld(parse(post_page(tmp_path / "site", "pictured")))  # head tags from the cache


def test_on_error_fail_stops_the_build_and_keeps_the_previous_site(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    cover_article(db, owner, "Kept")
    config = site(tmp_path, service, db, owner, plugin={"on_error": "fail"})
    run_build(config)
    before = snapshot(tmp_path / "site")
    assert any(path.endswith("kept/index.html") for path in before)
    service.stop()
    with pytest.raises(Abort):
        run_build(config)
    assert re.search(r"ERROR .*blogsvc: the sync with http://127.0.0.1:\d+ failed: could not reach", caplog.text)
    assert snapshot(tmp_path / "site") == before  # stopped before MkDocs emptied site_dir


@pytest.mark.parametrize(
    ("on_error", "cached", "stops"),
    [
        (None, False, True),  # auto: a fresh CI runner would publish the site without its blog
        (None, True, False),  # auto: the cache of an earlier sync is published, with a warning
        (None, "empty", False),  # auto: a blog synced with no article yet: nothing is left out
        ("warn", False, False),
    ],
)
def test_in_ci_a_failed_sync_with_nothing_cached_stops_the_build(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    on_error: str | None,
    cached: bool | str,
    stops: bool,
) -> None:
    """Found by review: the CI recipe's publishing job, on a fresh runner, deployed a site without
    its blog (exit 0) while the service was down. A blog synced before with no article stopped
    too, though its cache leaves nothing out."""
    if cached != "empty":
        cover_article(db, owner, "Kept")
    config = site(tmp_path, service, db, owner, plugin={"on_error": on_error} if on_error else {})
    if cached:
        run_build(config)
    service.stop()
    monkeypatch.setenv("CI", "true")
    if stops:
        with pytest.raises(Abort):
            run_build(config)
        assert re.search(
            r"ERROR .*blogsvc: the sync with http://127.0.0.1:\d+ failed: could not reach .*; the cache holds "
            r"no article, and CI=true stops the build rather than publish the site without its blog "
            r"\(set on_error: warn to build it anyway\)",
            caplog.text,
        ), caplog.text
    else:
        run_build(config)
        assert "the site is built from the cache" in caplog.text
        assert any((tmp_path / "site").rglob("kept/index.html")) == (cached is True)


def test_on_a_persons_machine_a_failed_sync_with_nothing_cached_goes_on(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`on_error: auto` stops only in CI: a person previewing the site while the service is down
    gets the rest of the site and a warning."""
    cover_article(db, owner, "Kept")
    config = site(tmp_path, service, db, owner)
    service.stop()
    monkeypatch.delenv("CI", raising=False)
    run_build(config)
    assert "the site is built from the cache" in caplog.text
    assert (tmp_path / "site" / "index.html").is_file()


def test_hostile_article(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    hostile_schema = {"@type": "BlogPosting", "headline": EVIL, "x": "\u2028"}
    cover_article(
        db,
        owner,
        EVIL,
        slug="../../mkdocs",
        schema_org_json=hostile_schema,
        description=EVIL,
        tags=[EVIL],
        seo_keywords=[EVIL],
        content="Plain body.",
    )
    config = site(tmp_path, service, db, owner)
    outside_before = {p for p in snapshot(tmp_path) if not p.startswith((".cache/", "site/"))}
    run_build(config)
    outside_after = {p for p in snapshot(tmp_path) if not p.startswith((".cache/", "site/"))}
    assert outside_after == outside_before, "nothing written outside the cache (and the site)"
    assert not (tmp_path / "mkdocs.md").exists() and not (tmp_path.parent / "mkdocs.md").exists()
    assert "unusable slug '../../mkdocs'" in caplog.text
    for page in (tmp_path / "site").rglob("*.html"):
        parsed = parse(page)
        for attrs, text in parsed.scripts:
            assert "alert(1)" not in text or attrs.get("type") == "application/ld+json", page
    article_page = post_page(tmp_path / "site", "script-script-alert-1-script-*")
    (posted,) = json_ld(parse(article_page))
    assert {key: posted[key] for key in hostile_schema} == hostile_schema
    assert meta_property(parse(article_page), "og:title") == [EVIL]


def test_plain_mkdocs_theme_gets_an_index_and_head_tags(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    cover_article(db, owner, "Older", minutes_ago=20, description="The old one")
    add_article(db, owner.blog_id, "Newer", minutes_ago=2)
    config = site(tmp_path, service, db, owner, material=False, site_url=None)
    (tmp_path / "docs" / "blog" / "posts").rmdir()
    docs_before = snapshot(tmp_path / "docs")
    run_build(config)
    site_dir = tmp_path / "site"
    index = (site_dir / "blog" / "index.html").read_text()
    assert index.index("Newer") < index.index("Older")
    assert 'href="../posts/older/"' not in index and 'href="posts/older/"' in index
    page = site_dir / "blog" / "posts" / "older" / "index.html"
    parsed = parse(page)
    (posting,) = json_ld(parsed)
    assert posting["@type"] == "BlogPosting" and posting["headline"] == "Older" and posting["inLanguage"] == "en"
    assert "url" not in posting  # no site_url: no absolute URL to give
    image = meta_property(parsed, "og:image")[0]
    assert image and (page.parent / image).resolve().read_bytes() == PNG
    assert snapshot(tmp_path / "docs") == docs_before


def test_two_instances_must_not_share_a_cache(
    tmp_path: Path, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_site(tmp_path, service.url, material=False)
    text = config.read_text().replace(
        "plugins:\n", "plugins:\n- blogsvc:\n    blog_dir: other\n    credentials_file: other.json\n"
    )
    config.write_text(text)
    with pytest.raises(Abort):
        run_build(config)
    assert "blogsvc: two instances of the plugin share cache_dir" in caplog.text


@pytest.mark.slow
def test_properdocs_build(tmp_path: Path, service: Service, db: Database, owner: Owner) -> None:
    properdocs = shutil.which("properdocs", path=str(Path(sys.executable).parent))
    assert properdocs, "properdocs is a test dependency"
    cover_article(db, owner, "Cover story", schema_org_json=SCHEMA, minutes_ago=3)
    add_article(db, owner.blog_id, "Secret draft", status="draft")
    config = site(tmp_path, service, db, owner)
    docs_before = snapshot(tmp_path / "docs")
    result = subprocess.run(
        [properdocs, "build", "-f", str(config)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "blogsvc: 1 new, 0 updated, 0 deleted, 0 unchanged in " in result.stderr
    index = (tmp_path / "site" / "blog" / "index.html").read_text()
    assert "Cover story" in index and "Secret draft" not in index
    page = post_page(tmp_path / "site", "cover-story")
    (posted,) = json_ld(parse(page))
    assert {key: posted[key] for key in SCHEMA} == SCHEMA and posted["url"].startswith(
        "https://example.test/site/blog/"
    )
    assert meta_property(parse(page), "og:title") == ["Cover story"]
    assert snapshot(tmp_path / "docs") == docs_before


def test_revoked_grant_stops_the_build_even_with_on_error_warn(
    tmp_path: Path, live_server: LiveServer, live_logged_in: LoggedIn
) -> None:
    """A dead refresh token will not heal by itself: the build fails with the one actionable message."""
    settings = live_logged_in.settings
    config = write_site(
        settings.credentials_file.parent.parent,
        live_server.url,
        plugin={  # on_error: warn
            "client_id": settings.client_id,
            "credentials_file": ".blogsvc/credentials.json",
        },
    )
    database = Database.from_path(live_server.db_path)
    now = database.now()
    with database.session(write=True) as session:
        session.execute(update(tables.Grant).values(revoked_at=now))
        session.execute(update(tables.Token).values(revoked_at=now))
    database.dispose()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config)],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )
    assert result.returncode == 1
    assert "blogsvc: the service refused the refresh token" in result.stderr
    assert "mkdocs-blogsvc login" in result.stderr
    assert "Traceback" not in result.stderr and "svc_" not in result.stderr


# --- failures that stop the build, in one message -----------------------------------------------


def cache_is_unlocked(tmp_path: Path) -> bool:
    lock = Cache(tmp_path / ".cache" / "blogsvc")
    if not lock.try_acquire(0):
        return False
    lock.release()
    return True


def no_traceback(caplog: pytest.LogCaptureFixture) -> bool:
    return all(record.exc_info is None for record in caplog.records) and "Traceback" not in caplog.text


@pytest.mark.parametrize("setting", ["page_template", "head_template"])
def test_a_custom_template_failing_at_render_time_stops_the_build_naming_file_and_line(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    setting: str,
) -> None:
    add_article(db, owner.blog_id, "One")
    template = tmp_path / "custom.j2"
    template.write_text("{{ article.title }}\n\n\n{{ artcle.title }}\n")  # the typo fails only when rendering
    config = site(tmp_path, service, db, owner, material=False, plugin={setting: "custom.j2"})
    with pytest.raises(Abort):
        run_build(config)
    assert re.search(
        rf"ERROR .*blogsvc: {setting} \S*custom\.j2 cannot be rendered \(article \w+\): line 4: 'artcle' is undefined",
        caplog.text,
    ), caplog.text
    assert no_traceback(caplog)
    assert cache_is_unlocked(tmp_path), "a failed build releases the cache"


def test_a_page_template_failing_at_render_time_leaves_the_previous_site(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Review finding: the error came after MkDocs had emptied site_dir (86 files to 0)."""
    add_article(db, owner.blog_id, "One")
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    before = snapshot(tmp_path / "site")
    assert any(name.endswith("index.html") for name in before)
    (tmp_path / "custom.j2").write_text("{{ article.title }}\n{{ artcle.title }}\n")
    config.write_text(
        config.read_text().replace(
            "credentials_file: credentials.json", "credentials_file: credentials.json\n    page_template: custom.j2"
        )
    )
    with pytest.raises(Abort):
        run_build(config)
    assert snapshot(tmp_path / "site") == before


def test_missing_client_id_stops_the_build_even_with_on_error_warn(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BLOGSVC_CLIENT_ID", raising=False)
    add_article(db, owner.blog_id, "One")
    config = site(tmp_path, service, db, owner, material=False, plugin={"client_id": None})
    with pytest.raises(Abort):
        run_build(config)
    assert re.search(r"ERROR .*blogsvc: client_id is not set: add `client_id`", caplog.text)
    assert "blogsvc: blogsvc:" not in caplog.text and "built from the cache" not in caplog.text
    assert no_traceback(caplog)


def test_a_connection_without_the_articles_scope_stops_the_build_even_with_on_error_warn(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A scope missing is a setting to fix (`scope`, then login), not an outage to wait out:
    no build from the cache, whatever `on_error` says."""
    add_article(db, owner.blog_id, "One")
    config = write_site(tmp_path, service.url, material=False, plugin={"on_error": "warn"})
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner, scope="blog:read"))
    with pytest.raises(Abort):
        run_build(config)
    assert re.search(r"ERROR .*blogsvc: the sync with http://127\.0\.0\.1:\d+ failed: ", caplog.text), caplog.text
    assert "built from the cache" not in caplog.text and no_traceback(caplog)


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (
            {"credentials_file": "docs/.blogsvc/credentials.json"},
            "blogsvc: credentials_file ({}) is inside docs_dir; it would be published",
        ),
        ({"cache_dir": "docs/cache"}, "blogsvc: cache_dir ({}) is inside docs_dir"),
        ({"cache_dir": "."}, "blogsvc: cache_dir ({}) contains docs_dir"),
    ],
)
def test_files_of_the_plugin_inside_docs_dir_are_refused(
    tmp_path: Path, service: Service, caplog: pytest.LogCaptureFixture, plugin: dict[str, str], message: str
) -> None:
    config = write_site(tmp_path, service.url, material=False, plugin=plugin)
    with pytest.raises(Abort):
        run_build(config)
    (value,) = plugin.values()
    assert message.format(tmp_path / value) in caplog.text
    assert service.requests == [] and not (tmp_path / "docs" / "cache").exists()


def test_a_build_waits_for_another_process_holding_the_cache_then_gives_up_in_one_message(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO)
    add_article(db, owner.blog_id, "One")
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    assert cache_is_unlocked(tmp_path), "the build released the cache at its end"
    other = Cache(tmp_path / ".cache" / "blogsvc")  # as `mkdocs-blogsvc sync` in another process
    other.acquire()
    monkeypatch.setattr(cache_module, "LOCK_TIMEOUT", 0.3)
    service.requests.clear()
    try:
        with pytest.raises(Abort):
            run_build(config)
    finally:
        other.release()
    assert "blogsvc: waiting for another process that is using the cache in" in caplog.text
    assert re.search(r"ERROR .*blogsvc: the cache in \S+ is still in use by another process .* after 0 s", caplog.text)
    assert service.requests == [], "nothing synced without the lock"
    assert no_traceback(caplog)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>Bad gateway</html>", "with a body that is not JSON"),
        (
            b'{"new": "everything", "updated": [], "deleted": [], "syncedAt": "2025-01-01T00:00:00.000Z"}',
            "sync answer: field 'new' has the wrong type (str)",
        ),
    ],
)
def test_a_malformed_sync_answer_warns_and_builds_from_the_intact_cache(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    body: bytes,
    problem: str,
) -> None:
    cover_article(db, owner, "Cover story")
    config = site(tmp_path, service, db, owner, material=False)
    run_build(config)
    cache_before = snapshot(tmp_path / ".cache")

    def handler(request: httpx.Request) -> httpx.Response:  # what the reference service cannot answer
        return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})

    real_connect = connection.connect
    monkeypatch.setattr(
        connection, "connect", lambda settings: real_connect(settings, transport=httpx.MockTransport(handler))
    )
    caplog.clear()
    run_build(config)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and problem in warnings[0].getMessage(), caplog.text
    assert "the site is built from the cache (1 article)" in warnings[0].getMessage()
    assert no_traceback(caplog)
    assert snapshot(tmp_path / ".cache") == cache_before
    assert "Cover story" in (tmp_path / "site" / "blog" / "posts" / "cover-story" / "index.html").read_text()


def test_materials_blog_index_shows_the_lead_not_the_whole_post(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    add_article(
        db,
        owner.blog_id,
        "With a lead",
        description="The lead, in short.",
        content="First paragraph.\n\nThe rest of a long body.",
    )
    add_article(db, owner.blog_id, "Without", description=None, content="Only a body.", minutes_ago=5)
    run_build(site(tmp_path, service, db, owner, material=True))
    index = (tmp_path / "site" / "blog" / "index.html").read_text(encoding="utf-8")
    assert "The lead, in short." in index and "The rest of a long body." not in index
    assert "Only a body." in index  # no description: no marker, the whole (short) post
    page = post_page(tmp_path / "site", "with-a-lead").read_text(encoding="utf-8")
    assert "The lead, in short." in page and "The rest of a long body." in page


def test_a_hand_written_post_at_an_articles_address_is_warned_about(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Review finding: Material computes post URLs from slugs, so a post of docs_dir with an
    article's slug was written over (or over it) without a word."""
    add_article(db, owner.blog_id, "Shared address")
    config = site(tmp_path, service, db, owner, material=True)
    config.write_text(
        config.read_text().replace("post_date_format: short", "post_date_format: short\n    post_url_format: '{slug}'")
    )
    (tmp_path / "docs" / "blog" / "posts" / "mine.md").write_text(
        "---\ndate: 2025-01-01\nslug: shared-address\n---\n\n# Mine\n\nMy own post.\n", encoding="utf-8"
    )
    caplog.set_level(logging.WARNING)
    run_build(config)
    (line,) = [r.getMessage() for r in caplog.records if "both written to" in r.getMessage()]
    assert "blog/posts/mine.md of docs_dir and the article page blog/posts/shared-address.md" in line
    assert "blog/shared-address/index.html" in line


def test_an_article_without_a_description_is_described_by_its_first_paragraph(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Without a description, Material printed the site's description on every such article,
    there was no `og:description`, and mkdocs-rss-plugin made the feed entry of the page's first
    Markdown (its heading and cover). Now the summary of its first paragraph stands in."""
    body = (
        "# Quiet\n\n```python\nprint('code is not prose')\n```\n\nThe **first** paragraph, with "
        "[a link](https://example.org/) & <b>raw HTML</b>.\n\nThe second one."
    )
    cover_article(db, owner, "Quiet", description=None, content=body)
    add_article(db, owner.blog_id, "Loud", description="Its own description.", minutes_ago=5)
    config = site(tmp_path, service, db, owner, material=True)
    config.write_text(
        config.read_text() + "- rss:\n    match_path: blog/posts/.*\n    use_git: false\n"
        "    date_from_meta: {as_creation: date.created, as_update: date.updated}\n"
    )
    loaded = load_config(str(config), strict=True)
    loaded.plugins.on_startup(command="build", dirty=False)  # where mkdocs-rss-plugin sets itself up
    build(loaded)
    summary = "The first paragraph, with a link & raw HTML. The second one."
    quiet, loud = (parse(post_page(tmp_path / "site", slug)) for slug in ("quiet", "loud"))
    assert meta_property(quiet, "description") == [summary] and meta_property(quiet, "og:description") == [summary]
    assert meta_property(loud, "description") == ["Its own description."]
    feed = (tmp_path / "site" / "feed_rss_created.xml").read_text(encoding="utf-8")
    descriptions = re.findall(r"<description>(.*?)</description>", feed, re.DOTALL)
    assert "The first paragraph, with a link &amp; raw HTML. The second one." in descriptions, descriptions
    assert "Its own description." in descriptions and not any("Quiet" in d or "code" in d for d in descriptions)


def test_a_cover_url_that_is_not_downloaded_cannot_inject_markup_into_the_feed(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Found by review: mkdocs-rss-plugin prints the front matter's `image` unescaped into its
    feed's `<enclosure url="...">`; a cover URL holding `"` and `<` that failed to download (the
    service decides both) put a script element of its own into feed_rss_created.xml, served from
    the site's origin."""
    key = 'a.png?"/><script xmlns="http://www.w3.org/1999/xhtml">alert(document.domain)</script><x y="'
    add_article(db, owner.blog_id, "Loud", description="Its own description.", cover_media_key=key)
    config = site(tmp_path, service, db, owner, material=True)
    config.write_text(
        config.read_text() + "- rss:\n    match_path: blog/posts/.*\n    use_git: false\n"
        "    date_from_meta: {as_creation: date.created, as_update: date.updated}\n"
    )
    loaded = load_config(str(config), strict=False)  # the failed download is a warning
    loaded.plugins.on_startup(command="build", dirty=False)  # where mkdocs-rss-plugin sets itself up
    build(loaded)
    feed = (tmp_path / "site" / "feed_rss_created.xml").read_text(encoding="utf-8")
    assert "<script" not in feed
    assert '<enclosure url="' in feed and "/media/a.png?%22/%3E%3Cscript" in feed


def test_schema_org_json_nested_hundreds_deep_is_refused_in_one_line(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Review finding: JSON nested 600 deep is read by `json.loads`, and then stopped the build
    with a RecursionError traceback in the JSON-LD code (only `[[[...` thousands deep was refused)."""
    deep: Any = "x"
    for _ in range(600):
        deep = [deep]
    add_article(db, owner.blog_id, "Deep", schema_org_json={"@type": "BlogPosting", "about": deep})
    config = site(tmp_path, service, db, owner, material=True)
    with caplog.at_level(logging.WARNING):
        run_build(config)
    (line,) = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert "POST /api/v1/sync answered HTTP 200 with JSON nested too deeply (more than 100 levels): refused" in line
