"""The background sync of `mkdocs serve` for one plugin instance: what the server watches
(the custom templates, the signal file) and the poller that syncs every sync_interval.

Why a module of its own: it lives across rebuilds and follows edits of mkdocs.yml (switched
on, switched off, another cache), which is state `plugin.py` should only hand over.
"""

from __future__ import annotations

import os
from typing import Any

from mkdocs_blogsvc import watch
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.coordinator import SyncCoordinator
from mkdocs_blogsvc.errors import CacheUnwritable
from mkdocs_blogsvc.logs import log


class BackgroundSync:
    """Created in on_serve (MkDocs calls it once, with live reload on); kept even while the
    plugin is switched off, since mkdocs.yml may switch it on again."""

    def __init__(self, server: Any, coordinator: SyncCoordinator) -> None:
        self.watches = watch.ServerWatches(server)
        self.coordinator = coordinator
        self.poller: watch.Poller | None = None

    def watch_paths(self) -> None:
        """Have the server watch the current custom templates and signal file."""
        settings, coordinator = self.coordinator.settings, self.coordinator
        templates = {
            os.path.abspath(template)
            for template in (settings.page_template, settings.head_template)
            if template is not None
        }
        signal = None
        if _syncs_in_background(settings):
            try:
                signal = os.path.abspath(coordinator.cache.prepare_signal())
            except CacheUnwritable as exc:
                log.warning(
                    f"{exc}; no background sync: articles changed on the service appear at the first "
                    "rebuild after sync_interval"
                )
        self.watches.watch(templates, signal)

    def start(self, enabled: bool) -> None:
        """Start the background sync unless it runs or the settings keep it off. Called once
        serving and after each build, never before the build's own sync, which a background sync
        found due at the same moment would race (the site would rebuild twice)."""
        settings, coordinator, watches = self.coordinator.settings, self.coordinator, self.watches
        if self.poller is not None or not enabled or not _syncs_in_background(settings):
            return

        def prepared() -> bool:
            try:
                coordinator.cache.prepare_signal()
            except CacheUnwritable:
                return False  # the sync that follows says so
            return True

        def step() -> float:
            if coordinator.settings.enabled:
                watches.renew_signal(prepared)
            return coordinator.poll()

        self.poller = watch.Poller(
            step, ready=watches.ready, on_crash=coordinator.poll_crashed, name=f"blogsvc-sync-{settings.blog_dir}"
        )
        self.poller.start()
        log.info(f"checking {settings.base_url} for changes every {settings.sync_interval} s")

    def wake(self) -> None:
        """After a rebuild: new settings count from now on (a shorter sync_interval, switched on)."""
        if self.poller is not None:
            self.poller.wake()

    def stop(self) -> None:
        if self.poller is not None:
            self.poller.stop()
            self.poller = None


def _syncs_in_background(settings: Settings) -> bool:
    return not settings.offline and settings.sync_interval > 0
