"""`mkdocs build` as a real process of its own, forked from one that has already imported MkDocs
and the plugin: for tests that start many builds to kill them (tests/e2e/test_chaos.py).

A fresh interpreter spends about a second importing MkDocs, its theme's dependencies and the
plugin before its build begins; twenty-one builds in a row spent most of their CPU there. The
forked build runs MkDocs' own command line (`mkdocs build -q -f CONFIG`) in a process of its own,
its output in `build.log` beside the config, and a SIGKILL sent to its pid kills that process
and nothing else. The parent of the forks is a separate, single-threaded interpreter started
for the purpose (not the test's process: that one runs the service in threads, and a fork of a
threaded process can inherit a lock held by another thread). `tests/server/counters_worker.py`
preloads through a multiprocessing forkserver, which is one per process and keeps the preload
of whichever test started it first; this one is its own.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path
from types import TracebackType

#: The forking process: imports what every build imports, then serves `start CONFIG` (fork a
#: build, answer its pid) and `wait PID` (reap it, answer its return code as `Popen` gives it:
#: `-N` for a signal) one line at a time on stdin and stdout.
FORKER = r"""
import os, sys
os.environ["NO_MKDOCS_2_WARNING"] = "1"
import mkdocs.__main__, mkdocs.commands.build, mkdocs.config.defaults, mkdocs.theme
import mkdocs_blogsvc.plugin
import markdown.extensions.toc, markdown.extensions.tables, markdown.extensions.fenced_code
reply = sys.stdout
for line in sys.stdin:
    command, _, argument = line.rstrip("\n").partition(" ")
    if command == "start":
        pid = os.fork()
        if pid == 0:
            log = os.open(os.path.join(os.path.dirname(argument), "build.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            code = 1
            try:
                mkdocs.__main__.cli.main(args=["build", "-q", "-f", argument], prog_name="mkdocs")
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        reply.write(f"{pid}\n")
    elif command == "wait":
        _, status = os.waitpid(int(argument), 0)
        reply.write(f"{os.waitstatus_to_exitcode(status)}\n")
    reply.flush()
"""


class BuildForker:
    """The forking process, started on entry and ended on exit."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", FORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )

    def __enter__(self) -> BuildForker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()  # the end of its input: it ends
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()

    def _ask(self, request: str, timeout: float) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"the forking process did not answer {request!r} within {timeout} s"
        answer = self.process.stdout.readline()
        assert answer, f"the forking process ended (exit code {self.process.poll()})"
        return int(answer)

    def start(self, config: Path) -> int:
        """Fork `mkdocs build -q -f CONFIG`; its pid (a process of its own: kill it by this pid)."""
        return self._ask(f"start {config}", timeout=60)

    def wait(self, pid: int, timeout: float) -> int:
        """The build's return code once it ends, as `subprocess.Popen.wait` gives it."""
        return self._ask(f"wait {pid}", timeout)
