"""A real browser (Debian's Chromium, driven by Playwright) on the consent page and the built site.

Screenshots go to `test-results/` at the top of the repository (Playwright's convention; the
folder is git-ignored), so a person can look at what the tests saw.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import LiveServer

CHROMIUM = Path("/usr/bin/chromium")
#: Without these, Chromium tries Google's hosts at start-up (no network here).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "test-results"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed: run `bash .ci/install-system-packages`"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
        )
        yield chromium
        chromium.close()


def _loopback_only(page: object) -> list[str]:
    """Record every request of the page that goes anywhere but loopback."""
    outside: list[str] = []

    def check(request: object) -> None:
        url = request.url
        host = urlsplit(url).hostname
        if url.startswith(("http:", "https:", "ws:")) and host not in ("127.0.0.1", "localhost", "::1"):
            outside.append(url)

    page.on("request", check)
    return outside


def _cli(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.Popen([sys.executable, "-m", "mkdocs_blogsvc", *args], text=True, env=env, **kwargs)


def test_login_by_clicking_through_sign_in_and_consent(
    browser: object, live_server: LiveServer, tmp_path: Path
) -> None:
    seeded = live_server.admin("seed")
    assert seeded.returncode == 0, seeded.stderr
    sample = json.loads(seeded.stdout)
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docs" / "index.md").write_text("# Home\n")
    (site / "mkdocs.yml").write_text(
        f"site_name: Browser test\nplugins:\n  - blogsvc:\n      base_url: {live_server.url}\n"
        f"      client_id: {sample['client_id']}\n"
    )
    login = _cli(
        "login",
        "--no-browser",
        "--timeout",
        "90",
        "-f",
        str(site / "mkdocs.yml"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert login.stderr is not None
        authorize_url = next(line.strip() for line in login.stderr if line.strip().startswith("http"))
        assert authorize_url.startswith(f"{live_server.url}/api/oauth/authorize?")

        page = browser.new_page(viewport={"width": 1000, "height": 800})
        outside = _loopback_only(page)
        page.goto(authorize_url)
        page.fill("input[name=username]", sample["user"])
        page.fill("input[name=password]", sample["password"])
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_selector("select[name=blog_id]")
        assert "MkDocs Blog Plugin" in page.content()  # the consent page names the application
        RESULTS.mkdir(exist_ok=True)
        page.screenshot(path=str(RESULTS / "consent-page.png"), full_page=True)
        page.select_option("select[name=blog_id]", value=sample["blog"]["id"])
        page.click("button[name=decision][value=approve]")
        page.wait_for_url("http://127.0.0.1:*/callback?*")
        assert "code=" in page.url  # the loopback listener of `mkdocs-blogsvc login` got the code
        out, err = login.communicate(timeout=60)
    finally:
        if login.poll() is None:
            login.kill()
            login.communicate()
    assert login.returncode == 0, err
    assert f'Connected to the blog "{sample["blog"]["name"]}"' in out
    stored = site / ".blogsvc" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert outside == []

    status = _cli("status", "-f", str(site / "mkdocs.yml"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = status.communicate(timeout=60)
    assert status.returncode == 0, err
    assert f"{sample['blog']['name']} ({sample['blog']['slug']})" in out
    assert "Published articles: 12" in " ".join(out.split())
    assert "Access token:" in out and "valid for" in out and "Refresh token:" in out
    assert "svc_" not in out + err


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The README's main job, as a user runs it: `mkdocs-blogsvc demo` on a copy of example-site."""
    folder = tmp_path_factory.mktemp("demo") / "example-site"
    shutil.copytree(REPO / "example-site", folder, ignore=shutil.ignore_patterns("site", ".cache", ".blogsvc"))
    demo = _cli("demo", "-f", str(folder / "mkdocs.yml"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = demo.communicate(timeout=240)
    assert demo.returncode == 0, err
    return folder / "site", out


def test_demo_prints_both_summaries_and_builds_the_site(demo_site: tuple[Path, str]) -> None:
    site, out = demo_site
    lines = [line for line in out.splitlines() if line.startswith("blogsvc: ")]
    assert len(lines) == 2, out
    assert lines[0].startswith("blogsvc: 12 new, 0 updated, 0 deleted, 0 unchanged in ")
    assert lines[1].startswith("blogsvc: 1 new, 1 updated, 1 deleted, 10 unchanged in ")
    assert f"Built site: {site.resolve()}" in out
    assert (site / "index.html").is_file() and (site / "blog" / "index.html").is_file()


def test_after_the_demo_its_site_builds_from_the_cache_with_one_warning(demo_site: tuple[Path, str]) -> None:
    """Found by review: the demo left the credentials of its stopped service behind, and the
    next `mkdocs build` of the example site failed with `client_id is not set`. They go with
    the service; the cache stays, so a later build is a build without credentials."""
    site, _out = demo_site
    folder = site.parent
    assert not (folder / ".blogsvc" / "credentials.json").exists()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(folder / "mkdocs.yml"), "-d", str(folder / "later")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1 and "blogsvc: no credentials for the blog" in warnings[0], result.stderr
    assert "12 unchanged" in result.stderr and "(no credentials: built from the cache)" in result.stderr
    assert (folder / "later" / "blog" / "index.html").is_file()


@contextlib.contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """`folder` on a loopback port, as any static host would serve it."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def served(demo_site: tuple[Path, str]) -> Iterator[str]:
    """The built site, served."""
    with static_server(demo_site[0]) as url:
        yield url


def test_article_page_in_a_browser(browser: object, served: str) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    outside = _loopback_only(page)

    page.goto(f"{served}/blog/")
    dates = page.eval_on_selector_all(
        "article time[datetime], .md-post time[datetime]", "nodes => nodes.map(n => n.getAttribute('datetime'))"
    )
    assert len(dates) >= 10 and dates == sorted(dates, reverse=True)  # newest first
    first_title = page.inner_text(".md-post h2, article h2")
    assert first_title.strip() == "Fresh off the press: publishing from the service"

    page.click(f"text={first_title.strip()}")
    page.wait_for_load_state("load")
    cover = page.locator("article img, .md-content img").first
    assert cover.get_attribute("alt") == first_title.strip()
    assert cover.evaluate("img => img.complete && img.naturalWidth") > 0
    assert urlsplit(cover.evaluate("img => img.currentSrc")).hostname == "127.0.0.1"  # served by the site

    blocks = page.eval_on_selector_all('script[type="application/ld+json"]', "nodes => nodes.map(n => n.textContent)")
    assert len(blocks) == 1
    posting = json.loads(blocks[0])
    assert posting["headline"] == first_title.strip()
    assert page.get_attribute('meta[property="og:title"]', "content") == first_title.strip()
    assert page.inner_text("h1").strip().rstrip("¶") == first_title.strip()
    tags = [tag.strip() for tag in page.locator(".md-tag").all_inner_texts()]
    assert tags == ["demo", "sync"]
    assert page.locator(".md-post__meta time, .md-sidebar time").count() >= 1  # the date is shown

    RESULTS.mkdir(exist_ok=True)
    page.screenshot(path=str(RESULTS / "article-page.png"), full_page=False)
    assert outside == []


def test_a_single_page_application_on_another_origin_calls_the_api(
    browser: object,
    live_server: LiveServer,
    tmp_path: Path,
) -> None:
    """The spec's public clients include single-page applications: from a page of another
    origin, a browser must be allowed to read the data endpoints (a preflighted sync included)."""
    from mkdocs_blogsvc.server.database import Database
    from tests.conftest import add_article, add_owner, issue_access_token

    db = Database.from_path(live_server.db_path)
    try:
        owner = add_owner(db)
        add_article(db, owner.blog_id, "Read from JavaScript")
        token = issue_access_token(db, owner)
    finally:
        db.dispose()
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "index.html").write_text("<!doctype html><title>An application</title>", encoding="utf-8")
    with static_server(tmp_path / "app") as app_url:
        assert app_url != live_server.url  # another port: another origin
        page = browser.new_page()
        page.goto(f"{app_url}/index.html")
        result = page.evaluate(
            """async ([service, token]) => {
                const auth = {Authorization: "Bearer " + token};
                const listed = await (await fetch(service + "/api/v1/articles", {headers: auth})).json();
                const synced = await fetch(service + "/api/v1/sync", {method: "POST",
                    headers: {...auth, "Content-Type": "application/json"}, body: JSON.stringify({knownArticles: []})});
                const refused = await fetch(service + "/api/v1/status", {headers: {Authorization: "Bearer svc_at_x"}});
                return [listed.articles.map(a => a.title), (await synced.json()).new.length, refused.status,
                        refused.headers.get("WWW-Authenticate")];
            }""",
            [live_server.url, token],
        )
        page.close()
    titles, synced_new, refused_status, challenge = result
    assert titles == ["Read from JavaScript"] and synced_new == 1
    assert refused_status == 401 and challenge.startswith("Bearer")
