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
    url = source.get("url") if isinstance(source, dict) else None
    if isinstance(url, str) and url.startswith("file://"):
        folder = unquote(urlsplit(url).path)
        editable = isinstance(source.get("dir_info"), dict) and source["dir_info"].get("editable") is True
        return f"{pip} {'-e ' if editable else ''}{shlex.quote(f'{folder}[{extra}]')}"
    vcs = source.get("vcs_info") if isinstance(source, dict) else None
    if isinstance(url, str) and isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        requirement = f"{DISTRIBUTION}[{extra}] @ {vcs['vcs']}+{url}"
        return f"{pip} {shlex.quote(requirement)}"
    if isinstance(url, str) and url:  # an archive URL
        return f"{pip} {shlex.quote(f'{DISTRIBUTION}[{extra}] @ {url}')}"
    return f"{pip} {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"


def requirement(version: str, *, direct_url: dict[str, Any] | None = None) -> str | None:
    """What another machine (a CI runner) installs to get this copy, as a PEP 508 requirement:
    the same release from the index, the same commit of the same repository, or the same
    archive; None when this copy came from a folder, which no other machine can reach.

    `direct_url` is for tests; by default it is read from this installation."""
    source = _direct_url() if direct_url is None else direct_url
    url = source.get("url") if isinstance(source, dict) else None
    if not isinstance(url, str) or not url:
        return f"{DISTRIBUTION}=={version}"
    if url.startswith("file://"):
        return None
    vcs = source.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return f"{DISTRIBUTION} @ {vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) and commit else "")
    return f"{DISTRIBUTION} @ {url}"


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
