"""`mkdocs-blogsvc export`: the rendered pages and images copied into a folder as plain files,
for committing them or for generators that cannot run MkDocs plugins (Zensical), and
`export --watch`, which keeps doing so as the blog changes.

The pages come from `pages.render_pages`, the same path a build takes (with the exported
variant of each page: `theme_override.ExportHead`). `DEST/.blogsvc-export.json` (`exportrecord`)
records what the export owns (one list per blog, by blog_dir), so a later export removes its
own files that are no longer part of the site (those of a blog_dir that mkdocs.yml no longer
has included) and never touches anything else in DEST, another configured blog's files
included: a file already at the path of an exported one that the record does not name (the
site's own `blog/index.md`, a hand-written post) is left as it is, and that exported file left
out.

Redirects (`redirect_files`): export computes each article's address from mkdocs.yml
(`redirects.PostUrls`), keeps the addresses each article had in the cache's manifest, the plugin's
own record (`redirects.record`), and writes the plugin's redirect page for every earlier address
of an article that still exists into DEST as a static file (`blog/old-slug/index.html`), which
Zensical and MkDocs copy into the site as it is. They are files of the export like its pages:
recorded, never written over a file the export did not write, removed with their article.

A kill at any moment leaves a usable folder: every file is written atomically; images before
the pages that show them; stale files are removed only after every new file is in place; and
the record is written twice, first listing the old and the new files together (so files
written by an export killed before its end are still known to the next one, which removes them
if their article is gone), then listing only the new ones.
"""

from __future__ import annotations

import posixpath
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs_blogsvc import redirects, watch
from mkdocs_blogsvc.cache import Cache, CacheContents
from mkdocs_blogsvc.errors import (
    BlogServiceError,
    CacheUnwritable,
    ConfigurationError,
    CredentialsError,
)
from mkdocs_blogsvc.exportrecord import drop_from_record, load_record, read_record, write_record
from mkdocs_blogsvc.fileio import inside, temp_pattern, write_if_changed
from mkdocs_blogsvc.manifest import Address
from mkdocs_blogsvc.pages import RenderedSite, SiteFile
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
    #: Redirect pages in DEST after the export (written or unchanged).
    redirects: int = 0
    #: docs-relative paths of redirect pages left out: DEST has a file there that is not the
    #: export's own, or a page that builds at that address (a page of the site wins).
    occupied: tuple[str, ...] = ()


def export_site(
    site: RenderedSite,
    dest: Path,
    instance: str,
    *,
    configured: Collection[str] = (),
    redirect_pages: Sequence[SiteFile] = (),
) -> Exported:
    """Copy the rendered pages and images of the blog whose blog_dir is `instance` into `dest`
    (docs-relative layout) as plain files, and its `redirect_pages` (`redirect_files`); remove
    what earlier exports wrote for a blog_dir that is not among `configured` any more (a renamed
    blog_dir: its copy would be built twice). Raises `OSError` when `dest` cannot be written."""
    dest.mkdir(parents=True, exist_ok=True)
    previous = read_record(dest, instance)
    targets, left_out = [], []
    redirect_paths = {item.src_uri for item in redirect_pages}
    for item in [*site.files(), *redirect_pages]:
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
    occupied = tuple(path for path in left_out if path in redirect_paths)
    return Exported(
        written,
        removed,
        tuple(path for path in left_out if path not in redirect_paths),
        pages,
        retired,
        len(redirect_paths) - len(occupied),
        occupied,
    )


def redirect_files(
    cache: Cache,
    contents: CacheContents,
    site: RenderedSite,
    urls: redirects.PostUrls,
    dest: Path,
    *,
    site_url: str | None,
    language: str | None,
    enabled: bool = True,
) -> tuple[list[SiteFile], list[str]]:
    """The redirect pages of an export, and the old addresses where a page of `dest` builds.

    Records where each exported article's page is now (computed by `urls`, as the generator
    places it) in the manifest, as the plugin's build records the address it got, and saves the
    manifest when that changed (the caller holds the cache's lock). With `enabled` (the
    `redirects` setting), every earlier address of an article that still exists gets the
    plugin's redirect page (`redirects.page`), except where a Markdown page of `dest` builds:
    a page of the site wins over an old address. Raises `CacheUnwritable`."""
    current: dict[str, Address] = {}
    for page in site.pages:
        if page.article_id is None:
            continue
        slug = posixpath.splitext(posixpath.basename(page.src_uri))[0]
        address = urls.address(page.src_uri, slug, contents.articles[page.article_id].published_at)
        if address is not None:
            current[page.article_id] = address
    manifest = contents.manifest
    histories = redirects.record(manifest, current)
    if manifest.unsaved:
        try:
            cache.save(manifest)
        except OSError as exc:
            raise CacheUnwritable(cache.root, exc) from None
    if not enabled:
        return [], []
    files, occupied = [], []
    for redirect in redirects.plan(histories, current):
        if _builds_at(dest, redirect.source.path):
            occupied.append(redirect.source.path)
            continue
        html = redirects.page(
            redirect, title=contents.articles[redirect.article_id].title, site_url=site_url, language=language
        )
        files.append(SiteFile(redirect.source.path, "", redirect.article_id, html.encode("utf-8")))
    return files, occupied


def _builds_at(dest: Path, path: str) -> bool:
    """Whether a Markdown page of `dest` is built at the site path `path` (MkDocs' and Zensical's
    rule: `a/b.md`, `a/b/index.md` or `a/b/README.md` -> `a/b/index.html`; `a/b.md` -> `a/b.html`)."""
    folder, name = posixpath.split(path)
    if name == "index.html":
        candidates = (
            [f"{folder}.md", f"{folder}/index.md", f"{folder}/README.md"] if folder else ["index.md", "README.md"]
        )
    else:
        candidates = [f"{posixpath.splitext(path)[0]}.md"]
    return any((found := inside(dest, candidate)) is not None and found.is_file() for candidate in candidates)


def _remove(dest: Path, paths: set[str]) -> int:
    removed = 0
    for relative in sorted(paths):
        path = inside(dest, relative)
        if path is not None and path.is_file():
            path.unlink()
            removed += 1
            if relative.endswith(".html"):  # a redirect page's folder (`blog/old-slug/`), when now empty
                _remove_empty_folders(dest, path.parent)
    return removed


def _remove_empty_folders(dest: Path, folder: Path) -> None:
    while folder != dest and dest in folder.parents:
        try:
            folder.rmdir()  # only an empty folder
        except OSError:
            return
        folder = folder.parent


@dataclass(frozen=True)
class ExportRound:
    """One round of `export --watch`: what the sync found and what the export changed."""

    summary: str  # the sync's one-line summary ("1 new, 0 updated, ...")
    changed: bool  # the sync found changes (the export then ran)
    written: int = 0
    removed: int = 0


class ExportWatch:
    """The rounds of `export --watch`: the same background sync as under `mkdocs serve`, on the
    same poller (`watch.Poller`): one sync request per round, files written only when the blog
    changed. A failure that may pass (the service down, the cache busy) is warned about once per
    distinct message (`watch.WarnOnce`) and tried again at the next round; one that cannot
    (credentials to renew, a setting, a template) ends the watch (`failed`)."""

    def __init__(
        self,
        export_round: Callable[[], ExportRound],
        interval: float,
        *,
        say: Callable[[str], None],
        warn: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.export_round = export_round
        self.interval = interval
        self.say = say
        self.failures = watch.WarnOnce(warn)
        self.clock = clock
        #: the failure that ended the watch.
        self.failed: BlogServiceError | None = None
        self.ended = threading.Event()

    def step(self) -> float:
        """One round; the seconds to wait before the next, counted from the start of this one."""
        started = self.clock()
        try:
            result = self.export_round()
        except (CredentialsError, ConfigurationError) as exc:
            self.failed = exc
            self.ended.set()
            return watch.PAUSED
        except BlogServiceError as exc:
            self.failures.warn(
                f"the sync failed ({exc}); the exported files stay as they are; trying again every {self.interval:g} s"
            )
        else:
            if self.failures.reset():
                self.say("the sync works again")
            if result.changed:
                self.say(
                    f"{time.strftime('%H:%M:%S')} {result.summary}: "
                    f"{counted(result.written, 'file')} written, {result.removed} removed"
                )
        return max(0.0, self.interval - (self.clock() - started))


def keep_exporting(
    export_round: Callable[[], ExportRound],
    interval: float,
    stop: threading.Event,
    *,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """Run `export_round` every `interval` seconds (`ExportWatch`) until `stop` is set (Ctrl-C,
    SIGTERM): then the round in progress ends before this returns (never in the middle of
    writing). A failure that cannot pass propagates."""
    rounds = ExportWatch(export_round, interval, say=say, warn=warn)

    def step() -> float:
        if stop.is_set():
            rounds.ended.set()
            return watch.PAUSED
        return rounds.step()

    def crashed(exc: Exception) -> None:
        rounds.failures.warn(f"the export failed unexpectedly ({type(exc).__name__}: {exc}); trying again")

    poller = watch.Poller(step, on_crash=crashed, name="blogsvc-export-watch")
    poller.start()
    try:
        while not rounds.ended.wait(0.2) and not stop.is_set():
            pass
    finally:
        poller.stop(timeout=None)  # the round in progress ends first
    if rounds.failed is not None:
        raise rounds.failed
