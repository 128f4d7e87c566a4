"""Chromium on an article page built with `optimize_images: true`: a phone-sized window
downloads the small WebP variant, a desktop-sized one a larger variant, neither the original,
and the text does not move when the images arrive: the server holds every image back until the
page has been measured without them."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article
from tests.e2e.sites import Service
from tests.e2e.test_browser import CHROMIUM, CHROMIUM_ARGS
from tests.e2e.test_build import post_page
from tests.e2e.test_image_pages import make_site, photo, run_build, store
from tests.imagesamples import photo_like, rotated_photo

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed: run `bash .ci/install-system-packages`"
    ),
]

#: Layout shifts as the browser reports them (buffered: from the start of the page).
RECORD_SHIFTS = """
window.__shifts = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    const moved = entry.sources.map((source) => {
      const node = source.node && (source.node.nodeType === 1 ? source.node : source.node.parentElement);
      return node ? `${node.closest("article") ? "article " : ""}${node.nodeName}.${node.className}` : "?";
    });
    window.__shifts.push({value: entry.value, moved});
  }
}).observe({type: "layout-shift", buffered: true});
"""
#: The box of every image of the article, and where the paragraph after the cover starts.
BOXES = """() => {
  const content = document.querySelector("article") || document.body;
  const images = [...content.querySelectorAll("img")].filter((img) => img.getAttribute("src").includes("images/"));
  const last = [...content.querySelectorAll("p")].pop();
  return {images: images.map((img) => [img.getBoundingClientRect().width, img.getBoundingClientRect().height]),
          lastParagraph: last.getBoundingClientRect().top + window.scrollY,
          complete: images.map((img) => img.complete && img.naturalWidth > 0)};
}"""


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


@pytest.fixture
def held_images_site(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> Iterator[tuple[str, str, threading.Event]]:
    """(the site's address, the article page's path, the release): the site built with
    optimize_images and served with every image held back until the release is set."""
    long_text = "\n\n".join(f"Paragraph {n} of the article, long enough to wrap on a phone." for n in range(6))
    cover, inline = store(db, owner, photo()), store(db, owner, photo_like(1200, 675, seed=9))
    add_article(
        db,
        owner.blog_id,
        "Photo",
        cover_media_key=cover,
        inline_media_keys=[inline],
        description="A lead.",
        content=f"# Photo\n\n{long_text}\n\n![Inline](blogsvc-media:{inline})\n\nThe last paragraph.",
    )
    config = make_site(tmp_path, service, db, owner, optimize_images=True)
    text = config.read_text().replace("name: material", "name: material\n  font: false")
    config.write_text(text)
    run_build(config)
    site = tmp_path / "site"
    page = post_page(site, "photo").relative_to(site).parent.as_posix() + "/"

    release = threading.Event()

    class Held(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith((".png", ".webp", ".jpg")):
                release.wait(30)
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Held, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/", page, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("width", "expected"), [(400, "480.webp"), (1400, "960.webp")])
def test_the_browser_fetches_the_variant_for_its_width_and_nothing_moves(
    browser: object,
    held_images_site: tuple[str, str, threading.Event],
    width: int,
    expected: str,
) -> None:
    base, page_path, release = held_images_site
    context = browser.new_context(viewport={"width": width, "height": 800}, device_scale_factor=1)
    try:
        tab = context.new_page()
        tab.add_init_script(RECORD_SHIFTS)
        fetched: list[str] = []
        tab.on("request", lambda request: fetched.append(request.url) if request.resource_type == "image" else None)
        tab.goto(base + page_path, wait_until="domcontentloaded")
        before = tab.evaluate(BOXES)
        assert not any(before["complete"])  # laid out before any image arrived
        release.set()
        tab.wait_for_load_state("load")
        tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # the lazy inline image loads too
        tab.wait_for_function("[...document.querySelectorAll('article img')].every((img) => img.complete)")
        tab.evaluate("window.scrollTo(0, 0)")
        after = tab.evaluate(BOXES)
        shifts = tab.evaluate("window.__shifts")
    finally:
        context.close()
    covers = [url for url in fetched if "/images/" in url]
    assert covers and all(url.endswith(".webp") for url in covers), covers  # never the 1.9 MB PNG
    assert covers[0].endswith(expected), covers
    assert before["images"] == after["images"] and all(h > 0 for _w, h in before["images"]), (before, after)
    assert before["lastParagraph"] == after["lastParagraph"]
    # Material's JavaScript sizes its sidebars once it runs (later on a loaded machine): a shift
    # that moved only a sidebar is Material's, not the images'. Any other shift fails.
    ours = [
        shift
        for shift in shifts
        if not (shift["moved"] and all(".md-sidebar " in f"{moved} " for moved in shift["moved"]))
    ]
    assert sum(shift["value"] for shift in ours) == 0, shifts


#: Every plugin image of the page: the box its pixels fill (the theme's padding and border
#: taken off) and its natural (shown) size, once all have loaded.
SHAPES = """() => [...document.querySelectorAll("img")].filter((img) => img.getAttribute("src").includes("images/"))
  .map((img) => {
    const box = img.getBoundingClientRect(), style = getComputedStyle(img);
    const edge = (a, b) => ["padding", "border"].reduce((sum, kind) =>
      sum + parseFloat(style[`${kind}${a}${kind === "border" ? "Width" : ""}`]) +
            parseFloat(style[`${kind}${b}${kind === "border" ? "Width" : ""}`]), 0);
    return {box: [box.width - edge("Left", "Right"), box.height - edge("Top", "Bottom")],
            natural: [img.naturalWidth, img.naturalHeight]};
  })"""


def test_mkdocs_own_theme_keeps_each_images_shape_and_a_turned_photo_its_shown_size(
    browser: object,
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    """Found by review: MkDocs' own theme caps images at the column's width without `height:
    auto`, so the `height` the plugin writes squashed every wide image (1600 x 900 shown at
    831 x 900); and a phone's portrait photo (stored landscape, with an EXIF orientation) had its
    stored size in the <img>, and the page moved by 836 px when it arrived."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from tests.conftest import issue_access_token
    from tests.e2e.sites import write_credentials, write_site

    turned, _shown = rotated_photo()
    cover, inline = store(db, owner, photo()), store(db, owner, turned)
    add_article(
        db,
        owner.blog_id,
        "Shapes",
        cover_media_key=cover,
        inline_media_keys=[inline],
        content=f"# Shapes\n\nFirst paragraph.\n\n![Portrait](blogsvc-media:{inline})\n\nThe last paragraph.",
    )
    config = write_site(tmp_path, service.url, material=False, plugin={"optimize_images": True})
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    build(load_config(str(config)))
    site = tmp_path / "site"
    page = next(site.rglob("shapes/index.html")).relative_to(site).parent.as_posix() + "/"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    context = browser.new_context(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
    try:
        tab = context.new_page()
        tab.goto(f"http://127.0.0.1:{server.server_port}/{page}", wait_until="load")
        tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # the lazy one loads too
        tab.wait_for_function(
            "[...document.querySelectorAll('img')].every((img) => img.complete && img.naturalWidth > 0)"
        )
        shapes = tab.evaluate(SHAPES)
    finally:
        context.close()
        server.shutdown()
        server.server_close()
    assert len(shapes) == 2, shapes
    for shape in shapes:
        (width, height), (natural_width, natural_height) = shape["box"], shape["natural"]
        assert abs(width / height - natural_width / natural_height) < 0.01, shapes
    assert shapes[1]["natural"][1] > shapes[1]["natural"][0], shapes  # the photo shows portrait
