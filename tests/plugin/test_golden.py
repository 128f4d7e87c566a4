"""Golden files: what the renderer writes for a few representative articles, checked in as files.

Each case below is one article as the service sends it, with where its images were downloaded
and the site's settings. The test renders its page Markdown (`Renderer.page`), its head HTML
(`Renderer.head`, called as the build calls it) and the JSON-LD that head carries, and compares
each with `tests/plugin/golden/<case>.<kind>`; one case also gets the exported page (what
`mkdocs-blogsvc export` writes for Zensical) and its JSON-LD. A change to any of them fails
with a unified diff. When the change is meant, regenerate the files and review `git diff`:

    pytest tests/plugin/test_golden.py --update-golden

Every output is deterministic: fixed ids, timestamps and URLs, nothing from the clock.
xdist-safe: each test reads or writes only its own file (atomically), and only one test looks at
the folder as a whole.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mkdocs.utils import get_relative_url

from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.render import PagePaths, Renderer
from mkdocs_blogsvc.theme_override import ExportHead

GOLDEN = Path(__file__).with_name("golden")
UPDATE_COMMAND = "pytest tests/plugin/test_golden.py --update-golden"

MEDIA = "https://media.service.example/m"
HOSTILE_TITLE = 'Say "hi" </script><script>alert(1)</script> if a < b --- part: 2 \U0001f389'


@dataclass(frozen=True)
class Case:
    """One article and the site it is built into."""

    name: str
    article: dict[str, Any]
    #: remote URL -> the downloaded copy's path in docs_dir (what the sync's images phase kept).
    downloaded: dict[str, str] = field(default_factory=dict)
    site_url: str | None = "https://docs.example.com/"
    #: the blog's language (`language` of the service's blog).
    language: str | None = "en"
    #: also render the exported page (`mkdocs-blogsvc export`).
    export: bool = False
    #: the downloaded cover's intrinsic size, as read from its header (`imagesizes`).
    cover_size: tuple[int, int] | None = None

    @property
    def slug(self) -> str:
        return str(self.article["slug"])

    @property
    def src_uri(self) -> str:
        return f"blog/posts/{self.slug}.md"

    @property
    def page_url(self) -> str:
        """The page's URL in the site as Material's blog plugin gives it (`blog/YYYY/MM/DD/slug/`)."""
        day = str(self.article["publishedAt"])[:10].replace("-", "/")
        return f"blog/{day}/{self.slug}/"


def article(article_id: str, slug: str, title: str, **changes: Any) -> dict[str, Any]:
    """An article as the service's `/articles/{id}` sends it (fixed dates, id and hash)."""
    return {
        "id": article_id,
        "slug": slug,
        "title": title,
        "description": None,
        "content": f"# {title}\n\nBody of {title}.",
        "coverImageUrl": None,
        "inlineImageUrls": [],
        "tags": [],
        "seoKeywords": [],
        "seoScore": None,
        "schemaOrgJson": None,
        "publishedAt": "2025-01-02T03:04:05.678Z",
        "updatedAt": "2025-02-03T04:05:06.789Z",
        "viewCount": 0,
        "contentHash": "0" * 64,
        **changes,
    }


CASES = [
    # A downloaded cover, a description, no `schemaOrgJson`: the plugin's own BlogPosting.
    # Exported too: the page Zensical builds, with the head's values in its front matter.
    Case(
        "cover",
        article(
            "ckgolden0cover000000000001",
            "a-cover-story",
            "A cover story",
            description="What a cover looks like on the site's page, in its feed and in search results.",
            content="# A cover story\n\nThe cover is shown first, with the title as its alt text.\n\n"
            "## Why\n\nBecause a post's cover is its first impression.",
            coverImageUrl=f"{MEDIA}/cover-01.png",
            seoKeywords=["cover image", "open graph"],
        ),
        downloaded={f"{MEDIA}/cover-01.png": "blog/images/cover-01.png"},
        export=True,
        cover_size=(1600, 900),
    ),
    # Inline images, one downloaded and one not (it stays remote), and the service's
    # `schemaOrgJson` naming its own page and media host (rewritten for the site's page).
    Case(
        "inline-image",
        article(
            "ckgolden0inline00000000002",
            "pictures-inside",
            "Pictures inside",
            description="An article with images in its text.",
            content=f"# Pictures inside\n\nA diagram:\n\n![The pipeline]({MEDIA}/pipeline.png)\n\n"
            f'And one the sync could not download:\n\n![A photo]({MEDIA}/photo.jpg "On the service")\n',
            inlineImageUrls=[f"{MEDIA}/pipeline.png", f"{MEDIA}/photo.jpg"],
            schemaOrgJson={
                "@context": "https://schema.org",
                "@type": "BlogPosting",
                "headline": "Pictures (old title)",
                "image": [f"{MEDIA}/pipeline.png", f"{MEDIA}/photo.jpg"],
                "url": "https://blog.service.example/pictures-inside",
                "author": {"@type": "Person", "name": "Ann", "url": "https://blog.service.example/ann"},
                "datePublished": "2024-12-31T00:00:00.000Z",
                "wordCount": 12,
            },
        ),
        downloaded={f"{MEDIA}/pipeline.png": "blog/images/pipeline.png"},
    ),
    # Tags and keywords, no description (a summary of the text stands in), no site_url (no page URL).
    Case(
        "tags",
        article(
            "ckgolden0tags0000000000003",
            "tagged-notes",
            "Tagged notes",
            content="# Tagged notes\n\nShort notes about **static sites**, filed under three tags.\n\nA second paragraph.",
            tags=["python", "mkdocs", "static sites"],
            seoKeywords=["mkdocs blog", "python"],
        ),
        site_url=None,
    ),
    # A title (and description, tags and body) written to break out of every context it lands in:
    # YAML front matter, Markdown, HTML attributes, <script>, Material's tooltips, snippets.
    Case(
        "hostile-title",
        article(
            "ckgolden0hostile000000004",
            "hostile-title",
            HOSTILE_TITLE,
            description='It\'s "quoted" & <b>bold</b> </script>',
            content=f'# {HOSTILE_TITLE}\n\n<script>alert(2)</script>\n\n--8<-- ".blogsvc/credentials.json"\n\n'
            "Text with {{ config.site_name }} and a <img src=x onerror=alert(3)> tag.\n",
            tags=["</script>", "a<b", "--- x: ["],
            seoKeywords=['"quoted"', "emoji \U0001f389"],
            coverImageUrl=f'{MEDIA}/cover "x".png',
        ),
    ),
    # A Japanese blog: the language in the JSON-LD, Unicode kept as written; the cover was not
    # downloaded, so the page, the head and the JSON-LD name the service's copy.
    Case(
        "japanese",
        article(
            "ckgolden0japanese00000005",
            "seiteki-saito-nyumon",
            "静的サイトで書く：ブログ入門",
            description="MkDocsでブログを書くための「はじめの一歩」。",
            content="# 静的サイトで書く：ブログ入門\n\n本文です。**太字**と`コード`があります。\n\n## 次に\n\n続きます。",
            coverImageUrl=f"{MEDIA}/表紙.png",
            tags=["ウェブ", "MkDocs"],
            seoKeywords=["静的サイト"],
        ),
        language="ja",
    ),
]


# --- the product's calls: the one place to adapt when the renderer's API moves --------------


def render(case: Case) -> dict[str, str]:
    """Golden file suffix -> what the product writes for `case`."""
    renderer = Renderer()
    data = Article.from_json(case.article)
    paths = PagePaths(case.src_uri, case.downloaded)
    outputs = {"page.md": renderer.page(data, case.slug, paths)}

    # as `session.BuildSession.with_head` calls it: the site's URLs of the page and its images
    def on_site(src: str) -> str:
        return f"{case.site_url}{src}" if case.site_url else get_relative_url(src, case.page_url)

    local_cover = on_site(case.downloaded[data.cover_image_url]) if data.cover_image_url in case.downloaded else None
    head = renderer.head(
        data,
        page_url=f"{case.site_url}{case.page_url}" if case.site_url else None,
        image_url=local_cover or data.cover_image_url,
        language=case.language,
        images={url: on_site(src) for url, src in case.downloaded.items()},
        image_size=case.cover_size if local_cover else None,
    )
    outputs["head.html"] = head
    outputs["jsonld.json"] = pretty_json_ld(head)
    if case.export:  # as `mkdocs-blogsvc export` calls it (pages.render_pages with an ExportHead)
        page = renderer.page(data, case.slug, paths, export=ExportHead(case.site_url, case.language))
        outputs["export.page.md"] = page
        outputs["export.jsonld.json"] = pretty_json_ld(page)
    return outputs


# --- the checks ------------------------------------------------------------------------------


_JSON_LD = re.compile(r'<script type="application/ld\+json">(.*?)</script>', re.DOTALL)


def pretty_json_ld(text: str) -> str:
    """The JSON-LD the page or head carries, indented and sorted, for a diff a person can read."""
    found = _JSON_LD.findall(text)
    assert len(found) == 1, f"expected one JSON-LD script element, found {len(found)}"
    return json.dumps(json.loads(found[0]), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@functools.cache
def rendered(name: str) -> dict[str, str]:
    """Each case rendered once per process (each xdist worker renders what it needs)."""
    return render(next(case for case in CASES if case.name == name))


def expected_files() -> list[tuple[str, str]]:
    """(case, suffix) of every golden file."""
    kinds = ["page.md", "head.html", "jsonld.json"]
    return [
        (case.name, kind)
        for case in CASES
        for kind in kinds + (["export.page.md", "export.jsonld.json"] if case.export else [])
    ]


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder (a dot file: never taken as golden)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(text.encode("utf-8"))
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.mark.parametrize(("name", "kind"), expected_files())
def test_output_matches_its_golden_file(name: str, kind: str, update_golden: bool) -> None:
    path = GOLDEN / f"{name}.{kind}"
    actual = rendered(name)[kind]
    expected = path.read_bytes().decode("utf-8") if path.exists() else None
    if update_golden:
        if actual != expected:
            path.parent.mkdir(exist_ok=True)
            write_atomically(path, actual)
        return
    if expected is None:
        pytest.fail(f"{path} is missing: create it with `{UPDATE_COMMAND}`", pytrace=False)
    if actual != expected:
        relative = path.relative_to(GOLDEN.parents[2]).as_posix()
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"{relative} (golden)",
                tofile=f"{relative} (rendered now)",
            )
        )
        pytest.fail(
            f"{relative} differs from what the renderer writes now:\n{diff}\n"
            f"If the change is meant, regenerate the golden files with `{UPDATE_COMMAND}` "
            "and review `git diff tests/plugin/golden/`.",
            pytrace=False,
        )


def test_no_golden_file_is_left_without_a_case(update_golden: bool) -> None:
    """A case renamed or removed leaves no stale file behind (deleted by `--update-golden`)."""
    wanted = {f"{name}.{kind}" for name, kind in expected_files()}
    present = GOLDEN.iterdir() if GOLDEN.is_dir() else iter(())
    stale = sorted(path.name for path in present if not path.name.startswith(".") and path.name not in wanted)
    if update_golden:
        for name in stale:
            (GOLDEN / name).unlink(missing_ok=True)
        return
    if stale:
        pytest.fail(
            f"golden files without a case in tests/plugin/golden/: {', '.join(stale)}; "
            f"remove them with `{UPDATE_COMMAND}`",
            pytrace=False,
        )


def test_rendering_twice_gives_the_same_bytes() -> None:
    """What makes golden files possible: nothing in the output comes from the clock or chance."""
    for case in CASES:
        assert render(case) == rendered(case.name), case.name
