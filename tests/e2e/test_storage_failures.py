"""Every failure reading or writing the credentials store or the cache is one line naming the
path and the fix, in `mkdocs build`, `mkdocs serve`, `sync`, `export` and `status`: a folder
this user cannot read or write, a file where a folder should be, a full disk.

The tests run as root, who may read and write anything: each command runs in a process of its
own as `nobody` (`setpriv`), on a site folder that `nobody` owns, as a build user would."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, free_port, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site

SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV or "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _nobody_can_import_this_checkout() -> bool:
    """Not when the checkout lies in a folder only root may enter (`mktemp -d` makes one)."""
    if os.geteuid() != 0 or SETPRIV is None:
        return False
    found = subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", "import mkdocs_blogsvc"], capture_output=True, check=False
    )
    return found.returncode == 0


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="drops privileges: needs root and setpriv"),
    pytest.mark.skipif(
        not _nobody_can_import_this_checkout(),
        reason="nobody cannot import this checkout: it lies in a folder only its owner may enter",
    ),
]


@pytest.fixture
def site_root() -> Iterator[Path]:
    """A site folder that `nobody` owns, outside root's private pytest folder (which nobody
    cannot enter)."""
    root = Path(tempfile.mkdtemp(prefix="blogsvc-storage-"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def give_to_nobody(root: Path) -> None:
    subprocess.run(["chown", "-R", "nobody:nogroup", str(root)], check=True)


def as_nobody(
    args: list[str], cwd: Path, *, file_size_limit: int | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # a full disk, as a process sees one: writes past the limit fail (EFBIG)
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HOME": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [*AS_NOBODY, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=limit,
    )


def serve_as_nobody(cwd: Path) -> tuple[int | None, str]:
    """`mkdocs serve` until it fails (its first build runs before it serves) or serves."""
    address = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HOME": str(cwd)}
    log = cwd / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*AS_NOBODY, sys.executable, "-m", "mkdocs", "serve", "-a", address],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while process.poll() is None and time.monotonic() < deadline:
            if "Serving on" in log.read_text(errors="replace"):
                break
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
    return process.returncode, log.read_text(errors="replace")


COMMANDS: dict[str, list[str]] = {
    "build": [sys.executable, "-m", "mkdocs", "build"],
    "sync": [sys.executable, "-m", "mkdocs_blogsvc", "sync"],
    "export": [sys.executable, "-m", "mkdocs_blogsvc", "export", "docs"],
    "status": [sys.executable, "-m", "mkdocs_blogsvc", "status"],
}


def unreadable(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    give_to_nobody(path)
    path.chmod(0)


def read_only(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    give_to_nobody(path)
    path.chmod(0o500)


def a_file(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a file where a folder should be\n")


#: (the folder that is broken, relative to the site; how; what the line must say besides its path)
CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "credentials-unreadable": (".blogsvc", unreadable, "permission"),
    "credentials-a-file": (".blogsvc", a_file, "not a folder"),
    "cache-unreadable": (".cache/blogsvc", unreadable, "permission"),
    "cache-a-file": (".cache/blogsvc", a_file, "not a folder"),
    "cache-read-only": (".cache", read_only, "permission"),
}


def make_site(root: Path, service: Service, db: Database, owner: Owner) -> Path:
    add_article(db, owner.blog_id, "One")
    write_site(root, service.url, material=False, plugin={"credentials_file": ".blogsvc/credentials.json"})
    write_credentials(root / ".blogsvc" / "credentials.json", service.url, issue_access_token(db, owner))
    give_to_nobody(root)
    return root


def problem(name: str, code: int | None, output: str, path: Path, also: str) -> str | None:
    """What is wrong with a command's answer (None: one line naming `path`, saying `also`)."""
    last = output.strip().splitlines()[-1:] or [""]
    if code in (None, 0):
        return f"{name}: exit status {code}: {last[0]}"
    if "Traceback" in output:
        return f"{name}: a traceback ending {last[0]}"
    lines = [line for line in output.splitlines() if str(path) in line]
    if not lines or also not in lines[0].lower():
        return f"{name}: no line naming {path} and saying {also!r}: {output.strip()[-400:]}"
    if re.search(r"svc_(at|rt)_", output):
        return f"{name}: a token was printed"
    return None


@pytest.mark.parametrize("case", CASES)
def test_a_broken_folder_is_one_line_naming_it_in_every_command(
    site_root: Path, service: Service, db: Database, owner: Owner, case: str
) -> None:
    where, breaks, says = CASES[case]
    make_site(site_root, service, db, owner)
    breaks(site_root / where)
    problems = []
    for name, command in COMMANDS.items():
        if name == "status" and where.startswith(".cache"):
            continue  # status reads no cache
        result = as_nobody(command, site_root)
        problems.append(problem(name, result.returncode, result.stdout + result.stderr, site_root / where, says))
    code, output = serve_as_nobody(site_root)
    problems.append(problem("serve", code, output, site_root / where, says))
    assert not [p for p in problems if p], "\n".join(p for p in problems if p)


def test_a_full_disk_is_one_line_naming_the_cache(
    site_root: Path, service: Service, db: Database, owner: Owner
) -> None:
    make_site(site_root, service, db, owner)
    problems = []
    for name, command in COMMANDS.items():
        if name == "status":
            continue
        shutil.rmtree(site_root / ".cache", ignore_errors=True)
        result = as_nobody(command, site_root, file_size_limit=64)
        problems.append(
            problem(name, result.returncode, result.stdout + result.stderr, site_root / ".cache" / "blogsvc", "space")
        )
    assert not [p for p in problems if p], "\n".join(p for p in problems if p)


def test_a_read_only_credentials_folder_is_one_line_when_a_refresh_or_login_must_write(
    site_root: Path,
    service: Service,
    db: Database,
    owner: Owner,
) -> None:
    make_site(site_root, service, db, owner)
    # an expired access token: the next call refreshes, under the lock file beside the store
    write_credentials(
        site_root / ".blogsvc" / "credentials.json", service.url, issue_access_token(db, owner), valid_for=-10
    )
    read_only(site_root / ".blogsvc")
    problems = []
    for name, command in {
        **COMMANDS,
        "login": [sys.executable, "-m", "mkdocs_blogsvc", "login", "--no-browser", "--timeout", "5"],
    }.items():
        result = as_nobody(command, site_root)
        problems.append(
            problem(name, result.returncode, result.stdout + result.stderr, site_root / ".blogsvc", "permission")
        )
    assert not [p for p in problems if p], "\n".join(p for p in problems if p)
