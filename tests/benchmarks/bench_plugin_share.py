"""The plugin's own share of a build, measured directly at 1,000 to 10,000 articles. Prints figures; not a test.

    python tests/benchmarks/bench_plugin_share.py                  # 1,000, 5,000 and 10,000 articles
    python tests/benchmarks/bench_plugin_share.py --articles 500 2000 --runs 1
    python tests/benchmarks/bench_plugin_share.py --articles 10000 --instructions   # callgrind, minutes
    python tests/benchmarks/bench_plugin_share.py --articles 10000 --floor          # against a lower bound
    python tests/benchmarks/bench_plugin_share.py --articles 10000 --runs 2 --busy 3   # loaded

MkDocs itself grows faster than linearly with the number of pages (the navigation is rendered
into every page, Material's blog plugin compares posts pairwise), so a whole build of 10,000
articles says little about the plugin. This measures what the plugin does, through its own
hooks, in one process:

- **sync applied**: `on_pre_build` up to the end of the sync (the locks, the cache read and
  checked, the credentials read, the service's answer parsed and applied: article files,
  images, manifest). The answer is the JSON the reference service sends, prepared once and
  handed over by an in-memory client in place of the connection (`SyncCoordinator._sync`), so
  the network and the service's own work are not counted; parsing the answer and encoding
  `knownArticles` are;
- **pages rendered and files registered**: the rest of `on_pre_build` (the pages rendered, or
  found up to date) and `on_files` with MkDocs' `Files` of a minimal site;
- **page hooks**: `on_nav` (sitemap dates), then for every article page `on_page_content` (the
  sanitiser, given the HTML Python-Markdown makes of the article) and `on_post_page` (head tags
  into a 20 kB page);
- **end of build**: `on_post_build` (page addresses recorded, the manifest saved if it changed,
  redirect pages), with the built pages present in site_dir as after a real build.

each for a cold cache (every article new) and for no change (an empty answer), as wall time
(median of `--runs`), the process's CPU time over the same phases (a machine loaded by other
work stretches the wall time, hardly the CPU time), and peak memory allocated by Python during
the hooks (tracemalloc, in a separate run, since tracing slows everything down). Run from the
repository root.

With `--instructions`, instead: the instructions the hooks of one no-change build execute,
counted by Valgrind's callgrind (`counted_hooks`), which no state of the machine moves (its
speed drifts by half from hour to hour); the cache is made natively first.

With `--busy N`: any of the above beside N processes that only burn CPU (`busy_loops`), the
machine loaded by other work (on 2 cores, 3 of them leave the build about half a core).

With `--floor`: the CPU time of the no-change hooks against `floor_steps`, the steps any design
must take (parse what it keeps per article, stat each article file and page, register each
page, hash each page's HTML, insert its head tags), in plain Python over the same cache: how
much of the plugin's share is its own structure, and so what a redesign could gain.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import hashlib
import itertools
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import get_files
from mkdocs.structure.nav import Navigation
from mkdocs.structure.pages import Page

from mkdocs_blogsvc import models
from mkdocs_blogsvc.cache import Cache, CacheContents
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.plugin import BlogServicePlugin
from mkdocs_blogsvc.server.serialize import content_hash
from mkdocs_blogsvc.session import generated_files
from mkdocs_blogsvc.sync import SyncReport, sync_cache
from tests.e2e.sites import write_credentials, write_site

SAMPLE_COVER = Path(__file__).resolve().parents[2] / "mkdocs_blogsvc" / "server" / "sample_media" / "cover-01.png"
BASE = "https://blog.example.test"
TAGS = ["python", "mkdocs", "material", "docs", "api", "oauth", "cache", "performance", "testing", "release"]


def article_json(number: int, now: datetime) -> dict[str, Any]:
    """One article as the service sends it (the spec's Article object)."""
    body = "\n\n".join(f"Paragraph {i} of article {number}, with some *Markdown*." for i in range(30))
    title, description = f"Article number {number}", f"What article {number} is about."
    content, tags = f"# Article {number}\n\n{body}", [TAGS[number % 10], TAGS[(number * 3 + 1) % 10]]
    stamp = models.format_timestamp(now - timedelta(minutes=number))
    return {
        "id": f"c{number:024d}",
        "slug": f"article-number-{number}",
        "title": title,
        "description": description,
        "content": content,
        "coverImageUrl": f"{BASE}/media/cover-{number}.png" if number % 10 == 0 else None,
        "inlineImageUrls": [],
        "tags": tags,
        "seoKeywords": ["benchmark"],
        "seoScore": 7.5,
        "schemaOrgJson": None,
        "publishedAt": stamp,
        "updatedAt": stamp,
        "viewCount": number,
        "contentHash": content_hash(title, description, content, tags),
    }


class AnswerClient:
    """Hands the plugin a prepared /sync answer: what `api.BlogServiceClient` would parse."""

    def __init__(self, answer: bytes, status: dict[str, Any]) -> None:
        self.answer = answer
        self.status_json = status
        self.image = SAMPLE_COVER.read_bytes()

    def sync(self, known: Sequence[models.KnownArticle]) -> models.SyncResult:
        models.sync_body(known)  # the request body, as the client encodes it
        return models.SyncResult.from_json(json.loads(self.answer))

    def status(self) -> models.BlogStatus:
        return models.BlogStatus.from_json(self.status_json)

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
        return self.image, "image/png"

    def close(self) -> None:
        pass


def answers(count: int) -> tuple[bytes, bytes, dict[str, Any]]:
    """The /sync answer of a first sync (every article new), of a sync with nothing changed,
    and the status answer."""
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    synced = models.format_timestamp(now)
    full = {"new": [article_json(n, now) for n in range(count)], "updated": [], "deleted": [], "syncedAt": synced}
    empty = {"new": [], "updated": [], "deleted": [], "syncedAt": synced}
    status = {
        "status": "active",
        "scopes": ["articles:read", "blog:read"],
        "connectedAt": synced,
        "lastSyncAt": synced,
        "blog": {
            "id": "cblog",
            "name": "Bench",
            "slug": "bench",
            "description": "",
            "language": "en",
            "articleCount": count,
        },
    }
    return json.dumps(full).encode(), json.dumps(empty).encode(), status


#: A page as a theme writes it: a head, then a body of about 20 KB.
HTML = (
    "<!doctype html><html><head><meta charset=utf-8><title>Post</title></head><body>"
    + "<p>text</p>" * 2000
    + "</body></html>"
)


def body_html(src_uri: str) -> str:
    """The HTML Python-Markdown makes of a page's article (as `article_json` writes it)."""
    number = int(src_uri.rsplit("-", 1)[-1].removesuffix(".md"))
    return f"<h1>Article {number}</h1>\n" + "\n".join(
        f"<p>Paragraph {i} of article {number}, with some <em>Markdown</em>.</p>" for i in range(30)
    )


@dataclass
class Phases:
    sync: float = 0.0
    files: float = 0.0
    pages: float = 0.0
    finish: float = 0.0
    #: the process's CPU time over the same four phases: what the plugin costs whatever else
    #: the machine runs (a loaded machine stretches the wall time, hardly this).
    cpu: float = 0.0
    #: the article pages the build registered.
    registered: int = 0

    @property
    def total(self) -> float:
        return self.sync + self.files + self.pages + self.finish


def site(root: Path) -> tuple[MkDocsConfig, BlogServicePlugin]:
    """A minimal site with the plugin (no theme plugins: only the plugin's own work counts),
    logged in (its credentials are read, never sent: `build_share` hands the answer over)."""
    config_file = write_site(root, BASE, material=False)
    if not (root / "credentials.json").exists():
        write_credentials(root / "credentials.json", BASE, "svc_at_bench", valid_for=86400)
    config = load_config(str(config_file))
    plugin = config.plugins["blogsvc"]
    assert isinstance(plugin, BlogServicePlugin)
    plugin.on_config(config)
    config.plugins._current_plugin = "blogsvc"  # what MkDocs sets while it runs a plugin's hook
    return config, plugin


def build_share(
    config: MkDocsConfig,
    plugin: BlogServicePlugin,
    answer: bytes,
    status: dict[str, Any],
    clock: Callable[[], float] = time.perf_counter,
) -> Phases:
    """The plugin's hooks of one build, with `answer` as the service's reply. The garbage of
    earlier builds in this process is collected first: a build's process starts without it
    (left in place, every collection during the hooks would scan it too)."""
    coordinator, phases = plugin.coordinator, Phases()
    assert coordinator is not None
    synced = 0.0

    def sync_from_answer(
        settings: Settings, cache: Cache, contents: CacheContents | None, *, warn: Callable[[str], object]
    ) -> tuple[CacheContents, SyncReport]:
        """`SyncCoordinator._sync` with the answer handed over instead of a connection."""
        nonlocal synced
        try:
            return sync_cache(cache, AnswerClient(answer, status), contents=contents)
        finally:
            synced = clock()

    coordinator._sync = sync_from_answer  # the network is not counted
    files = get_files(config)  # MkDocs' work: not counted
    gc.collect()
    cpu_started = time.process_time()
    started = clock()
    try:
        plugin.on_pre_build(config=config)  # the locks, the cache read, the sync; then the pages rendered
        phases.sync = synced - started
        plugin.on_files(files, config=config)
        phases.files = clock() - synced
        phases.cpu = time.process_time() - cpu_started
        assert plugin.session is not None
        article_pages = plugin.session.pages
        phases.registered = len(article_pages)
        pages = [Page(None, file, config) for file in files if file.src_uri in article_pages]  # MkDocs' work
        bodies = [body_html(page.file.src_uri) for page in pages]
        site_dir = Path(config.site_dir)
        for page in pages:  # what MkDocs writes
            (site_dir / page.file.dest_uri).parent.mkdir(parents=True, exist_ok=True)
            (site_dir / page.file.dest_uri).write_text(HTML)
        cpu_started = time.process_time()
        started = clock()
        plugin.on_nav(Navigation([], pages), config=config, files=files)
        for page, body in zip(pages, bodies, strict=True):
            plugin.on_page_content(body, page=page, config=config, files=files)
            plugin.on_post_page(HTML, page=page, config=config)
        phases.pages = clock() - started
        started = clock()
        plugin.on_post_build(config=config)  # releases the locks
        phases.finish = clock() - started
        phases.cpu += time.process_time() - cpu_started
    except BaseException:
        coordinator.end_build()
        raise
    return phases


#: The plugin's hooks that `build_share` calls.
HOOKS = ("on_pre_build", "on_files", "on_nav", "on_page_content", "on_post_page", "on_post_build")
#: The C function `counted_hooks` runs each hook in.
COUNTED_FUNCTION = "starmap_next"


def counted_hooks(plugin: BlogServicePlugin) -> None:
    """Run each of the plugin's `HOOKS` inside `itertools.starmap`'s C `next`, which nothing
    else in `build_share` calls: callgrind's inclusive count of `COUNTED_FUNCTION` is then the
    instructions of the hooks alone (Python functions are invisible to callgrind, C ones are
    not; `bench_build.COUNTED_BUILD` does the same for a whole build)."""
    for name in HOOKS:
        method = getattr(plugin, name)

        def counted(*args: Any, _method: Callable[..., Any] = method, **kwargs: Any) -> Any:
            return next(itertools.starmap(functools.partial(_method, *args, **kwargs), [()]))

        setattr(plugin, name, counted)


def count_instructions(count: int) -> int:
    """The instructions of the hooks of one no-change build of `count` articles (callgrind)."""
    from tests.benchmarks.bench_build import callgrind

    full, empty, status = answers(count)
    with tempfile.TemporaryDirectory(prefix="blogsvc-share-") as tmp:
        for answer in (full, empty):  # the cache made and checked once, natively
            config, plugin = site(Path(tmp))
            build_share(config, plugin, answer, status)
        command = [sys.executable, str(Path(__file__).resolve()), "--counted-build", tmp]
        return callgrind(command, cwd=Path(tmp), functions={"hooks": COUNTED_FUNCTION})["hooks"]


def counted_build(folder: Path) -> None:
    """One no-change build of the site in `folder` with `counted_hooks` (what callgrind runs)."""
    _full, empty, status = answers(0)
    config, plugin = site(folder)
    counted_hooks(plugin)
    build_share(config, plugin, empty, status)


def floor_steps(config: MkDocsConfig, plugin: BlogServicePlugin) -> Callable[[], int]:
    """The steps no design of a no-change build can leave out, in plain Python, over the cache a
    build of this site made: what `--floor` compares the plugin's CPU time with. From a manifest
    as lean as it can be (per article one list: content hash, article file and its stat, slug,
    the page's stat, the HTML's key, the head tags' place in the pack), parsed; `knownArticles`
    encoded; a stat of each article file and page and MkDocs' `File` of each page; then per page
    its HTML hashed (the sanitised HTML's key) and its head tags taken from the pack and inserted.
    The steps return how many pages they went through."""
    coordinator = plugin.coordinator
    assert coordinator is not None
    cache, posts_dir = coordinator.cache, coordinator.settings.posts_dir
    lean: dict[str, list[Any]] = {}
    for article_id, entry in cache.load().entries.items():
        assert entry.summary is not None and entry.article_stat is not None and entry.outputs is not None
        assert entry.outputs_header is not None
        page = entry.records.page
        assert page is not None
        lean[article_id] = [
            entry.content_hash,
            entry.article_file,
            *entry.article_stat,
            entry.summary.slug,
            page.size,
            page.mtime_ns,
            entry.outputs_header.html.key if entry.outputs_header.html else None,
            *entry.outputs,
        ]
    manifest, pack = json.dumps(lean).encode(), cache.outputs_path.read_bytes()
    bodies = {entry[4]: body_html(f"{entry[4]}.md") for entry in lean.values()}
    root, pages = f"{cache.root}/", f"{cache.page_file(posts_dir)}/"
    generated = generated_files(config)  # the quickest way known to make MkDocs' `File`

    def steps() -> int:
        articles = json.loads(manifest)
        json.dumps({"knownArticles": [{"id": key, "contentHash": entry[0]} for key, entry in articles.items()]})
        files = []
        for _hash, article_file, size, mtime, slug, page_size, page_mtime, *_rest in articles.values():
            found = os.stat(root + article_file)
            assert (found.st_size, found.st_mtime_ns) == (size, mtime)
            found = os.stat(f"{pages}{slug}.md")
            assert (found.st_size, found.st_mtime_ns) == (page_size, page_mtime)
            files.append(generated(f"{posts_dir}/{slug}.md", f"{pages}{slug}.md"))
        for entry in articles.values():
            hashlib.sha256(bodies[entry[4]].encode("utf-8")).hexdigest()
            offset, length = entry[8], entry[9]
            HTML.replace("</head>", pack[offset : offset + length].decode("utf-8") + "</head>", 1)
        return len(files)

    return steps


def measure_floor(count: int, runs: int) -> tuple[float, float]:
    """The least CPU time of `runs` no-change builds' hooks and of `runs` runs of `floor_steps`,
    taken alternately in one process (the machine's speed drifts)."""
    full, empty, status = answers(count)
    plugin_cpu, floor_cpu = [], []
    with tempfile.TemporaryDirectory(prefix="blogsvc-share-") as tmp:
        for answer in (full, empty):
            config, plugin = site(Path(tmp))
            build_share(config, plugin, answer, status)
        steps = floor_steps(config, plugin)
        for _ in range(runs):
            config, plugin = site(Path(tmp))
            plugin_cpu.append(build_share(config, plugin, empty, status).cpu)
            gc.collect()
            gc.disable()  # as the plugin pauses the collector around its bulk work
            started = time.process_time()
            steps()
            floor_cpu.append(time.process_time() - started)
            gc.enable()
    return min(plugin_cpu), min(floor_cpu)


def measure(count: int, runs: int) -> dict[str, Any]:
    full, empty, status = answers(count)
    cold, unchanged = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="blogsvc-share-") as tmp:
            config, plugin = site(Path(tmp))
            cold.append(build_share(config, plugin, full, status))
            config, plugin = site(Path(tmp))  # a new build: a new process would start here
            unchanged.append(build_share(config, plugin, empty, status))
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="blogsvc-share-") as tmp:
        for name, answer in (("cold", full), ("no change", empty)):
            config, plugin = site(Path(tmp))
            tracemalloc.start()
            build_share(config, plugin, answer, status)
            peaks[name] = tracemalloc.get_traced_memory()[1] / 1024 / 1024
            tracemalloc.stop()
    return {"cold": cold, "no change": unchanged, "peaks": peaks, "answer": len(full)}


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` processes that only burn CPU while the block runs: the machine busy with other
    work (`--busy`), the state a no-change build must also stay under 1 s in. Killed on the way out."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def median(phases: list[Phases], name: str) -> float:
    return float(statistics.median(getattr(p, name) for p in phases))


def print_rows(title: str, columns: list[str], rows: Iterable[list[str]]) -> None:
    """A Markdown table under `title`, each row printed as soon as it is measured."""
    print(title)
    print()
    print(f"| {' | '.join(columns)} |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print(f"| {' | '.join(row)} |")
        sys.stdout.flush()


def instructions_row(count: int) -> list[str]:
    counted = count_instructions(count)
    return [f"{count:,}", f"{counted / 1e6:,.0f} M", f"{counted / count / 1e3:,.0f} k"]


def floor_row(count: int, runs: int) -> list[str]:
    plugin_cpu, floor_cpu = measure_floor(count, runs)
    return [f"{count:,}", f"{plugin_cpu:.3f} s", f"{floor_cpu:.3f} s", f"{plugin_cpu / floor_cpu:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--instructions", action="store_true", help="count the hooks' instructions (callgrind)")
    parser.add_argument("--floor", action="store_true", help="compare with the steps no design can leave out")
    parser.add_argument("--busy", type=int, default=0, help="measure beside this many busy processes (loaded)")
    parser.add_argument("--counted-build", type=Path, help=argparse.SUPPRESS)  # the child callgrind runs
    args = parser.parse_args()
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    if args.counted_build is not None:
        counted_build(args.counted_build)
        return
    print(f"# bench_plugin_share: {' '.join(sys.argv[1:]) or '(defaults)'}")
    with busy_loops(args.busy):
        report(args)


def report(args: argparse.Namespace) -> None:
    """The table `args` ask for, printed row by row."""
    if args.instructions:
        print_rows(
            "Instructions of the plugin's hooks in one no-change build (callgrind, PYTHONHASHSEED=0):",
            ["articles", "instructions", "per article"],
            (instructions_row(count) for count in args.articles),
        )
        return
    if args.floor:
        print_rows(
            "CPU time of a no-change build's hooks against the steps no design can leave out (`floor_steps`):",
            ["articles", "plugin", "floor", "ratio"],
            (floor_row(count, args.runs) for count in args.articles),
        )
        return
    print(
        f"machine: {os.cpu_count()} CPUs, {args.busy} busy processes beside, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at start; "
        f"Python {sys.version.split()[0]}; median of {args.runs} runs; every 10th article has a cover image"
    )
    print()
    print(
        "| articles | build | sync applied | pages + files | page hooks | end of build | plugin total "
        "| its CPU time | per 1,000 | peak memory |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for count in args.articles:
        result = measure(count, args.runs)
        for name in ("cold", "no change"):
            runs = result[name]
            total = median(runs, "total")
            print(
                f"| {count:,} | {name} | {median(runs, 'sync'):.3f} s | {median(runs, 'files'):.3f} s | "
                f"{median(runs, 'pages'):.3f} s | {median(runs, 'finish'):.3f} s | **{total:.3f} s** | "
                f"{median(runs, 'cpu'):.3f} s | "
                f"{total / count * 1000:.3f} s | {result['peaks'][name]:.0f} MB |"
            )
        sys.stdout.flush()
    print()
    print("Peak memory: the most Python allocated during the hooks (tracemalloc), the parsed answer included.")


if __name__ == "__main__":
    main()
