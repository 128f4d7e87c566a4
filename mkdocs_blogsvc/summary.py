"""A plain-text summary of an article that has no description: its first paragraphs of prose.

The service's `description` is optional. Without one, Material's meta description falls back to
the site's own (the same on every article), `og:description` is missing, and mkdocs-rss-plugin
takes the page's first Markdown (its heading and cover) as the feed entry. So an article's
description is the service's, else this summary: the text of its first prose paragraphs (not
headings, code, tables, lists, quotes, images, HTML blocks and comments, nor Material's
admonitions, tabs, definition lists, math, snippets and blocks) with the Markdown and HTML taken
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
#: attribute lists, rules, setext underlines, Material's excerpt marker; and of pymdownx's
#: content tabs (`=== "Tab"`), blocks (`/// note`), snippets (`--8<--`) and math (`$$`, `\begin{`).
_NOT_PROSE = re.compile(
    r"( {4}|\t| {0,3}(#|>|[-*+](\s|$)|\d{1,9}[.)](\s|$)|\||<|!\[|!!!|\?{3}|\[\^?[^\]]*\]:|\*\[|\{:"
    r"|([-*_=]\s*){3,}$|={3}[+!]?\s|/{3}|-+8<-+|\$\$|\\begin\{))"
)
_SETEXT = re.compile(r" {0,3}(=+|-+)\s*$")
#: Lines that make their block something else than a paragraph: a definition (`:   text`, the
#: line before it is its term) and a table's delimiter row without a leading pipe (`--|--`).
_DEFINITION = re.compile(r" {0,3}:[ \t]")
_NOT_PARAGRAPH = re.compile(rf"^({_DEFINITION.pattern}|\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$)", re.MULTILINE)
#: The definitions of reference links, with their labels (`[text][label]` shows its text only with them).
_REFERENCES = re.compile(r"^ {0,3}\[([^\]^][^\]]*)\]:.*$", re.MULTILINE)
#: Inline syntax of extensions that plain Markdown would leave as text: footnote references
#: (`[^1]`), attribute lists (`{ .class }`, `{: #id target=_blank }`) and emoji shortcodes
#: (`:smile:`, `:material-check:`), taken out; `==mark==`, `~~del~~`, `^^ins^^` and `++keys++`
#: keep their text.
_EXTENSION_MARKS = re.compile(
    r"\[\^[^\]\s]+\]|\{:?(?:\s*(?:[#.][\w-]+|[\w-]+=(?:\"[^\"]*\"|'[^']*'|[^\s}]*)))+\s*\}"
    r"|\s*(?<![\w:]):[a-z0-9+_-]+:(?![\w:])"
)
_EXTENSION_PAIRS = re.compile(r"(?<!\{)(==|~~|\^\^|\+\+)(?=\S)(.+?)(?<=\S)\1")
_lock = threading.Lock()


@lru_cache(maxsize=64)  # a page's front matter and its head tags ask for the same article's
def summarise(markdown_text: str, limit: int = LIMIT) -> str | None:
    """The first prose paragraphs of `markdown_text` as one line of plain text, at most `limit`
    characters (cut at a word, ending with "…"); None when the article has no prose."""
    words: list[str] = []
    length = 0
    read = markdown_text[:_READ]
    # the definitions of the labels that what is read uses (wherever the article has them)
    used = read.lower()
    references = "\n".join(
        {
            match.group(1).lower(): match.group(0)
            for match in _REFERENCES.finditer(markdown_text)
            if f"[{match.group(1).lower()}]" in used
        }.values()
    )
    for paragraph in _prose(read):  # one at a time: Markdown costs by the length
        for word in _text(paragraph, references).split():
            if length + len(word) > limit:  # the text goes on past the limit: cut it, with "…"
                last = words.pop() if length > limit else None  # no room for "…" after it
                if not words:
                    return (last or word)[: limit - 1] + "…"
                return " ".join(words).rstrip(",;:.!?-–—") + "…"
            words.append(word)
            length += len(word) + 1
    return " ".join(words) or None


def _prose(markdown_text: str) -> Iterator[str]:
    """The paragraphs of prose, in order (a block whose first line looks like anything else is
    skipped, and so is everything inside fences and HTML comments, and a definition's term)."""
    blocks = list(_blocks(markdown_text))
    for block, after in zip(blocks, [*blocks[1:], ""], strict=False):  # no block: one ""
        if not (
            _NOT_PROSE.match(block)
            or _NOT_PARAGRAPH.search(block)
            or _SETEXT.match(block.rsplit("\n", 1)[-1])
            or _DEFINITION.match(after)
        ):
            yield block


def _blocks(markdown_text: str) -> Iterator[str]:
    """The blocks of lines between blank lines, outside fences and HTML comments."""
    closing: str | None = None  # what ends the fence or comment the line is in
    block: list[str] = []
    for line in [*markdown_text.splitlines(), ""]:
        if closing is not None:
            if line.strip().startswith(closing) if closing != "-->" else closing in line:
                closing = None
            continue
        opening = _FENCE.match(line)
        comment = line.lstrip().startswith("<!--") and "-->" not in line
        if opening is not None or comment or not line.strip():
            if block:
                yield "\n".join(block)
            block = []
            closing = opening.group(1) if opening is not None else "-->" if comment else None
            continue
        block.append(line)


def _text(paragraph: str, references: str) -> str:
    """A paragraph's text: Markdown's inline syntax rendered (with the article's `references`),
    then every tag removed."""
    import nh3

    paragraph = _EXTENSION_PAIRS.sub(r"\2", _EXTENSION_MARKS.sub("", paragraph))
    with _lock:  # a Markdown instance is not thread-safe
        rendered = _markdown().reset().convert(f"{paragraph}\n\n{references}")
    return html.unescape(nh3.clean(rendered, tags=set()))


@cache
def _markdown() -> Any:
    import markdown

    return markdown.Markdown(output_format="html")
