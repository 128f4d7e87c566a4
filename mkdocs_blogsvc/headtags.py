"""Where an article page's head tags go: before the theme's `</head>`, with a canonical link
when the theme wrote none. Plain string work on the page MkDocs built, no MkDocs lifecycle."""

from __future__ import annotations

import html
import re
from urllib.parse import urljoin

_HEAD_END = re.compile(r"</head\s*>", re.IGNORECASE)
_CANONICAL = re.compile(r"<link\b[^>]*\brel\s*=\s*[\"']?canonical\b", re.IGNORECASE)


def insert(output: str, head: str, canonical_url: str | None) -> str | None:
    """`output` with `head` inserted before its `</head>`, and a canonical link to
    `canonical_url` unless the page has one; None when the page has no `</head>`."""
    end = output.find("</head>")  # as themes write it; any spelling through the expression
    if end < 0:
        match = _HEAD_END.search(output)
        if match is None:
            return None
        end = match.start()
    if canonical_url and not _has_canonical(output, end):  # the theme's, or ours
        head += f'<link rel="canonical" href="{html.escape(canonical_url)}">\n'
    return output[:end] + head + output[end:]


def _has_canonical(output: str, head_end: int) -> bool:
    """Whether the page's head (up to `head_end`) has a canonical link; the expression runs only
    on a head that has the word."""
    head = output[:head_end]
    return "canonical" in head.lower() and _CANONICAL.search(head) is not None


def absolute(site_url: str, url: str) -> str:
    """`urljoin(site_url, url)` for MkDocs' URLs (relative, no `..`, site_url ending in `/`),
    without urljoin's parsing on every article page."""
    if site_url.endswith("/") and not url.startswith((".", "/")) and ":" not in url:
        return site_url + url
    return urljoin(site_url, url)
