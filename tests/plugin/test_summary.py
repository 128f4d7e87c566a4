"""The summary that describes an article without a description (`summary.summarise`)."""

from __future__ import annotations

import random

import pytest

from mkdocs_blogsvc.summary import LIMIT, summarise


@pytest.mark.parametrize(
    ("markdown_text", "expected"),
    [
        (
            "# Title\n\n![cover](x.png)\n\nFirst **bold** para, [a link](https://x.test/) and `code`.\n\nSecond.",
            "First bold para, a link and code. Second.",
        ),
        ("```python\nprint('no')\n\nstill code\n```\n\nAfter the code &amp; more.", "After the code & more."),
        ("~~~~\n```\nnot closed by three backticks\n~~~~\n\nProse.", "Prose."),
        ("Setext\n======\n\nOther\n---\n\n- a list\n- of items\n\n1. numbered\n\n> a quote\n\nText.", "Text."),
        (
            "    indented code\n\n| a | b |\n|---|---|\n\n!!! note\n    admonition\n\n[ref]: https://x.test/\n\nText.",
            "Text.",
        ),
        ("<div>an HTML block</div>\n\n<!-- more -->\n\n***\n\nText.", "Text."),
        (
            "Line one\nline two.\n\n*Emphasis* first, \\*escaped\\* and &copy;.",
            "Line one line two. Emphasis first, *escaped* and ©.",
        ),
        (
            "A note[^1] and a [link](https://x.test/){ target=_blank } with {: .big #top } marks, {kept}.\n\n[^1]: The note.",
            "A note and a link with marks, {kept}.",
        ),
    ],
)
def test_the_first_prose_paragraphs_as_plain_text(markdown_text: str, expected: str) -> None:
    assert summarise(markdown_text) == expected


@pytest.mark.parametrize(
    ("markdown_text", "expected"),
    [
        ('=== "Python"\n\n    ```py\n    print(1)\n    ```\n\n===+ "Shell"\n    ls\n\nText.', "Text."),
        ("<!-- a draft\n\nof two paragraphs -->\n\nText.", "Text."),
        ("$$\nE = mc^2\n$$\n\n\\begin{align}\nx\n\\end{align}\n\nText.", "Text."),
        ("Term\n:   Its definition.\n\nOther term\n\n:   A loose definition.\n\nText.", "Text."),
        ("Name | Value\n---- | -----\na | 1\n\nText.", "Text."),
        ('/// details | Title\nInside.\n///\n\n--8<-- "part.md"\n\nText.', "Text."),
        (
            "Ship it :rocket: now :material-check:. At 10:30:00, ==marked==, ~~gone~~, ^^new^^ and ++ctrl+c++.",
            "Ship it now. At 10:30:00, marked, gone, new and ctrl+c.",
        ),
    ],
)
def test_material_syntax_is_no_prose(markdown_text: str, expected: str) -> None:
    """Review finding: content tabs, multi-paragraph comments, math, definition lists, tables
    without a leading pipe, pymdownx blocks and snippets were taken as prose; reference links,
    emoji shortcodes and pymdownx's inline marks were shown as their Markdown."""
    assert summarise(markdown_text) == expected


def test_reference_links_show_their_text_wherever_their_definitions_are() -> None:
    text = (
        "See [the docs][docs], [the API][] or [nothing].\n\n"
        + "More. " * 1000
        + "\n\n[docs]: https://x.test/d\n[The API]: https://x.test/a"
    )
    assert summarise(text, limit=44) == "See the docs, the API or [nothing]. More…"


def test_no_tag_and_no_script_text_survives() -> None:
    """Raw HTML is gone, a script's text with it; a code span's text stays as text (every
    consumer escapes it: the front matter's `neutral`, the head template's autoescape)."""
    text = summarise('Hi <script>alert(1)</script><img src=x onerror="alert(2)"> <b>there</b> `<i>code</i>`.')
    assert text == "Hi there <i>code</i>."


def test_cut_at_a_word_within_the_limit() -> None:
    text = summarise("word, " * 100)
    assert text is not None and len(text) <= LIMIT and text.endswith("word…") and "  " not in text
    assert summarise("x" * 500) == "x" * (LIMIT - 1) + "…"
    assert summarise("Short.", limit=20) == "Short."


@pytest.mark.parametrize("markdown_text", ["", "# Only a heading", "![only](an-image.png)", "```\ncode\n```"])
def test_nothing_to_summarise(markdown_text: str) -> None:
    assert summarise(markdown_text) is None


# --- found by mutation testing -------------------------------------------------------------------


def test_the_limit_counts_the_ellipsis_and_a_text_that_fits_is_whole() -> None:
    assert summarise("abcd efghi jk", limit=10) == "abcd…"
    assert summarise("abcd efgh", limit=10) == "abcd efgh"
    assert summarise("abcd efghi", limit=10) == "abcd efghi", "exactly the limit: whole, no ellipsis"
    assert summarise("abcd efghi j", limit=10) == "abcd…"
    assert summarise("abcdefghij k", limit=10) == "abcdefghi…"
    assert summarise("abcdefghijkl", limit=10) == "abcdefghi…"


@pytest.mark.parametrize(
    ("markdown_text", "expected"),
    [
        ("```\nx = '```'\ncode line\n```\n\nText.", "Text."),  # backticks inside a fence do not close it
        ("  ```\n  code\n\n  more code\n  ```\n\nText.", "Text."),  # an indented fence is a fence
        ("Is a == b and c ++ d? {==kept==}", "Is a == b and c ++ d? {==kept==}"),  # operators, not marks
    ],
)
def test_fences_and_operators(markdown_text: str, expected: str) -> None:
    assert summarise(markdown_text) == expected


def test_one_articles_references_do_not_leak_into_the_next() -> None:
    assert summarise("See [x].\n\n[x]: https://x.test/") == "See x."
    assert summarise("Plain [x] here.") == "Plain [x] here."


def test_a_summary_is_never_longer_than_the_limit_and_whole_when_it_fits() -> None:
    """Over many texts and limits: at most `limit` characters, the whole text when it fits,
    else a start of it (cut at a word, or in a word longer than the limit) and "…"."""
    chance = random.Random(1)
    for _ in range(2000):
        text = " ".join(
            "".join(chance.choice("abcdefgh") for _ in range(chance.randint(1, 12)))
            for _ in range(chance.randint(1, 8))
        )
        limit = chance.randint(2, 40)
        summary = summarise(text, limit=limit)
        assert summary is not None and len(summary) <= limit, (text, limit, summary)
        if len(text) <= limit:
            assert summary == text
        else:
            assert summary.endswith("…") and text.startswith(summary[:-1]), (text, limit, summary)
