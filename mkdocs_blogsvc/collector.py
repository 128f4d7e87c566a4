"""Python's cyclic garbage collector paused around the plugin's bulk work on every article.

Reading the manifest, checking it against the disk, registering the pages with MkDocs and
recording their addresses allocate a few objects per article, all long-lived and free of
cycles; yet every 700 allocations start a collection, and the older generations' passes scan
everything the build holds (at 10,000 articles about 200 collections, a fifth of the plugin's
share of a build with nothing changed). Paused there, and what the block made is then set
aside (`gc.freeze`): the passes during the rest of the build (MkDocs building every page) no
longer scan the plugin's entries and pages again and again (at 10,000 articles, another fifth
of a no-change build's share). `release` gives them back when the work on the cache ends
(`Cache.release`): a `mkdocs serve` process builds again and again, and garbage set aside
would never be collected. Not around the sync's network work: what a cold sync frees in
cycles must be freed.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (left as it was if already paused); what it
    made is set aside until `release`."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def release() -> None:
    """What `paused` set aside is collected again when it becomes garbage."""
    gc.unfreeze()
