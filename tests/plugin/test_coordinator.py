"""`coordinator.SyncCoordinator`'s decisions, without MkDocs: when a build syncs, and what a
failed or impossible sync means for it. The service is `httpx.MockTransport`, the clock and the
environment are the coordinator's own arguments."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc import connection
from mkdocs_blogsvc.config import Settings
from mkdocs_blogsvc.coordinator import PAUSED, SyncCoordinator
from mkdocs_blogsvc.errors import NotLoggedIn, SyncFailed
from tests.e2e.sites import settings as site_settings
from tests.e2e.sites import write_credentials

BASE = "https://blog.example"
STATUS = {
    "status": "active",
    "scopes": ["articles:read", "blog:read"],
    "connectedAt": "2026-01-01T00:00:00Z",
    "lastSyncAt": None,
    "blog": {
        "id": "ck1blog0000000000000000000",
        "name": "Notes",
        "slug": "notes",
        "description": "",
        "language": "en",
        "articleCount": 0,
    },
}


class Service:
    """A stand-in service: `/sync` answers with `sync_status` (200: nothing new), `/status` with STATUS."""

    def __init__(self, sync_status: int = 200) -> None:
        self.sync_status = sync_status
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if request.url.path == "/api/v1/status":
            return httpx.Response(200, json=STATUS)
        if self.sync_status != 200:
            return httpx.Response(self.sync_status, json={"error": "invalid_request", "error_description": "broken"})
        assert json.loads(request.content) == {"knownArticles": []}
        return httpx.Response(200, json={"new": [], "updated": [], "deleted": [], "syncedAt": "2026-01-01T00:00:00Z"})

    @property
    def syncs(self) -> int:
        return self.paths.count("/api/v1/sync")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def coordinator(
    tmp_path: Path,
    service: Service,
    *,
    environ: dict[str, str] | None = None,
    logged_in: bool = True,
    clock: Callable[[], float] | None = None,
    **changes: object,
) -> SyncCoordinator:
    settings: Settings = site_settings(tmp_path, BASE, **changes)
    if logged_in:
        write_credentials(settings.credentials_file, BASE, "svc_at_test")
    return SyncCoordinator(
        settings,
        connect=lambda s: connection.connect(s, transport=httpx.MockTransport(service), environ=environ or {}),
        clock=clock or Clock(),
        environ=environ or {},
    )


def test_a_build_syncs_and_records_the_blog(tmp_path: Path) -> None:
    service = Service()
    sync = coordinator(tmp_path, service)
    try:
        contents, report, reason = sync.begin_build(is_serve=False)
    finally:
        sync.end_build()
    assert reason == "" and service.syncs == 1 and not report.changed
    assert contents.manifest.blog_slug == "notes" and sync.cache.load().blog_name == "Notes"


def test_under_serve_a_rebuild_within_sync_interval_builds_from_the_cache(tmp_path: Path) -> None:
    service, clock = Service(), Clock()
    sync = coordinator(tmp_path, service, clock=clock)
    for advance, syncs, reason in ((0, 1, ""), (59, 1, "less than 60 s ago"), (2, 2, "")):
        clock.now += advance
        try:
            _, _, said = sync.begin_build(is_serve=True)
        finally:
            sync.end_build()
        assert service.syncs == syncs and reason in said and (said == "") == (reason == "")


def test_a_new_cache_dir_is_synced_by_the_rebuild_first_not_by_the_background_sync(tmp_path: Path) -> None:
    """Found by a loaded CI run: cache_dir changed in mkdocs.yml while serving; the rebuild's
    on_config named the new, empty cache and the poller's timer fired before that rebuild's own
    sync, so the background sync found every article new and the site was built twice."""
    service, clock = Service(), Clock()
    sync = coordinator(tmp_path, service, clock=clock)
    try:
        sync.begin_build(is_serve=True)
    finally:
        sync.end_build()
    clock.now += 120  # a background sync is due
    sync.update(replace(sync.settings, cache_dir=tmp_path / "another-cache"))  # the rebuild's on_config
    assert sync.poll() == PAUSED and service.syncs == 1, "the poller synced before the rebuild"
    try:
        _, _, reason = sync.begin_build(is_serve=True)  # the rebuild's own sync
    finally:
        sync.end_build()
    assert reason == "" and service.syncs == 2
    clock.now += 120
    assert sync.poll() == 60 and service.syncs == 3, "after the rebuild the background sync runs again"


def test_a_failed_sync_warns_and_builds_from_the_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    service = Service(sync_status=400)
    sync = coordinator(tmp_path, service)
    with caplog.at_level(logging.WARNING):
        try:
            _, report, reason = sync.begin_build(is_serve=False)
        finally:
            sync.end_build()
    assert reason == " (sync failed: built from the cache)" and report.unchanged == 0
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"the sync with {BASE} failed" in warning and "Set on_error: fail to stop the build instead" in warning


def test_in_ci_a_failed_sync_with_nothing_cached_stops_the_build(tmp_path: Path) -> None:
    sync = coordinator(tmp_path, Service(sync_status=400), environ={"CI": "true"})
    with pytest.raises(SyncFailed, match=f"the sync with {BASE} failed"):
        try:
            sync.begin_build(is_serve=False)
        finally:
            sync.end_build()


def test_without_credentials_nothing_is_asked_and_ci_stops(tmp_path: Path) -> None:
    service = Service()
    sync = coordinator(tmp_path, service, logged_in=False)
    try:
        contents, _, reason = sync.begin_build(is_serve=False)
    finally:
        sync.end_build()
    assert service.paths == [] and reason == " (no credentials: built without the blog)" and not contents.articles

    in_ci = coordinator(tmp_path / "ci", service, logged_in=False, environ={"CI": "true"})
    with pytest.raises(NotLoggedIn):
        try:
            in_ci.begin_build(is_serve=False)
        finally:
            in_ci.end_build()
    assert service.paths == []


def test_offline_never_asks(tmp_path: Path) -> None:
    service = Service()
    sync = coordinator(tmp_path, service, offline=True)
    try:
        _, _, reason = sync.begin_build(is_serve=False)
    finally:
        sync.end_build()
    assert service.paths == [] and reason == " (offline: built from the cache)"
