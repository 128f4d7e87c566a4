"""How this copy of mkdocs-blogsvc was installed, for install hints that work as printed.

The package is installed from a clone (not from PyPI yet), so "pip install 'mkdocs-blogsvc[server]'"
would fail for most users. pip records where a package came from in the distribution's
`direct_url.json` (PEP 610): a folder (`file://`, `editable` for `pip install -e`), a VCS URL,
or nothing for an index. The hint repeats that source with the extra, run by this interpreter's
pip, so it installs into the environment that lacks the extra.
"""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from typing import Any
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "mkdocs-blogsvc"


def install_command(extra: str, *, direct_url: dict[str, Any] | None = None, python: str | None = None) -> str:
    """The shell command that adds `extra` to this installation (e.g. `server`, `demo`).

    `direct_url` and `python` are for tests; by default they are read from this installation.
    """
    source = _direct_url() if direct_url is None else direct_url
    pip = f"{shlex.quote(python or sys.executable)} -m pip install"
    folder = _folder(source)
    if folder is not None:
        path, editable = folder
        return f"{pip} {'-e ' if editable else ''}{shlex.quote(f'{path}[{extra}]')}"
    remote = _remote(source, with_commit=False)
    return f"{pip} {shlex.quote(f'{DISTRIBUTION}[{extra}]' + (f' @ {remote}' if remote else ''))}"


def requirement(version: str, *, direct_url: dict[str, Any] | None = None) -> str | None:
    """What another machine (a CI runner) installs to get this copy, as a PEP 508 requirement:
    the same release from the index, the same commit of the same repository, or the same
    archive; None when this copy came from a folder, which no other machine can reach.

    `direct_url` is for tests; by default it is read from this installation."""
    source = _direct_url() if direct_url is None else direct_url
    if _folder(source) is not None:
        return None
    remote = _remote(source, with_commit=True)
    return f"{DISTRIBUTION} @ {remote}" if remote else f"{DISTRIBUTION}=={version}"


def _folder(source: dict[str, Any]) -> tuple[str, bool] | None:
    """The folder this copy was installed from, and whether editably; None when not from one."""
    url = source.get("url")
    if not (isinstance(url, str) and url.startswith("file://")):
        return None
    dir_info = source.get("dir_info")
    return unquote(urlsplit(url).path), isinstance(dir_info, dict) and dir_info.get("editable") is True


def _remote(source: dict[str, Any], *, with_commit: bool) -> str | None:
    """Where pip fetched this copy (`git+URL`, with `@COMMIT` if asked, or an archive's URL);
    None when it came from an index (or a folder: see `_folder`)."""
    url = source.get("url")
    if not isinstance(url, str) or not url:
        return None
    vcs = source.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        pinned = with_commit and isinstance(commit, str) and commit
        return f"{vcs['vcs']}+{url}" + (f"@{commit}" if pinned else "")
    return url


def _direct_url() -> dict[str, Any]:
    """This distribution's PEP 610 record, or {} (installed from an index, or not installed).

    Every distribution of the name is asked: run from a clone's folder, Python also finds the
    clone's own `*.egg-info`, which has no record."""
    for distribution in metadata.distributions(name=DISTRIBUTION):
        text = distribution.read_text("direct_url.json")
        if not text:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {}
