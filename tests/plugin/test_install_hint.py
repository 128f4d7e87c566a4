"""The install hint for a missing extra repeats how this copy was installed (PEP 610), so it
works as printed for a user who installed from a clone (the package is not on PyPI yet)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mkdocs_blogsvc.installed import install_command, requirement

PYTHON = "/home/me/site/.venv/bin/python"


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (
            {"url": "file:///home/me/mkdocs-blogsvc", "dir_info": {"editable": True}},
            f"{PYTHON} -m pip install -e '/home/me/mkdocs-blogsvc[server]'",
        ),
        (
            {"url": "file:///home/me/my%20clones/mkdocs-blogsvc", "dir_info": {}},
            f"{PYTHON} -m pip install '/home/me/my clones/mkdocs-blogsvc[server]'",
        ),
        (
            {"url": "https://github.com/example/mkdocs-blogsvc.git", "vcs_info": {"vcs": "git", "commit_id": "abc"}},
            f"{PYTHON} -m pip install 'mkdocs-blogsvc[server] @ git+https://github.com/example/mkdocs-blogsvc.git'",
        ),
        (
            {"url": "https://example.com/mkdocs_blogsvc-0.1.tar.gz", "archive_info": {}},
            f"{PYTHON} -m pip install 'mkdocs-blogsvc[server] @ https://example.com/mkdocs_blogsvc-0.1.tar.gz'",
        ),
        ({}, f"{PYTHON} -m pip install 'mkdocs-blogsvc[server]'"),
    ],
    ids=["editable-clone", "clone-folder", "git-url", "archive", "index"],
)
def test_the_hint_repeats_the_source_of_the_installation(direct_url: dict[str, object], expected: str) -> None:
    assert install_command("server", direct_url=direct_url, python=PYTHON) == expected


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        ({"url": "file:///home/me/mkdocs-blogsvc", "dir_info": {"editable": True}}, None),
        ({"url": "file:///home/me/mkdocs-blogsvc", "dir_info": {}}, None),
        (
            {"url": "https://github.com/example/mkdocs-blogsvc.git", "vcs_info": {"vcs": "git", "commit_id": "abc"}},
            "mkdocs-blogsvc @ git+https://github.com/example/mkdocs-blogsvc.git@abc",
        ),
        (
            {"url": "https://example.com/mkdocs_blogsvc-0.1.tar.gz", "archive_info": {}},
            "mkdocs-blogsvc @ https://example.com/mkdocs_blogsvc-0.1.tar.gz",
        ),
        ({}, "mkdocs-blogsvc==1.2.3"),
    ],
    ids=["editable-clone", "clone-folder", "git-url", "archive", "index"],
)
def test_another_machine_installs_the_same_release_or_commit(
    direct_url: dict[str, object], expected: str | None
) -> None:
    """What `new`'s CI workflow installs: only a folder is out of another machine's reach (None)."""
    assert requirement("1.2.3", direct_url=direct_url) == expected


def test_this_installation_is_named_as_it_was_made() -> None:
    """The test environment is an editable install of this clone (`pip install -e ".[test]"`)."""
    clone = Path(__file__).resolve().parents[2]
    assert (
        install_command("server")
        == f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(f'{clone}[server]')}"
    )


BLOCK_FLASK = "import sys; sys.modules['flask'] = None; from mkdocs_blogsvc.cli import main; main()"


@pytest.mark.slow
def test_a_missing_server_extra_prints_a_command_pip_accepts(tmp_path: Path) -> None:
    """Without Flask, `server run` says what to install; pip resolves that command (dry run)."""
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_FLASK, "server", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    prefix = "Error: the reference service needs the [server] extra (flask is missing): install it with "
    assert line.startswith(prefix)
    command = shlex.split(line[len(prefix) :])
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    dry_run = subprocess.run(
        [*command[:4], "--dry-run", "--no-deps", "-q", *command[4:]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert dry_run.returncode == 0, dry_run.stderr
