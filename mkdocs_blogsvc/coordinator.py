"""When the plugin syncs, and what a failed sync means: the builds and the background sync of
one plugin instance, coordinated over its cache (`SyncCoordinator`).

Why a module of its own: this is the part of the plugin with real decisions in it (when a
sync is due, what a failed sync means for the build, how the background sync of `mkdocs serve`
stays out of a build's way), and it must be callable without running MkDocs. `plugin.py`
only adapts it to the hooks: `begin_build` in on_pre_build, `end_build` in on_post_build and
on_build_error, `poll` as the step of `watch.Poller`. No MkDocs lifecycle here.

The locks are held from `begin_build` to `end_build`, that is from on_pre_build to the end of
the build (MkDocs reads the pages and copies the images long after on_files): a threading lock
against the background sync of this process, then the cache's cross-process lock
(`Cache.acquire`) against other processes (another build, `mkdocs-blogsvc sync` or `export`).
So nothing changes files a build is reading.

Failures of the service follow `on_error` (`access.sync_failure_stops`): a warning and a build
from the cache, or `SyncFailed` (`fail`; `auto` in CI with nothing cached). Failures that
cannot heal by themselves (credentials, configuration, an unwritable cache) always propagate.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from mkdocs_blogsvc import access, connection, watch
from mkdocs_blogsvc.cache import Cache, CacheContents
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.errors import (
    BlogServiceError,
    CacheUnwritable,
    ConfigurationError,
    CredentialsError,
    InsufficientScope,
    InvalidClient,
    SyncFailed,
)
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.redaction import redact
from mkdocs_blogsvc.shared import counted
from mkdocs_blogsvc.sync import SyncReport, ever_synced, sync_cache

#: What `poll` waits while the background sync is switched off in mkdocs.yml (a rebuild wakes it).
PAUSED = watch.PAUSED


class SyncCoordinator:
    """The syncs of one plugin instance, kept across `mkdocs serve` rebuilds.

    `settings` is replaced at each rebuild (mkdocs.yml may have changed; `cache` follows its
    `cache_dir`); the threading lock stays, and so does `last_sync_attempt` unless the cache
    changed.
    """

    def __init__(
        self,
        settings: Settings,
        config_file: str | None = None,
        *,
        connect: Callable[[Settings], connection.Connection] | None = None,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        """`connect`, `clock` (monotonic seconds) and `environ` are the seams tests replace: a
        connection over `httpx.MockTransport`, a clock they move, an environment with or without CI."""
        self.settings = settings
        self._connect = connect
        self._clock = clock
        self._environ = environ
        self.cache = Cache(settings.cache_dir)
        #: mkdocs.yml, and its modification time when `settings` were read from it.
        self._read_from = _modified(config_file)
        #: monotonic time of the last sync attempt, the build's or the background one's.
        self.last_sync_attempt: float | None = None
        #: set when the settings name another cache, until the next build begins: the background
        #: sync waits for that build's own sync (see `poll`).
        self._cache_awaits_build = False
        #: held by a build from `begin_build` to `end_build`, and by each background sync;
        #: the cache's file lock (other processes) is always taken after it.
        self.lock = threading.Lock()
        self._holds_lock = False
        self._held_cache: Cache | None = None
        self._poll_errors = watch.WarnOnce(log.warning)  # reset when a background sync succeeds
        self._poll_notices = watch.WarnOnce(log.warning)  # never reset: shown once per `mkdocs serve`

    def update(self, settings: Settings, config_file: str | None = None) -> None:
        """New settings at a `mkdocs serve` rebuild (mkdocs.yml may have changed)."""
        self.settings = settings
        self._read_from = _modified(config_file)
        if settings.cache_dir != self.cache.root:  # another cache: its first build syncs
            self.cache = Cache(settings.cache_dir)
            self.last_sync_attempt = None
            self._cache_awaits_build = True

    def switch_off(self, config_file: str | None = None) -> None:
        """`enabled: false` set in mkdocs.yml while serving: the background sync pauses until a
        rebuild brings settings that switch it on (and then wakes it, see `poll`)."""
        self.settings = replace(self.settings, enabled=False)
        self._read_from = _modified(config_file)

    def _settings_outdated(self) -> bool:
        """Whether mkdocs.yml changed after the settings were read from it. The rebuild that
        reads it brings new settings and wakes the background sync; when the plugin was taken
        out of mkdocs.yml, no rebuild ever does, and the background sync stays paused rather
        than sync and rebuild for a blog the site no longer shows."""
        return self._read_from is not None and _modified(self._read_from[0]) != self._read_from

    def begin_build(self, is_serve: bool) -> tuple[CacheContents, SyncReport, str]:
        """Take both locks, read the cache and sync if due; returns the cache, what changed and
        the reason a sync was skipped ("" when it ran).

        Raises `CacheBusy` (another process kept the cache), `CacheUnwritable`,
        `CredentialsError`, `ConfigurationError` or `SyncFailed` (`on_error: fail`). Whatever
        happened, `end_build` releases the locks (MkDocs calls on_build_error after a failed
        on_pre_build)."""
        self.end_build()  # still held only if the previous build was interrupted (Ctrl-C)
        self.lock.acquire()
        self._holds_lock = True
        self._cache_awaits_build = False  # this build syncs the cache if due; the poller follows it
        cache = self.cache
        cache.acquire()  # CacheBusy after cache.LOCK_TIMEOUT
        self._held_cache = cache
        return self._sync_if_due(cache, cache.read(), is_serve)

    def end_build(self) -> None:
        """Release what `begin_build` took (nothing when it took nothing)."""
        if self._held_cache is not None:
            self._held_cache.release()
            self._held_cache = None
        if self._holds_lock:
            self._holds_lock = False
            self.lock.release()

    def _seconds_until_due(self, settings: Settings) -> float:
        if self.last_sync_attempt is None:
            return 0.0
        return self.last_sync_attempt + settings.sync_interval - self._clock()

    def _sync_if_due(
        self, cache: Cache, contents: CacheContents, is_serve: bool
    ) -> tuple[CacheContents, SyncReport, str]:
        """Sync unless offline or (under `mkdocs serve`) a sync was tried less than sync_interval ago."""
        settings = self.settings
        cached = SyncReport(unchanged=len(contents.articles))
        if settings.offline:
            if not ever_synced(contents):  # a fresh CI runner, a new clone: say so (`--strict` stops)
                log.warning(
                    "offline is true and the cache holds no article, so the blog's articles are left out of "
                    "this build; set offline: false to sync them (in CI, restore .cache/ as the CI recipe does)"
                )
            return contents, cached, " (offline: built from the cache)"
        if not access.has_credentials(settings, self._environ):
            # A contributor or a fork's pull request: warn and build without the blog (or from
            # the cache); in CI, or with on_missing_credentials: fail, stop (NotLoggedIn).
            log.warning(access.build_without(settings, len(contents.articles), self._environ))
            reason = "built from the cache" if contents.articles else "built without the blog"
            return contents, cached, f" (no credentials: {reason})"
        if is_serve and self._seconds_until_due(settings) > 0:
            return (
                contents,
                cached,
                f" (last sync attempt less than {settings.sync_interval} s ago: built from the cache)",
            )
        self.last_sync_attempt = self._clock()
        try:
            contents, report = self._sync(settings, cache, contents, warn=log.warning)
        except (CredentialsError, ConfigurationError, CacheUnwritable):
            # Not a passing outage: no later build can succeed until someone logs in again,
            # fixes the setting or the folder, so `on_error: warn` does not apply.
            raise
        except (InvalidClient, InsufficientScope) as exc:
            # The service refuses this client or this connection's scope: a setting to fix, not
            # an outage to wait out, so this stops the build too.
            raise ConfigurationError(f"the sync with {settings.base_url} failed: {exc}") from None
        except BlogServiceError as exc:
            stops = access.sync_failure_stops(settings, ever_synced(contents), self._environ)
            if stops is not None:
                raise SyncFailed(f"the sync with {settings.base_url} failed: {exc}; {stops}") from exc
            log.warning(
                f"the sync with {settings.base_url} failed ({exc}); the site is built from the cache "
                f"({counted(len(contents.articles), 'article')}). Set on_error: fail to stop the build instead"
            )
            return contents, cached, " (sync failed: built from the cache)"
        return contents, report, ""

    def _sync(
        self, settings: Settings, cache: Cache, contents: CacheContents | None, *, warn: Callable[[str], object]
    ) -> tuple[CacheContents, SyncReport]:
        """One sync into `cache`, the build's and the background one alike. The caller holds
        its locks (`self.cache` may already be another one: mkdocs.yml changed while serving)."""
        return run_sync(settings, cache, contents, warn=warn, connect=self._connect)

    def poll(self) -> float:
        """One round of the background sync under `mkdocs serve`; returns the seconds to wait.

        It syncs when sync_interval has passed since the last attempt (the build's or its own),
        under both cache locks; when something changed it raises the signal file, and the rebuild
        that follows finds the sync recent and builds from the cache.
        """
        settings = self.settings
        paused = not settings.enabled or settings.offline or settings.sync_interval <= 0
        if paused or self._settings_outdated() or self._cache_awaits_build:
            # Switched off in mkdocs.yml while serving, mkdocs.yml edited, or another cache_dir
            # named: the rebuild that reads it wakes the poller once it has synced itself (syncing
            # here, between that rebuild's on_config and its own sync, would rebuild the site
            # twice; a new cache would find every article new).
            return PAUSED
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait
        if not self.lock.acquire(timeout=1.0):
            return 0.0  # a build is running: sync when it is done
        try:
            cache = self.cache
            if not cache.try_acquire(timeout=1.0):
                return 1.0  # another process (a build, `mkdocs-blogsvc sync`) uses the cache
            try:
                return self._poll_locked(settings, cache)
            finally:
                cache.release()
        except CacheUnwritable as exc:  # the cache folder cannot be created
            return self._poll_cannot_write(settings, exc)
        finally:
            self.lock.release()

    def _poll_locked(self, settings: Settings, cache: Cache) -> float:
        if self._cache_awaits_build:
            return PAUSED  # the settings changed while this poll waited for the lock (see `poll`)
        if (wait := self._seconds_until_due(settings)) > 0:
            return wait  # the build that just ended synced
        if not access.has_credentials(settings, self._environ):
            return settings.sync_interval  # the build warned; sync once someone logs in
        self.last_sync_attempt = self._clock()
        try:
            _, report = self._sync(settings, cache, None, warn=self._poll_notices.warn)
        except CacheUnwritable as exc:
            return self._poll_cannot_write(settings, exc)
        except BlogServiceError as exc:
            self._poll_errors.warn(
                f"the background sync with {settings.base_url} failed ({exc}); the site keeps the "
                f"articles of the last sync; trying again every {settings.sync_interval} s"
            )
            return settings.sync_interval
        if self._poll_errors.reset():
            log.info(f"the background sync with {settings.base_url} works again")
        if report.changed:
            cache.raise_signal(report.summary())
            log.info(report.summary() + " (background sync: rebuilding the site)")
        return settings.sync_interval

    def _poll_cannot_write(self, settings: Settings, exc: CacheUnwritable) -> float:
        self._poll_errors.warn(f"the background sync failed: {exc}; trying again every {settings.sync_interval} s")
        return float(settings.sync_interval)

    def poll_crashed(self, exc: Exception) -> None:
        """`watch.Poller`'s on_crash: one warning per distinct unexpected failure of `poll`."""
        self._poll_errors.warn(
            f"the background sync failed unexpectedly ({type(exc).__name__}: {redact(str(exc))[:300]}); "
            "trying again in a few seconds; if it persists, please report it with the build's log"
        )


def run_sync(
    settings: Settings,
    cache: Cache,
    contents: CacheContents | None = None,
    *,
    warn: Callable[[str], object],
    full: bool = False,
    connect: Callable[[Settings], connection.Connection] | None = None,
) -> tuple[CacheContents, SyncReport]:
    """One sync into `cache` (whose lock the caller holds): the one way the plugin, `sync` and
    `export` sync. One deadline for the whole sync (`timeout`); a warning when the stored
    refresh token expires soon; `full` asks for every article. Raises `BlogServiceError`
    (`CacheUnwritable` included)."""
    with (connect or connection.connect)(settings) as service:  # looked up now: tests replace it
        service.client.begin_deadline()
        expires = service.tokens.refresh_expires_soon()
        if expires is not None:
            warn(
                f"the stored refresh token expires on {expires:%Y-%m-%d %H:%M} UTC; run "
                "`mkdocs-blogsvc login` before then (the credentials cannot be renewed afterwards)"
            )
        return sync_cache(
            cache,
            service.client,
            download_images=settings.download_images,
            contents=contents,
            full_sync_interval=0 if full else settings.full_sync_interval,
        )


def _modified(path: str | None) -> tuple[str, int] | None:
    """`path` with its modification time (ns; -1 when it cannot be read), None without a path."""
    if path is None:
        return None
    try:
        return path, os.stat(path).st_mtime_ns
    except OSError:
        return path, -1
