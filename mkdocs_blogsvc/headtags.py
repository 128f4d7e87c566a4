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
    if output.startswith("</head>", end):  # the first one, copied once (slices and a join copy it twice)
        return output.replace("</head>", head + "</head>", 1)
    return output[:end] + head + output[end:]


def _has_canonical(output: str, head_end: int) -> bool:
    """Whether the page's head (up to `head_end`) has a canonical link. The expression runs
    only on a head that has the word: found as themes write it without copying the head (on
    every article page), in any other spelling on a lowered copy."""
    if output.find("canonical", 0, head_end) < 0:
        head = output[:head_end]
        if "canonical" not in head.lower():
            return False
    return _CANONICAL.search(output, 0, head_end) is not None


def absolute(site_url: str, url: str) -> str:
    """`urljoin(site_url, url)` for MkDocs' URLs (relative, no `..`, site_url ending in `/`),
    without urljoin's parsing on every article page."""
    if site_url.endswith("/") and not url.startswith((".", "/")) and ":" not in url:
        return site_url + url
    return urljoin(site_url, url)
