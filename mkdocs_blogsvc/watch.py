"""Live updates under `mkdocs serve`: the background thread that runs the sync on a timer
(`Poller`, stepping `coordinator.SyncCoordinator.poll`), the files the server watches for the
plugin (`ServerWatches`), and warnings shown once (`WarnOnce`).

When that sync changed something it raises the cache's signal file (`Cache.raise_signal`),
which MkDocs' LiveReloadServer watches. Why a signal file of its own rather than the cache
manifest: the server rebuilds whenever a watched file changes, and a build itself rewrites the
manifest when the set of rendered pages changes (a new or deleted article), so watching the
manifest rebuilds twice per change. The signal file is written by the background sync only.

No MkDocs imports: the plugin adapts this to its hooks.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

_NUMBER = re.compile(r"\d+")
#: What a step waits while there is nothing to do until it is woken (switched off, stopping).
PAUSED = 3600.0


def warning_key(message: str) -> str:
    """What makes a repeated warning the same one: its text without its numbers."""
    return _NUMBER.sub("#", message)


class WarnOnce:
    """Logs each distinct warning once until `reset` (a poller must not repeat the same line
    every few seconds while the service is down). Warnings that differ only in their numbers
    are the same one: a rate-limited service's "retry after N seconds" counts down."""

    def __init__(self, warn: Callable[[str], object]) -> None:
        self._warn = warn
        self.seen: set[str] = set()

    def warn(self, message: str) -> None:
        key = warning_key(message)
        if key not in self.seen:
            self.seen.add(key)
            self._warn(message)

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

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the thread to end and wait `timeout` seconds for it, None: until the step in
        progress ends (a sync in flight ends at its deadline; the thread is a daemon, so it
        never keeps the process alive)."""
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
            except Exception as exc:
                self._on_crash(exc)
                delay = self._retry_after


class ServerWatches:
    """The files MkDocs' LiveReloadServer watches for the plugin: the custom templates (outside
    docs_dir) and the signal file the background sync raises. Thread-safe: the build's thread
    sets them (`watch`), the background sync renews the signal's watch when it died
    (`renew_signal`)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._watched: set[str] = set()
        self._signal: str | None = None
        self._signal_folder: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def ready(self) -> bool:
        """Whether the server watches for changes yet (a signal raised before would go unnoticed)."""
        observer = getattr(self.server, "observer", None)  # LiveReloadServer's watchdog observer
        return observer is None or bool(observer.is_alive())

    def watch(self, paths: set[str], signal: str | None) -> None:
        """Watch `paths` and `signal` (absolute), and no longer what is not among them (a
        template or `cache_dir` changed in mkdocs.yml); a signal whose watch died is watched
        again."""
        wanted = paths | ({signal} if signal is not None else set())
        with self._lock:
            renewed = {signal} if signal is not None and signal in self._watched and self._died(signal) else set()
            for path in sorted((self._watched - wanted) | renewed):
                self.server.unwatch(path)
            for path in sorted((wanted - self._watched) | renewed):
                self.server.watch(path)
            self._watched = wanted
            self._signal, self._signal_folder = signal, _folder_id(signal)

    def renew_signal(self, prepare: Callable[[], bool]) -> None:
        """Before each background sync: when the watch of the signal file died (the cache folder
        deleted while serving, as the troubleshooting page advises for a damaged cache),
        `prepare()` creates the file again (False: it cannot) and it is watched again, or the
        site would never rebuild for a change of the blog."""
        with self._lock:
            signal = self._signal
            if signal is None or not self._died(signal) or not prepare():
                return
            self.server.unwatch(signal)
            self.server.watch(signal)
            self._signal_folder = _folder_id(signal)

    def _died(self, signal: str) -> bool:
        """Whether the server's watch of the signal file ended (caller holds the lock): its
        folder is not the one watched, or the server's watchdog observer runs no live emitter
        for it. The observer's emitter stops for good when the folder it polls disappears, even
        for a moment; a folder created again may get the old inode number back (ext4 reuses a
        freed one at once), so the folder's identity alone cannot tell."""
        if _folder_id(signal) != self._signal_folder:
            return True
        observer = getattr(self.server, "observer", None)
        if observer is None or not observer.is_alive():
            return False  # not serving yet: the emitters start with the observer
        watched = {signal, os.path.dirname(signal)}  # watchdog polls a watched file's folder
        return not any(
            emitter.is_alive() and getattr(emitter.watch, "path", None) in watched
            for emitter in list(getattr(observer, "emitters", ()))
        )


def _folder_id(path: str | None) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the folder of `path`, None when it does not exist."""
    if path is None:
        return None
    try:
        found = os.stat(os.path.dirname(path))
    except OSError:
        return None
    return found.st_dev, found.st_ino
