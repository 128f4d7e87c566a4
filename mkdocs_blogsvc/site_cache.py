"""The plugin's cache as a build and the background sync share it: the locks, when the last
sync was, the sync itself.

Why a module of its own: this is the part of the plugin with real decisions in it (when a
sync is due, what a failed sync means for the build, how the background sync of `mkdocs serve`
stays out of a build's way), and it must be callable without running MkDocs. `plugin.py`
only adapts it to the hooks: `begin_build` in on_pre_build, `end_build` in on_post_build and
on_build_error, `poll` as the step of `watch.Poller`. No MkDocs imports here (`config.Settings`
is a plain dataclass, though its module defines the MkDocs config schema too).

The locks are held from `begin_build` to `end_build`, that is from on_pre_build to the end of
the build (MkDocs reads the pages and copies the images long after on_files): a threading lock
against the background sync of this process, then `sync.CacheLock` (a file lock) against other
processes (another build, `mkdocs-blogsvc sync` or `export`). So nothing changes files a build
is reading.

Failures of the service follow `on_error`: `warn` logs a warning and builds from the cache,
`fail` raises `SyncFailed`. Failures that cannot heal by themselves (credentials,
configuration) always propagate.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from mkdocs_blogsvc import credentials, watch
from mkdocs_blogsvc.api import redact
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.errors import BlogServiceError, ConfigurationError, CredentialsError
from mkdocs_blogsvc.sync import CacheLock, CacheState, SyncReport, read_cache, sync_cache


class SyncFailed(BlogServiceError):
    """The sync of a build failed and `on_error: fail` says the build must stop."""


class SiteCache:
    """The cache of one plugin instance, kept across `mkdocs serve` rebuilds.

    `settings` is replaced at each rebuild (mkdocs.yml may have changed); the locks and
    `last_sync_attempt` stay. Log lines go to `log` (the plugin's, so they read "blogsvc: ...").
    """

    def __init__(self, settings: Settings, log: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
        self.settings = settings
        self.log = log
        #: monotonic time of the last sync attempt, the build's or the background one's.
        self.last_sync_attempt: float | None = None
        #: held by a build from `begin_build` to `end_build`, and by each background sync;
        #: the file lock (`_held_file_lock`, other processes) is always taken after it.
        self.lock = threading.Lock()
        self._holds_lock = False
        self._held_file_lock: CacheLock | None = None
        self._poll_errors = watch.WarnOnce(log)  # reset when a background sync succeeds
        self._poll_notices = watch.WarnOnce(log)  # never reset: shown once per `mkdocs serve`

    def begin_build(self, is_serve: bool) -> tuple[CacheState, SyncReport, str]:
        """Take both locks, read the cache and sync if due; returns the cache, what changed and
        the reason a sync was skipped ("" when it ran).

        Raises `CacheBusy` (another process kept the cache), `CredentialsError`,
        `ConfigurationError`, `SyncFailed` (`on_error: fail`) or `OSError` (the cache cannot be
        written). Whatever happened, `end_build` releases the locks (MkDocs calls on_build_error
        after a failed on_pre_build)."""
        settings = self.settings
        self.end_build()  # still held only if the previous build was interrupted (Ctrl-C)
        self.lock.acquire()
        self._holds_lock = True
        file_lock = CacheLock(settings.cache_dir)
        file_lock.acquire()  # raises CacheBusy after sync.LOCK_TIMEOUT
        self._held_file_lock = file_lock
        return self._sync_if_due(read_cache(settings.cache_dir), is_serve)

    def end_build(self) -> None:
        """Release what `begin_build` took (nothing when it took nothing)."""
        if self._held_file_lock is not None:
            self._held_file_lock.release()
            self._held_file_lock = None
        if self._holds_lock:
            self._holds_lock = False
            self.lock.release()

    def _seconds_until_due(self, settings: Settings) -> float:
        if self.last_sync_attempt is None:
            return 0.0
        return self.last_sync_attempt + settings.sync_interval - time.monotonic()

    def _sync_if_due(self, state: CacheState, is_serve: bool) -> tuple[CacheState, SyncReport, str]:
        """Sync unless offline or (under `mkdocs serve`) synced less than sync_interval ago."""
        settings = self.settings
        cached = SyncReport(unchanged=len(state.articles))
        if settings.offline:
            return state, cached, " (offline: built from the cache)"
        if is_serve and self._seconds_until_due(settings) > 0:
            return state, cached, f" (synced less than {settings.sync_interval} s ago: built from the cache)"
        self.last_sync_attempt = time.monotonic()
        try:
            state, report = self._sync(settings, state, warn=self.log.warning)
        except (CredentialsError, ConfigurationError):
            # Not a passing outage: no later build can succeed until someone logs in again or
            # fixes the setting, so `on_error: warn` does not apply.
            raise
        except BlogServiceError as exc:
            if settings.on_error == "fail":
                raise SyncFailed(f"blogsvc: the sync with {settings.base_url} failed: {exc}") from exc
            self.log.warning(
                f"the sync with {settings.base_url} failed ({exc}); the site is built from the cache "
                f"({len(state.articles)} articles). Set on_error: fail to stop the build instead"
            )
            return state, cached, " (sync failed: built from the cache)"
        return state, report, ""

    def _sync(
        self, settings: Settings, state: CacheState | None, *, warn: Callable[[str], object]
    ) -> tuple[CacheState, SyncReport]:
        """One sync into the cache, the build's and the background one alike. The caller holds
        the cache locks. Raises `BlogServiceError` (cache untouched) or `OSError`."""
        with credentials.open_client(settings) as client:
            tokens = client.tokens
            if isinstance(tokens, credentials.TokenManager):
                expires = tokens.refresh_expires_soon()
                if expires is not None:
                    warn(
                        f"the stored refresh token expires on {expires:%Y-%m-%d %H:%M} UTC; run "
                        "`mkdocs-blogsvc login` before then (the credentials cannot be renewed afterwards)"
                    )
            return sync_cache(settings.cache_dir, client, download_images=settings.download_images, state=state)

    def poll(self) -> float:
        """One round of the background sync under `mkdocs serve`; returns the seconds to wait.

        It syncs when sync_interval has passed since the last attempt (the build's or its own),
        under both cache locks; when something changed it raises the signal file, and the rebuild
        that follows finds the sync recent and builds from the cache.
        """
        settings = self.settings
        if not settings.enabled or settings.offline or settings.sync_interval <= 0:
            return 1.0  # switched off in mkdocs.yml while serving: look again soon
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait
        if not self.lock.acquire(timeout=1.0):
            return 0.0  # a build is running: sync when it is done
        try:
            file_lock = CacheLock(settings.cache_dir)
            if not file_lock.try_acquire(timeout=1.0):
                return 1.0  # another process (a build, `mkdocs-blogsvc sync`) uses the cache
            try:
                return self._poll_locked(settings)
            finally:
                file_lock.release()
        except OSError as exc:  # the cache folder cannot be created
            return self._poll_cannot_write(settings, exc)
        finally:
            self.lock.release()

    def _poll_locked(self, settings: Settings) -> float:
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait  # the build that just ended synced
        self.last_sync_attempt = time.monotonic()
        try:
            _, report = self._sync(settings, None, warn=self._poll_notices.warn)
        except BlogServiceError as exc:
            self._poll_errors.warn(
                f"the background sync with {settings.base_url} failed ({exc}); the site keeps the "
                f"articles of the last sync; trying again every {settings.sync_interval} s"
            )
            return settings.sync_interval
        except OSError as exc:
            return self._poll_cannot_write(settings, exc)
        if self._poll_errors.reset():
            self.log.info(f"the background sync with {settings.base_url} works again")
        if report.new or report.updated or report.deleted:
            watch.raise_signal(settings.cache_dir, report.summary())
            self.log.info(report.summary() + " (background sync: rebuilding the site)")
        return settings.sync_interval

    def _poll_cannot_write(self, settings: Settings, exc: OSError) -> float:
        self._poll_errors.warn(
            f"the background sync cannot write the cache in {settings.cache_dir} "
            f"({exc.strerror or exc}); trying again every {settings.sync_interval} s"
        )
        return float(settings.sync_interval)

    def poll_crashed(self, exc: Exception) -> None:
        """`watch.Poller`'s on_crash: one warning per distinct unexpected failure of `poll`."""
        self._poll_errors.warn(
            f"the background sync failed unexpectedly ({type(exc).__name__}: {redact(str(exc))[:300]}); "
            "trying again in a few seconds"
        )
