"""What the client and the reference service share, defined once: the service's default
address (slugs: `slugs`). A small module of its own so that the service (`server/`) can
import it without pulling in the plugin."""

from __future__ import annotations

#: Where the reference service listens by default (`mkdocs-blogsvc server run`), and the
#: plugin's default `base_url`.
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
#: Where a site's `mkdocs serve` listens beside it (the demo's, a site `new` writes for it):
#: MkDocs' default, 127.0.0.1:8000, is the service's.
DEV_ADDR_BESIDE_SERVICE = "127.0.0.1:8001"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 article`, `2 articles`: a count as people write it, in every line that prints one."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
