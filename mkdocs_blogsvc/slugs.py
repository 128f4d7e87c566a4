"""Slugs, in one place: how a title becomes a slug (`slugify`, the reference service's and the
plugin's), the one length limit, and which slug each article page of the site uses
(`assign_slugs`: safe as a file and URL name, unique, deterministic). No plugin imports at
module level: the service imports `slugify` too."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs_blogsvc.models import Listed

#: The one limit of a slug: the longest the reference service makes or accepts, and the longest
#: the plugin uses as a page's file name and URL (a longer one is replaced: `safe_slug`).
MAX_SLUG_LENGTH = 100


#: Latin letters that Unicode does not decompose into a base letter and an accent: spelled out
#: as German, Nordic and Polish writers do, rather than dropped (`Straße` is `strasse`).
_SPELLED_OUT = str.maketrans(
    {
        "ß": "ss",
        "ẞ": "SS",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ø": "o",
        "Ø": "O",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "þ": "th",
        "Þ": "TH",
        "ł": "l",
        "Ł": "L",
        "ı": "i",
    }
)


def slugify(text: str, max_length: int = MAX_SLUG_LENGTH) -> str:
    """Lowercase ASCII `a-z0-9` words joined by `-` (accents folded, `ß`, `æ`, `ø`... spelled
    out, the rest dropped), cut at a word boundary to at most `max_length` characters;
    "article" when nothing is left."""
    spelled = text.translate(_SPELLED_OUT)
    folded = unicodedata.normalize("NFKD", spelled).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    if len(slug) > max_length:
        head = slug[:max_length]
        slug = head.rsplit("-", 1)[0] if "-" in head else head
    return slug or "article"


#: Used with `fullmatch` only: `match` with `$` would accept a trailing newline ("abc\n").
_VALID_SLUG = re.compile(rf"[a-z0-9-]{{1,{MAX_SLUG_LENGTH}}}")
_ID_CHARS = re.compile(r"[^a-z0-9]")


def is_safe_slug(slug: str) -> bool:
    return bool(_VALID_SLUG.fullmatch(slug)) and slug.strip("-") != ""


def safe_slug(article: Listed) -> str:
    """The article's slug if it is safe as a file and URL name, else one made from title and id."""
    if is_safe_slug(article.slug):
        return article.slug
    suffix = _ID_CHARS.sub("", article.id.lower())[-8:] or _short_hash(article.id)
    stem = slugify(article.title, max_length=MAX_SLUG_LENGTH - len(suffix) - 1)
    return f"{stem}-{suffix}"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def assign_slugs(articles: Iterable[Listed]) -> dict[str, str]:
    """Article id -> unique safe slug. Deterministic: the oldest article keeps a shared slug,
    later ones get `-2`, `-3`... (ordered by publication time, then id), never one that
    another article has of its own (`dup-2` on the service keeps `dup-2`)."""
    from mkdocs_blogsvc.logs import log  # not for the service, which imports slugify only

    ordered = sorted(articles, key=lambda a: (a.published_at, a.id))
    wanted = {article.id: safe_slug(article) for article in ordered}
    held = set(wanted.values())
    taken: set[str] = set()
    slugs: dict[str, str] = {}
    for article in ordered:
        slug = wanted[article.id]
        if slug != article.slug:
            log.warning(
                "article %r has an unusable slug %r; using %r instead (change the slug on the service to choose)",
                article.id,
                article.slug[:120],
                slug,
            )
        if slug in taken:
            base, number = slug[: MAX_SLUG_LENGTH - 4].rstrip("-"), 2
            while f"{base}-{number}" in taken or f"{base}-{number}" in held:
                number += 1
            log.warning(
                "articles share the slug %r; article %s uses %r (give one of them another slug on the service)",
                slug,
                article.id,
                f"{base}-{number}",
            )
            slug = f"{base}-{number}"
        taken.add(slug)
        slugs[article.id] = slug
    return slugs
