"""Python's cyclic garbage collector paused around the plugin's bulk work on every article.

Reading the manifest, checking it against the disk, registering the pages with MkDocs and
recording their addresses allocate a few objects per article, all long-lived and free of
cycles; yet every 700 allocations start a collection, and the older generations' passes scan
everything the build holds (at 10,000 articles about 200 collections, a fifth of the plugin's
share of a build with nothing changed). Paused there, one collection follows at the end.
Not around the sync's network work: what a cold sync frees in cycles must be freed.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (left as it was if already paused)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
