"""The sanitiser on its own: what each pass removes, what it keeps, what it counts.

The Markdown pass is checked against the renderer it has to agree with: each hostile body is
neutralised, rendered by Python-Markdown with the extensions MkDocs sites use, and the HTML
pass (nh3's browser-grade parser) must then find nothing left to remove.
"""

from __future__ import annotations

import html
import re

import markdown
import pytest

from mkdocs_blogsvc.sanitize import clean_html, clean_markdown, url_scheme

#: Bodies an attacker controlling the service could send.
HOSTILE = {
    "script": "Hello <script>alert(1)</script> world",
    "script at line start": "<script>\nalert(1)\n</script>\n\nafter",
    "unclosed script": "before\n\n<script>alert(1)",
    "img onerror": '<img src=x onerror="alert(1)">',
    "img onerror unquoted": "text <img src=x onerror=alert(1)//> text",
    "javascript href": '<a href="javascript:alert(1)">x</a>',
    "entity-encoded javascript href": '<a href="jav&#x61;script:alert(1)">x</a>',
    "iframe": '<iframe src="https://evil.example/"></iframe>after',
    "svg script": '<svg><script>alert(1)</script><path d="M0 0"/></svg>',
    "svg onload": "<svg onload=alert(1)>",
    "object and embed": '<object data="x.swf"><embed src="x.swf"></object>',
    "form": '<form action="https://evil.example/"><input type="password" name="p"><button>Go</button></form>',
    "style element": "<style>body{display:none}</style>text",
    "style attribute": '<p style="position:fixed;top:0">x</p>',
    "markdown javascript link": "[x](javascript:alert(1))",
    "markdown link with spaces and case": "[x]( JaVaScRiPt:alert(1) )",
    "markdown link entity": "[x](jav&#97;script:alert(1))",
    "markdown link tab": "[x](java&#9;script:alert(1))",
    "markdown link angle": "[x](<javascript:alert(1)>)",
    "markdown image data": "![x](data:image/svg+xml;base64,PHN2Zz4=)",
    "vbscript link": "[x](vbscript:msgbox(1))",
    "autolink": "<javascript:alert(1)>",
    "reference link": "[x][r]\n\n[r]: javascript:alert(1)",
    "reference link next line": "[x][r]\n\n[r]:\n    javascript:alert(1)",
    "reference link angle": '[x][r]\n\n[r]: <javascript:alert(1)> "t"',
    "attr_list handler": '[x](https://example.com/){ onclick="alert(1)" }',
    "attr_list href": '[x](https://example.com/){ href="javascript:alert(1)" }',
    "attr_list on image": "![x](ok.png){: onerror=alert(1) }",
    "fence attr_list": '```{ .html onclick="alert(1)" }\n<b>x</b>\n```',
    "link inside attribute": '<img src="x" alt="[y](onerror=alert(1)//)">',
    "backtick inside attribute": '<a title="`">x`" onmouseover="alert(1)">',
    "removal joins a tag": "<img src=x <script></script>onerror=alert(1)>",
    "removal joins a link": "[x](java<x></x>script:alert(1))",
    "code span in raw block": "<div>\n`<img src=x onerror=alert(1)>`\n</div>",
    "conditional comment": "<!--[if IE]><script>alert(1)</script><![endif]-->",
    "noscript mutation": '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "unclosed quote": '<img alt=">" src=x onerror=alert(1)//>',
    "nested quote break": "<a href='x' title=\"a' onclick='alert(1)\">k</a>",
    "math": "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "details handler": "<details open ontoggle=alert(1)><summary>s</summary>x</details>",
    "meta refresh": '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "base": '<base href="javascript:alert(1)//">',
    # found by review: Python-Markdown reads an attr_list to the line's last `}`
    "attr_list value holding a brace": '## Sub {: title="}" onfocus="alert(1)" autofocus tabindex="1" }',
    # a code span cannot run past its heading's line
    "code span across a heading": "# Heading `\n[CLICKME](javascript:alert(1))\n`",
    "reference in a quote": "See [x][r].\n\n> [r]: javascript:alert(1)",
    "reference in a list item": "- item\n\n    [r]: javascript:alert(1)\n\nSee [x][r].",
    # found by review: raw HTML (or a lone `<`) inside an attr list split the list in two
    "attr_list around a lone <": "Intro.\n\n## Sub {: onclick=alert(document.domain) < }",
    "attr_list around a tag": "# T {: title=x <b> onclick=alert(1) }",
    "attr_list around a comment": "Para\n{: onclick=alert(1) <!-- c --> }",
    "inline attr_list around a lone <": "*em*{: onclick=alert(1) < }",
    "attr_list in a table cell": "| a |\n|---|\n| x {: onclick=alert(1) < } |",
    # found by review: an autolink, an e-mail autolink or an angle-bracket destination is raw
    # HTML inside a raw HTML block (or where Python-Markdown does not read it as a link), and a
    # browser reads `/` as the separator of attributes
    "autolink setting a handler": "<https:x/onmouseover=alert(1)>hover me",
    "autolink in a raw block": "<div>\n<https://x/onmouseover=alert(1)>\n</div>",
    "automail setting a handler": "<div/onmouseover=alert(1)//@x>\nhover me\n</div>",
    "automail in a raw block": "<div>\n<a@b/onmouseover=alert(1)>\n</div>",
    "angle destination in a raw block": "<div>\n[x](<img src=x onerror=alert(1)>)\n</div>",
    "angle destination with a handler": "<div>\n[x](<https://x onmouseover=alert(1)>)\n</div>",
    # an unfinished link or a reference definition whose destination in angle brackets is an
    # element that acts without attributes (run in a browser: the page's JSON-LD closed it)
    "unfinished link to a script": "Hello.\n\n[x](<script>window.pwned=1/*\n",
    "reference-like text before a style": "See [r]: <style>\nbody { display: none }\n",
    "unfinished link to a textarea": "[x](<textarea> the rest of the page is swallowed",
    "autolink opening a quote": '<div>\n<https://x/?a="b>\n" onmouseover=alert(1) c="d">\n</div>',
    # found by review: a fence that another renderer ends early (Python-Markdown expands tabs and
    # drops STX before it looks for fences; superfences opens indented fences, and gives a fence
    # that an indented code block takes in back to Markdown) left its code as written
    "fence closed by a tab": "```\ncode\n```\t\n<img src=x onerror=alert(1)>\n```",
    "fence closed after STX": "```\ncode\n```\x02\n<img src=x onerror=alert(1)>\n```",
    "fence after an indented fence": "    ```\n    x\n\n```\n<img src=x onerror=alert(1)>\n\n```",
    "fence after a fence in a list": "- item\n\n    ```\n    x\n```\n<img src=x onerror=alert(1)>\n```",
    "fence opened by a tab": "```\t\nx\n```\n<img src=x onerror=alert(1)>\n```",
    "fence after an indented code line": "    `\n```\n# x\n<img src=x onerror=alert(1)>\n```",
    "fence after a quoted code line": "> a\n>\n>     code\n```\n# x\n<img src=x onerror=alert(1)>\n```",
    "fence after code in a list item": "- a\n\n        code\n```\n# x\n<img src=x onerror=alert(1)>\n```",
    # found by review: a block that ends a paragraph inside a code span (an indented code block
    # before it, a one-character setext underline, a rule, an admonition) left its text unchecked
    "code span from an indented code block": "Para\n\n    x `\n*em*{: tabindex=1 autofocus onfocus=alert(1) }`",
    "code span across a setext heading": "Title `\n=\n[a](javascript:alert(1))`",
    "code span across a rule": "x `\n***\n[a](javascript:alert(1))`",
    "code span into an admonition": "x `\n!!! note\n    [a](javascript:alert(1))`",
    "attr_list across a code span's end": "Para\n\n    x `\n*em*{: onclick=alert(1)// ` }",
    # found by review: a line that looks like a reference definition hid the link after it
    "footnote holding a link": "Text[^1]\n\n[^1]: [a](javascript:alert(1))",
    "reference-like line holding a link": "[[x]: [a](javascript:alert(1))",
    # found by review: a line break inside a link's destination (browsers drop it)
    "link destination over a line break": "[x](java\nscript:alert(1))",
    "image source over a line break": "![x](java\nscript:alert(1))",
    "link destination over a line break in a quote": "> [x](java\n> script:alert(1))",
    "link destination over a line break in a list": "- a\n\n    [x](java\n    script:alert(1))",
    "link after a destination over a line break": "[x](java\n[a](javascript:alert(1))",
    # Python-Markdown reads lone CRs as line ends and drops STX before anything else
    "reference after lone carriage returns": "[x][r]\r\r[r]: javascript:alert(1)",
    "reference label holding STX": "[x][r]\n\n[r]\x02: javascript:alert(1)",
    # a line holding two attr lists, the second setting a handler
    "second attr list on a line": "*a*{: .x } and *b*{: onclick=alert(1) }",
    "unfinished link to an upper-case script": "[x](<SCRIPT>window.pwned=1/*\n",
}

#: Ids that would break out of a theme's unescaped `href="#{{ id }}"` (the table of contents).
HOSTILE_IDS = {
    "attr_list id": '## Heading {: id=\'q" onfocus="alert(1)" autofocus tabindex="1\' }',
    "md_in_html id": '<h2 markdown="1" id=\'z" onfocus="alert(1)" autofocus tabindex="1\'>Heading</h2>',
    "attr_list id with a space": "## Heading {: #a&#32;onfocus=alert(1) }",
    "attr_list id without spaces": '## Heading {: id=\'q"onfocus="alert(1)"autofocus\' }',
}

#: Rewritten, nothing removed: a code span holding a tag becomes `<code>` with escaped text; a
#: link in angle brackets that a browser would read as a tag with attributes has its `<` escaped;
#: a code span holding a brace or a refused link is written as `<code>` too.
NEUTRALISED_IN_PLACE = {
    "code span in raw block",
    "autolink setting a handler",
    "autolink in a raw block",
    "automail setting a handler",
    "automail in a raw block",
    "angle destination with a handler",
    "autolink opening a quote",
    "code span from an indented code block",
    "code span across a setext heading",
    "code span across a rule",
    "code span into an admonition",
    "attr_list across a code span's end",
    # a tag on the lines of a fence the Markdown pass cannot trust is escaped
    # (it may be a code sample: `_escape_possible_code`)
    "fence after a quoted code line",
    "fence after an indented code line",
    "fence after code in a list item",
}

#: Extension sets: MkDocs' defaults, and what a Material site typically adds.
EXTENSIONS = {
    "mkdocs": ["toc", "tables", "fenced_code"],
    "material": [
        "toc",
        "tables",
        "attr_list",
        "md_in_html",
        "footnotes",
        "admonition",
        "pymdownx.superfences",
        "pymdownx.tasklist",
        "pymdownx.details",
    ],
    # MkDocs' own fenced_code with attr_list: attributes on a fence go onto its `<code>`
    "mkdocs+attr_list": ["toc", "tables", "fenced_code", "attr_list", "md_in_html"],
}

SAFE_BODY = """\
# Heading

Some *text* with `inline <b>code</b>` and a [link](https://example.com/page) and
<https://example.com/auto>.

| Left | Right |
|:-----|------:|
| a    |     1 |

![A picture](images/picture.png)

<details><summary>More</summary>

Hidden *Markdown*.

</details>

Press <kbd>Ctrl</kbd>+<kbd>C</kbd>; H<sub>2</sub>O, x<sup>2</sup>.

<figure><img src="images/fig.png" alt="Figure"><figcaption>Caption</figcaption></figure>

<!-- more -->

```html
<script>console.log("a code sample")</script>
```
"""


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("extensions", sorted(EXTENSIONS))
def test_markdown_pass_leaves_nothing_for_the_html_pass(name: str, extensions: str) -> None:
    cleaned = clean_markdown(HOSTILE[name])
    rendered = markdown.markdown(cleaned.text, extensions=EXTENSIONS[extensions])
    leftover = clean_html(rendered).removed
    assert not leftover, f"{name}: {leftover.summary()} left in {rendered!r}"
    assert "<script" not in rendered.lower()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_bodies_are_changed_and_counted(name: str) -> None:
    source = HOSTILE[name]
    cleaned = clean_markdown(source)
    rendered_raw = markdown.markdown(source, extensions=EXTENSIONS["material"])
    if not clean_html(rendered_raw).removed:  # harmless as written (the renderer escapes it)
        return
    assert cleaned.text != source
    if name not in NEUTRALISED_IN_PLACE:
        assert cleaned.removed, f"{name}: changed but nothing counted"


def test_counts_name_elements_attributes_and_schemes() -> None:
    body = (
        "<script>a</script><script>b</script><img src=x onerror=alert(1)>"
        '<a href="javascript:alert(1)">x</a>[y](vbscript:x) <iframe src=//e></iframe>'
    )
    removed = clean_markdown(body).removed
    assert removed.counts[("element", "script")] == 2
    assert removed.counts[("attribute", "onerror")] == 1
    assert removed.counts[("url", "javascript")] == 1
    assert removed.counts[("url", "vbscript")] == 1
    assert removed.counts[("element", "iframe")] == 1
    assert removed.summary() == (
        "2 <script> elements, 1 <iframe> element, 1 onerror attribute, 1 javascript: URL, 1 vbscript: URL"
    )


def test_links_in_angle_brackets_that_set_no_attribute_are_kept() -> None:
    body = (
        "See <https://example.com/search?q=1&r=2>, <https://example.com/a/b>, <a@b.example>, "
        "<mailto:x@y.example?subject=hi>, [x](<https://example.com/a b>) and [y](<my file.md>)."
    )
    cleaned = clean_markdown(body)
    assert cleaned.text == body and not cleaned.removed
    rendered = markdown.markdown(cleaned.text)
    assert '<a href="https://example.com/search?q=1&amp;r=2">' in rendered
    assert '<a href="https://example.com/a b">x</a>' in rendered and '<a href="my file.md">y</a>' in rendered


def test_links_with_a_title_on_the_next_line_are_kept() -> None:
    body = '[x](page.md\n"Title") and [y](https://example.com/a\n  "T") in\n> [z](b.md\n> "Q")'
    cleaned = clean_markdown(body)
    assert cleaned.text == body and not cleaned.removed


def test_safe_markdown_survives_both_passes() -> None:
    cleaned = clean_markdown(SAFE_BODY)
    assert not cleaned.removed
    # the one rewrite: a code span holding a tag, shown the same as `<code>` with escaped text,
    # each `<` followed by an invisible WORD JOINER (a title made from it opens no tag)
    assert cleaned.text == SAFE_BODY.replace(
        "`inline <b>code</b>`", "<code>inline &lt;\u2060b&gt;code&lt;\u2060/b&gt;</code>"
    )
    rendered = markdown.markdown(cleaned.text, extensions=EXTENSIONS["material"])
    after = clean_html(rendered)
    assert not after.removed, after.removed.summary()
    for kept in (
        "<table>",
        "<th",
        "text-align",
        '<img alt="A picture" src="images/picture.png"',
        "<details>",
        "<summary>More</summary>",
        "<kbd>Ctrl</kbd>",
        "<sub>2</sub>",
        "<sup>2</sup>",
        "<figure>",
        "<figcaption>Caption</figcaption>",
        'href="https://example.com/page"',
        "console",
        "<pre",
        "<code>inline &lt;b&gt;code&lt;/b&gt;</code>",
    ):
        assert kept in after.text, kept


@pytest.mark.parametrize(
    "prose",
    [
        "The set {1, 2, 3} is small.",
        "Write {{ page.title }} in a template, and {% if x %} blocks.",
        'The JSON {"a": 1} parses.',
        "A heading id: {#intro .lead}, a class: {: .note }, a bare word: {hidden}.",
    ],
)
@pytest.mark.parametrize("extensions", sorted(EXTENSIONS))
def test_braces_in_prose_are_kept(prose: str, extensions: str) -> None:
    """Found by review: every `{...}` whose words were not allowed attributes was deleted,
    though most braces in prose are no attr list at all; now nothing is deleted."""
    cleaned = clean_markdown(prose)
    assert cleaned.text == prose and not cleaned.removed
    if extensions == "mkdocs":  # no attr_list: the braces are text on the page
        assert (
            markdown.markdown(cleaned.text, extensions=EXTENSIONS[extensions])
            == f"<p>{html.escape(prose, quote=False)}</p>"
        )


def test_an_attr_list_setting_a_handler_is_shown_as_text_not_deleted() -> None:
    cleaned = clean_markdown("Click *here*{: .note onclick=alert(1) } now.")
    assert cleaned.text == "Click *here*&#123;: .note onclick=alert(1) } now."
    assert cleaned.removed.counts[("attribute", "onclick")] == 1
    rendered = markdown.markdown(cleaned.text, extensions=EXTENSIONS["material"])
    assert rendered == "<p>Click <em>here</em>&#123;: .note onclick=alert(1) } now.</p>"
    assert not clean_html(rendered).removed


@pytest.mark.parametrize(
    "body",
    [
        "Intro\n\n```html\n<script>alert('sample')</script>\n<img src=x onerror=y>\n```\n\nOutro\n",
        "Intro:\n```html\n<b>sample</b>\n```\nMore:\n~~~\n<i>two</i>\n~~~\n",
    ],
)
def test_fenced_code_is_left_as_written(body: str) -> None:
    cleaned = clean_markdown(body)
    assert cleaned.text == body
    assert not cleaned.removed


def test_code_span_holding_a_tag_is_shown_the_same_either_way() -> None:
    cleaned = clean_markdown("Add a `<script>` tag, or `a < b`.")
    assert cleaned.text == "Add a <code>&lt;\u2060script&gt;</code> tag, or `a < b`."
    rendered = markdown.markdown(cleaned.text)
    assert rendered == "<p>Add a <code>&lt;\u2060script&gt;</code> tag, or <code>a &lt; b</code>.</p>"
    assert clean_html(rendered).text == "<p>Add a <code>&lt;script&gt;</code> tag, or <code>a &lt; b</code>.</p>"


@pytest.mark.parametrize("extensions", sorted(EXTENSIONS))
def test_code_spans_are_shown_the_same(extensions: str) -> None:
    """Code spans with brackets, links and braces: kept, or (braces, a refused link) written as
    `<code>`, and rendered the same either way."""
    body = (
        "Index `a[0]`, link `[x](https://example.com/)`, template `{{ page.title }}`, "
        'f-string `f"{name}"`, sample `[x](javascript:void(0))` and `` `{: .note }` ``.'
    )
    cleaned = clean_markdown(body)
    assert "`a[0]`" in cleaned.text and "`[x](https://example.com/)`" in cleaned.text
    assert not cleaned.removed
    rendered = markdown.markdown(cleaned.text, extensions=EXTENSIONS[extensions])
    assert html.unescape(rendered) == html.unescape(markdown.markdown(body, extensions=EXTENSIONS[extensions]))


def test_excerpt_separator_survives_other_comments_do_not() -> None:
    cleaned = clean_markdown("Intro\n\n<!-- more -->\n\nRest <!-- a <b> -->")
    assert cleaned.text == "Intro\n\n<!-- more -->\n\nRest "


def test_html_pass_keeps_what_material_extensions_write() -> None:
    source = (
        '# Title\n\nText[^1].\n\n!!! note\n    Body.\n\n- [x] done\n\n=== "A"\n    a\n\n=== "B"\n    b\n\n'
        "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n[^1]: Note.\n"
    )
    rendered = markdown.markdown(
        source,
        extensions=[
            "toc",
            "tables",
            "footnotes",
            "admonition",
            "pymdownx.tasklist",
            "pymdownx.tabbed",
            "pymdownx.superfences",
        ],
        extension_configs={"toc": {"permalink": True}, "pymdownx.tabbed": {"alternate_style": True}},
    )
    cleaned = clean_html(rendered)
    assert not cleaned.removed, cleaned.removed.summary()
    for kept in (
        'class="headerlink"',
        'class="admonition note"',
        'type="checkbox"',
        'type="radio"',
        '<label for="__tabbed_1_1">',
        'class="footnote-ref"',
        'style="text-align:right"',
    ):
        assert kept in cleaned.text, kept


def test_html_pass_removes_and_counts() -> None:
    cleaned = clean_html(
        '<p>x<script>alert(1)</script><img src="a.png" onerror="alert(2)"></p>'
        '<a href="javascript:alert(3)">j</a><iframe src="https://e.example/"></iframe>'
        '<svg><script>alert(4)</script></svg><td style="color:red">c</td>'
    )
    assert "alert" not in cleaned.text
    assert '<img src="a.png">' in cleaned.text
    assert cleaned.removed.counts[("element", "script")] == 2
    assert cleaned.removed.counts[("element", "iframe")] == 1
    assert cleaned.removed.counts[("attribute", "onerror")] == 1
    assert cleaned.removed.counts[("url", "javascript")] == 1


def test_html_pass_leaves_clean_html_alone() -> None:
    text = '<p>A <a href="/x/">link</a> and <img src="i.png" alt="i"></p>'
    cleaned = clean_html(text)
    assert cleaned.text == text
    assert not cleaned.removed


@pytest.mark.parametrize(
    "source",
    [
        '<p id="__config">{"base": "x"}</p>\n',
        '{"base": "x"}\n{: #__config }\n',
        '<div id="__search">x</div>\n',
    ],
)
def test_the_theme_s_ids_are_removed_in_both_passes(source: str) -> None:
    """Material and Zensical read their settings from `#__config`: an article's element with it,
    first in the page, would replace them. Ids the site's extensions write are kept."""
    cleaned = clean_markdown(source)
    assert cleaned.removed.counts[("attribute", "id")] == 1
    rendered = markdown.markdown(cleaned.text, extensions=["attr_list", "md_in_html"])
    assert 'id="__' not in rendered
    assert 'id="__' not in clean_html(markdown.markdown(source, extensions=["attr_list"])).text


def test_ids_of_the_site_s_extensions_are_kept() -> None:
    text = (
        '<h2 id="intro">I</h2><span id="__span-0-1"><a id="__codelineno-0-1" href="#__codelineno-0-1"></a></span>'
        '<input id="__tabbed_1_1" type="radio"><label for="__tabbed_1_1">A</label>'
    )
    assert clean_html(text).text == text
    cleaned = clean_html('<h2 id="__init__">The __init__ method</h2><p id="__tabbed_x">t</p>')
    assert cleaned.text == "<h2>The __init__ method</h2><p>t</p>"
    assert cleaned.removed.counts[("attribute", "id")] == 2


@pytest.mark.parametrize(
    ("attribute", "kept", "removed"),
    [
        ("data-type", "image", "external"),
        ("data-type", "image", "inline"),
        ("data-width", "900px", "calc(100% - 1px)"),
        ("data-height", "80vh", "auto;x"),
        ("data-desc-position", "left", "middle"),
        ("data-gallery", "dark", "g1"),
        ("data-title", "A plain caption", "&lt;img src=x onerror=alert(1)&gt;"),
        ("data-title", "A plain caption", "Fish &amp; chips"),
    ],
)
def test_html_pass_keeps_only_glightbox_settings_that_do_nothing_else(attribute: str, kept: str, removed: str) -> None:
    """GLightbox shows a title as HTML and loads `external` into an iframe: only inert values pass."""
    assert clean_html(f'<a class="glightbox" href="a.png" {attribute}="{kept}">i</a>').text == (
        f'<a class="glightbox" href="a.png" {attribute}="{kept}">i</a>'
    )
    cleaned = clean_html(f'<a class="glightbox" href="a.png" {attribute}="{removed}">i</a>')
    assert cleaned.text == '<a class="glightbox" href="a.png">i</a>'
    assert cleaned.removed.counts[("attribute", attribute)] == 1
    assert clean_html(f'<p {attribute}="{kept}">i</p>').text == "<p>i</p>", "on links only"


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("javascript:x", "javascript"),
        (" JaVa\tScript:x", "javascript"),
        ("jav&#x61;script:x", "javascript"),
        ("java\\script:x", "javascript"),
        ("https://e.example/", "https"),
        ("/relative:not", None),
        ("images/a.png", None),
        ("#frag", None),
        ("DATA:text/html,x", "data"),
    ],
)
def test_url_scheme_is_what_a_browser_sees(url: str, scheme: str | None) -> None:
    assert url_scheme(url) == scheme


def test_hostile_input_size_stays_linear() -> None:
    """Many unterminated constructs (each would be rescanned to the end by a naive pattern)."""
    body = "<a b " * 20_000 + "`` ` " * 20_000 + "<!-- " * 20_000 + "<script>"
    cleaned = clean_markdown(body)
    assert "<script" not in cleaned.text
    assert "<a b" not in cleaned.text


@pytest.mark.parametrize("name", sorted(HOSTILE_IDS))
def test_ids_stay_plain_words_for_the_table_of_contents(name: str) -> None:
    """Themes print a heading's id into the table of contents unescaped (`href="#{{ id }}"`)."""
    cleaned = clean_markdown(HOSTILE_IDS[name])
    md = markdown.Markdown(extensions=["toc", "attr_list", "md_in_html"])
    md.convert(cleaned.text)

    def ids(tokens: list[dict[str, object]]) -> list[str]:
        return [str(t["id"]) for t in tokens] + [i for t in tokens for i in ids(t["children"])]

    found = ids(md.toc_tokens)
    assert found and all(re.fullmatch(r"[\w.:-]+", value) for value in found), found
    assert cleaned.removed, "the unsafe id is counted as removed"


def test_counts_an_element_not_the_attributes_that_went_with_it() -> None:
    removed = clean_html('<iframe src="https://e.example/" title="t"></iframe>').removed
    assert removed.summary() == "1 <iframe> element"


def test_counts_attributes_of_self_closing_tags() -> None:
    cleaned = clean_markdown('<img src="a.png" onerror="alert(1)" />')
    assert cleaned.text == '<img src="a.png">'
    assert cleaned.removed.summary() == "1 onerror attribute"


def test_comments_holding_a_bracket_are_removed() -> None:
    """Only comments with neither `<` nor `>` inside (`<!-- more -->`) are kept."""
    assert clean_markdown("A <!-- a > b --> B <!-- a < b --> C").text == "A  B  C"


def test_a_stray_end_tag_of_a_dropped_element_keeps_the_text_after_it() -> None:
    assert clean_markdown("Text </textarea> more text").text == "Text  more text"


def test_end_tags_of_removed_elements_are_removed() -> None:
    assert clean_markdown("<form action=x>text</form>").text == "text"


def test_dropped_elements_are_found_in_any_case() -> None:
    assert clean_markdown("<SCRIPT>alert(1)</SCRIPT>after").text == "after"


def test_an_unclosed_dropped_element_takes_the_rest_of_the_text() -> None:
    """As a browser does: everything after an unclosed `<script>` is its content."""
    assert clean_markdown("before\n\n<script>alert(1)\n\nmore").text == "before\n\n"


def test_an_escaped_backtick_opens_no_code_span() -> None:
    body = "A literal \\` then <b>bold</b> and a `"
    cleaned = clean_markdown(body)
    assert cleaned.text == body and not cleaned.removed


def test_raw_html_tables_are_kept() -> None:
    body = '<table><tr><th scope="col">h</th></tr><tr><td align="right" colspan="2">x</td></tr></table>'
    cleaned = clean_markdown(body)
    assert cleaned.text == body and not cleaned.removed


@pytest.mark.parametrize(
    "source",
    [
        "a &lt; b, `x &lt; y`, `<b>` and &#60;i&#x3c;\n",
        "Intro.\n\n    indented &lt;div&gt; code\n",
        "- item\n\n        &lt;nested&gt; code\n",
    ],
)
def test_the_page_keeps_no_word_joiner_of_the_markdown_pass(source: str) -> None:
    """The joiners the Markdown pass writes after `<` (for titles made from text) are gone from
    the article's page, code blocks included: a copied code sample has no invisible character."""
    rendered = markdown.markdown(clean_markdown(source).text, extensions=["fenced_code"])
    assert "\u2060" in rendered or "&lt;" not in source
    assert "\u2060" not in clean_html(rendered).text


@pytest.mark.parametrize(
    "source",
    [
        "Intro.\n\n    if (a<b && c<=d) return;\n    &lt;p&gt; stays as written\n",
        "Math:\n\n$$\na<b, x<y\n$$\n\nand $i<n$ inline.\n",
        "- item\n\n        x<y; &#60;z\n",
    ],
)
def test_a_less_than_sign_in_code_and_math_shows_as_written(source: str) -> None:
    """Where Markdown shows text as written (an indented code block, arithmatex's math), a `<`
    that the Markdown pass had to write as `&lt;` read `&amp;lt;`: `if (a<b)` showed
    `if (a&lt;b)` on the page, and MathJax got `a&lt;b`. The page shows what plain MkDocs shows;
    a `&lt;` the article wrote there still shows as `&lt;`."""
    extensions = ["pymdownx.arithmatex", "pymdownx.superfences"]
    configs = {"pymdownx.arithmatex": {"generic": True}}
    rendered = markdown.markdown(clean_markdown(source).text, extensions=extensions, extension_configs=configs)
    assert clean_html(rendered).text == markdown.markdown(source, extensions=extensions, extension_configs=configs)


#: A tutorial's layout: a fence in a list item (which the Markdown pass cannot trust), then code
#: samples holding what the allowlist would remove as tags.
TUTORIAL = """\
1. Install it:

    ```sh
    pip install <package>
    ```

2. Use it:

```java
List<String> names = new ArrayList<>();
if (a<b) { names.add("<b>"); }
```

!!! note
    ```html
    <script src="app.js"></script>
    ```

~~~cpp
#include <vector>
~~~

Prose keeps its <b>bold</b> and loses its <script>alert(1)</script>.
"""


def _code_texts(page: str) -> list[str]:
    """The text of each `<code>` element of `page`, as a reader sees it."""
    return [
        html.unescape(re.sub(r"<[^>]*>", "", code)) for code in re.findall(r"<code[^>]*>(.*?)</code>", page, re.DOTALL)
    ]


@pytest.mark.parametrize(
    "extensions",
    [
        ["fenced_code"],
        ["fenced_code", "codehilite"],
        ["admonition", "pymdownx.superfences"],
        ["admonition", "pymdownx.highlight", "pymdownx.superfences"],
        ["admonition", "pymdownx.superfences", "pymdownx.highlight", "pymdownx.inlinehilite"],
    ],
)
def test_code_after_a_fence_the_markdown_pass_cannot_trust_shows_as_written(extensions: list[str]) -> None:
    """A fence in a list item (or an admonition, a tab) makes the Markdown pass clean the rest
    of the article as prose: `List<String>` lost `<String>` and `#include <vector>` its
    `<vector>` (tags the allowlist removes), and `a<b` showed `a&lt;b` where a highlighter split
    the escape into tokens. The article page's code now shows what plain MkDocs shows; the
    prose is still cleaned."""
    cleaned = clean_markdown(TUTORIAL)
    page = clean_html(markdown.markdown(cleaned.text, extensions=extensions)).text
    plain = markdown.markdown(TUTORIAL, extensions=extensions)
    assert _code_texts(page) == _code_texts(plain)
    assert any("#include <vector>" in code for code in _code_texts(page))
    assert "<b>bold</b>" in page and "<script" not in page and "alert" not in page
    assert cleaned.removed.summary() == "1 <script> element"


def test_html_pass_keeps_the_image_markup_of_optimize_images_and_refuses_a_script_srcset() -> None:
    """What `imagemarkup` writes survives the allowlist unchanged; a `srcset` naming a
    `javascript:` or `data:` URL (nh3 checks `src` and `href` only) is removed whole."""
    ours = (
        '<p><picture><source sizes="(max-width: 800px) 100vw, 800px" srcset="../images/a-480.webp 480w, '
        '../images/a-960.webp 960w" type="image/webp"><img alt="x" decoding="async" height="900" loading="lazy" '
        'src="../images/a.png" width="1600"></picture></p>'
    )
    assert clean_html(ours).text == ours
    for hostile in ("javascript:alert(1) 480w", "x.webp 480w, data:image/svg+xml,<svg/onload=alert(1)> 960w"):
        cleaned = clean_html(f'<picture><source srcset="{html.escape(hostile)}"><img src="a.png"></picture>').text
        assert "srcset" not in cleaned and "<picture>" in cleaned
    assert "srcset" not in clean_markdown('<picture><source srcset="javascript:alert(1) 1w"></picture>\n').text


def test_only_the_plugins_own_height_auto_style_stays_on_an_image() -> None:
    """`imagemarkup` writes `style="height:auto"` beside the sizes it adds (MkDocs' own theme
    squashed images without it); no other style survives on an image or anywhere but table cells."""
    cleaned = clean_html(
        '<p><img src="a.png" width="3" height="2" style="height:auto">'
        '<img src="b.png" style="height:9999px"><img src="c.png" style="position:fixed;height:auto">'
        '<span style="height:auto">x</span></p>'
    )
    assert '<img src="a.png" width="3" height="2" style="height:auto">' in cleaned.text
    assert cleaned.text.count("style=") == 1 and "9999" not in cleaned.text and "fixed" not in cleaned.text
    assert cleaned.removed
