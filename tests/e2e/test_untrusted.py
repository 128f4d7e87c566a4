"""Issue 11: a service that is slow, broken or compromised cannot hold a build, run script on
the site, or mislead search engines. Real builds against the reference service (and stand-in
hostile services on loopback sockets)."""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from werkzeug.serving import make_server

from mkdocs_blogsvc.server import create_app, media
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site
from tests.e2e.test_build import PNG, json_ld, meta_property, parse, post_page, run_build
from tests.hostile import DripServer, SilentServer

#: Each payload, if it ran, would set `window.pwned` (checked in a real browser below).
HOSTILE_BODY = """\
Intro paragraph.

<script>window.pwned = "script"</script>

<img src="x" onerror="window.pwned = 'onerror'">

<a href="javascript:window.pwned='href'">html link</a>

<iframe src="javascript:parent.pwned='iframe'"></iframe>

<svg><script>window.pwned = "svg"</script></svg>

[markdown link](javascript:window.pwned='md') and <javascript:window.pwned='autolink'>
and [reference link][r] and [attr list](https://example.com/){ onclick="window.pwned='attr'" }

[r]: javascript:window.pwned='ref'

| Name | Value |
|:-----|------:|
| cell | 42 |

![A chart](https://example.com/chart.png)

<details><summary>More details</summary>

Hidden *content*.

</details>
"""


class Elements(HTMLParser):
    """Every start tag of a page: (tag, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: Path) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.tags


def assert_nothing_executable_from_the_article(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for tag, attrs in elements(page):
        assert tag not in ("iframe", "object", "embed", "form"), (page, tag)
        for name, value in attrs.items():
            assert not name.startswith("on"), (page, tag, name, value)
            if name in ("href", "src", "action", "formaction") and value:
                assert not re.match(r"\s*(javascript|vbscript|data):", value, re.IGNORECASE), (page, tag, value)
    for script in re.findall(r"<script\b[^>]*>(.*?)</script>", text, re.DOTALL | re.IGNORECASE):
        assert "pwned" not in script, page


def hostile_site(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    *,
    material: bool,
    plugin: dict[str, Any] | None = None,
) -> Path:
    add_article(db, owner.blog_id, "Hostile body", slug="hostile-body", content=HOSTILE_BODY)
    config = write_site(tmp_path, service.url, material=material, plugin=plugin)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    return config


def article_page(site_dir: Path) -> Path:
    found = (
        post_page(site_dir, "hostile-body")
        if list(site_dir.glob("blog/20*"))
        else site_dir / "blog" / "posts" / "hostile-body" / "index.html"
    )
    assert found.exists()
    return found


@pytest.mark.parametrize("material", [True, False], ids=["material", "mkdocs-theme"])
def test_article_html_is_sanitised_and_ordinary_html_survives(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture, material: bool
) -> None:
    caplog.set_level(logging.INFO)
    run_build(hostile_site(tmp_path, service, db, owner, material=material))
    site_dir = tmp_path / "site"
    page = article_page(site_dir)
    assert_nothing_executable_from_the_article(page)
    tags = [tag for tag, _ in elements(page)]
    assert "table" in tags and "details" in tags and "summary" in tags
    assert ("img", "https://example.com/chart.png") in [(tag, attrs.get("src")) for tag, attrs in elements(page)]
    html = page.read_text(encoding="utf-8")
    assert "<summary>More details</summary>" in html and "Hidden" in html and ">42<" in html
    assert 'href="https://example.com/"' in html  # the attr_list link kept, without its handler
    # Material's blog index renders each post's Markdown again, without on_page_content
    for other in site_dir.rglob("*.html"):
        assert_nothing_executable_from_the_article(other)
    (line,) = [
        r.getMessage() for r in caplog.records if "hostile-body" in r.getMessage() and "removed" in r.getMessage()
    ]
    assert "<script> element" in line and "<iframe> element" in line and "onerror attribute" in line
    assert "javascript: URL" in line
    assert all(r.levelno == logging.INFO for r in caplog.records if "removed" in r.getMessage())


def test_trust_article_html_keeps_the_raw_html(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    run_build(hostile_site(tmp_path, service, db, owner, material=False, plugin={"trust_article_html": True}))
    html = article_page(tmp_path / "site").read_text(encoding="utf-8")
    assert '<script>window.pwned = "script"</script>' in html
    assert "onerror=\"window.pwned = 'onerror'\"" in html
    assert "<iframe" in html
    assert not [r for r in caplog.records if "removed" in r.getMessage()]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_no_payload_runs_in_a_browser(tmp_path: Path, service: Service, db: Database, owner: Owner) -> None:
    """The definitive check: Chromium loads the built page (and the blog index); no payload
    ran, and clicking every link of the article runs none either."""
    from playwright.sync_api import sync_playwright

    run_build(hostile_site(tmp_path, service, db, owner, material=True))
    site_dir = tmp_path / "site"
    pages = [article_page(site_dir), site_dir / "blog" / "index.html"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            for path in pages:
                tab = browser.new_page()
                tab.route(
                    "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
                )  # the site's files only, no network
                tab.goto(path.as_uri())
                tab.wait_for_load_state("load")
                assert tab.evaluate("typeof window.pwned") == "undefined", path
                hrefs = tab.eval_on_selector_all(
                    "article a[href], .md-content a[href], [role=main] a[href]",
                    "links => links.map(a => a.getAttribute('href'))",
                )
                assert not [h for h in hrefs if h and h.strip().lower().startswith(("javascript:", "data:"))]
                tab.close()
        finally:
            browser.close()


def test_json_ld_names_the_site_copy_and_the_page(tmp_path: Path, service: Service, db: Database, owner: Owner) -> None:
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, PNG)
    service_image = f"{service.url}/media/{key}"
    schema = {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": "Pictured",
        "image": service_image,
        "url": f"{service.url}/blog/pictured",
        "wordCount": 7,
        "author": {"@type": "Organization", "name": "Svc", "url": f"{service.url}/about"},
    }
    add_article(db, owner.blog_id, "Pictured", slug="pictured", cover_media_key=key, schema_org_json=schema)
    config = write_site(tmp_path, service.url, material=True)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config)
    page = post_page(tmp_path / "site", "pictured")
    (posted,) = json_ld(parse(page))
    page_url = "https://example.test/site/" + str(page.parent.relative_to(tmp_path / "site")) + "/"
    image = posted["image"]["url"]  # an ImageObject, with the cover's size
    assert image.startswith("https://example.test/site/blog/images/")
    assert image == meta_property(parse(page), "og:image")[0]
    copy = tmp_path / "site" / image.removeprefix("https://example.test/site/")
    assert copy.read_bytes() == PNG
    assert posted["url"] == page_url and posted["mainEntityOfPage"] == page_url
    for key_name in ("@context", "@type", "headline", "wordCount", "author"):
        assert posted[key_name] == schema[key_name], key_name
    assert service.url not in page.read_text(encoding="utf-8").split("</head>")[0].replace(
        f'"{service.url}/about"', ""
    ), "no other service URL in the page's metadata"


def test_an_article_cannot_take_over_the_theme_s_settings(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: Material's script reads its settings as JSON from the page's first
    `#__config`, and an article comes before the theme's own. An article's `<p id="__config">`
    holding JSON set the search's texts, which Material writes as HTML: searching on the article's
    page ran the article's script. Theme ids (`__...`) are removed; the page's search still works."""
    import material
    from playwright.sync_api import sync_playwright

    worker = next(Path(material.__file__).parent.glob("templates/assets/javascripts/workers/search.*.min.js")).name
    payload = "<img src=x onerror=\"document.body.dataset.pwned='yes'\">"
    settings = {
        "base": "../../../../..",
        "features": [],
        "search": f"../../../../../assets/javascripts/workers/{worker}",
        "translations": {
            "search.result.term.missing": payload,
            "search.result.more.one": payload,
            "search.result.more.other": payload,
        },
        "version": None,
    }
    add_article(
        db,
        owner.blog_id,
        "Clobber",
        slug="clobber",
        content=(
            "Intro words.\n\n"
            + f'<p id="__config">{html.escape(json.dumps(settings), quote=False)}</p>\n\n'
            + json.dumps(settings)
            + "\n{: #__config }\n"
        ),
    )
    config = write_site(tmp_path, service.url, material=True)
    data = yaml.safe_load(config.read_text())
    data["plugins"].append("search")
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config)
    site_dir = tmp_path / "site"
    page = post_page(site_dir, "clobber")
    assert 'id="__config"' not in page.read_text(encoding="utf-8").split('<script id="__config"')[0]

    with served(site_dir) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            tab = browser.new_page()
            tab.goto(url + page.parent.relative_to(site_dir).as_posix() + "/")
            tab.wait_for_load_state("networkidle")
            assert tab.evaluate("document.querySelector('#__config').tagName") == "SCRIPT"
            tab.keyboard.press("s")
            tab.keyboard.type("intro zzzqqq")  # a term no page has: "missing" is written
            tab.wait_for_selector(".md-search-result__item", timeout=10_000)
            tab.wait_for_timeout(300)
            assert tab.evaluate("document.body.dataset.pwned") is None
        finally:
            browser.close()


@contextlib.contextmanager
def served(site_dir: Path) -> Iterator[str]:
    """The built site over http on 127.0.0.1 (Material's search and fetches need http); yields its URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site_dir))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def hover_everything(
    url: str, pages: list[str], selector: str, *, scroll: bool = False, width: int = 1200
) -> list[str]:
    """Chromium opens each page (`width` pixels wide), points at every element `selector` finds
    (after scrolling to the bottom when `scroll`), and returns what `document.body.dataset.pwned`
    became on each."""
    from playwright.sync_api import sync_playwright

    ran = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for page in pages:
                tab = browser.new_page(viewport={"width": width, "height": 800})
                tab.route(
                    "**/*", lambda route: route.abort() if route.request.url.startswith("https:") else route.continue_()
                )  # the site only, no network
                tab.goto(url + page)
                tab.wait_for_load_state("load")
                tab.wait_for_timeout(300)
                if scroll:
                    tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")
                    tab.wait_for_timeout(500)
                found = tab.query_selector_all(selector)
                assert found, (page, selector)
                for element in found:
                    element.hover(force=True)
                    tab.wait_for_timeout(150)
                ran.append(tab.evaluate("document.body.dataset.pwned") or "")
                tab.close()
        finally:
            browser.close()
    return ran


def ran_on_hover(site_dir: Path, slug: str, selector: str, *, with_index: bool = True, width: int = 1200) -> list[str]:
    """What ran when Chromium pointed at every `selector` of the article's page (and of the blog
    index, which shows the article again)."""
    page = post_page(site_dir, slug).parent.relative_to(site_dir).as_posix() + "/"
    with served(site_dir) as url:
        return hover_everything(url, [page, "blog/"] if with_index else [page], selector, width=width)


def tooltip_site(tmp_path: Path, service: Service, db: Database, owner: Owner) -> Path:
    config = write_site(tmp_path, service.url, material=True)
    data = yaml.safe_load(config.read_text())
    data["theme"]["features"] = ["content.tooltips", "navigation.footer"]
    data["markdown_extensions"] = ["abbr", "attr_list"]
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    return config


def pwn(name: str) -> str:
    return f"<img src=x onerror=\"document.body.dataset.pwned='{name}'\">"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_article_s_titles_never_become_html_in_material_s_tooltips(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: Material's `content.tooltips` shows every `title` of the content as a
    tooltip whose innerHTML is the title. An article's `<abbr title="&lt;img ... onerror=...&gt;">`,
    a Markdown link's title or an abbreviation's (`*[X]: &lt;img ...`) ran script when a reader
    pointed at it, on the article's page and (no description: the whole post is the excerpt)
    on the blog index. Such titles are removed, or their `<` cannot open a tag."""
    escaped = html.escape(pwn("raw"))
    add_article(
        db,
        owner.blog_id,
        "Tooltips",
        slug="tooltips",
        description="",
        content=(
            f'Intro with <abbr title="{escaped}">RAW</abbr> and ABBR and '
            f'[a link](https://example.com/ "{html.escape(pwn("link"), quote=False)}") and '
            f"[another](https://example.com/ \"<img/src=x/onerror=document.body.dataset.pwned='bare'>\").\n\n"
            f"*[ABBR]: {html.escape(pwn('abbr'), quote=False)}\n"
        ),
    )
    run_build(tooltip_site(tmp_path, service, db, owner))
    site_dir = tmp_path / "site"
    assert ran_on_hover(site_dir, "tooltips", ".md-content abbr, .md-content a[href^='https://example.com']") == [
        "",
        "",
    ]
    text = post_page(site_dir, "tooltips").read_text(encoding="utf-8")
    assert ">RAW</abbr>" in text and 'href="https://example.com/"' in text, "the article's text and links stay"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_article_s_title_never_becomes_html_in_material_s_tooltips(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: with `content.tooltips`, Material gives a title cut short by the header
    (or the navigation, the footer) a tooltip whose HTML is the title *as shown*: a long title
    holding `<img ... onerror=...>` (written as entities, shown as text) or `&lt;img ...&gt;`
    ran script when a reader pointed at the header. Titles show the same, and run nothing."""
    long = "A title long enough to be cut short by the header of the page, " * 3
    add_article(db, owner.blog_id, long + pwn("raw"), slug="raw-title", content="Filler.\n\n" * 80)
    add_article(
        db,
        owner.blog_id,
        long + html.escape(pwn("entity"), quote=False),
        slug="entity-title",
        content="Filler.\n\n" * 80,
    )
    run_build(tooltip_site(tmp_path, service, db, owner))
    site_dir = tmp_path / "site"
    pages = [
        post_page(site_dir, slug).parent.relative_to(site_dir).as_posix() + "/"
        for slug in ("raw-title", "entity-title")
    ]
    with served(site_dir) as url:
        ran = hover_everything(url, pages, ".md-header__topic .md-ellipsis", scroll=True)
    assert ran == ["", ""]
    raw = post_page(site_dir, "raw-title").read_text(encoding="utf-8")
    assert "page, &lt;\u2060img src=x onerror=" in raw.split("</title>")[0], "the title shows as written"
    entity = post_page(site_dir, "entity-title").read_text(encoding="utf-8")
    assert "page, &amp;lt;img src=x onerror=" in entity.split("</title>")[0]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_article_s_headings_never_become_html_in_the_table_of_contents(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: the table of contents shows each heading's text without its tags, and
    with `content.tooltips` Material gives an entry cut short a tooltip whose HTML is its text
    as shown. A `<` followed by markup (`## <<b></b>img ...>`, `<*img ...*>`, `` <`img ...`> ``,
    `<[img ...](#x)>`, or a code span ending in `<`) was left bare, its markup stripped, and the
    entry ran script when a reader pointed at it. Such a `<` now gets its WORD JOINER too."""
    tail = "/" * 80  # one long word: the entry is cut short
    headings = [
        f"<<b></b>{pwn_text('tag', tail)}>",
        f"<*{pwn_text('em', tail)}*>",
        f"<`{pwn_text('code', tail)}`>",
        f"<[{pwn_text('link', tail)}](#x)>",
        f"`a <`*{pwn_text('span', tail)}>*",
    ]
    add_article(
        db,
        owner.blog_id,
        "Contents",
        slug="contents",
        description="",
        content="Intro.\n\n" + "".join(f"## {heading}\n\nText.\n\n" for heading in headings),
    )
    config = tooltip_site(tmp_path, service, db, owner)
    data = yaml.safe_load(config.read_text())
    data["markdown_extensions"].append("toc")
    config.write_text(yaml.safe_dump(data))
    run_build(config)
    assert ran_on_hover(
        tmp_path / "site", "contents", ".md-sidebar--secondary .md-nav__link", with_index=False, width=1600
    ) == [""]


def pwn_text(name: str, tail: str) -> str:
    """`pwn(name)` without its `<`, its script ending in `tail`."""
    return f"img src=x onerror=document.body.dataset.pwned+='{name}'{tail}"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_article_cannot_borrow_material_s_ellipsis_tooltips(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: Material gives every `.md-ellipsis` of the page that is cut short a
    tooltip whose HTML is its text as shown (`innerText`, with `content.tooltips`). An article's
    `<pre class="md-ellipsis">` showing `<img src=x onerror=...>` as text ran it when a reader
    pointed at it. The class is removed from articles (raw HTML and attribute lists)."""
    add_article(
        db,
        owner.blog_id,
        "Ellipsis",
        slug="ellipsis",
        description="",
        content=(f'Intro.\n\n<pre class="md-ellipsis">{html.escape(pwn("raw"), quote=False)}{"x" * 300}</pre>\n'),
    )
    run_build(tooltip_site(tmp_path, service, db, owner))
    site_dir = tmp_path / "site"
    assert ran_on_hover(site_dir, "ellipsis", ".md-content pre") == ["", ""]
    assert "md-ellipsis" not in post_page(site_dir, "ellipsis").read_text(encoding="utf-8").split("<article")[1]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium is not installed")
def test_an_article_cannot_make_material_load_mermaid(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found in review: for every `pre.mermaid` of a page, Material loads mermaid's script from
    unpkg.com and renders the element's text with it. An article's `<pre class="mermaid">` (or
    `{ .mermaid }`) made a site that never chose mermaid run that third-party script, on the
    article's page and on the blog index. Removed where the article writes it; a site that turns
    on superfences' mermaid fence still gets its diagrams."""
    from playwright.sync_api import Route, sync_playwright

    add_article(
        db,
        owner.blog_id,
        "Diagram",
        slug="diagram",
        description="",
        content=(
            'Intro.\n\n<pre class="mermaid">graph TD\n  A --&gt; B</pre>\n\nText\n{: .mermaid }\n\n'
            "```mermaid\ngraph LR\n  C --> D\n```\n"
        ),
    )
    config = tooltip_site(tmp_path, service, db, owner)
    run_build(config)
    site_dir = tmp_path / "site"
    page = post_page(site_dir, "diagram").parent.relative_to(site_dir).as_posix() + "/"
    loaded: list[str] = []

    def third_party(route: Route) -> None:
        loaded.append(route.request.url)
        route.fulfill(status=200, content_type="application/javascript", body="document.body.dataset.pwned = 'cdn'")

    with served(site_dir) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for path in (page, "blog/"):
                tab = browser.new_page()
                tab.route(
                    "**/*",
                    lambda route: third_party(route) if route.request.url.startswith("https:") else route.continue_(),
                )
                tab.goto(url + path)
                tab.wait_for_load_state("load")
                tab.wait_for_timeout(1000)
                assert tab.evaluate("document.body.dataset.pwned") is None, path
                tab.close()
        finally:
            browser.close()
    assert not [address for address in loaded if "mermaid" in address]

    data = yaml.safe_load(config.read_text())  # the owner's choice: superfences' mermaid fence
    data["markdown_extensions"].append(
        {
            "pymdownx.superfences": {
                "custom_fences": [
                    {
                        "name": "mermaid",
                        "class": "mermaid",
                        "format": "!!python/name:pymdownx.superfences.fence_code_format",
                    }
                ]
            }
        }
    )
    config.write_text(
        yaml.safe_dump(data).replace(
            "'!!python/name:pymdownx.superfences.fence_code_format'",
            "!!python/name:pymdownx.superfences.fence_code_format",
        )
    )
    run_build(config)
    article = post_page(site_dir, "diagram").read_text(encoding="utf-8")
    assert article.count('class="mermaid"') == 1 and "C --&gt; D" in article.split('class="mermaid"')[1][:80]


# --- bounded time -----------------------------------------------------------------------------

TIMEOUT = 2  # seconds: the `timeout` setting of these builds
SLACK = 15  # the issue's bound: a build finishes within `timeout` plus 15 s


def cached_site(tmp_path: Path, service: Service, db: Database, owner: Owner) -> Path:
    """A site built once against the working service (so the cache holds one article)."""
    add_article(db, owner.blog_id, "Cached article", slug="cached-article")
    config = write_site(tmp_path, service.url, material=False, site_url=None, plugin={"timeout": TIMEOUT})
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config)
    return config


def point_at(config: Path, tmp_path: Path, url: str, token: str) -> None:
    data = yaml.safe_load(config.read_text())
    data["plugins"][0]["blogsvc"]["base_url"] = url
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    write_credentials(tmp_path / "credentials.json", url, token)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def timed_build(config: Path) -> float:
    started = time.monotonic()
    run_build(config)
    return time.monotonic() - started


def test_a_service_that_never_answers_costs_at_most_the_timeout(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    config = cached_site(tmp_path, service, db, owner)
    with SilentServer() as silent:
        point_at(config, tmp_path, silent.url, issue_access_token(db, owner))
        caplog.clear()
        elapsed = timed_build(config)
        assert silent.connections >= 1  # it was asked, and kept silent
    (warning,) = warnings_of(caplog)
    assert "built from the cache (1 article)" in warning and f"within its {TIMEOUT} s" in warning
    assert (tmp_path / "site" / "blog" / "posts" / "cached-article" / "index.html").exists()
    assert elapsed < TIMEOUT + SLACK  # safety bound of the deadline under test (the issue's)


def test_a_drip_fed_sync_answer_costs_at_most_the_timeout(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    config = cached_site(tmp_path, service, db, owner)
    body = b'{"new": [], "updated": [], "deleted": [], "syncedAt": "2026-01-01T00:00:00.000Z"}' * 10
    with DripServer(body, interval=0.2, content_type="application/json") as drip:
        point_at(config, tmp_path, drip.url, issue_access_token(db, owner))
        caplog.clear()
        elapsed = timed_build(config)
        assert drip.requests and drip.requests[0].startswith("POST /api/v1/sync")
        assert 0 < drip.bytes_sent < len(body)  # bytes kept coming: no per-read timeout fired
    (warning,) = warnings_of(caplog)
    assert "built from the cache (1 article)" in warning
    assert (tmp_path / "site" / "blog" / "posts" / "cached-article" / "index.html").exists()
    assert elapsed < TIMEOUT + SLACK


class DripMedia:
    """The reference service on loopback, except that its images trickle out a byte at a time."""

    def __init__(self, db: Database, interval: float) -> None:
        app = create_app(db, secret_key="test")
        self.stop_dripping = threading.Event()
        self.bytes_sent = 0

        def dripping(environ: dict[str, Any], start_response: Any) -> Any:
            if not environ["PATH_INFO"].startswith("/media/"):
                return app(environ, start_response)
            start_response("200 OK", [("Content-Type", "image/png"), ("Content-Length", str(len(PNG)))])
            return self._drip(interval)

        self.server = make_server("127.0.0.1", 0, dripping, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _drip(self, interval: float) -> Iterator[bytes]:
        for index in range(len(PNG)):
            if self.stop_dripping.wait(interval):
                return
            self.bytes_sent += 1
            yield PNG[index : index + 1]

    def stop(self) -> None:
        self.stop_dripping.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_drip_fed_image_keeps_its_remote_url_within_the_timeout(
    tmp_path: Path, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    drip = DripMedia(db, interval=0.2)
    try:
        with db.session(write=True) as session:
            key = media.store_image(session, owner.blog_id, PNG)
        add_article(db, owner.blog_id, "Slow cover", slug="slow-cover", cover_media_key=key)
        config = write_site(tmp_path, drip.url, material=False, site_url=None, plugin={"timeout": TIMEOUT})
        write_credentials(tmp_path / "credentials.json", drip.url, issue_access_token(db, owner))
        caplog.set_level(logging.INFO)
        elapsed = timed_build(config)
        assert 0 < drip.bytes_sent < len(PNG)
    finally:
        drip.stop()
    (warning,) = warnings_of(caplog)
    assert f"{drip.url}/media/{key}" in warning and "the page uses the remote URL" in warning
    html = (tmp_path / "site" / "blog" / "posts" / "slow-cover" / "index.html").read_text(encoding="utf-8")
    assert f'src="{drip.url}/media/{key}"' in html
    assert "1 new, 0 updated, 0 deleted" in caplog.text
    assert elapsed < TIMEOUT + SLACK


def test_a_build_with_nothing_changed_reuses_the_sanitised_html_and_head_tags(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sanitised HTML and the head tags of each article page are kept in the cache by the
    hash of their inputs (`outputs`): a second build computes neither and writes the same
    pages; what changes their inputs computes them again; deleted articles' outputs go."""
    from mkdocs_blogsvc import outputs, sanitize
    from mkdocs_blogsvc.cache import Cache
    from mkdocs_blogsvc.render import Renderer
    from mkdocs_blogsvc.server import content

    config = hostile_site(tmp_path, service, db, owner, material=False)
    other = add_article(db, owner.blog_id, "Plain article", slug="plain-article", content="Just *text*.")
    run_build(config)
    site_dir = tmp_path / "site"

    def built() -> dict[Path, bytes]:
        """The site's pages, without the build date MkDocs' theme prints."""
        return {p: re.sub(rb"Build Date UTC : [^\n]*", b"", p.read_bytes()) for p in site_dir.rglob("*.html")}

    pages = built()
    calls = {"clean": 0, "head": 0}
    clean_html, head = sanitize.clean_html, Renderer.head

    def counting_clean(text: str) -> Any:
        calls["clean"] += 1
        return clean_html(text)

    def counting_head(self: Renderer, *args: Any, **kwargs: Any) -> str:
        calls["head"] += 1
        return head(self, *args, **kwargs)

    monkeypatch.setattr(sanitize, "clean_html", counting_clean)  # the plugin imports it when it needs it
    monkeypatch.setattr(Renderer, "head", counting_head)
    caplog.set_level(logging.INFO)
    run_build(config)
    assert calls == {"clean": 0, "head": 0}
    assert built() == pages
    (line,) = [
        r.getMessage() for r in caplog.records if "hostile-body" in r.getMessage() and "removed" in r.getMessage()
    ]
    assert "<script> element" in line and "javascript: URL" in line, "the removals are reported by every build"

    # A damaged output is computed again; another site_url changes every head, not the HTML.
    cache = Cache(next(tmp_path.rglob("manifest.json")).parent)
    manifest = cache.load()
    offset, _length = next(entry.outputs for entry in manifest.entries.values() if entry.outputs)
    with open(cache.outputs_path, "r+b") as pack:  # the record's header: garbage
        pack.seek(offset)
        pack.write(b"not json")
    data = yaml.safe_load(config.read_text())
    data["site_url"] = "https://moved.example.test/"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_build(config)
    assert calls == {"clean": 1, "head": 2}
    page = article_page(site_dir)
    assert_nothing_executable_from_the_article(page)
    assert meta_property(parse(page), "og:url")[0].startswith("https://moved.example.test/")

    # An extension that changes the pages' HTML sanitises them again.
    data["markdown_extensions"] = [{"toc": {"permalink": True}}]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_build(config)
    assert calls == {"clean": 3, "head": 2}
    assert_nothing_executable_from_the_article(article_page(site_dir))

    # A deleted article's outputs are garbage in the pack until it is compacted (here at once):
    # then the pack holds exactly the records its manifest names.
    monkeypatch.setattr(outputs, "COMPACT_ABOVE", 0)
    content.delete_article(db, other)
    run_build(config)
    named = sorted(entry.outputs for entry in cache.load().entries.values() if entry.outputs)
    assert len(named) == 1 and named[0][0] == 0 and cache.outputs_path.stat().st_size == named[0][1]
    run_build(config)
    assert calls == {"clean": 3, "head": 2}, "a compacted record is found at its new place"
    assert_nothing_executable_from_the_article(article_page(site_dir))


@pytest.mark.parametrize("trust", [False, True], ids=["sanitised", "trust_article_html"])
def test_a_snippets_include_never_publishes_a_local_file(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    trust: bool,
) -> None:
    """Review finding: a site with pymdownx.snippets included any file an article named (the
    stored tokens among them). Markers are written with snippets' own escape."""
    add_article(
        db,
        owner.blog_id,
        "Snip",
        content=(
            'Before.\n\n--8<-- "credentials.json"\n\n--8<--\ncredentials.json\n--8<--\n\n```\n--8<-- "credentials.json"\n```\n'
        ),
    )
    config = write_site(tmp_path, service.url, material=False, plugin={"trust_article_html": trust})
    data = yaml.safe_load(config.read_text())
    data["markdown_extensions"] = [{"pymdownx.snippets": {"base_path": ["."]}}]
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config)
    html = next((tmp_path / "site").rglob("snip/index.html")).read_text(encoding="utf-8")
    assert "Before." in html and '--8&lt;-- "credentials.json"' in html
    assert "svc_" not in html and "access_token" not in html


def test_macros_never_renders_an_article_as_a_template(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review finding: with mkdocs-macros-plugin (render_by_default, its default), an article's
    `{{ ... }}` ran as Jinja2 in the build, without a sandbox: it printed `config.extra`, read
    the build's environment and ran commands; a `{% raw %}` in a description stopped a strict
    build. The plugin's pages carry `render_macros: false`, which wins over every macros
    setting (`render_by_default`, `force_render_paths`)."""
    monkeypatch.setenv("BLOGSVC_TEST_SECRET", "ci-secret-value")
    add_article(
        db,
        owner.blog_id,
        "Tpl {{ 6*7 }}",
        slug="tpl",
        description="Lead {% raw %}",
        content=(
            "Extra: {{ config.extra.secret }}\n\nSum: {{ 6*7 }}\n\n"
            "Env: {{ cycler.__init__.__globals__.os.environ.get('BLOGSVC_TEST_SECRET') }}\n\n"
            "{% for key in config %}{{ key }} {% endfor %}\n"
        ),
    )
    config = write_site(tmp_path, service.url, material=False)
    data = yaml.safe_load(config.read_text())
    data["extra"] = {"secret": "extra-secret-value"}
    data["plugins"].append("macros")
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config, strict=True)  # a macros error is a warning: strict would stop the build
    site_dir = tmp_path / "site"
    html = next(site_dir.rglob("tpl/index.html")).read_text(encoding="utf-8")
    assert "Extra: {{ config.extra.secret }}" in html and "Sum: {{ 6*7 }}" in html
    assert "<title>Tpl {{ 6*7 }}" in html
    everything = "".join(p.read_text(encoding="utf-8") for p in site_dir.rglob("*.html"))
    assert "extra-secret-value" not in everything and "ci-secret-value" not in everything
    assert "Sum: 42" not in everything and "Tpl 42" not in everything and "Macro Syntax Error" not in everything


@contextlib.contextmanager
def internal_host() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on 127.0.0.1 standing in for an internal host (a cloud runner's metadata
    service): yields its port and the paths requested from it."""
    requested: list[str] = []

    class Internal(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            body = b"AWS_SECRET=internal-only" if "meta-data" in self.path else PNG
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    internal = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Internal)
    threading.Thread(target=internal.serve_forever, daemon=True).start()
    try:
        yield internal.server_address[1], requested
    finally:
        internal.shutdown()
        internal.server_close()


def build_with_privacy(tmp_path: Path, service: Service, db: Database, owner: Owner, content: str) -> None:
    """Build a Material site with its privacy plugin, whose one article "pictures" holds `content`."""
    add_article(db, owner.blog_id, "Pictures", slug="pictures", content=content)
    config = write_site(tmp_path, service.url)
    data = yaml.safe_load(config.read_text())
    data["theme"]["font"] = False  # no Google Fonts to fetch here
    data["plugins"].append({"privacy": {"cache_dir": str(tmp_path / "privacy-cache")}})
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    run_build(config)


def test_material_privacy_never_fetches_an_address_an_article_names(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Found by review: Material's privacy plugin downloads every external image of every page
    at build time and publishes the copy: an article's `<img>` of an internal address made the
    build machine fetch it (an SSRF; `/latest/meta-data` of a cloud CI runner) and publish the
    answer, an SVG with a script included, on the site's origin. Those addresses stay remote."""
    with internal_host() as (port, requested):
        address = f"127.0.0.1:{port}"
        build_with_privacy(
            tmp_path,
            service,
            db,
            owner,
            (f'Lead.\n\n![meta](http://{address}/latest/meta-data.png)\n\n<img alt="svg" src="//{address}/x.svg">\n'),
        )
    assert requested == [], "the build fetched addresses named by an article"
    site_dir = tmp_path / "site"
    assert not any("AWS_SECRET" in p.read_text(errors="replace") for p in site_dir.rglob("*") if p.is_file())
    assert f'src="http://{address}/latest/meta-data.png"' in post_page(site_dir, "pictures").read_text()


#: Addresses the privacy plugin reads differently from the page's Markdown (entities decoded,
#: `&amp;` in a query, a path cut at `(`, a space or a quote, backslash escapes, a newline in
#: the host): each was fetched and published before the exclusions named hosts.
SPELLED_OTHERWISE = {
    "entity-host": "![x](http://127&#46;0&#46;0&#46;1:{port}/latest/meta-data/a.png)",
    "entity-slashes": "![x](http:&#47;&#47;{addr}/latest/meta-data/b.png)",
    "amp-query": '<img src="http://{addr}/latest/meta-data/c?a=1&amp;b=2">',
    "parentheses": "![x](http://{addr}/latest/meta-data/(d).png)",
    "reference": "![a][r]\n\n[r]: <http://{addr}/latest/meta-data/e(1).png>",
    "space": '<img src="http://{addr}/latest/meta-data/f g.png">',
    "quote": '<img src="http://{addr}/latest/meta-data/h\'i.png">',
    "backslash-host": "![x](http://127\\.0.0.1:{port}/latest/meta-data/j.png)",
    "newline-host": '<img src="http://127.0.&#10;0.1:{port}/latest/meta-data/k.png">',
}


@pytest.mark.parametrize("name", list(SPELLED_OTHERWISE))
def test_material_privacy_never_fetches_an_address_however_it_is_spelled(
    name: str,
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Review finding: the exclusions were the addresses as a regex read them in the Markdown,
    which the privacy plugin, reading the HTML, named otherwise: `127&#46;0&#46;0&#46;1`,
    `?a=1&amp;b=2`, `/(d).png`... were fetched and the answer published. Hosts are excluded."""
    with internal_host() as (port, requested):
        build_with_privacy(
            tmp_path,
            service,
            db,
            owner,
            "Lead.\n\n" + SPELLED_OTHERWISE[name].format(port=port, addr=f"127.0.0.1:{port}") + "\n",
        )
    assert requested == [], "the build fetched an address named by an article"
    assert not any(b"AWS_SECRET" in p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file())


class Anchors(HTMLParser):
    """The attributes of every <a> element."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def test_glightbox_keeps_its_lightbox_on_article_images_and_nothing_an_article_could_abuse(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Review finding: mkdocs-glightbox wraps each image in a link carrying the lightbox's
    settings, before the HTML pass, which removed them all (and logged them as removed from
    every article, at every build). Its inert settings are kept; what GLightbox would show as
    HTML or load into an iframe is still removed, whoever wrote it."""
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, PNG)
    add_article(
        db,
        owner.blog_id,
        "Pictured",
        slug="pictured",
        cover_media_key=key,
        content=(
            "Text.\n\n"
            '<a class="glightbox" data-type="external" data-width="calc(1px)" data-desc-position="middle" '
            'href="https://frame.example/">framed</a>\n'
        ),
    )
    config = write_site(tmp_path, service.url, material=True)
    data = yaml.safe_load(config.read_text())
    data["plugins"].append({"glightbox": {"auto_caption": True, "height": "80vh"}})
    config.write_text(yaml.safe_dump(data))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    caplog.set_level(logging.INFO)
    run_build(config, strict=True)
    anchors = Anchors()
    anchors.feed(post_page(tmp_path / "site", "pictured").read_text(encoding="utf-8"))
    (cover,) = [a for a in anchors.anchors if "/images/" in str(a.get("href"))]
    assert cover["class"] == "glightbox" and cover["data-type"] == "image"
    assert (cover["data-width"], cover["data-height"], cover["data-desc-position"]) == ("auto", "80vh", "bottom")
    assert cover["data-title"] == "Pictured"  # auto_caption: the cover's alt text, plain
    (framed,) = [a for a in anchors.anchors if a.get("href") == "https://frame.example/"]
    assert framed == {"href": "https://frame.example/"}  # an article's own lightbox link is no lightbox
    removed = [r.getMessage() for r in caplog.records if "removed" in r.getMessage()]
    assert len(removed) == 1 and "pictured" in removed[0], removed
    assert "data-type" in removed[0] and "data-width" in removed[0] and "data-desc-position" in removed[0]
