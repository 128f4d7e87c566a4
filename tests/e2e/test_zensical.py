"""The Zensical path (issue 9): `mkdocs-blogsvc export` into `docs`, then a real `zensical build`.

Zensical runs no third-party plugins, so these tests check what its users get from the export
alone: the article pages with their cover served from the site, the JSON-LD in `<head>` naming
the page, the Open Graph and `article:` tags from the theme override that export writes, the
tags, the blog's changes after a second export, and redirect pages at an article's earlier
addresses. One `mkdocs.yml` also builds with MkDocs and the plugin, to the same URLs and heads.
Zensical builds cost CPU: each test runs as few as it needs.
"""

from __future__ import annotations

import html
import json
import logging
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.demo import build_site
from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.seed import seed
from tests.conftest import Owner, add_article, free_port, issue_access_token
from tests.e2e.sites import CLIENT_ID, Service, snapshot, write_credentials
from tests.e2e.test_build import Scripts, json_ld, meta_property, parse
from tests.e2e.test_export import read, wait_for
from tests.e2e.test_untrusted import hover_everything, pwn, served

SITE_URL = "https://example.test/notes/"
#: The seed's draft and unpublished articles: never on the site.
HIDDEN = {
    "notes-on-a-plugin-architecture": "Notes on a plugin architecture",
    "our-old-deployment-checklist": "Our old deployment checklist",
}


def one_site(root: Path, base_url: str, site_url: str | None = SITE_URL) -> Path:
    """A site whose one mkdocs.yml serves MkDocs with the plugin (BLOGSVC_PLUGIN=true) and
    Zensical with exported files (the plugin entry stays, disabled)."""
    (root / "docs" / "blog").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Home\n")
    (root / "docs" / "blog" / "index.md").write_text("# Blog\n")
    (root / "overrides").mkdir()
    config = root / "mkdocs.yml"
    config.write_text(
        "site_name: Field Notes\n"
        + (f"site_url: {site_url}\n" if site_url else "")
        + "theme:\n  name: material\n  custom_dir: overrides\n"
        "plugins:\n"
        "  - search\n"
        "  - blogsvc:\n"
        "      enabled: !ENV [BLOGSVC_PLUGIN, false]\n"
        f"      base_url: {base_url}\n"
        f"      client_id: {CLIENT_ID}\n"
        "      credentials_file: credentials.json\n"
        '  - blog:\n      post_url_format: "{slug}"\n      authors: false\n'
        "  - tags\n",
        encoding="utf-8",
    )
    return config


def seeded_owner(db: Database) -> Owner:
    """The seed's user and blog as an `Owner`, to mint the site's access token."""
    with db.session() as session:
        blog = session.scalars(select(tables.Blog).where(tables.Blog.slug == "demo-blog")).one()
        user = session.get(tables.User, blog.owner_id)
        assert user is not None
        return Owner(user.id, user.username, "demo-password", blog.id, blog.slug)


@pytest.fixture
def seeded(tmp_path: Path, service: Service, db: Database, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """The sample blog on the reference service and a site logged in to it: (mkdocs.yml, token).
    Indirect parametrization may give the site's `site_url` (None: none)."""
    seed(db, base_url_hint=service.url)
    token = issue_access_token(db, seeded_owner(db))
    config = one_site(tmp_path, service.url, getattr(request, "param", SITE_URL))
    write_credentials(tmp_path / "credentials.json", service.url, token)
    return config, token


def published(service: Service, token: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{service.url}/api/v1/articles",
        params={"limit": 100},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    response.raise_for_status()
    articles: list[dict[str, Any]] = response.json()["articles"]
    return articles


def export(config: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["export", str(config.parent / "docs"), "-f", str(config), *args])
    assert result.exit_code == 0, result.output
    return result.output


def zensical_build(root: Path) -> str:
    """`zensical build --strict` (a warning fails it) in `root`; returns what it printed."""
    result = subprocess.run(
        [sys.executable, "-m", "zensical", "build", "--strict"],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Warning" not in output and "Traceback" not in output, output
    return output


def check_page(site_dir: Path, article: dict[str, Any]) -> None:
    """One article page built from exported files, as a search engine or link preview reads it."""
    page = site_dir / "blog" / article["slug"] / "index.html"
    html = page.read_text(encoding="utf-8")
    parsed = parse(page)
    (posting,) = json_ld(parsed)
    url = f"{SITE_URL}blog/{article['slug']}/"
    head = html.partition("</head>")[0]
    assert head.count('<script type="application/ld+json">') == 1, "the JSON-LD is in <head>, once"
    assert f'<link rel="canonical" href="{url}">' in head
    (og_image,) = meta_property(parsed, "og:image")
    assert og_image is not None and og_image.startswith(f"{SITE_URL}blog/images/")
    (width,), (height,) = meta_property(parsed, "og:image:width"), meta_property(parsed, "og:image:height")
    assert meta_property(parsed, "og:image:alt") == [article["title"]]
    cover = {"@type": "ImageObject", "url": og_image, "width": int(str(width)), "height": int(str(height))}
    if article["schemaOrgJson"] is not None:  # as the service sent it, its images the site's copies, the page named
        entity = article["schemaOrgJson"].get("mainEntityOfPage")
        assert posting == {
            **article["schemaOrgJson"],
            "image": cover,
            "headline": article["title"],
            "datePublished": article["publishedAt"],
            "dateModified": article["updatedAt"],
            "url": url,
            "mainEntityOfPage": {**entity, "@id": url} if isinstance(entity, dict) else url,
        }, article["slug"]
    else:
        assert posting["@type"] == "BlogPosting" and posting["headline"] == article["title"]
        assert posting["datePublished"] == article["publishedAt"] and posting["image"] == cover
        assert posting["url"] == posting["mainEntityOfPage"] == url
    assert meta_property(parsed, "og:title") == [article["title"]]
    assert meta_property(parsed, "og:url") == [url]
    assert meta_property(parsed, "article:published_time") == [article["publishedAt"]]
    assert meta_property(parsed, "article:tag") == article["tags"]
    served = site_dir / og_image.removeprefix(SITE_URL)
    assert served.read_bytes() == httpx.get(article["coverImageUrl"], timeout=10).content, article["slug"]
    cover = re.search(r'<img alt="[^"]*"[^>]* src="([^"]+)"', html)
    assert cover and (page.parent / cover.group(1)).resolve() == served.resolve(), "the cover is served from the site"
    chips = re.findall(r'<(?:a|span) [^>]*class="md-tag[^"]*"[^>]*>([^<]+)<', html)
    assert sorted(chips) == sorted(article["tags"]), article["slug"]


def article_pages(site_dir: Path) -> dict[str, dict[str, Any]]:
    """Every built page with JSON-LD, by its URL: what a search engine or a link preview reads
    in its `<head>` (the JSON-LD, the canonical URL, the Open Graph, `article:` and keywords tags)."""
    found: dict[str, dict[str, Any]] = {}
    for page in site_dir.rglob("index.html"):
        text = page.read_text(encoding="utf-8")
        head = parse_text(text.partition("</head>")[0] + "</head>")
        if not json_ld(head):
            continue
        canonical = re.findall(r'<link rel="canonical" href="([^"]*)"', text)
        found[page.parent.relative_to(site_dir).as_posix() + "/"] = {
            "json_ld": json_ld(head),
            "canonical": canonical,
            **{name: meta_property(head, name) for name in HEAD_TAGS},
        }
    return found


HEAD_TAGS = (
    "og:type",
    "og:title",
    "og:description",
    "og:image",
    "og:url",
    "article:published_time",
    "article:modified_time",
    "article:tag",
    "keywords",
)


def parse_text(text: str) -> Scripts:
    parser = Scripts()
    parser.feed(text)
    return parser


def test_zensical_builds_the_exported_blog_and_follows_its_changes(
    tmp_path: Path, service: Service, db: Database, seeded: tuple[Path, str]
) -> None:
    config, token = seeded
    output = export(config, "--theme-dir", str(tmp_path / "overrides"))
    articles = published(service, token)
    assert len(articles) == 12 and "Exported 12 articles" in output
    zensical_build(tmp_path)
    site_dir = tmp_path / "site"
    assert {p.parent.name for p in site_dir.glob("blog/*/index.html")} >= {a["slug"] for a in articles}
    for article in articles:
        check_page(site_dir, article)
    every_page = "".join(p.read_text(encoding="utf-8") for p in site_dir.rglob("*.html"))
    for slug, title in HIDDEN.items():
        assert not (site_dir / "blog" / slug).exists() and title not in every_page

    edited, deleted = articles[0], articles[1]
    content.update_article(db, edited["id"], content.ArticleInput(title="Docs next to the code, revisited"))
    content.delete_article(db, deleted["id"])
    before = snapshot(tmp_path / "docs")
    output = export(config, "--theme-dir", str(tmp_path / "overrides"))
    after = snapshot(tmp_path / "docs")
    changed = {path for path in before.keys() & after.keys() if before[path] != after[path]}
    assert changed == {f"blog/posts/{edited['slug']}.md", ".blogsvc-export.json"}
    assert f"blog/posts/{deleted['slug']}.md" in before.keys() - after.keys()
    assert after.keys() <= before.keys()
    zensical_build(tmp_path)
    assert not (site_dir / "blog" / deleted["slug"]).exists()
    now = published(service, token)
    assert len(now) == 11
    check_page(site_dir, next(a for a in now if a["id"] == edited["id"]))
    assert "<title>Docs next to the code, revisited - Field Notes</title>" in (
        site_dir / "blog" / edited["slug"] / "index.html"
    ).read_text(encoding="utf-8")


@pytest.mark.parametrize("seeded", [SITE_URL, None], indirect=True, ids=["site_url", "no-site_url"])
def test_one_mkdocs_yml_builds_with_mkdocs_and_the_plugin_and_with_zensical_from_the_export(
    tmp_path: Path,
    service: Service,
    db: Database,
    seeded: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    config, token = seeded
    article = published(service, token)[0]
    page = tmp_path / "site" / "blog" / article["slug"] / "index.html"

    monkeypatch.setenv("BLOGSVC_PLUGIN", "true")  # the MkDocs job: the plugin runs
    build_site(config)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "blogsvc: 12 new" in caplog.text
    assert len(json_ld(parse(page))) == 1 and meta_property(parse(page), "og:title") == [article["title"]]
    by_the_plugin = article_pages(tmp_path / "site")
    assert len(by_the_plugin) == 12

    monkeypatch.delenv("BLOGSVC_PLUGIN")  # the Zensical job: the same file, the plugin entry disabled
    export(config, "--theme-dir", str(tmp_path / "overrides"))
    zensical_build(tmp_path)
    assert len(json_ld(parse(page))) == 1 and meta_property(parse(page), "og:title") == [article["title"]]
    by_zensical = article_pages(tmp_path / "site")
    assert by_zensical.keys() == by_the_plugin.keys(), "the same URLs"
    for url, found in by_zensical.items():  # the same head: JSON-LD naming the page, canonical, og:, article:
        assert found == by_the_plugin[url], url

    caplog.clear()  # and MkDocs with the plugin disabled, on the exported files: no warning either
    build_site(config)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert len(json_ld(parse(page))) == 1 and meta_property(parse(page), "og:title") == [article["title"]]
    assert json.loads((tmp_path / "docs" / ".blogsvc-export.json").read_text())

    caplog.clear()  # the plugin again, now with the exported files in docs: it uses its own instead
    monkeypatch.setenv("BLOGSVC_PLUGIN", "true")
    content.delete_article(db, article["id"])
    build_site(config)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "blogsvc: 0 new, 0 updated, 1 deleted, 11 unchanged" in caplog.text
    assert not page.exists(), "an article deleted since the export is not built from the exported file"
    other = tmp_path / "site" / "blog" / published(service, token)[0]["slug"] / "index.html"
    assert len(json_ld(parse(other))) == 1 and len(meta_property(parse(other), "og:title")) == 1
    assert (tmp_path / "docs" / "blog" / "posts" / f"{article['slug']}.md").is_file(), "docs_dir is not touched"


def test_zensical_serve_next_to_export_watch_shows_a_published_article(
    tmp_path: Path,
    service: Service,
    db: Database,
    seeded: tuple[Path, str],
) -> None:
    config, _ = seeded
    export(config, "--theme-dir", str(tmp_path / "overrides"))
    port = free_port()
    with (tmp_path / "processes.log").open("w+") as log:
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mkdocs_blogsvc",
                "export",
                str(tmp_path / "docs"),
                "-f",
                str(config),
                "--interval",
                "1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "zensical", "serve", "-a", f"127.0.0.1:{port}"],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:

            def status(path: str) -> int:
                try:
                    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=2).status_code
                except httpx.TransportError:
                    return 0

            assert wait_for(lambda: status("/blog/") == 200), read(log)
            assert status("/blog/fresh-off-the-service/") == 404
            content.add_article(db, "demo-blog", content.ArticleInput(title="Fresh off the service", content="Hello."))
            assert wait_for(lambda: status("/blog/fresh-off-the-service/") == 200), read(log)
            page = httpx.get(f"http://127.0.0.1:{port}/blog/fresh-off-the-service/", timeout=5).text
            assert "<title>Fresh off the service - Field Notes</title>" in page and "og:title" in page
            watcher.send_signal(signal.SIGINT)
            assert watcher.wait(timeout=30) == 0, read(log)
        finally:
            for child in (server, watcher):
                if child.poll() is None:
                    child.terminate()
                    try:
                        child.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        child.kill()
                        child.wait()
        assert "Traceback" not in read(log)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_exported_page_runs_nothing_in_zensical_s_tooltips(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: Zensical's script, like Material's, shows every `title` of the content, and
    the text of a `.md-ellipsis` that is cut short (the header's page title), as a tooltip's HTML
    (`content.tooltips`). In an exported page, which only the Markdown pass cleans, an article's
    raw or Markdown titles, its `<pre class="md-ellipsis">` and its own long title ran script
    when a reader pointed at them."""
    long = "A title long enough to be cut short by the header of the page, " * 3
    add_article(
        db,
        owner.blog_id,
        long + pwn("title"),
        slug="exported",
        description="",
        content=(
            f'Intro <abbr title="{html.escape(pwn("raw"))}">RAW</abbr> and ABBR and '
            f'[a link](https://example.com/ "{html.escape(pwn("link"), quote=False)}").\n\n'
            f"*[ABBR]: {html.escape(pwn('abbr'), quote=False)}\n\n"
            f'<pre class="md-ellipsis">{html.escape(pwn("pre"), quote=False)}{"x" * 300}</pre>\n\n' + "Filler.\n\n" * 80
        ),
    )
    config = one_site(tmp_path, service.url)
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "  custom_dir: overrides\n", "  custom_dir: overrides\n  features: [content.tooltips]\n"
        )
        + "markdown_extensions: [abbr, attr_list]\n",
        encoding="utf-8",
    )
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    export(config)
    zensical_build(tmp_path)
    site_dir = tmp_path / "site"
    with served(site_dir) as url:
        ran = hover_everything(
            url,
            ["blog/exported/", "blog/"],
            ".md-content abbr, .md-content a[href^='https://example.com'], .md-content pre",
        )
        ran += hover_everything(url, ["blog/exported/"], ".md-header__topic .md-ellipsis", scroll=True)
    assert ran == ["", "", ""]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_exported_page_makes_zensical_load_no_third_party_script(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: Zensical's script (not Material's) loads GLightbox from unpkg.com for every
    `.glightbox` of a page, and ace (Pyodide's editor) from unpkg.com for every `.pyodide`.
    An exported article's `<a class="glightbox">`, `{ .glightbox }` or `<div class="pyodide">`
    made a site that never chose them run those third-party scripts: the Markdown pass, the only
    one on that page, removes the classes where the article writes them."""
    from playwright.sync_api import Route, sync_playwright

    add_article(
        db,
        owner.blog_id,
        "Widgets",
        slug="widgets",
        description="",
        content=(
            'Intro <a class="glightbox" href="https://example.com/a.png">one</a> and '
            "[two](https://example.com/b.png){ .glightbox }.\n\n"
            '<div class="pyodide"><pre id="p--editor">import js</pre><span id="p--run">Run</span>'
            '<span id="p--clear">Clear</span><pre id="p--output"></pre></div>\n'
        ),
    )
    config = one_site(tmp_path, service.url)  # Zensical's default Markdown extensions
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    export(config)
    zensical_build(tmp_path)
    loaded: list[str] = []

    def third_party(route: Route) -> None:
        loaded.append(route.request.url)
        route.fulfill(status=200, content_type="application/javascript", body="document.body.dataset.pwned = 'cdn'")

    with served(tmp_path / "site") as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page()
            tab.route(
                "**/*", lambda route: third_party(route) if not route.request.url.startswith(url) else route.continue_()
            )
            tab.goto(url + "blog/widgets/")
            tab.wait_for_load_state("load")
            tab.wait_for_timeout(1000)
            text = tab.inner_text(".md-content")
            pwned = tab.evaluate("document.body.dataset.pwned")
        finally:
            browser.close()
    assert pwned is None and not [address for address in loaded if "unpkg.com" in address]
    assert "one" in text and "two" in text and "import js" in text, "the article's text stays"


def sync_full(config: Path) -> None:
    result = CliRunner().invoke(main, ["sync", "--full", "-f", str(config)])
    assert result.exit_code == 0, result.output


def test_after_a_slug_change_the_old_address_redirects_and_a_deletion_takes_page_and_redirect(
    tmp_path: Path,
    service: Service,
    db: Database,
    seeded: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config, token = seeded
    docs, site_dir = tmp_path / "docs", tmp_path / "site"
    export(config, "--theme-dir", str(tmp_path / "overrides"))
    moved, kept = published(service, token)[:2]
    old, new = moved["slug"], "a-new-address"
    content.update_article(db, moved["id"], content.ArticleInput(slug=new))
    content.update_article(db, kept["id"], content.ArticleInput(slug="kept-elsewhere"))
    mine = docs / "blog" / kept["slug"] / "index.html"  # the site's own file at an old address
    mine.parent.mkdir(parents=True)
    mine.write_text("<p>mine</p>\n")
    sync_full(config)  # a slug change is not in contentHash: a full sync brings it in
    output = export(config, "--theme-dir", str(tmp_path / "overrides"))
    assert "1 redirect page at earlier addresses" in output, output
    assert f"blog/{kept['slug']}/index.html" in output and "no redirect page there" in output
    assert mine.read_text() == "<p>mine</p>\n", "a file export did not write is never written over"
    record = json.loads((docs / ".blogsvc-export.json").read_text())
    assert f"blog/{old}/index.html" in record["instances"]["blog"]
    assert f"blog/{kept['slug']}/index.html" not in record["instances"]["blog"]
    zensical_build(tmp_path)

    redirect = (site_dir / "blog" / old / "index.html").read_text(encoding="utf-8")
    assert f'<meta http-equiv="refresh" content="0; url=../{new}/">' in redirect
    assert f'<link rel="canonical" href="{SITE_URL}blog/{new}/">' in redirect
    assert '<meta name="robots" content="noindex">' in redirect
    assert f'<a href="../{new}/">{html.escape(moved["title"], quote=False)}</a>' in redirect
    assert "<script" not in redirect
    now = next(a for a in published(service, token) if a["id"] == moved["id"])
    check_page(site_dir, now)  # the new address, named by its JSON-LD
    assert (site_dir / "blog" / kept["slug"] / "index.html").read_text() == "<p>mine</p>\n"
    assert redirect == (docs / "blog" / old / "index.html").read_text(encoding="utf-8"), "copied as it is"

    build_site(config)  # MkDocs on the exported files (plugin disabled) copies the same page
    assert (site_dir / "blog" / old / "index.html").read_text(encoding="utf-8") == redirect
    monkeypatch.setenv("BLOGSVC_PLUGIN", "true")  # the plugin, from the same history in the cache
    build_site(config)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert (site_dir / "blog" / old / "index.html").read_text(encoding="utf-8") == redirect, (
        "the plugin's own, the same"
    )
    monkeypatch.delenv("BLOGSVC_PLUGIN")

    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "      credentials_file:", "      redirects: false\n      credentials_file:"
        ),
        encoding="utf-8",
    )
    export(config)
    assert not (docs / "blog" / old).exists(), "redirects: false removes the export's redirect pages"
    config.write_text(config.read_text(encoding="utf-8").replace("      redirects: false\n", ""), encoding="utf-8")
    export(config)
    assert (docs / "blog" / old / "index.html").is_file(), "the history is kept in the cache meanwhile"

    content.delete_article(db, moved["id"])
    output = export(config)
    assert "redirect pages" not in output
    assert not (docs / "blog" / old).exists() and not (docs / "blog" / "posts" / f"{new}.md").exists()
    zensical_build(tmp_path)
    assert not (site_dir / "blog" / old).exists() and not (site_dir / "blog" / new).exists()
    assert mine.is_file()


def test_a_hostile_title_cannot_close_the_json_ld_in_zensical_s_head(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    hostile = '</script><script>document.title="pwned"</script> & <!-- \u2028'
    add_article(
        db,
        owner.blog_id,
        hostile,
        slug="hostile",
        description="</script><script>x</script>",
        schema_org_json={"@type": "BlogPosting", "headline": "x", "about": "</script><script>y</script>"},
    )
    config = one_site(tmp_path, service.url)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    export(config, "--theme-dir", str(tmp_path / "overrides"))
    zensical_build(tmp_path)
    text = (tmp_path / "site" / "blog" / "hostile" / "index.html").read_text(encoding="utf-8")
    head = text.partition("</head>")[0]
    block = head.partition('<script type="application/ld+json">')[2].partition("</script>")[0]
    data = json.loads(block)
    assert data["headline"] == hostile and data["about"] == "</script><script>y</script>"
    assert data["url"] == f"{SITE_URL}blog/hostile/"
    assert "<" not in block and head.count("<script") == head.count("</script>")
    assert "<script>document.title" not in text and "<script>x</script>" not in text
