"""The temp files of a killed writer are swept: a process that takes the cache's lock after a
holder that was killed (its `lock-held` mark still there) sweeps them, whatever the killed one
was writing; a clean holder leaves no mark, so no build pays for listing the cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mkdocs_blogsvc import cache as cache_module
from mkdocs_blogsvc.cache import HELD_NAME, Cache

STRAY = [
    ".manifest.json.0123456789abcdef.tmp",
    "docs/blog/posts/.a.md.0123456789abcdef.tmp",
    "images/.0a.png.0123456789abcdef.tmp",
    "articles/.0b.json.fedcba9876543210.tmp",
    ".outputs.pack.0123456789abcdef.tmp",
    ".serve-signal.json.0123456789abcdef.tmp",
]
FOREIGN = ["docs/blog/.draft.tmp", "images/.editor-swap.tmp", "notes.txt"]


def plant(root: Path, names: list[str]) -> list[Path]:
    paths = [root / name for name in names]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    return paths


def test_a_holder_leaves_no_mark_and_a_clean_hold_lists_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    swept: list[Cache] = []
    monkeypatch.setattr(Cache, "sweep_temp_files", swept.append)
    cache = Cache(tmp_path)
    with cache.locked():
        assert (tmp_path / HELD_NAME).is_file()
        with cache.locked():  # a nested hold (a build and its background sync share the lock)
            pass
        assert (tmp_path / HELD_NAME).is_file()
    assert not (tmp_path / HELD_NAME).exists() and swept == []
    with cache.locked():
        pass
    assert swept == []


def test_the_next_holder_after_a_killed_one_sweeps_its_temp_files(tmp_path: Path) -> None:
    """A real kill -9 of a process holding the lock with temp files half written."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from mkdocs_blogsvc.cache import Cache
        root = Path({str(tmp_path)!r})
        Cache(root).acquire()
        for name in {STRAY!r}:
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    killed = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    foreign = plant(tmp_path, FOREIGN)
    assert (tmp_path / HELD_NAME).is_file()
    cache = Cache(tmp_path)
    with cache.locked():
        assert not any((tmp_path / name).exists() for name in STRAY)
    assert all(path.exists() for path in foreign)
    assert not (tmp_path / HELD_NAME).exists()


def test_a_mark_that_cannot_be_made_does_not_stop_the_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith(HELD_NAME):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(cache_module.os, "open", refusing)
    with Cache(tmp_path).locked():
        pass
