"""Live updates under `mkdocs serve`: the background thread that runs the sync on a timer
(`Poller`, stepping `coordinator.SyncCoordinator.poll`), and warnings shown once (`WarnOnce`).

When that sync changed something it raises the cache's signal file (`Cache.raise_signal`),
which MkDocs' LiveReloadServer watches. Why a signal file of its own rather than the cache
manifest: the server rebuilds whenever a watched file changes, and a build itself rewrites the
manifest when the set of rendered pages changes (a new or deleted article), so watching the
manifest rebuilds twice per change. The signal file is written by the background sync only.

No MkDocs imports: the plugin adapts this to its hooks.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

_NUMBER = re.compile(r"\d+")


def warning_key(message: str) -> str:
    """What makes a repeated warning the same one: its text without its numbers."""
    return _NUMBER.sub("#", message)


class WarnOnce:
    """Logs each distinct warning once until `reset` (a poller must not repeat the same line
    every few seconds while the service is down). Warnings that differ only in their numbers
    are the same one: a rate-limited service's "retry after N seconds" counts down."""

    def __init__(self, log: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        self.log = log
        self.seen: set[str] = set()

    def warn(self, message: str) -> None:
        key = warning_key(message)
        if key not in self.seen:
            self.seen.add(key)
            self.log.warning(message)

    def reset(self) -> bool:
        """Forget what was shown; True when something had been (the problem is gone)."""
        had = bool(self.seen)
        self.seen.clear()
        return had


class Poller:
    """Calls `step` in a daemon thread until `stop`; `step` returns the seconds to wait before
    the next call, which `wake` cuts short (new settings: the wait may be shorter now). The
    first call waits until `ready()` is true (the server watches for changes: a signal raised
    before that would go unnoticed)."""

    def __init__(
        self,
        step: Callable[[], float],
        *,
        ready: Callable[[], bool] = lambda: True,
        on_crash: Callable[[Exception], None],
        retry_after: float = 5.0,
        name: str,
    ) -> None:
        self._step = step
        self._retry_after = retry_after
        self._ready = ready
        self._on_crash = on_crash
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by `stop` too
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to end and wait a little (a sync in flight ends at its HTTP timeout;
        the thread is a daemon, so it never keeps the process alive)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wake(self) -> None:
        """Call `step` now rather than at the end of the wait it asked for."""
        self._wake.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        deadline = time.monotonic() + 30
        while not self._ready() and time.monotonic() < deadline:
            if self._stop.wait(0.1):
                return
        delay = 0.0
        while True:
            self._wake.wait(delay)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                delay = self._step()
            except Exception as exc:  # noqa: BLE001  (the thread must outlive any failure: report, go on)
                self._on_crash(exc)
                delay = self._retry_after
