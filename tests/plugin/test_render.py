"""render.py: slug safety, front matter Material's blog plugin accepts, escaping of every value."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml
from material.plugins.blog.structure.config import PostConfig

from mkdocs_blogsvc import jsonld
from mkdocs_blogsvc.errors import BadTemplate, ConfigurationError
from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.render import (
    PagePaths,
    Renderer,
    script_json,
)
from mkdocs_blogsvc.slugs import assign_slugs, is_safe_slug, safe_slug

EVIL = "</script><script>alert(1)</script>"


def article(**changes: Any) -> Article:
    data: dict[str, Any] = {
        "id": "ck1abcdefghijklmnopqrstuv",
        "slug": "hello-world",
        "title": "Hello: World",
        "description": 'A "quoted" intro',
        "content": "# Hello: World\n\nBody with ![pic](https://img.test/a.png).",
        "coverImageUrl": "https://img.test/cover.png",
        "inlineImageUrls": ["https://img.test/a.png"],
        "tags": ["python", "mkdocs"],
        "seoKeywords": ["static sites"],
        "seoScore": 7.5,
        "schemaOrgJson": None,
        "publishedAt": "2025-01-02T03:04:05.678Z",
        "updatedAt": "2025-02-03T04:05:06.789Z",
        "viewCount": 0,
        "contentHash": "0" * 64,
    }
    data.update(changes)
    return Article.from_json(data)


def split_page(text: str) -> tuple[dict[str, Any], str]:
    match = re.match(r"^---\n(.*?\n)---\n(.*)$", text, re.DOTALL)
    assert match, text
    return yaml.safe_load(match.group(1)), match.group(2)


@pytest.mark.parametrize(
    "slug",
    [
        "",
        "../../mkdocs",
        "a/b",
        "a\\b",
        "UPPER",
        "sp ace",
        "x" * 101,
        "---",
        "caf\u00e9",
        "..",
        "a.b",
        "abc\n",
        "\nabc",
        "x" * 100 + "\n",
    ],
)
def test_unsafe_slugs_are_replaced_by_a_safe_one_from_title_and_id(slug: str) -> None:
    replaced = safe_slug(article(slug=slug, title="Caf\u00e9 & Cr\u00e8me: Tips!"))
    assert replaced != slug and is_safe_slug(replaced)
    assert replaced.startswith("cafe-creme-tips-") and replaced.endswith("qrstuv")


def test_a_safe_slug_is_kept_and_a_long_title_still_gives_a_short_slug() -> None:
    assert safe_slug(article(slug="x" * 100)) == "x" * 100
    assert len(safe_slug(article(slug="", title="word " * 80))) <= 100
    assert is_safe_slug(safe_slug(article(slug="", title="\u2603\u2603", id="!!!")))


def test_duplicate_slugs_are_disambiguated_deterministically(caplog: pytest.LogCaptureFixture) -> None:
    older = article(id="a1", slug="same", publishedAt="2024-01-01T00:00:00.000Z")
    newer = article(id="b2", slug="same", publishedAt="2024-06-01T00:00:00.000Z")
    third = article(id="c3", slug="same-2", publishedAt="2024-07-01T00:00:00.000Z")
    first = assign_slugs([third, newer, older])
    assert first == assign_slugs([older, third, newer])
    assert first["a1"] == "same" and len(set(first.values())) == 3
    assert "share the slug" in caplog.text


def test_front_matter_has_real_datetimes_and_passes_material_post_validation(tmp_path: Path) -> None:
    paths = PagePaths("blog/posts/hello-world.md", {"https://img.test/cover.png": "blog/images/c.png"})
    meta, _body = split_page(Renderer().page(article(), "hello-world", paths))
    assert meta["date"] == {
        "created": datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc),
        "updated": datetime(2025, 2, 3, 4, 5, 6, 789000, tzinfo=timezone.utc),
    }
    assert meta["title"] == "Hello: World" and meta["slug"] == "hello-world"
    assert meta["description"] == "A &quot;quoted&quot; intro"
    assert meta["tags"] == ["python", "mkdocs"] and meta["keywords"] == ["static sites"]
    assert meta["image"] == "blog/images/c.png"
    config = PostConfig(str(tmp_path / "post.md"))
    config.load_dict({key: meta[key] for key in meta.keys() & config.keys()})
    errors, _warnings = config.validate()
    assert errors == []


def test_cover_is_first_after_the_heading_with_the_title_as_alt_and_images_are_relative() -> None:
    paths = PagePaths(
        "blog/posts/hello-world.md",
        {
            "https://img.test/cover.png": "blog/images/c.png",
            "https://img.test/a.png": "blog/images/a.png",
        },
    )
    _meta, body = split_page(Renderer().page(article(), "hello-world", paths))
    lines = [line for line in body.splitlines() if line]
    assert lines[0] == "# Hello: World"
    assert lines[1] == "![Hello: World](../images/c.png)"
    assert "![pic](../images/a.png)" in body and "img.test" not in body


def test_a_body_without_heading_gets_the_title_and_remote_images_stay_remote() -> None:
    _meta, body = split_page(
        Renderer().page(article(content="Just text."), "hello-world", PagePaths("blog/posts/x.md", {}))
    )
    assert body.lstrip().startswith("# Hello: World\n\n![Hello: World](https://img.test/cover.png)")


def test_hostile_title_cannot_inject_html_into_the_page_or_break_front_matter() -> None:
    hostile = article(title=EVIL + "\n---\nx: [", description=EVIL, tags=[EVIL], content="Text only.")
    text = Renderer().page(hostile, "s", PagePaths("blog/posts/s.md", {}))
    meta, _body = split_page(text)
    assert "<script" not in text
    assert meta["title"].startswith("&lt;\u2060/script&gt;&lt;\u2060script&gt;alert(1)")
    assert set(meta) == {"title", "description", "date", "slug", "tags", "keywords", "image", "render_macros"}


def test_script_json_cannot_close_the_element_and_round_trips() -> None:
    value = {"name": EVIL, "amp": "a & b", "sep": "\u2028\u2029", "n": [1, None]}
    text = str(script_json(value))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


def test_head_has_schema_org_json_verbatim_and_escaped_meta_tags() -> None:
    schema = {"@type": "BlogPosting", "headline": EVIL}
    head = Renderer().head(
        article(title=EVIL, schemaOrgJson=schema),
        page_url="https://e.test/p/",
        image_url="https://e.test/c.png",
        language="en",
    )
    assert head.count("<script") == 1 and head.count("</script>") == 1
    block = re.search(r'<script type="application/ld\+json">(.*?)</script>', head, re.DOTALL)
    # the service's fields kept as sent; the page on the site named, the cover (on the site) added,
    # the article's dates as the Open Graph tags give them
    assert block and json.loads(block.group(1)) == {
        **schema,
        "url": "https://e.test/p/",
        "mainEntityOfPage": "https://e.test/p/",
        "image": "https://e.test/c.png",
        "datePublished": "2025-01-02T03:04:05.678Z",
        "dateModified": "2025-02-03T04:05:06.789Z",
    }
    assert '<meta property="og:title" content="&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;">' in head
    for tag in (
        'og:type" content="article"',
        'og:image" content="https://e.test/c.png"',
        'og:url" content="https://e.test/p/"',
        'article:published_time" content="2025-01-02T03:04:05.678Z"',
        'article:tag" content="python"',
        'name="keywords" content="static sites"',
        'og:description" content="A &#34;quoted&#34; intro"',
    ):
        assert tag in head


def test_head_builds_a_blog_posting_when_schema_org_json_is_null() -> None:
    head = Renderer().head(
        article(), page_url="https://e.test/blog/hello/", image_url="https://e.test/c.png", language="pt"
    )
    block = re.search(r'<script type="application/ld\+json">(.*?)</script>', head, re.DOTALL)
    assert block
    assert json.loads(block.group(1)) == {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": "Hello: World",
        "description": 'A "quoted" intro',
        "datePublished": "2025-01-02T03:04:05.678Z",
        "dateModified": "2025-02-03T04:05:06.789Z",
        "image": "https://e.test/c.png",
        "keywords": ["static sites"],
        "inLanguage": "pt",
        "url": "https://e.test/blog/hello/",
        "mainEntityOfPage": "https://e.test/blog/hello/",
    }


def test_custom_templates_replace_the_built_in_ones(tmp_path: Path) -> None:
    page, head = tmp_path / "page.md.j2", tmp_path / "head.html.j2"
    page.write_text("---\n{{ front_matter }}---\nCUSTOM {{ slug }}\n")
    head.write_text('<meta name=x content="{{ title }}">')
    renderer = Renderer(page, head)
    assert renderer.page(article(), "hello-world", PagePaths("blog/posts/a.md", {})).endswith("CUSTOM hello-world\n")
    assert (
        renderer.head(article(title="a<b"), page_url=None, image_url=None, language=None)
        == '<meta name=x content="a&lt;b">'
    )


def test_pages_tell_template_plugins_to_leave_the_services_text_alone() -> None:
    """Review finding: mkdocs-macros-plugin rendered an article's Markdown and title as Jinja2
    (no sandbox: `{{ cycler.__init__.__globals__.os.environ }}` ran in the build). Its own
    switch, `render_macros: false`, wins over all of its settings."""
    paths = PagePaths("blog/posts/hello-world.md", {})
    meta, _body = split_page(
        Renderer().page(article(title="{{ 7*7 }}", content="{{ config.extra }}"), "hello-world", paths)
    )
    assert meta["render_macros"] is False
    index, _body = split_page(
        Renderer().index("{{ 7*7 }}", [(article(), "blog/posts/hello-world.md")], "blog/index.md")
    )
    assert index["render_macros"] is False


def test_index_lists_newest_first_with_relative_links() -> None:
    old = article(id="a", title="Old", publishedAt="2024-01-01T00:00:00.000Z")
    new = article(id="b", title="New <b>", publishedAt="2025-01-01T00:00:00.000Z")
    text = Renderer().index("My Blog", [(old, "blog/posts/old.md"), (new, "blog/posts/new.md")], "blog/index.md")
    meta, body = split_page(text)
    assert meta == {"title": "My Blog", "render_macros": False}
    assert body.index("[New &lt;b&gt;](posts/new.md)") < body.index("[Old](posts/old.md)")


# --- templates that cannot be loaded or rendered --------------------------------------------


def test_a_custom_page_template_failing_at_render_time_names_file_line_and_message(tmp_path: Path) -> None:
    page = tmp_path / "page.md.j2"
    page.write_text("---\n{{ front_matter }}---\n{{ artcle.title }}\n")  # typo: StrictUndefined fails at render
    renderer = Renderer(page)
    with pytest.raises(BadTemplate) as caught:
        renderer.page(article(), "hello-world", PagePaths("blog/posts/a.md", {}))
    assert str(caught.value) == (
        f"page_template {page} cannot be rendered (article ck1abcdefghijklmnopqrstuv): line 3: 'artcle' is undefined"
    )
    assert isinstance(caught.value, ConfigurationError) and caught.value.__cause__ is None


def test_a_python_error_in_a_custom_head_template_is_a_template_error_too(tmp_path: Path) -> None:
    head = tmp_path / "head.html.j2"
    head.write_text("<meta>\n{{ tags + 1 }}\n")
    with pytest.raises(
        BadTemplate, match=r"head_template .*head\.html\.j2 cannot be rendered \(article \w+\): line 2: TypeError: "
    ):
        Renderer(None, head).head(article(), page_url=None, image_url=None, language=None)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("ok\n{% if %}\n", r"cannot be loaded: line 2: Expected an expression"),
        (b"\xff\xfe", r"cannot be read \('utf-8' codec can't decode"),
        (None, r"cannot be read \(No such file or directory\)"),
    ],
)
def test_a_custom_template_that_cannot_be_loaded_names_the_file(
    tmp_path: Path, source: str | bytes | None, expected: str
) -> None:
    page = tmp_path / "page.md.j2"
    if isinstance(source, str):
        page.write_text(source)
    elif isinstance(source, bytes):
        page.write_bytes(source)
    with pytest.raises(BadTemplate, match=f"^page_template {re.escape(str(page))} {expected}"):
        Renderer(page)


def test_an_image_url_replaced_in_the_body_cannot_undo_what_the_sanitiser_checked() -> None:
    """Review finding: a URL ending in a backtick opened a code span that hid a link from the
    sanitiser; replacing the URL by the local path afterwards closed it again."""
    url = "https://img.test/a`"
    hostile = article(content=f"{url}[CLICK](javascript:alert(1))`", inlineImageUrls=[url])
    _meta, body = split_page(Renderer().page(hostile, "s", PagePaths("blog/posts/s.md", {url: "blog/images/a.png"})))
    assert "../images/a.png" in body
    html = markdown.markdown(body)
    assert "javascript:" not in html and "CLICK" in html, html


def test_the_documented_filter_examples_work_for_an_article_without_description_or_cover(tmp_path: Path) -> None:
    """Found by review: `md_text` and `md_url` failed on null values with Python's own errors."""
    page = tmp_path / "page.md.j2"
    page.write_text(
        "---\n{{ front_matter }}---\n\n{{ heading }}\n\n*{{ article.description | md_text }}*\n\n"
        "[source]({{ article.cover_image_url | md_url }})\n\n{{ body }}\n"
    )
    text = Renderer(page).page(
        article(description=None, coverImageUrl=None, inlineImageUrls=[]),
        "hello-world",
        PagePaths("blog/posts/hello-world.md", {}),
    )
    assert "\n**\n\n[source]()\n" in text


def test_an_apostrophe_in_a_title_shows_as_itself_and_keeps_its_heading_id() -> None:
    """Found by review: `'` became `&#x27;` (shown as such by the built-in theme's contents) and
    the heading id `anax27s-trip`."""
    text = Renderer().page(
        article(title='Ana\'s "trip" <b>', content="Text."), "ana", PagePaths("blog/posts/ana.md", {})
    )
    _, body = split_page(text)
    body = body.lstrip("\n")
    assert body.startswith('# Ana\'s "trip" &lt;b&gt;\n')
    md = markdown.Markdown(extensions=["toc"])
    assert md.convert(body).startswith('<h1 id="anas-trip-b">Ana\'s "trip" &lt;b&gt;</h1>')


# --- found by mutation testing: behaviours no test pinned ---------------------------------------


def test_ids_without_letters_or_digits_still_give_distinct_slugs() -> None:
    first, second = safe_slug(article(slug="", title="T", id="!!!")), safe_slug(article(slug="", title="T", id="???"))
    assert first != second and is_safe_slug(first) and is_safe_slug(second)
    assert not first.endswith("-")


def test_the_oldest_article_keeps_a_shared_slug_whatever_the_ids() -> None:
    older = article(id="z9", slug="same", publishedAt="2024-01-01T00:00:00.000Z")
    newer = article(id="a1", slug="same", publishedAt="2024-06-01T00:00:00.000Z")
    assert assign_slugs([newer, older]) == {"z9": "same", "a1": "same-2"}


def test_a_made_up_suffix_never_takes_another_article_s_own_slug(caplog: pytest.LogCaptureFixture) -> None:
    """Found by review: `dup` shared by two articles gave the newer one `dup-2`, and an article
    whose slug on the service really is `dup-2` was moved to `dup-2-2`, with a warning that
    articles shared `dup-2`."""
    older = article(id="a1", slug="dup", publishedAt="2024-01-01T00:00:00.000Z")
    newer = article(id="b2", slug="dup", publishedAt="2024-06-01T00:00:00.000Z")
    its_own = article(id="c3", slug="dup-2", publishedAt="2024-07-01T00:00:00.000Z")
    assert assign_slugs([its_own, newer, older]) == {"a1": "dup", "b2": "dup-3", "c3": "dup-2"}
    assert "share the slug 'dup';" in caplog.text and "share the slug 'dup-2'" not in caplog.text


def test_many_articles_sharing_a_long_slug_get_distinct_safe_slugs() -> None:
    shared = [article(id=f"id{n}", slug="x" * 100, publishedAt=f"2024-01-0{n + 1}T00:00:00.000Z") for n in range(4)]
    slugs = assign_slugs(shared)
    assert len(set(slugs.values())) == 4 and all(is_safe_slug(slug) for slug in slugs.values())
    assert slugs["id0"] == "x" * 100 and slugs["id3"] == "x" * 96 + "-4"


@pytest.mark.parametrize("title", ["Tips {: onclick=alert(1) }", "Learn C#", "A | B", "![x](y) and \\ and `code`"])
def test_a_title_shows_literally_as_the_heading(title: str) -> None:
    """The heading is made from the service's title, which the sanitiser never sees: no
    Markdown in it may act (an attr list, closing hashes, an image)."""
    _meta, body = split_page(
        Renderer().page(
            article(title=title, content="Text.", coverImageUrl=None), "s", PagePaths("blog/posts/s.md", {})
        )
    )
    rendered = markdown.markdown(body, extensions=["attr_list", "tables"])
    assert rendered.startswith(f"<h1>{title.replace('&', '&amp;')}</h1>"), rendered


def test_a_title_over_several_lines_is_one_heading() -> None:
    _meta, body = split_page(
        Renderer().page(
            article(title="One\n===\nTwo", content="Text.", coverImageUrl=None, description=None),
            "s",
            PagePaths("blog/posts/s.md", {}),
        )
    )
    assert markdown.markdown(body).startswith("<h1>One === Two</h1>\n<p>Text.</p>")


def test_a_remote_cover_url_with_spaces_and_parentheses_stays_one_image() -> None:
    url = "https://img.test/my cover (1).png"
    _meta, body = split_page(
        Renderer().page(article(coverImageUrl=url, content="Text."), "s", PagePaths("blog/posts/s.md", {}))
    )
    assert '<img alt="Hello: World" src="https://img.test/my%20cover%20%281%29.png" />' in markdown.markdown(body)


def test_a_hostile_keyword_is_escaped_in_the_front_matter() -> None:
    meta, _body = split_page(Renderer().page(article(seoKeywords=[EVIL]), "s", PagePaths("blog/posts/s.md", {})))
    assert meta["keywords"] == ["&lt;\u2060/script&gt;&lt;\u2060script&gt;alert(1)&lt;\u2060/script&gt;"]


@pytest.mark.parametrize("content", ["#hashtag first\n\nText.", "\n\n# Hello: World\n\nText."])
def test_the_articles_own_heading_is_found_after_blank_lines_and_only_with_a_space(content: str) -> None:
    _meta, body = split_page(
        Renderer().page(article(content=content, coverImageUrl=None), "s", PagePaths("blog/posts/s.md", {}))
    )
    assert body.count("# Hello: World") == 1
    assert body.lstrip("\n").startswith("# Hello: World\n")
    assert content.startswith("\n") or "#hashtag first" in body


def test_an_inline_image_url_that_extends_another_is_replaced_whole() -> None:
    short, long = "https://img.test/a.png", "https://img.test/a.png?size=2"
    content = f"![a]({short}) ![b]({long})"
    paths = PagePaths("blog/posts/s.md", {short: "blog/images/1.png", long: "blog/images/2.png"})
    _meta, body = split_page(
        Renderer().page(article(content=content, inlineImageUrls=[short, long], coverImageUrl=None), "s", paths)
    )
    assert "![a](../images/1.png) ![b](../images/2.png)" in body


def test_snippets_markers_in_an_article_are_shown_not_included() -> None:
    content = 'Text.\n\n--8<-- "credentials.json"\n\n;--8<-- "escaped.md"\n'
    _meta, body = split_page(Renderer().page(article(content=content), "s", PagePaths("blog/posts/s.md", {})))
    assert ';--8<-- "credentials.json"' in body and ';;--8<-- "escaped.md"' in body


def test_the_index_title_from_the_service_is_escaped() -> None:
    meta, body = split_page(Renderer().index("<b>Blog</b> *x*", [], "blog/index.md"))
    assert meta["title"] == "&lt;\u2060b&gt;Blog&lt;\u2060/b&gt; *x*"
    assert "<b>" not in body and "\\*x\\*" in body


def test_a_blog_posting_without_keywords_has_no_keywords() -> None:
    data = jsonld.for_page(article(seoKeywords=[]), page_url=None, image_url=None, language=None)
    assert "keywords" not in data


def test_a_remote_cover_is_not_added_to_the_services_json_ld() -> None:
    """Only a downloaded cover (the site's copy) is added when the service's data has no image."""
    remote = "https://img.test/cover.png"
    head = Renderer().head(
        article(schemaOrgJson={"@type": "BlogPosting"}), page_url=None, image_url=remote, language=None
    )
    block = re.search(r'<script type="application/ld\+json">(.*?)</script>', head, re.DOTALL)
    assert block and "image" not in json.loads(block.group(1))


def test_exported_pages_name_the_cover_absolute_or_remote() -> None:
    from mkdocs_blogsvc.theme_override import ExportHead

    paths = PagePaths("blog/posts/s.md", {"https://img.test/cover.png": "blog/images/c.png"})
    assert (
        ExportHead("https://e.test/site/", None).image_url(article(), paths) == "https://e.test/site/blog/images/c.png"
    )
    assert ExportHead(None, None).image_url(article(), paths) is None
    assert (
        ExportHead("https://e.test/", None).image_url(article(), PagePaths("blog/posts/s.md", {}))
        == "https://img.test/cover.png"
    )
    hostile = article(coverImageUrl='https://img.test/"><script>.png')
    meta, _body = split_page(
        Renderer().page(hostile, "s", PagePaths("blog/posts/s.md", {}), export=ExportHead(None, None))
    )
    assert "<" not in meta["blogsvc"]["image"] and '"' not in meta["blogsvc"]["image"]


def test_front_matter_dates_have_the_millisecond_precision_of_the_head_tags() -> None:
    meta, _body = split_page(
        Renderer().page(article(publishedAt="2025-01-02T03:04:05.678901Z"), "s", PagePaths("blog/posts/s.md", {}))
    )
    assert meta["date"]["created"] == datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)


def test_a_remote_cover_url_in_the_front_matter_cannot_break_out_of_an_attribute() -> None:
    """Found by review: a cover that was not downloaded went into the front matter's `image` as
    the service sent it, and mkdocs-rss-plugin prints that key unescaped into its feed's
    `<enclosure url="...">`. It is now percent-encoded (`md_url`), as a browser would request it."""
    url = 'https://img.test/a.png?"/><script>alert(1)</script>'
    meta, _body = split_page(Renderer().page(article(coverImageUrl=url), "s", PagePaths("blog/posts/s.md", {})))
    assert meta["image"] == "https://img.test/a.png?%22/%3E%3Cscript%3Ealert%281%29%3C/script%3E"
