"""kill -9 of a real `mkdocs build` at random moments of a first sync leaves nothing behind: the
next normal build makes the exact site, and no stray file (a temp file of the atomic writer, an
unnamed article or image) is left anywhere in the cache. And a kill at the one moment random
kills seldom hit, a page's temp file written and not yet in place."""

from __future__ import annotations

import os
import random
import re
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.config.defaults import MkDocsConfig

from mkdocs_blogsvc.server import media
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.forked_builds import BuildForker
from tests.e2e.sites import Service, write_credentials, write_site

ARTICLES = 300
CACHE = ".cache/blogsvc"
TRIALS = 20


def png(n: int) -> bytes:
    """A distinct 1x1 PNG per `n` (a cover each: 300 downloads, 300 image files)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixel = zlib.compress(bytes([0, n % 256, n // 256 % 256, 7]))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", pixel)
        + chunk(b"IEND", b"")
    )


def make_site(root: Path, service: Service, token: str) -> Path:
    config = write_site(root, service.url, material=False)
    config.write_text(config.read_text() + yaml.safe_dump({"nav": ["index.md"]}))  # no n² nav
    write_credentials(root / "credentials.json", service.url, token)
    return config


#: The plain theme writes the time of each build into every page.
BUILD_DATE = re.compile(rb"Build Date UTC : [^\n]*")


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): BUILD_DATE.sub(b"", p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def sync_began(service: Service, before: int, timeout: float = 120.0) -> float:
    """Wait until the service has seen one more sync request than `before`; its moment."""
    ends = time.monotonic() + timeout
    while service.requests.count("/api/v1/sync") <= before:
        assert time.monotonic() < ends, "the build never sent its sync"
        time.sleep(0.005)
    return time.monotonic()


@pytest.fixture(autouse=True)
def one_build_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every build of a test on one date, as MkDocs reads it (`SOURCE_DATE_EPOCH`, inherited by
    the forked builds): the sitemap's dates and its gzip header are the build's, and a test run
    across midnight UTC compared sites built on either side of it (found in CI)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(time.time())))


@pytest.fixture
def forker() -> Iterator[BuildForker]:
    """Every build of the random kills but the recoveries: `mkdocs build` in a process of its own,
    forked from one that has imported MkDocs and the plugin (tests/e2e/forked_builds.py). The
    kills are SIGKILLs of real builds, without a second of imports before each."""
    with BuildForker() as running:
        yield running


def build_in_process(config: Path) -> None:
    MkDocsConfig.plugins.plugin_cache.clear()  # a fresh plugin, as a new process has
    build(load_config(str(config)))


#: `mkdocs build`, killed (SIGKILL) as it is about to put its first page in place: the page's temp
#: file is whole on disk, the page is not. Random kills seldom land there (pages are small and
#: quick to write), where the sweep had a gap: the next sync changed nothing, so nothing swept.
KILLED_WRITING_A_PAGE = """
import os, signal, sys
real_replace = os.replace
def replace_or_die(source, target, *args, **kwargs):
    if str(target).endswith(".md") and "/docs/blog/posts/" in str(target):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(source, target, *args, **kwargs)
os.replace = replace_or_die
from mkdocs.__main__ import cli
cli.main(args=["build", "-q", "-f", sys.argv[1]], prog_name="mkdocs")
"""


def test_a_build_killed_as_it_writes_a_page_leaves_no_temp_file_after_the_next_build(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    for n in range(3):
        add_article(db, owner.blog_id, f"Article {n}", minutes_ago=n)
    config = make_site(tmp_path, service, issue_access_token(db, owner))
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITING_A_PAGE, str(config)],
        check=False,
        capture_output=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = [p.name for p in (tmp_path / CACHE).rglob("*.tmp")]
    assert len(left) == 1 and left[0].startswith(".article-"), left  # the kill came where it was meant to
    build_in_process(config)
    build_in_process(config)
    assert not list((tmp_path / CACHE).rglob("*.tmp")), "a temp file of the killed build is still there"
    assert len(list((tmp_path / "site" / "blog" / "posts").glob("article-*/index.html"))) == 3


@pytest.mark.slow
@pytest.mark.timeout(1800)  # about 90 s of CPU; on a machine loaded 15 to 30 deep, 12 to 15 minutes
def test_kill_9_at_20_random_moments_of_a_first_sync_leaves_no_stray_file(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    forker: BuildForker,
) -> None:
    with db.session(write=True) as session:
        keys = [media.store_image(session, owner.blog_id, png(n)) for n in range(ARTICLES)]
    for n, key in enumerate(keys):
        add_article(db, owner.blog_id, f"Article {n}", minutes_ago=n, cover_media_key=key, content=f"Body {n}.")
    token = issue_access_token(db, owner)

    # the reference: one whole build in its own process, timed from its sync request to its end
    # (the kills fall in that span: the sync, the images, the commit, the pages, the site)
    reference_root = tmp_path / "reference"
    whole = forker.start(make_site(reference_root, service, token))
    started = sync_began(service, 0)
    assert forker.wait(whole, timeout=300) == 0, (reference_root / "build.log").read_text()
    duration = time.monotonic() - started
    site, cache = files(reference_root / "site"), files(reference_root / CACHE)
    assert sum(name.startswith("images/") for name in cache) == ARTICLES

    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    outcomes: list[str] = []
    for trial in range(TRIALS):
        root = tmp_path / f"trial-{trial}"
        config = make_site(root, service, token)
        delay = duration * (trial + chance.random()) / TRIALS  # stratified: every phase of the build is hit
        before = service.requests.count("/api/v1/sync")  # the recovery builds sync too
        process = forker.start(config)
        sync_began(service, before)
        time.sleep(delay)
        os.kill(process, signal.SIGKILL)
        forker.wait(process, timeout=60)
        build_in_process(config)  # the next normal build
        recovered_cache, recovered_site = files(root / CACHE), files(root / "site")
        stray = sorted(set(recovered_cache) - set(cache))
        missing = sorted(set(cache) - set(recovered_cache))
        differs = sorted(name for name, data in recovered_site.items() if site.get(name) != data)
        differs += sorted(set(site) - set(recovered_site))
        if stray or missing or differs:
            outcomes.append(
                f"trial {trial} killed {delay:.2f} s into its sync (seed {seed}): stray {stray[:3]}, "
                f"missing {missing[:3]}, site differs {differs[:3]}"
            )
    print(
        f"\n{TRIALS - len(outcomes)} of {TRIALS} kill -9 trials recovered exactly "
        f"(a build took {duration:.2f} s from its sync request to its end; seed {seed})"
    )
    assert outcomes == []
