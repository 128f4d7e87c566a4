"""`mkdocs-blogsvc export`: the rendered pages and images copied into a folder as plain files,
for committing them or for generators that cannot run MkDocs plugins (Zensical).

The pages come from `pages.render_pages`, the same path a build takes. `DEST/.blogsvc-export.json`
records what the export wrote, so a later export removes its own files that are no longer part
of the site and never touches anything else in DEST.
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs_blogsvc.fileio import inside, write_if_changed
from mkdocs_blogsvc.pages import RenderedSite

EXPORT_RECORD = ".blogsvc-export.json"


def export_site(site: RenderedSite, dest: Path) -> tuple[int, int]:
    """Copy the rendered pages and images into `dest` (docs-relative layout) as plain files.

    Returns (files written, files removed). Raises `OSError` when `dest` cannot be written.
    """
    record = dest / EXPORT_RECORD
    try:
        previous = {p for p in json.loads(record.read_text(encoding="utf-8")) if isinstance(p, str)}
    except (OSError, ValueError, TypeError):
        previous = set()
    written, current = 0, []
    for item in site.files():
        target = inside(dest, item.src_uri)
        if target is None:
            continue
        written += write_if_changed(target, item.abs_path.read_bytes())
        current.append(item.src_uri)
    removed = 0
    for relative in sorted(previous - set(current)):
        path = inside(dest, relative)
        if path is not None and path.is_file():
            path.unlink()
            removed += 1
    write_if_changed(record, (json.dumps(sorted(current), indent=1) + "\n").encode("utf-8"))
    return written, removed
