"""`mkdocs-blogsvc export`: the rendered pages and images copied into a folder as plain files,
for committing them or for generators that cannot run MkDocs plugins (Zensical), and
`export --watch`, which keeps doing so as the blog changes.

The pages come from `pages.render_pages`, the same path a build takes (with the exported
variant of each page: `render.ExportHead`). `DEST/.blogsvc-export.json` (`exportrecord`)
records what the export owns (one list per blog, by blog_dir), so a later export removes its
own files that are no longer part of the site (those of a blog_dir that mkdocs.yml no longer
has included) and never touches anything else in DEST, another configured blog's files
included: a file already at the path of an exported one that the record does not name (the
site's own `blog/index.md`, a hand-written post) is left as it is, and that exported file left
out.

A kill at any moment leaves a usable folder: every file is written atomically; images before
the pages that show them; stale files are removed only after every new file is in place; and
the record is written twice, first listing the old and the new files together (so files
written by an export killed before its end are still known to the next one, which removes them
if their article is gone), then listing only the new ones.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs_blogsvc import watch
from mkdocs_blogsvc.errors import BlogServiceError, ConfigurationError, CredentialsError
from mkdocs_blogsvc.exportrecord import drop_from_record, load_record, read_record, write_record
from mkdocs_blogsvc.fileio import inside, temp_pattern, write_if_changed
from mkdocs_blogsvc.pages import RenderedSite
from mkdocs_blogsvc.shared import counted


@dataclass(frozen=True)
class Exported:
    """What one export did to DEST."""

    written: int
    removed: int
    #: docs-relative paths of exported files left out: DEST had a file there that is not the
    #: export's own (its record does not name it), left as it is.
    left_out: tuple[str, ...] = ()
    #: The article pages exported (those left out not counted; their images are written).
    pages: int = 0
    #: blog_dir -> files removed that an earlier export wrote for a blog_dir no instance has now.
    retired: dict[str, int] = field(default_factory=dict)


def export_site(site: RenderedSite, dest: Path, instance: str, *, configured: Collection[str] = ()) -> Exported:
    """Copy the rendered pages and images of the blog whose blog_dir is `instance` into `dest`
    (docs-relative layout) as plain files; remove what earlier exports wrote for a blog_dir that
    is not among `configured` any more (a renamed blog_dir: its copy would be built twice).
    Raises `OSError` when `dest` cannot be written."""
    dest.mkdir(parents=True, exist_ok=True)
    previous = read_record(dest, instance)
    targets, left_out = [], []
    for item in site.files():
        target = inside(dest, item.src_uri)
        if target is None:
            continue
        if item.src_uri not in previous and (target.exists() or target.is_symlink()):
            left_out.append(item.src_uri)  # not ours: never overwritten, never recorded, never removed
            continue
        targets.append((item, target))
    current = {item.src_uri for item, _ in targets}
    write_record(dest, instance, previous | current)  # intent: a kill from here on leaves no unknown file
    written = 0
    for item, target in targets:
        written += write_if_changed(target, item.read())
    removed = _remove(dest, previous - current)
    for _, target in targets:  # temp files of our own files, left by a process killed while writing
        for temp in target.parent.glob(temp_pattern(target)):
            temp.unlink(missing_ok=True)
    write_record(dest, instance, current)
    retired = {}
    if configured:
        for gone, paths in load_record(dest).items():
            if gone not in configured and gone != "":
                retired[gone] = _remove(dest, set(paths) - current)
                drop_from_record(dest, gone)
    pages = len(site.pages) - len(set(left_out).intersection(page.src_uri for page in site.pages))
    return Exported(written, removed, tuple(left_out), pages, retired)


def _remove(dest: Path, paths: set[str]) -> int:
    removed = 0
    for relative in sorted(paths):
        path = inside(dest, relative)
        if path is not None and path.is_file():
            path.unlink()
            removed += 1
    return removed


@dataclass(frozen=True)
class ExportRound:
    """One round of `export --watch`: what the sync found and what the export changed."""

    summary: str  # the sync's one-line summary ("1 new, 0 updated, ...")
    changed: bool  # the sync found changes (the export then ran)
    written: int = 0
    removed: int = 0


def keep_exporting(
    export_round: Callable[[], ExportRound],
    interval: float,
    stop: threading.Event,
    *,
    say: Callable[[str], None],
    warn: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run `export_round` every `interval` seconds until `stop` is set (Ctrl-C, SIGTERM).

    The same background sync as under `mkdocs serve`: one sync request per round, files written
    only when the blog changed. A failure that may pass (the service down, the cache busy) is
    warned about once per distinct message (`watch.warning_key`) and tried again at the next round; one that cannot
    (credentials to renew, a setting, a template) ends the watch by propagating.
    """
    last_error: str | None = None
    while not stop.is_set():
        started = clock()
        try:
            result = export_round()
        except (CredentialsError, ConfigurationError):
            raise
        except BlogServiceError as exc:
            if watch.warning_key(str(exc)) != last_error:  # "retry after N seconds" counting down is one failure
                warn(f"the sync failed ({exc}); the exported files stay as they are; trying again every {interval:g} s")
                last_error = watch.warning_key(str(exc))
        else:
            if last_error is not None:
                say("the sync works again")
                last_error = None
            if result.changed:
                say(f"{time.strftime('%H:%M:%S')} {result.summary}: "
                    f"{counted(result.written, 'file')} written, {result.removed} removed")
        stop.wait(max(0.0, interval - (clock() - started)))
