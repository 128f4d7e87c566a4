"""`mkdocs-blogsvc demo --serve` as a process: it serves the example site, and a SIGTERM or
Ctrl-C sent to the demo alone stops everything it started (nothing left listening, no
temporary folder)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import DEFAULT_SIGINT_THEN_EXEC, free_port

REPO = Path(__file__).resolve().parents[2]


IGNORE_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])"
)


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid` (Linux's /proc children lists), each with its start time (the
    22nd field of its stat line), so that a pid reused later is not taken for it."""
    found: dict[int, str] = {}
    pending = [pid]
    while pending:
        parent = pending.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            for child in map(int, children.read_text().split()):
                if (started := start_time(child)) is not None:
                    found[child] = started
                    pending.append(child)
    return found


def start_time(pid: int) -> str | None:
    """The start time of a live process (None: gone, or a zombie nobody reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if fields[0] != "Z" else None


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop_signal", "sigint_ignored"),
    [
        (signal.SIGTERM, False),
        (signal.SIGINT, False),
        # found by review: started in the background by a shell, which leaves SIGINT ignored, the
        # demo's `mkdocs serve` ignored the SIGINT passed on and was killed 15 s later
        (signal.SIGTERM, True),
    ],
    ids=["SIGTERM", "SIGINT", "SIGTERM-background"],
)
def test_a_signal_to_the_demo_alone_stops_mkdocs_serve_and_the_service_and_removes_its_folder(
    tmp_path: Path,
    stop_signal: signal.Signals,
    sigint_ignored: bool,
) -> None:
    folder = tmp_path / "example-site"
    shutil.copytree(REPO / "example-site", folder, ignore=shutil.ignore_patterns("site", ".cache", ".blogsvc"))
    address = f"127.0.0.1:{free_port()}"
    log_path = tmp_path / "demo.log"
    temp = tmp_path / "tmp"  # mkdocs serve builds into a folder of its own here, removed when it stops
    temp.mkdir()
    with log_path.open("wb") as log:  # a file: a full pipe would block the demo
        command = [
            sys.executable,
            "-m",
            "mkdocs_blogsvc",
            "demo",
            "--serve",
            "-a",
            address,
            "-f",
            str(folder / "mkdocs.yml"),
        ]
        # `command &` in a shell script ignores SIGINT (kept across exec); a terminal's foreground
        # job has it at its default, whatever this suite was started from
        starter = IGNORE_SIGINT_THEN_EXEC if sigint_ignored else DEFAULT_SIGINT_THEN_EXEC
        command = [sys.executable, "-c", starter, *command]
        demo = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "TMPDIR": str(temp)},
        )
    try:
        deadline = time.monotonic() + 180
        while not answers(f"http://{address}/blog/") and time.monotonic() < deadline:
            assert demo.poll() is None, log_path.read_text(errors="replace")
            time.sleep(0.5)
        assert answers(f"http://{address}/blog/"), log_path.read_text(errors="replace")
        service_folder = re.search(r"--db (\S+)/\S+ add-article", log_path.read_text(errors="replace"))
        assert service_folder is not None and Path(service_folder.group(1)).is_dir()
        started = descendants(demo.pid)  # mkdocs serve among them
        assert started, "the demo runs mkdocs serve as a process of its own"

        demo.send_signal(stop_signal)  # to the demo only, as `kill` sends it
        try:  # mkdocs serve first ends a rebuild in progress (the demo's edits start one)
            code = demo.wait(timeout=150)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"the demo did not stop within 150 s of {stop_signal.name}:\n{log_path.read_text(errors='replace')}"
            )
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    output = log_path.read_text(errors="replace")
    assert code == 0, output
    assert "Traceback" not in output
    # what the demo started is gone (the address itself may already serve another test's server:
    # the suite runs on parallel workers, and a freed port can be handed out again at once)
    left = [pid for pid, started_at in started.items() if start_time(pid) == started_at]
    assert not left, f"processes the demo started still run: {left}"
    assert not Path(service_folder.group(1)).exists(), "the demo's temporary folder is left"
    assert not list(temp.glob("mkdocs_*")), "mkdocs serve was killed rather than stopped: its build folder is left"


@pytest.mark.parametrize("address", ["foo", "127.0.0.1:", ":8001", "127.0.0.1:99999", "127.0.0.1:eighty"])
def test_a_malformed_dev_addr_stops_the_demo_before_anything_starts_with_one_line(address: str) -> None:
    """Found by review: `--dev-addr foo` gave Python's "invalid literal for int()" and told the
    user to stop what uses the address."""
    from click.testing import CliRunner

    from mkdocs_blogsvc.cli import main

    result = CliRunner().invoke(main, ["demo", "--serve", "--dev-addr", address])
    assert result.exit_code == 2, result.output  # a usage error, as every malformed option (found by review)
    assert result.output.startswith("Usage: ")
    assert result.output.endswith(
        f"Error: Invalid value for '-a' / '--dev-addr': must be HOST:PORT, such as 127.0.0.1:8001, not {address!r}\n"
    )
