"""A plain-text summary of an article that has no description: its first paragraphs of prose.

The service's `description` is optional. Without one, Material's meta description falls back to
the site's own (the same on every article), `og:description` is missing, and mkdocs-rss-plugin
takes the page's first Markdown (its heading and cover) as the feed entry. So an article's
description is the service's, else this summary: the text of its first prose paragraphs (not
headings, code, tables, lists, quotes, images or HTML blocks) with the Markdown and HTML taken
out, cut at a word boundary to `LIMIT` characters, as static site generators do with excerpts.

Each paragraph goes through Python-Markdown alone (its inline syntax: links, emphasis, code
spans, escapes, entities), then through nh3 with no tag allowed: only text is left, never a
tag, whatever the article holds. Only a page being rendered needs it, so nothing is imported
until then.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

#: Length of a summary in characters (what search engines show of a description, and
#: mkdocs-rss-plugin's `abstract_chars_count`).
LIMIT = 160
#: Markdown read for a summary: enough for its paragraphs, however long the article.
_READ = 20 * LIMIT

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
#: First lines of blocks that are not prose: indented code, headings, quotes, lists, tables,
#: HTML, images alone, admonitions and details, definitions (links, footnotes, abbreviations),
#: attribute lists, rules, setext underlines, Material's excerpt marker.
_NOT_PROSE = re.compile(
    r"( {4}|\t| {0,3}(#|>|[-*+](\s|$)|\d{1,9}[.)](\s|$)|\||<|!\[|!!!|\?{3}|\[\^?[^\]]*\]:|\*\[|\{:"
    r"|([-*_=]\s*){3,}$))"
)
_SETEXT = re.compile(r" {0,3}(=+|-+)\s*$")
#: Inline syntax of extensions that plain Markdown would leave as text: footnote references
#: (`[^1]`) and attribute lists (`{ .class }`, `{: #id target=_blank }`).
_EXTENSION_MARKS = re.compile(r"\[\^[^\]\s]+\]|\{:?(?:\s*(?:[#.][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]*)))+\s*\}")
_lock = threading.Lock()


@lru_cache(maxsize=64)  # a page's front matter and its head tags ask for the same article's
def summarise(markdown_text: str, limit: int = LIMIT) -> str | None:
    """The first prose paragraphs of `markdown_text` as one line of plain text, at most `limit`
    characters (cut at a word, ending with "…"); None when the article has no prose."""
    words: list[str] = []
    length = 0
    for paragraph in _prose(markdown_text[:_READ]):  # one at a time: Markdown costs by the length
        for word in _text(paragraph).split():
            if length + len(word) > limit - 1:
                return " ".join(words).rstrip(",;:.!?-–—") + "…" if words else word[: limit - 1] + "…"
            words.append(word)
            length += len(word) + 1
    return " ".join(words) or None


def _prose(markdown_text: str) -> Iterator[str]:
    """The paragraphs of prose, in order (a block whose first line looks like anything else is
    skipped, and so is everything inside fences)."""
    fence: str | None = None
    block: list[str] = []
    for line in [*markdown_text.splitlines(), ""]:
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening is not None or not line.strip():
            if block and not _NOT_PROSE.match(block[0]) and not _SETEXT.match(block[-1]):
                yield "\n".join(block)
            block = []
            fence = opening.group(1) if opening is not None else None
            continue
        block.append(line)


def _text(paragraph: str) -> str:
    """A paragraph's text: Markdown's inline syntax rendered, then every tag removed."""
    import nh3

    with _lock:  # a Markdown instance is not thread-safe
        rendered = _markdown().reset().convert(_EXTENSION_MARKS.sub("", paragraph))
    return html.unescape(nh3.clean(rendered, tags=set()))


@cache
def _markdown() -> Any:
    import markdown

    return markdown.Markdown(output_format="html")
