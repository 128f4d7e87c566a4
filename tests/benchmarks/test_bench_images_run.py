"""`bench_images.py` still runs against the plugin as it is: two articles, one no-change build
each; what is checked is what it claims to measure (variants made once, the bytes a browser
gets), never a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("bench_images.py")


def test_bench_images_reports_both_settings() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--articles", "2", "--runs", "1"],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        cwd=SCRIPT.parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith(("false ", "true "))}
    assert rows["false"][-1] == "0" and rows["true"][-1] == "6"  # 3 widths of each 1600 px cover
    original, small, large = float(rows["false"][-3]), float(rows["true"][-3]), float(rows["true"][-2])
    assert small < large <= original / 2
