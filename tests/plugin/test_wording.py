"""What people read: counts in agreement ("1 article"), the cache-fallback warning saying what
happened and what to do, and a progress line that counts only what succeeded."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from mkdocs_blogsvc import access
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.errors import TransportError
from mkdocs_blogsvc.images import PROGRESS_EVERY, download_all
from mkdocs_blogsvc.shared import counted
from tests.e2e.sites import settings

PNG = (Path(__file__).resolve().parents[2] / "mkdocs_blogsvc" / "server" / "sample_media" / "cover-01.png").read_bytes()


def test_counts_agree_with_their_noun() -> None:
    assert counted(1, "article") == "1 article"
    assert counted(0, "article") == "0 articles"
    assert counted(2, "image") == "2 images"
    assert counted(1, "published article") == "1 published article"
    assert counted(3, "child", "children") == "3 children"


@pytest.mark.parametrize(
    ("cached", "expected"),
    [
        (1, "this build has the 1 article of an earlier sync"),
        (2, "this build has the 2 articles of an earlier sync"),
    ],
)
def test_the_cache_fallback_says_what_happened_and_what_to_do(tmp_path: Path, cached: int, expected: str) -> None:
    warning = access.build_without(settings(tmp_path, "https://blogs.example.com"), cached, environ={})
    assert expected in warning
    assert "so the blog was not synced" in warning  # what happened
    assert "to bring them up to date, run `mkdocs-blogsvc login`" in warning  # what to do
    assert "to include them" not in warning  # they are included already
    assert "1 articles" not in warning


def test_the_warning_without_a_cache_says_the_articles_are_left_out(tmp_path: Path) -> None:
    warning = access.build_without(settings(tmp_path, "https://blogs.example.com"), 0, environ={})
    assert "the blog's articles are left out of this build; to include them, run `mkdocs-blogsvc login`" in warning


def test_ci_stopping_a_build_counts_the_cached_articles_in_agreement(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"with the 1 article of a cache it cannot sync"):
        access.build_without(settings(tmp_path, "https://blogs.example.com"), 1, environ={"CI": "true"})


class DiesMidway:
    """A service that serves three images, then is gone: every later download fails. The clock
    moves on by one progress interval at each download, so that progress is logged."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.served = 0
        self.now = 0.0

    def clock(self) -> float:
        with self.lock:
            return self.now

    def download(self, url: str, *, max_bytes: int) -> tuple[bytes, str]:
        time.sleep(0.05)  # each download takes a moment: the loop sees them finish one by one
        with self.lock:
            self.now += PROGRESS_EVERY
            if url.endswith(("/0.png", "/1.png", "/2.png")):
                self.served += 1
                return PNG, "image/png"
        raise TransportError("connection refused")


def test_progress_counts_only_the_images_downloaded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    service = DiesMidway()
    urls = [f"https://a.test/{n}.png" for n in range(30)]
    result = download_all(service, urls, Cache(tmp_path), workers=1, clock=service.clock)
    assert len(result.saved) == 3 and len(result.failed) == 27
    progress = [
        record.getMessage().removeprefix("blogsvc: ")
        for record in caplog.records
        if "downloaded" in record.getMessage()
    ]
    assert progress, caplog.text
    for line in progress:
        done = int(line.split()[1])
        assert done <= 3, line  # never the failed ones counted as downloaded
        assert " of 30 images" in line
    assert any(line.startswith("downloaded 3 of 30 images, ") and " failed (" in line for line in progress), progress
