"""What the client and the reference service share, defined once: the service's default
address and how a title becomes a slug. A small module of its own so that the service
(`server/`) can import it without pulling in the plugin."""

from __future__ import annotations

import re
import unicodedata

#: Where the reference service listens by default (`mkdocs-blogsvc server run`), and the
#: plugin's default `base_url`.
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
#: Longest slug `slugify` makes unless told otherwise (the service's slugs for new articles).
MAX_SLUG_LENGTH = 80


#: Latin letters that Unicode does not decompose into a base letter and an accent: spelled out
#: as German, Nordic and Polish writers do, rather than dropped (`Straße` is `strasse`).
_SPELLED_OUT = str.maketrans({
    "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
    "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH", "ł": "l", "Ł": "L", "ı": "i",
})


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 article`, `2 articles`: a count as people write it, in every line that prints one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


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
