"""What the plugin costs a real build, against the same pages as plain files. Prints figures; not a test.

    python tests/benchmarks/bench_build.py                      # Material + mkdocs theme, 200 and 1,000 articles, 5 runs
    python tests/benchmarks/bench_build.py --articles 50 --runs 2 --themes material   # a quick look
    python tests/benchmarks/bench_build.py --articles 1000 --profile /tmp/prof        # plus cProfile of both builds
    python tests/benchmarks/bench_build.py --articles 200 --themes material --imported  # plus the plugin only imported
    python tests/benchmarks/bench_build.py --articles 200 --themes material --control   # plus plain against plain
    python tests/benchmarks/bench_build.py --articles 200 --themes material --instructions  # plus instruction counts
    python tests/benchmarks/bench_build.py --articles 1000 --themes material --spec-literal  # a service that knows no gzip

For each theme and size it creates the articles directly in the reference service's store (one
transaction; every `--cover-every`th article has a cover image), starts the service on
127.0.0.1 in a thread of this process, and builds two sites with `mkdocs build` as separate
processes, the way users run it (the plugin's credentials hold an access token valid for the
whole run, `TOKEN_LIFETIME`, so no build refreshes it):

- **plugin**: the `blogsvc` plugin syncing with the service (`material`: with Material's blog and
  tags plugins; `mkdocs`: the built-in theme, the plugin writing the blog index);
- **plain**: the same site without the plugin, with the pages and images the plugin adds (the
  Markdown it writes into its cache) copied into docs_dir as plain files.

Then it measures, alternating plugin and plain builds in pairs (the order flips every pair, so
load from other processes falls on both alike), and reports medians:

- the cold build (no cache: full sync, images downloaded, pages written);
- the no-change build (one /sync that returns nothing): the median of the pairwise ratios, the
  absolute medians, peak RSS, kernel time and minor page faults of the build process (about
  one per page of memory it touched); and how precisely the run knows the ratio: the 95 %
  interval of the median (`intervals`, from the order statistics: no assumption on the spread),
  and whether it puts the ratio at most, above, or on both sides of issue 13's goal (`GOAL`);
- the incremental build after 10 articles changed on the service (and the same 10 files
  changed in the plain site): times, and the bytes the plugin received against the bytes of a
  full listing (`GET /api/v1/articles`, every page of 100) and of the cold build's full sync;
- the plugin's own CPU time in a no-change build, importing it and each of its hooks, from
  `--own-runs` more builds of its site that time them (`OWN_BUILD`);
- with `--imported`, plain builds in a process that imported the plugin's module first (the
  plugin not configured) against plain builds: what the plugin's mere presence costs, the
  part of a no-change build that no saved work can remove;
- with `--control`, plain builds against the same plain builds: the ratios measured when
  nothing differs, the resolution of the figures above on the machine at hand;
- with `--instructions`, one no-change build of each site under Valgrind's callgrind, which
  counts the instructions the build process executes (whatever else the machine is doing:
  identical builds differ by a few tenths of a percent, where their times differ by up to
  15 %), and of the plugin's build the instructions of importing it, of `on_page_content`, of
  `on_post_page` and of its other hooks, exactly (`COUNTED_BUILD`). It leaves out what
  instructions do not show: waiting for memory, page faults, the wait for the service.

With `--spec-literal`, the service is the reference one behind `tests.speclike.SpecLiteral`: it
knows no gzip request body (one reads as invalid JSON, 400) and says nothing of the codings it
takes, as a service written from the spec alone; the report counts the compressed sync bodies it
refused (0 expected: every build must sync).

Both sites build into one output folder (`-d`), so that both meet the same state of the file
system: writing a site is mostly finding free inodes for its files, which costs more or less by
where the folder lies and by what was deleted near it lately.

Every build runs on one CPU (`--build-cpu`, by default the last one), and this process, the
service's thread included, on the others: the service answers a build's sync without taking
the build's CPU, and each build of a pair runs on the same CPU as the other.

Peak memory is the build process's own peak resident set size (`VmHWM`, see `MEASURED_BUILD`).
Run from the repository root with the virtual environment active.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")

import httpx
import yaml
from werkzeug.serving import make_server

from mkdocs_blogsvc.server import create_app, media, security, tables
from mkdocs_blogsvc.server.database import Database
from tests.benchmarks.intervals import median_interval, verdict
from tests.conftest import add_owner, issue_access_token
from tests.e2e.sites import write_credentials, write_site
from tests.speclike import SpecLiteral

SAMPLE_COVER = Path(__file__).resolve().parents[2] / "mkdocs_blogsvc" / "server" / "sample_media" / "cover-01.png"
TAGS = [
    "python",
    "mkdocs",
    "material",
    "docs",
    "api",
    "oauth",
    "cache",
    "performance",
    "testing",
    "release",
    "markdown",
    "search",
    "design",
    "ops",
    "security",
    "json",
    "http",
    "yaml",
    "jinja",
    "sqlite",
]


# --- the service ----------------------------------------------------------------------------


class Service:
    """The reference service in a thread, counting the response bytes per request path."""

    def __init__(self, db: Database, *, spec_literal: bool = False) -> None:
        app: Any = create_app(db, secret_key="bench")
        #: with `spec_literal`: the filter that refuses compressed bodies (its `coded` counts them)
        self.spec_literal = SpecLiteral(app) if spec_literal else None
        app = self.spec_literal or app
        self.received: list[tuple[str, int]] = []
        self._lock = threading.Lock()

        def counting(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
            size = 0
            try:
                for chunk in app(environ, start_response):
                    size += len(chunk)
                    yield chunk
            finally:
                with self._lock:
                    self.received.append((environ["PATH_INFO"], size))

        self.server = make_server("127.0.0.1", 0, counting, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def take(self) -> list[tuple[str, int]]:
        """The requests since the last call, as (path, response body bytes)."""
        with self._lock:
            taken, self.received = self.received, []
        return taken

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def create_articles(db: Database, blog_id: str, count: int, cover_every: int) -> list[str]:
    """`count` published articles in one transaction (a few KB of Markdown each, three tags,
    every `cover_every`th with its own cover image); returns their ids, newest first."""
    body = "\n\n".join(
        f"Paragraph {i} with some *Markdown*, a [link](https://example.com/{i}) and `code`." for i in range(30)
    )
    image = SAMPLE_COVER.read_bytes()
    now = db.now()
    ids = []
    with db.session(write=True) as session:
        for number in range(count):
            cover = None
            if cover_every and number % cover_every == 0:  # bytes after PNG's end: a distinct image each
                cover = media.store_image(session, blog_id, image + f"bench-cover-{number}".encode())
            article_id = security.new_cuid()
            ids.append(article_id)
            session.add(
                tables.Article(
                    id=article_id,
                    blog_id=blog_id,
                    slug=f"article-number-{number}",
                    title=f"Article number {number}",
                    description=f"What article {number} is about.",
                    content=f"# Article {number}\n\n{body}",
                    cover_media_key=cover,
                    tags=[TAGS[number % 20], TAGS[(number * 7 + 3) % 20], TAGS[(number * 3 + 1) % 20]],
                    seo_keywords=["benchmark", f"article {number}"],
                    status="published",
                    published_at=now - timedelta(minutes=number),
                    updated_at=now,
                    created_at=now,
                )
            )
    return ids


def change_articles(db: Database, ids: Iterable[str], generation: int) -> None:
    """Edit the body of each article (a new contentHash), as an author would."""
    with db.session(write=True) as session:
        for article_id in ids:
            article = session.get(tables.Article, article_id)
            assert article is not None
            article.content = article.content.split("\n\nEdit ", 1)[0] + f"\n\nEdit {generation}: one more paragraph."
            article.updated_at = db.now()


def full_listing_bytes(base_url: str, token: str) -> int:
    """Bytes of every page of `GET /api/v1/articles?limit=100`: what a client without /sync reads."""
    total, page = 0, 1
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        while True:
            response = client.get("/api/v1/articles", params={"page": page, "limit": 100})
            response.raise_for_status()
            total += len(response.content)
            if page >= response.json()["pagination"]["totalPages"]:
                return total
            page += 1


# --- builds ---------------------------------------------------------------------------------


#: Warnings the builds printed (each shown once).
WARNINGS: set[str] = set()
#: How long the benchmark's access token is valid (seconds): longer than any run.
TOKEN_LIFETIME = 7 * 86400
#: The interpreter that runs the builds (`--python`): by default this one.
BUILD_PYTHON = sys.executable
#: The CPU every build runs on (`--build-cpu`), None: wherever the system puts it.
BUILD_CPU: int | None = None
#: Every CPU this process may use at its start (`--instructions` runs its two counted builds
#: on all of them: counts do not depend on the CPU, and pinned to one they took twice as long).
ALL_CPUS = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None  # Linux only


@dataclass
class Run:
    seconds: float  # wall time
    cpu: float  # user + system CPU time of the build process
    peak_rss_mb: float
    system: float = 0.0  # the kernel's part of `cpu` (page faults, file system calls)
    page_faults: int = 0  # minor page faults: roughly the memory pages the build touched
    own: dict[str, float] = field(default_factory=dict)  # OWN_BUILD: CPU seconds of "import" and of each hook


#: `mkdocs build` under cProfile with the process's CPU time as the clock: with other processes
#: on the machine, wall-clock profiles mostly measure waiting for a core.
PROFILED_BUILD = """
import cProfile, sys, time
from mkdocs.__main__ import cli
profile = cProfile.Profile(time.process_time)
try:
    profile.runcall(cli.main, args=sys.argv[2:], prog_name="mkdocs", standalone_mode=False)
finally:
    profile.dump_stats(sys.argv[1])
"""


#: A no-change build that measures the plugin's own CPU time: importing its module (after
#: what MkDocs imports anyway, before MkDocs loads the plugin) and each of its hooks (its event
#: methods wrapped as MkDocs registers them; `functools.wraps` keeps their priorities).
#: Separate from the timed builds, which run nothing but `mkdocs build`.
OWN_BUILD = """
import functools, json, sys, time
import mkdocs.commands.build, mkdocs.config.defaults, mkdocs.plugins, mkdocs.structure.nav
from mkdocs.__main__ import cli
started = time.process_time()
import mkdocs_blogsvc.plugin
spent = {"import": time.process_time() - started}
register = mkdocs.plugins.PluginCollection._register_event

def timed(event, method):
    @functools.wraps(method)
    def run(*args, **kwargs):
        started = time.process_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[event] = spent.get(event, 0.0) + time.process_time() - started
    return run

def register_timed(self, event_name, method, plugin_name=None):
    if type(getattr(method, "__self__", None)).__module__.startswith("mkdocs_blogsvc"):
        method = timed(event_name, method)
    return register(self, event_name, method, plugin_name)

mkdocs.plugins.PluginCollection._register_event = register_timed
try:
    cli.main(args=sys.argv[1:], prog_name="mkdocs")
finally:
    print("plugin-own-cpu", json.dumps(spent), file=sys.stderr)
"""
OWN_CPU = "plugin-own-cpu "


#: Every build but the profiled ones: `mkdocs build` in a fresh interpreter that prints its peak
#: resident memory (`VmHWM`, the process's own since its exec) last. Not `wait4`'s ru_maxrss: a
#: child's high-water mark starts at its parent's size (this process, the service included, is
#: about 90 MB), which hid the peaks of smaller builds. `{before}`: with `--imported`, the
#: plugin's module imported first (as MkDocs would for a site that uses it), the site not
#: configured for it: what the plugin's mere presence costs a build.
MEASURED_BUILD = """
import sys
from mkdocs.__main__ import cli
{before}
try:
    cli.main(args=sys.argv[1:], prog_name="mkdocs")
finally:
    try:
        with open("/proc/self/status") as status:  # Linux; elsewhere the peak is not measured (0)
            print("peak-rss-kib", next(line.split()[1] for line in status if line.startswith("VmHWM:")), file=sys.stderr)
    except OSError:
        pass
"""
PEAK_RSS = "peak-rss-kib "


def mkdocs_build(
    config: Path, *, site_dir: Path, profile: Path | None = None, imported: bool = False, own: bool = False
) -> Run:
    """`mkdocs build` of `config` into `site_dir` in its own process: wall time, CPU time and peak
    resident memory (with `own`, also the plugin's own CPU time, in `Run.own`)."""
    before = "import mkdocs_blogsvc.plugin" if imported else ""
    command = [
        BUILD_PYTHON,
        "-c",
        MEASURED_BUILD.format(before=before),
        "build",
        "-f",
        str(config),
        "-d",
        str(site_dir),
    ]
    if profile is not None:
        command[1:3] = ["-c", PROFILED_BUILD, str(profile)]
    elif own:
        command[2] = OWN_BUILD
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=config.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if BUILD_CPU is not None:  # right after the start, while the interpreter is still starting
        os.sched_setaffinity(process.pid, {BUILD_CPU})
    assert process.stderr is not None
    with process.stderr:
        errors = process.stderr.read()  # a few log lines: no deadlock before wait4
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"mkdocs build of {config} failed ({process.returncode}):\n{errors.decode(errors='replace')}")
    peak_kib, own_cpu = 0, dict[str, float]()
    for line in errors.decode(errors="replace").splitlines():
        if line.startswith(PEAK_RSS):
            peak_kib = int(line.removeprefix(PEAK_RSS))
        elif line.startswith(OWN_CPU):
            own_cpu = json.loads(line.removeprefix(OWN_CPU))
        elif line.startswith("WARNING") and line not in WARNINGS:  # a figure measured with a warning is suspect
            WARNINGS.add(line)
            print(f"  (build of {config.parent.name}) {line}", file=sys.stderr)
    return Run(
        seconds,
        usage.ru_utime + usage.ru_stime,
        peak_kib / 1024,  # 0 for a profiled build
        usage.ru_stime,
        usage.ru_minflt,
        own_cpu,
    )


#: A no-change build of the plugin's site in which importing the plugin and each kind of hook run
#: inside a C function of their own that nothing else in a build calls: callgrind's inclusive
#: count of that function is then exactly the instructions of that part (Python functions are
#: invisible to callgrind; C functions are not).
COUNTED_BUILD = """
import functools, importlib, itertools, operator, sys
import mkdocs.commands.build, mkdocs.config.defaults, mkdocs.plugins, mkdocs.structure.nav
from mkdocs.__main__ import cli
plugin = functools.reduce(lambda _, name: importlib.import_module(name), ["mkdocs_blogsvc.plugin"], None)

def through(trampoline, method):
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        return trampoline(method, self, *args, **kwargs)
    return run

def call(method, *args, **kwargs):
    return operator.call(method, *args, **kwargs)

def methodcaller(method, *args, **kwargs):
    return operator.methodcaller("__call__", *args, **kwargs)(method)

def starmap(method, *args, **kwargs):
    return next(itertools.starmap(lambda: method(*args, **kwargs), [()]))

cls = plugin.BlogServicePlugin
for name, trampoline in [("on_page_content", call), ("on_post_page", methodcaller), ("on_config", starmap),
                         ("on_pre_build", starmap), ("on_files", starmap), ("on_nav", starmap),
                         ("on_post_build", starmap)]:
    setattr(cls, name, through(trampoline, getattr(cls, name)))
cli.main(args=sys.argv[1:], prog_name="mkdocs")
"""
#: The C function each part of `COUNTED_BUILD` runs in.
COUNTED_PARTS = {
    "import": "functools_reduce",
    "on_page_content": "_operator_call",
    "on_post_page": "methodcaller_call",
    "other hooks": "starmap_next",
}
#: What callgrind prints last: the instructions the process executed.
_COLLECTED = re.compile(rb"Collected : (\d+)")


def instructions(config: Path, *, site_dir: Path, parts: bool = False) -> dict[str, int]:
    """The instructions one `mkdocs build` of `config` executes ("total"), counted by Valgrind's
    callgrind, with a fixed hash seed (the order of sets and dicts of strings changes the work);
    with `parts`, through `COUNTED_BUILD`, also those of each of `COUNTED_PARTS`. Identical builds
    still differ by a few tenths of a percent (26.61 to 26.76 billion in five plain builds)."""
    code = COUNTED_BUILD if parts else MEASURED_BUILD.format(before="")
    command = [BUILD_PYTHON, "-c", code, "build", "-f", str(config), "-d", str(site_dir)]
    return callgrind(command, cwd=config.parent, functions=COUNTED_PARTS if parts else {})


def callgrind(command: list[str], *, cwd: Path, functions: dict[str, str]) -> dict[str, int]:
    """The instructions `command` executes under callgrind ("total", with `PYTHONHASHSEED=0`),
    and the inclusive count of each C function of `functions` (by name); SystemExit when the
    command fails or one of them never ran."""
    with tempfile.TemporaryDirectory(prefix="blogsvc-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONHASHSEED": "0"}
        with subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ) as process:
            if ALL_CPUS is not None:  # not this process's CPUs, narrowed to the service's
                os.sched_setaffinity(process.pid, ALL_CPUS)
            _out, stderr = process.communicate()
        found = _COLLECTED.findall(stderr)
        if process.returncode != 0 or not found:
            raise SystemExit(
                f"callgrind run of {command[-1]} failed ({process.returncode}):\n"
                f"{stderr.decode(errors='replace')[-3000:]}"
            )
        counted = {"total": int(found[-1])}
        if functions:
            annotated = subprocess.run(
                ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for part, function in functions.items():
                found_part = re.search(rf"^\s*([\d,]+) .*:{function} \[", annotated, re.MULTILINE)
                if found_part is None:  # never counted as nothing: the part did not run through it
                    raise SystemExit(f"callgrind counted no {function} ({part}) in the run of {command[-1]}")
                counted[part] = int(found_part.group(1).replace(",", ""))
        return counted


def copy_plugin_pages(plugin_config: Path, docs: Path) -> None:
    """The pages and images the plugin adds to its site, copied from its cache into `docs` as
    plain files at the same paths: the plain site renders the very Markdown the plugin writes,
    so the two builds differ only by what the plugin does (sync, pages registered, sanitised
    HTML and head tags). (`mkdocs-blogsvc export` writes a variant for generators that run no
    plugins, with the JSON-LD in each page's body: more Markdown to render.)"""
    cache = plugin_config.parent / ".cache" / "blogsvc"
    shutil.copytree(cache / "docs", docs, dirs_exist_ok=True)
    if (cache / "images").is_dir():
        shutil.copytree(cache / "images", docs / "blog" / "images", dirs_exist_ok=True)


@dataclass
class Pairs:
    """Plugin and plain runs measured in alternating pairs."""

    plugin: list[Run] = field(default_factory=list)
    plain: list[Run] = field(default_factory=list)

    def add(self, number: int, plugin: Callable[[], Run], plain: Callable[[], Run]) -> None:
        if number % 2 == 0:
            self.plugin.append(plugin())
            self.plain.append(plain())
        else:
            self.plain.append(plain())
            self.plugin.append(plugin())

    def ratio(self, cpu: bool = False) -> float:
        return statistics.median(self.ratios(cpu))

    def ratios(self, cpu: bool = False) -> list[float]:
        if cpu:
            return sorted(a.cpu / b.cpu for a, b in zip(self.plugin, self.plain, strict=True))
        return sorted(a.seconds / b.seconds for a, b in zip(self.plugin, self.plain, strict=True))


def median_time(runs: list[Run]) -> float:
    return statistics.median(run.seconds for run in runs)


def median_cpu(runs: list[Run]) -> float:
    return statistics.median(run.cpu for run in runs)


def median_rss(runs: list[Run]) -> float:
    return statistics.median(run.peak_rss_mb for run in runs)


def median_system(runs: list[Run]) -> float:
    return statistics.median(run.system for run in runs)


def median_faults(runs: list[Run]) -> float:
    return statistics.median(run.page_faults for run in runs)


@dataclass
class Result:
    theme: str
    articles: int
    runs: int
    cold: Pairs
    no_change: Pairs
    incremental: Pairs
    changed: int
    incremental_bytes: list[int]
    no_change_bytes: list[int]
    cold_sync_bytes: int
    listing_bytes: int
    #: plain builds in a process that imported the plugin's module, against plain builds (`--imported`).
    imported: Pairs | None = None
    #: no-change plugin builds that timed the plugin's import and hooks (`OWN_BUILD`).
    own: list[Run] = field(default_factory=list)
    #: plain builds against plain builds (`--control`): what a ratio is when there is no difference.
    control: Pairs | None = None
    #: instructions of one no-change build (`--instructions`): the plugin's ("total" and each of
    #: `COUNTED_PARTS`) and the plain site's ("plain").
    counted: dict[str, int] = field(default_factory=dict)
    #: compressed sync bodies the spec-literal service refused (`--spec-literal`).
    refused_coded: int = 0

    def report(self) -> str:
        nc, inc, cold = self.no_change, self.incremental, self.cold
        share = statistics.median(self.incremental_bytes) / self.listing_bytes * 100
        lines = [
            f"## {THEMES[self.theme]}, {self.articles} articles, {self.runs} alternating pairs",
            "",
            "| build | plugin | plain files | ratio (median of pairs) | CPU plugin | CPU plain | CPU ratio |",
            "|---|---|---|---|---|---|---|",
            (
                f"| no change | {median_time(nc.plugin):.2f} s | {median_time(nc.plain):.2f} s | "
                f"**{nc.ratio():.3f}** ({', '.join(f'{r:.2f}' for r in nc.ratios())}) | "
                f"{median_cpu(nc.plugin):.2f} s | {median_cpu(nc.plain):.2f} s | {nc.ratio(cpu=True):.3f} |"
            ),
            (
                f"| {self.changed} articles changed | {median_time(inc.plugin):.2f} s | {median_time(inc.plain):.2f} s | "
                f"{inc.ratio():.3f} | {median_cpu(inc.plugin):.2f} s | {median_cpu(inc.plain):.2f} s | {inc.ratio(cpu=True):.3f} |"
            ),
            (
                f"| cold (no cache) | {median_time(cold.plugin):.2f} s | {median_time(cold.plain):.2f} s | "
                f"{cold.ratio():.3f} | {median_cpu(cold.plugin):.2f} s | {median_cpu(cold.plain):.2f} s | {cold.ratio(cpu=True):.3f} |"
            ),
            (
                f"| peak RSS, no change | {median_rss(nc.plugin):.0f} MB | {median_rss(nc.plain):.0f} MB | "
                f"{median_rss(nc.plugin) / median_rss(nc.plain):.3f} | | | |"
            ),
            (
                f"| kernel time (of the CPU time), no change | {median_system(nc.plugin):.2f} s | {median_system(nc.plain):.2f} s | "
                f"{_ratio(median_system(nc.plugin), median_system(nc.plain))} | | | |"
            ),
            (
                f"| minor page faults, no change | {median_faults(nc.plugin):,.0f} | {median_faults(nc.plain):,.0f} | "
                f"{_ratio(median_faults(nc.plugin), median_faults(nc.plain))} | | | |"
            ),
            *([] if self.imported is None else [_pairs_row("plain files, the plugin only imported", self.imported)]),
            *([] if self.control is None else [_pairs_row("plain files against plain files (control)", self.control)]),
            "",
            self.precision_report(),
            "",
            (
                f"Received from the service: no-change build {statistics.median(self.no_change_bytes):,.0f} B; "
                f"{self.changed} changed {statistics.median(self.incremental_bytes):,.0f} B = **{share:.2f} %** of a full "
                f"listing ({self.listing_bytes:,} B over {-(-self.articles // 100)} pages); cold build's sync {self.cold_sync_bytes:,} B."
            ),
            *([] if not self.own else ["", self.own_report()]),
            *([] if not self.counted else ["", self.instructions_report()]),
        ]
        return "\n".join(lines)

    def precision_report(self) -> str:
        """How precisely this run knows the no-change ratio (the median's 95 % interval,
        `intervals`), and what that says of issue 13's goal."""

        def interval(ratios: list[float]) -> str:
            found = median_interval(ratios)
            return (
                "no 95 % interval (too few pairs)"
                if found is None
                else f"95 % interval of the median {found[0]:.3f} to {found[1]:.3f}"
            )

        ratios = self.no_change.ratios()
        line = (
            f"No-change ratio {self.no_change.ratio():.3f}, {interval(ratios)} ({len(ratios)} pairs): "
            f"{verdict(ratios, GOAL)}."
        )
        if self.control is not None:
            line += f" Control {self.control.ratio():.3f}, {interval(self.control.ratios())}."
        return line

    def instructions_report(self) -> str:
        """The instruction counts of one no-change build of each site (`--instructions`)."""
        counted, plain = self.counted, self.counted["plain"]
        own = sum(counted[part] for part in COUNTED_PARTS)
        parts = ", ".join(f"{part} {counted[part] / 1e6:,.0f} M" for part in COUNTED_PARTS)
        return (
            f"Instructions of one no-change build (callgrind): plugin {counted['total'] / 1e6:,.0f} M, plain "
            f"files {plain / 1e6:,.0f} M, ratio **{counted['total'] / plain:.4f}**; the plugin's own "
            f"{own / 1e6:,.0f} M = **{own / plain * 100:.2f} %** of the plain build ({parts})."
        )

    def own_report(self) -> str:
        """The plugin's own CPU time in a no-change build, medians of the `OWN_BUILD` runs."""

        def ms(part: str) -> float:
            return statistics.median(run.own.get(part, 0.0) for run in self.own) * 1000

        hooks = sorted({part for run in self.own for part in run.own} - {"import"})
        total = statistics.median(sum(run.own.values()) for run in self.own)
        share = total / median_cpu(self.no_change.plain) * 100
        parts = ", ".join(f"{hook} {ms(hook):.0f}" for hook in hooks if ms(hook) >= 0.5)
        return (
            f"The plugin's own CPU time in a no-change build ({len(self.own)} builds that timed it, medians): "
            f"importing it {ms('import'):.0f} ms, its hooks {total * 1000 - ms('import'):.0f} ms ({parts}); "
            f"together {total * 1000:.0f} ms = **{share:.1f} %** of the plain build's CPU time."
        )


def _pairs_row(label: str, pairs: Pairs) -> str:
    """A table row of plain-site pairs (`--imported`, `--control`), every pair's ratio shown."""
    return (
        f"| {label} | {median_time(pairs.plugin):.2f} s | {median_time(pairs.plain):.2f} s | {pairs.ratio():.3f} "
        f"({', '.join(f'{r:.2f}' for r in pairs.ratios())}) | {median_cpu(pairs.plugin):.2f} s | "
        f"{median_cpu(pairs.plain):.2f} s | {pairs.ratio(cpu=True):.3f} |"
    )


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


#: Issue 13's goal for the no-change ratio.
GOAL = 1.03

THEMES = {"material": "Material with the blog and tags plugins", "mkdocs": "the built-in mkdocs theme"}


def plain_copy(plugin_config: Path, root: Path) -> Path:
    """The plugin site's mkdocs.yml without the plugin, in `root` (docs_dir copied)."""
    data = yaml.safe_load(plugin_config.read_text())
    data["plugins"] = [p for p in data["plugins"] if not (isinstance(p, dict) and "blogsvc" in p)] or []
    shutil.copytree(plugin_config.parent / "docs", root / "docs")
    config = root / "mkdocs.yml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def sync_bytes(requests: list[tuple[str, int]]) -> int:
    return sum(size for path, size in requests if path == "/api/v1/sync")


def measure(root: Path, theme: str, articles: int, args: argparse.Namespace) -> Result:
    db = Database.from_path(root / "service.db")
    owner = add_owner(db)
    ids = create_articles(db, owner.blog_id, articles, args.cover_every)
    service = Service(db, spec_literal=args.spec_literal)
    # valid for the whole run: a long one (1,000 articles on a slow day) outlasts the service's
    # hour, and the refresh token written beside it is a placeholder the service does not know
    token = issue_access_token(db, owner, lifetime=TOKEN_LIFETIME)
    # one output folder for both sites (see the module's docstring: the file system's share)
    build = functools.partial(mkdocs_build, site_dir=root / "site")
    try:
        site = write_site(root / "plugin", service.url, material=theme == "material")
        write_credentials(root / "plugin" / "credentials.json", service.url, token, valid_for=TOKEN_LIFETIME - 60)
        plain = plain_copy(site, root / "plain")
        cache = root / "plugin" / ".cache"

        # Cold: no cache at all (the first build also yields the pages for the plain site).
        cold = Pairs()
        cold_sync: list[int] = []

        def cold_plugin() -> Run:
            shutil.rmtree(cache, ignore_errors=True)
            service.take()
            run = build(site)
            cold_sync.append(sync_bytes(service.take()))
            return run

        cold.plugin.append(cold_plugin())
        copy_plugin_pages(site, plain.parent / "docs")
        cold.plain.append(build(plain))
        for number in range(1, args.cold_runs):
            cold.add(number, cold_plugin, lambda: build(plain))

        # No change: one /sync that returns nothing.
        no_change, nc_bytes = Pairs(), []

        def plugin_build() -> Run:
            service.take()
            run = build(site)
            nc_bytes.append(sync_bytes(service.take()))
            return run

        build(site), build(plain)  # warm the file cache
        for number in range(args.runs):
            no_change.add(number, plugin_build, lambda: build(plain))
        imported = None
        if args.imported:  # the plugin's presence alone: the part of a no-change build's cost that no work saves
            imported = Pairs()
            for number in range(args.runs):
                imported.add(number, lambda: build(plain, imported=True), lambda: build(plain))
        control = None
        if args.control:  # the same build twice: the spread of ratios when nothing differs
            control = Pairs()
            for number in range(args.runs):
                control.add(number, lambda: build(plain), lambda: build(plain))
        own = [build(site, own=True) for _ in range(args.own_runs)]
        counted: dict[str, int] = {}
        if args.instructions:  # after the timed builds: two builds at a fiftieth of the speed, at once
            with ThreadPoolExecutor(2) as pool:
                plugin_counted = pool.submit(instructions, site, site_dir=root / "site-counted-plugin", parts=True)
                plain_counted = pool.submit(instructions, plain, site_dir=root / "site-counted-plain")
                counted = {**plugin_counted.result(), "plain": plain_counted.result()["total"]}
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            for number in range(args.profile_runs):
                for kind, config in (("plugin", site), ("plain", plain))[:: 1 if number % 2 == 0 else -1]:
                    build(config, profile=args.profile / f"{theme}-{articles}-{kind}-{number}.prof")

        # Incremental: `changed` articles edited on the service, the same pages edited in docs_dir.
        incremental, inc_bytes = Pairs(), []

        def plugin_incremental() -> Run:
            service.take()
            run = build(site)
            inc_bytes.append(sync_bytes(service.take()))
            return run

        posts = plain.parent / "docs" / "blog" / "posts"
        for number in range(args.runs):
            batch = [(number * args.changed + k) % len(ids) for k in range(args.changed)]
            change_articles(db, [ids[k] for k in batch], number)
            for k in batch:
                page = posts / f"article-number-{k}.md"
                page.write_text(
                    page.read_text(encoding="utf-8") + f"\nEdit {number}: one more paragraph.\n", encoding="utf-8"
                )
            incremental.add(number, plugin_incremental, lambda: build(plain))
        listing = full_listing_bytes(service.url, token)
    finally:
        service.stop()
        db.dispose()
    return Result(
        theme,
        articles,
        args.runs,
        cold,
        no_change,
        incremental,
        args.changed,
        inc_bytes,
        nc_bytes,
        int(statistics.median(cold_sync)),
        listing,
        imported,
        own,
        control,
        counted,
        service.spec_literal.coded if service.spec_literal else 0,
    )


# --- profiles -------------------------------------------------------------------------------


def _package(filename: str) -> str:
    if filename.startswith(("~", "<")):
        return "builtins"
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if "mkdocs_blogsvc" in parts:
        return "mkdocs_blogsvc"
    return "stdlib"


def _where(func: tuple[str, int, str]) -> str:
    filename, line, name = func
    return name if filename.startswith("~") else f"{'/'.join(Path(filename).parts[-2:])}:{line} {name}"


def _median_stats(paths: list[Path]) -> dict[Any, tuple[int, int, float, float, dict[Any, Any]]]:
    """One profile from several: per function the median own and cumulative time over the runs
    (a function missing from a run counts as 0 there); callers are taken from the first run."""
    tables = [pstats.Stats(str(path)).stats for path in paths]
    merged = {}
    for func in set().union(*tables):
        rows = [table.get(func) for table in tables]
        first = next(row for row in rows if row is not None)
        own = statistics.median(row[2] if row else 0.0 for row in rows)
        cumulative = statistics.median(row[3] if row else 0.0 for row in rows)
        scale = own / first[2] if first[2] else 0.0
        callers = {caller: (*row[:2], row[2] * scale, row[3]) for caller, row in first[4].items()}
        merged[func] = (first[0], first[1], own, cumulative, callers)
    return merged


def _own_time_by_package(table: dict[Any, Any]) -> dict[str, float]:
    """Own time per package; time spent in builtins and the standard library is charged to the
    package of the calling function (one level up), so `open()` called by MkDocs counts as MkDocs."""
    totals: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tottime, _ct, callers) in table.items():
        package = _package(func[0])
        if package not in ("builtins", "stdlib") or not callers:
            totals[package] += tottime
            continue
        for caller, caller_row in callers.items():
            totals[_package(caller[0])] += caller_row[2]
    return totals


def compare_profiles(plugin: list[Path], plain: list[Path], top: int = 20) -> str:
    """Where the plugin build's extra time goes: own time per package, the MkDocs and Material
    functions whose cumulative time grew most, and the plugin's own functions (medians over
    the profiled runs, CPU time)."""
    stats = {"plugin": _median_stats(plugin), "plain": _median_stats(plain)}
    totals = {kind: sum(row[2] for row in table.values()) for kind, table in stats.items()}
    packages = {kind: _own_time_by_package(table) for kind, table in stats.items()}
    lines = [
        (
            f"Under cProfile (CPU time, median of {len(plugin)} runs each): "
            f"plugin build {totals['plugin']:.2f} s, plain build {totals['plain']:.2f} s "
            f"(difference {totals['plugin'] - totals['plain']:+.2f} s)."
        ),
        "",
        "| own time by package (builtins charged to their caller) | plugin | plain | difference |",
        "|---|---|---|---|",
    ]
    names = set(packages["plugin"]) | set(packages["plain"])
    for name in sorted(names, key=lambda n: -(packages["plugin"].get(n, 0) - packages["plain"].get(n, 0))):
        a, b = packages["plugin"].get(name, 0.0), packages["plain"].get(name, 0.0)
        if abs(a - b) >= 0.005 or a >= 0.1:
            lines.append(f"| {name} | {a:.3f} | {b:.3f} | {a - b:+.3f} |")
    lines += ["", "| MkDocs / Material function (cumulative) | plugin | plain | difference |", "|---|---|---|---|"]
    cumulative = {
        kind: {f: row[3] for f, row in table.items() if _package(f[0]) in ("mkdocs", "material")}
        for kind, table in stats.items()
    }
    funcs = set(cumulative["plugin"]) | set(cumulative["plain"])
    ranked = sorted(funcs, key=lambda f: -(cumulative["plugin"].get(f, 0) - cumulative["plain"].get(f, 0)))
    for func in ranked[:top]:
        a, b = cumulative["plugin"].get(func, 0.0), cumulative["plain"].get(func, 0.0)
        lines.append(f"| `{_where(func)}` | {a:.3f} | {b:.3f} | {a - b:+.3f} |")
    lines += ["", "| the plugin's function (cumulative) | calls | time |", "|---|---|---|"]
    own = [(func, row) for func, row in stats["plugin"].items() if _package(func[0]) == "mkdocs_blogsvc"]
    for func, (_cc, calls, _tt, cumulative_time, _c) in sorted(own, key=lambda item: -item[1][3])[:top]:
        lines.append(f"| `{_where(func)}` | {calls} | {cumulative_time:.3f} |")
    return "\n".join(lines)


# --- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, nargs="+", default=[200, 1000], help="site sizes (default: 200 1000)")
    parser.add_argument("--themes", nargs="+", choices=sorted(THEMES), default=["material", "mkdocs"])
    parser.add_argument("--runs", type=int, default=5, help="alternating pairs of no-change and incremental builds")
    parser.add_argument("--cold-runs", type=int, default=1, help="pairs of cold builds (each deletes the cache)")
    parser.add_argument("--changed", type=int, default=10, help="articles changed before each incremental build")
    parser.add_argument("--cover-every", type=int, default=10, help="every Nth article has a cover image (0: none)")
    parser.add_argument(
        "--profile", type=Path, help="also write cProfile files of one no-change build each into this folder"
    )
    parser.add_argument("--profile-runs", type=int, default=3, help="profiled builds of each kind (medians are shown)")
    parser.add_argument(
        "--own-runs",
        type=int,
        default=3,
        help="no-change plugin builds that time the plugin's own import and hooks (default: 3)",
    )
    parser.add_argument(
        "--imported",
        action="store_true",
        help="also build the plain site in processes that imported the plugin's module (not "
        "configured) against plain builds: what its presence alone costs",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="also plain builds against plain builds: the ratios this machine measures when "
        "nothing differs (the benchmark's resolution)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the instructions of one no-change build of each site under Valgrind's "
        "callgrind (exact where times drift; each build runs about 50 times slower)",
    )
    parser.add_argument(
        "--spec-literal",
        action="store_true",
        help="serve the builds as a service written from the spec alone would: no gzip request "
        "bodies, no Accept-Encoding (see tests/speclike.py)",
    )
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it (default: a temporary one)")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter of the builds, e.g. a virtual environment with only what a user installs "
        "(default: this one)",
    )
    parser.add_argument(
        "--build-cpu",
        type=int,
        default=_last_cpu(),
        help="run every build on this CPU, and the service on the others (default: the last CPU "
        "when there are several; -1: no pinning)",
    )
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    global BUILD_PYTHON, BUILD_CPU
    BUILD_PYTHON = args.python
    if args.build_cpu >= 0:
        BUILD_CPU = args.build_cpu
        others = os.sched_getaffinity(0) - {BUILD_CPU}
        if others:  # the service's thread (and this process) off the builds' CPU
            os.sched_setaffinity(0, others)

    print(f"# bench_build: {' '.join(sys.argv[1:]) or '(defaults)'}")
    print(
        f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at start; "
        f"Python {sys.version.split()[0]}; {_versions()}"
    )
    print(
        f"builds: {_build_environment(args.python)}; "
        + (f"each on CPU {BUILD_CPU}, the service on the others" if BUILD_CPU is not None else "not pinned to a CPU")
    )
    for articles in args.articles:
        for theme in args.themes:
            with tempfile.TemporaryDirectory(prefix="blogsvc-bench-") as tmp:
                root = (args.keep / f"{theme}-{articles}") if args.keep else Path(tmp)
                if args.keep:
                    shutil.rmtree(root, ignore_errors=True)
                    root.mkdir(parents=True)
                started = time.perf_counter()
                result = measure(root, theme, articles, args)
                print()
                print(result.report())
                if args.spec_literal:
                    print(
                        f"\nspec-literal service: {result.refused_coded} compressed sync bodies refused "
                        "(0: every build synced with a plain body)"
                    )
                print(
                    f"\n(measured in {time.perf_counter() - started:.0f} s; load average now "
                    f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})"
                )
                if args.profile:
                    print()
                    print(
                        compare_profiles(
                            [args.profile / f"{theme}-{articles}-plugin-{n}.prof" for n in range(args.profile_runs)],
                            [args.profile / f"{theme}-{articles}-plain-{n}.prof" for n in range(args.profile_runs)],
                        )
                    )
                sys.stdout.flush()


#: Run by the build interpreter: compile the plugin's bytecode where pip would have (see
#: `_build_environment`), then report where the package is and what importing httpx drags in.
BUILD_ENVIRONMENT = """
import compileall, os, sys
import mkdocs_blogsvc
folder = os.path.dirname(mkdocs_blogsvc.__file__)
compileall.compile_dir(folder, quiet=1)
import httpx
print(folder, "rich" in sys.modules)
"""


def _last_cpu() -> int:
    """The default of `--build-cpu`: the last CPU, the service on the others (one CPU, or a
    system without CPU affinity such as macOS: no pinning)."""
    if not hasattr(os, "sched_getaffinity"):
        return -1
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if len(cpus) > 1 else -1


def _build_environment(python: str) -> str:
    """Make the builds' plugin what users run: pip compiles a wheel's bytecode when it installs
    it, but an editable install under PYTHONDONTWRITEBYTECODE=1 (as on the machines this was
    measured on) would compile every plugin module at every build, a cost no user pays (about
    30 ms). Also say whether importing httpx imports rich (it does when rich is installed, as in
    the test environment: about 25 ms more than in a user's environment without it)."""
    found = subprocess.run(
        [python, "-c", BUILD_ENVIRONMENT], capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()
    )  # as the builds run: not from this checkout's folder
    folder, rich = found.stdout.split()
    return (
        f"{python}; plugin from {folder} (bytecode compiled); "
        f"httpx {'imports rich (installed here)' if rich == 'True' else 'without rich'}"
    )


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("mkdocs", "mkdocs-material", "mkdocs-blogsvc"):
        with contextlib.suppress(PackageNotFoundError):
            found.append(f"{name} {version(name)}")
    return ", ".join(found)


if __name__ == "__main__":
    main()
