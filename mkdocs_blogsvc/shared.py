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


def slugify(text: str, max_length: int = MAX_SLUG_LENGTH) -> str:
    """Lowercase ASCII `a-z0-9` words joined by `-` (accents folded, the rest dropped), cut at
    a word boundary to at most `max_length` characters; "article" when nothing is left."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", folded).strip("-")
    if len(slug) > max_length:
        head = slug[:max_length]
        slug = head.rsplit("-", 1)[0] if "-" in head else head
    return slug or "article"
