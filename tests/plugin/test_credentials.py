"""The credential store (format, mode, atomicity, kills) and the token manager against the
real reference service (reuse, refresh on expiry, rotation, two processes at once, CI seeding)."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc import config, errors, fileio
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.credentials import (
    CredentialStore,
    StoredCredentials,
    TokenManager,
)
from mkdocs_blogsvc.login import login
from tests.conftest import IN_PROCESS_URL, add_owner
from tests.plugin.auth_helpers import LoggedIn, browser, register_client, site_settings

NOW = 1_800_000_000.0


def sample(**changes: object) -> StoredCredentials:
    creds = StoredCredentials(
        base_url="http://testserver",
        client_id="client-1",
        access_token="svc_at_" + "a" * 43,
        access_expires_at=NOW + 3600,
        refresh_token="svc_rt_" + "r" * 43,
        refresh_expires_at=NOW + 30 * 86400,
        scope=("articles:read", "blog:read"),
        saved_at=NOW,
    )
    return replace(creds, **changes)


# --- the store -------------------------------------------------------------------------------


def test_save_load_round_trip_with_private_modes(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "site" / ".blogsvc" / "credentials.json")
    assert store.load() is None
    store.save(sample())
    assert store.load() == sample()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    data = json.loads(store.path.read_text())
    assert data["version"] == 1 and data["scope"] == "articles:read blog:read"
    assert data["access_expires_at"].endswith("Z")
    assert set(data) == {
        "version",
        "base_url",
        "client_id",
        "access_token",
        "access_expires_at",
        "refresh_token",
        "refresh_expires_at",
        "scope",
        "saved_at",
    }
    assert [p.name for p in store.path.parent.iterdir()] == ["credentials.json"]  # no temp file left


def test_save_replaces_a_world_readable_file_with_a_private_one(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.path.write_text("{}")
    store.path.chmod(0o644)
    store.save(sample())
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_repr_never_shows_tokens(tmp_path: Path) -> None:
    creds = sample()
    assert "svc_" not in repr(creds) and "svc_" not in str(creds)
    assert "svc_" not in repr(CredentialStore(tmp_path / "c.json"))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"version": 2}', "unknown format version"),
        ("[]", "not a JSON object"),
        (json.dumps({**sample().to_json(), "refresh_token": None}), "'refresh_token'"),
        (json.dumps({**sample().to_json(), "access_expires_at": "yesterday"}), "timestamp"),
        # found by review: these went into the Authorization header, and out as a traceback
        (json.dumps({**sample().to_json(), "access_token": "svc_at_SECRET\u00c9BB"}), "bearer token cannot have"),
        (json.dumps({**sample().to_json(), "access_token": "svc_at_SECRET\nX"}), "bearer token cannot have"),
        (json.dumps({**sample().to_json(), "refresh_token": "svc_rt_SECRET\tX"}), "a token cannot have"),
    ],
)
def test_unreadable_store_says_to_log_in(tmp_path: Path, content: str, reason: str) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.path.write_text(content)
    with pytest.raises(errors.CredentialsCorrupt) as caught:
        store.load()
    message = str(caught.value)
    assert reason in message and str(store.path) in message and "mkdocs-blogsvc login" in message
    assert "svc_" not in message


def test_delete_is_idempotent(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(sample())
    with store.locked():
        pass
    assert store.delete() is True
    assert store.delete() is False
    assert not store.path.exists()


RUNS_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def path_through_a_file(tmp_path: Path) -> CredentialStore:
    """A store whose folder is a file: fails for root too, who ignores permissions."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the credentials folder should be\n")
    return CredentialStore(blocker / "credentials.json")


def folder_is_a_dangling_link(tmp_path: Path) -> CredentialStore:
    """A store that does not exist yet and whose folder cannot be created (even by root)."""
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    return CredentialStore(tmp_path / "link" / "credentials.json")


def take_lock(store: CredentialStore) -> None:
    with store.locked(timeout=5):
        pass


def check_os_failure(caught: pytest.ExceptionInfo[errors.CredentialsError], target: Path, reason: str) -> None:
    assert type(caught.value) is errors.CredentialsError  # not "corrupt: run login", which cannot help
    message = str(caught.value)
    assert f"{target} ({reason})" in message and "`credentials_file`" in message
    assert caught.value.__suppress_context__  # no OSError traceback chained behind it


def test_a_path_through_a_file_is_a_credentials_error_for_every_operation(tmp_path: Path) -> None:
    store = path_through_a_file(tmp_path)
    for read_or_delete in (store.load, store.delete):
        with pytest.raises(errors.CredentialsError) as caught:
            read_or_delete()
        check_os_failure(caught, store.path, "Not a directory")
    with pytest.raises(errors.CredentialsError) as caught:
        store.save(sample())
    check_os_failure(caught, store.path.parent, "File exists")  # the folder cannot be created
    with pytest.raises(errors.CredentialsError) as caught:
        take_lock(store)
    check_os_failure(caught, store.path.parent, "File exists")


def test_a_folder_that_cannot_be_created_stops_a_refresh_with_the_store_named(tmp_path: Path) -> None:
    store = folder_is_a_dangling_link(tmp_path)
    assert store.load() is None and store.delete() is False
    settings = replace(settings_for(tmp_path, client_id="client-1"), credentials_file=store.path)
    with connect(settings) as service, pytest.raises(errors.CredentialsError) as caught:
        service.client.status()  # no stored token: takes the lock to seed or refresh, creating the folder
    check_os_failure(caught, store.path.parent, "File exists")


@pytest.mark.skipif(RUNS_AS_ROOT or os.name != "posix", reason="root ignores folder permissions")
def test_a_read_only_folder_is_a_credentials_error(tmp_path: Path) -> None:
    folder = tmp_path / ".blogsvc"
    folder.mkdir(mode=0o500)
    store = CredentialStore(folder / "credentials.json")
    try:
        with pytest.raises(errors.CredentialsError) as caught:
            store.save(sample())
        check_os_failure(caught, store.path, "Permission denied")
        with pytest.raises(errors.CredentialsError) as caught:
            take_lock(store)
        check_os_failure(caught, store.lock_path, "Permission denied")
    finally:
        folder.chmod(0o700)


def test_stale_temp_files_of_killed_processes_are_removed(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    old = tmp_path / ".credentials.json.deadbeef.tmp"
    fresh = tmp_path / ".credentials.json.cafe.tmp"
    old.write_text("half")
    fresh.write_text("in progress")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    store.save(sample())
    assert not old.exists() and fresh.exists()


# --- the atomic write (fileio), which the store and the service's key file use ------------------


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_atomic_write_replaces_with_the_mode_given_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    fileio.atomic_write(target, b"one")
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 & ~current_umask()
    fileio.atomic_write(target, b"two", mode=0o600)
    assert target.read_bytes() == b"two" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["file.json"]


def test_atomic_write_fsyncs_only_when_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    fileio.atomic_write(tmp_path / "a", b"x", durable=False)
    assert synced == []
    fileio.atomic_write(tmp_path / "a", b"y")
    assert len(synced) == 2  # the data, then the folder (the rename)


def test_atomic_write_removes_its_temp_file_when_it_fails(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError):
        fileio.atomic_write(tmp_path / "taken", b"data")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_atomic_write_without_overwrite_keeps_the_first_file(tmp_path: Path) -> None:
    target = tmp_path / "key"
    fileio.atomic_write(target, b"first", mode=0o600, overwrite=False)
    with pytest.raises(FileExistsError):
        fileio.atomic_write(target, b"second", mode=0o600, overwrite=False)
    assert target.read_bytes() == b"first" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["key"]


def test_write_if_changed_leaves_an_unchanged_file_alone(tmp_path: Path) -> None:
    """Same bytes: no write, so the file keeps its inode and mtime (`mkdocs serve` sees no change)."""
    target = tmp_path / "sub" / "page.md"
    assert fileio.write_if_changed(target, b"one") is True
    before = target.stat()
    assert fileio.write_if_changed(target, b"one") is False
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert fileio.write_if_changed(target, b"two") is True and target.read_bytes() == b"two"


SAVE_LOOP = textwrap.dedent("""
    import sys
    from dataclasses import replace
    from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
    store = CredentialStore(sys.argv[1])
    base = store.load()
    n = 0
    print("ready", flush=True)
    while True:
        n += 1
        store.save(replace(base, access_token="svc_at_" + str(n) * 500, refresh_token="svc_rt_" + str(n)))
        if n % 7 == 0:
            with store.locked(timeout=5):
                store.save(replace(base, refresh_token="svc_rt_locked" + str(n)))
""")


@pytest.mark.slow
def test_a_kill_at_any_moment_never_leaves_an_unreadable_store(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / ".blogsvc" / "credentials.json")
    store.save(sample())
    rng = random.Random(1234)
    for _ in range(10):
        child = subprocess.Popen([sys.executable, "-c", SAVE_LOOP, str(store.path)], stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.08))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        loaded = store.load()  # must never raise CredentialsCorrupt
        assert loaded is not None and loaded.base_url == "http://testserver"
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        with store.locked(timeout=5):  # the kernel released the killed process's lock
            pass


# --- the token manager against the real service ----------------------------------------------


def counting_transport(app, token_requests: list[str]) -> httpx.BaseTransport:
    """The in-process service, counting the calls that reach the token endpoint."""
    inner = httpx.WSGITransport(app=app)

    class Counting(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/api/oauth/token":
                token_requests.append(dict(httpx.QueryParams(request.read().decode()))["grant_type"])
            return inner.handle_request(request)

    return Counting()


def test_access_token_is_reused_within_the_hour(logged_in: LoggedIn, app, db) -> None:
    token_requests: list[str] = []
    db.advance_clock(3000)  # 50 minutes later the stored token still has 10 minutes
    with connect(logged_in.settings, transport=counting_transport(app, token_requests)) as service:
        service.client.status()
        service.client.sync([])
    assert token_requests == []
    assert CredentialStore(logged_in.settings.credentials_file).load() == logged_in.stored


def test_expired_token_refreshes_exactly_once_and_rotates(logged_in: LoggedIn, app, db, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    token_requests: list[str] = []
    store = CredentialStore(logged_in.settings.credentials_file)
    db.advance_clock(3601)  # the service now sees the token expired; the client does not know
    with connect(logged_in.settings, transport=counting_transport(app, token_requests)) as service:
        service.client.status()
        service.client.sync([])
        service.client.status()
    assert token_requests == ["refresh_token"]
    after = store.load()
    assert after is not None and after.refresh_token != logged_in.stored.refresh_token
    assert after.access_token != logged_in.stored.access_token
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600

    # The old refresh token is dead. Presenting it again revokes the grant (reuse detection),
    # so this is done last: afterwards even the new pair is refused.
    with (
        connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as service,
        pytest.raises(errors.InvalidGrant),
    ):
        service.client.token_request(
            {
                "grant_type": "refresh_token",
                "refresh_token": logged_in.stored.refresh_token,
                "client_id": logged_in.settings.client_id or "",
            }
        )
    assert "svc_at_" not in caplog.text and "svc_rt_" not in caplog.text


def test_client_side_expiry_refreshes_before_the_call(logged_in: LoggedIn, app) -> None:
    token_requests: list[str] = []
    service = connect(
        logged_in.settings,
        transport=counting_transport(app, token_requests),
        clock=lambda: logged_in.stored.access_expires_at - 30,
    )  # under the 60 s margin
    with service:
        service.client.status()
        service.client.status()
    assert token_requests == ["refresh_token"]


def test_a_token_refreshed_by_another_process_is_picked_up(logged_in: LoggedIn, app, db) -> None:
    """refresh_rejected re-reads the store: a newer token on disk is used, not refreshed again."""
    token_requests: list[str] = []
    db.advance_clock(3601)
    with connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as other:
        other.client.status()  # "another process" refreshes and saves
    stale = logged_in.stored.access_token
    with connect(logged_in.settings, transport=counting_transport(app, token_requests)) as service:
        fresh = service.tokens.refresh_rejected(stale)
        assert fresh != stale
        service.client.status()
    assert token_requests == []


def test_revoked_grant_gives_one_actionable_message(logged_in: LoggedIn, app, db) -> None:
    store = CredentialStore(logged_in.settings.credentials_file)
    with connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as service:
        service.tokens.force_refresh()
        # Reuse of the rotated token: the service revokes the whole grant.
        with pytest.raises(errors.InvalidGrant):
            service.client.token_request(
                {
                    "grant_type": "refresh_token",
                    "refresh_token": logged_in.stored.refresh_token,
                    "client_id": logged_in.settings.client_id or "",
                }
            )
        db.advance_clock(3601)
        with pytest.raises(errors.ReauthorizationRequired) as caught:
            service.client.status()
    message = str(caught.value)
    assert "rotated, revoked or has expired" in message and "mkdocs-blogsvc login" in message
    assert "CI recipe" in message and "svc_" not in message
    assert store.load() is not None  # the store is kept: the user sees the same message each time


def test_a_refused_store_starts_again_from_a_new_secret(logged_in: LoggedIn, app, db, tmp_path: Path) -> None:
    """Found by review (CI): the store restored from a cache is read before BLOGSVC_REFRESH_TOKEN,
    so once it held a dead token (a run killed before saving, two runs at once, an older cache)
    the new token the owner put in the secret was never read, run after run."""
    transport = httpx.WSGITransport(app=app)
    store = CredentialStore(logged_in.settings.credentials_file)
    # a second, independent connection: what `login` + `token --print-refresh-token` give the secret
    elsewhere = replace(logged_in.settings, credentials_file=tmp_path / "owner" / "credentials.json")
    login(elsewhere, open_browser=browser(logged_in.owner, transport=transport), transport=transport, timeout=30)
    with connect(elsewhere, transport=transport) as owner:
        secret = owner.tokens.hand_over().refresh_token
    # the store's connection dies: its refresh token is presented twice (a stale cache restored)
    with connect(logged_in.settings, transport=transport) as service:
        service.tokens.force_refresh()
    store.save(logged_in.stored)
    db.advance_clock(3601)
    with (
        connect(logged_in.settings, transport=transport, environ={}) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.client.status()
    assert f"the service refused the refresh token in {store.path} (The refresh token was already used" in str(
        caught.value
    )
    with connect(logged_in.settings, transport=transport, environ={config.ENV_REFRESH_TOKEN: secret}) as service:
        assert service.client.status().blog.slug == logged_in.blog_slug
    saved = store.load()
    assert saved is not None and saved.refresh_token not in (secret, logged_in.stored.refresh_token)


def test_a_refused_store_and_a_spent_secret_name_both(logged_in: LoggedIn, app, db) -> None:
    """The usual CI case: the secret is the seed the first run spent, the store is dead too."""
    transport = httpx.WSGITransport(app=app)
    store = CredentialStore(logged_in.settings.credentials_file)
    seed = logged_in.stored.refresh_token  # spent by the first run
    with connect(logged_in.settings, transport=transport) as service:
        older_cache = service.tokens.force_refresh()
        service.tokens.force_refresh()
    store.save(older_cache)
    with (
        connect(logged_in.settings, transport=transport, environ={config.ENV_REFRESH_TOKEN: seed}) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.tokens.force_refresh()
    message = str(caught.value)
    used = "The refresh token was already used, so it may have leaked: the connection is revoked and the user must authorize again."
    assert message.startswith(
        f"the service refused the refresh token in {store.path} ({used}), "
        f"then the one in {config.ENV_REFRESH_TOKEN} ({used})"
    )
    assert ": it was rotated, revoked or has expired. Run `mkdocs-blogsvc login` again; in CI, then put" in message
    assert "`mkdocs-blogsvc token --print-refresh-token`" in message and "svc_" not in message


def test_a_refresh_token_expired_here_is_not_said_to_be_refused_by_the_service(
    logged_in: LoggedIn, app, db, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by review: a store whose refresh token had expired by the client's clock (never sent)
    was reported as `the service refused the refresh token ... (it expired on ...)`, and so was
    the fallback to BLOGSVC_REFRESH_TOKEN in the log."""
    caplog.set_level(logging.INFO)
    transport = httpx.WSGITransport(app=app)
    store = CredentialStore(logged_in.settings.credentials_file)
    with connect(logged_in.settings, transport=transport) as service:
        fresh = service.tokens.force_refresh()  # spends the login's refresh token
    store.save(replace(fresh, access_expires_at=time.time() - 60, refresh_expires_at=time.time() - 60))
    requests: list[str] = []
    with (
        connect(logged_in.settings, transport=counting_transport(app, requests), environ={}) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.client.status()
    assert requests == [], "an expired refresh token is not sent"
    message = str(caught.value)
    assert message.startswith(f"the refresh token in {store.path} expired on ")
    assert "(it was not sent to the service). Run `mkdocs-blogsvc login` again; in CI" in message
    assert "service refused" not in message and "rotated, revoked" not in message

    spent = logged_in.stored.refresh_token  # the secret still holds a token an earlier run spent
    with (
        connect(logged_in.settings, transport=transport, environ={config.ENV_REFRESH_TOKEN: spent}) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.client.status()
    message = str(caught.value)
    assert message.startswith(f"the refresh token in {store.path} expired on ")
    assert (
        f"(it was not sent to the service), and the service refused the one in {config.ENV_REFRESH_TOKEN} "
        "(The refresh token was already used"
    ) in message
    assert ": it was rotated, revoked or has expired. Run `mkdocs-blogsvc login` again" in message
    assert f"the refresh token in {store.path} expired on " in caplog.text and "service refused" not in caplog.text
    assert "svc_" not in message + caplog.text


class EchoingRefusals(httpx.BaseTransport):
    """A service whose `invalid_grant` repeats the refresh token it was sent in its reason."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        sent = dict(httpx.QueryParams(request.read().decode())).get("refresh_token", "")
        return httpx.Response(
            400, json={"error": "invalid_grant", "error_description": f"unknown refresh token {sent}"}
        )


def test_a_refusal_that_repeats_the_token_does_not_put_it_in_the_message(
    logged_in: LoggedIn, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by review: the service's reason for refusing a refresh token goes into the message
    and the log since the fallback to BLOGSVC_REFRESH_TOKEN; only `svc_`-shaped tokens were
    masked, so a service that repeats a token of another shape put it in a CI log."""
    caplog.set_level(logging.DEBUG)
    stored, secret = "stored-refresh-token-0001", "secret refresh token 0002"
    CredentialStore(logged_in.settings.credentials_file).save(
        replace(logged_in.stored, refresh_token=stored, access_expires_at=time.time() - 60)
    )
    with (
        connect(logged_in.settings, transport=EchoingRefusals(), environ={config.ENV_REFRESH_TOKEN: secret}) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.client.status()
    message = str(caught.value)
    assert "(unknown refresh token ***), then the one in BLOGSVC_REFRESH_TOKEN (unknown refresh token ***)" in message
    assert stored not in message + caplog.text and secret not in message + caplog.text


class ManglingTokenAnswers(httpx.BaseTransport):
    """The in-process service, whose token endpoint answers pass through `mangle` (after the
    service committed the rotation): a service, or a proxy, that misbehaves on the way back."""

    def __init__(self, app, mangle: Callable[[httpx.Request, dict[str, object]], dict[str, object]]) -> None:
        self.inner = httpx.WSGITransport(app=app)
        self.mangle = mangle

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path != "/api/oauth/token" or response.status_code != 200:
            return response
        return httpx.Response(200, json=self.mangle(request, json.loads(response.read())))


def test_an_unusable_token_answer_keeps_the_new_refresh_token(logged_in: LoggedIn, app, db) -> None:
    """Found by review: a token answer the client cannot use (here token_type `mac`) had left the
    spent refresh token in the store; the next build then had to log in again."""
    store = CredentialStore(logged_in.settings.credentials_file)
    db.advance_clock(3601)
    mac = ManglingTokenAnswers(app, lambda request, answer: {**answer, "token_type": "mac"})
    with connect(logged_in.settings, transport=mac) as service, pytest.raises(errors.InvalidResponse) as caught:
        service.client.status()
    assert str(caught.value) == (
        "token response: token_type 'mac' is not Bearer; the new refresh token it carried is saved, so the next sync tries again"
    )
    saved = store.load()
    assert saved is not None and saved.refresh_token != logged_in.stored.refresh_token and saved.access_token == ""
    with connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as service:
        assert service.client.status().blog.slug == logged_in.blog_slug  # the grant lives on


def test_an_unusable_answer_that_rotates_nothing_leaves_the_store_as_it_was(logged_in: LoggedIn, app, db) -> None:
    """A service that does not rotate (no refresh_token in the answer) and sends an unusable
    answer: the token sent is not spent, so the store keeps its pair and the message does not
    claim a new refresh token was saved."""
    store = CredentialStore(logged_in.settings.credentials_file)
    db.advance_clock(3601)

    def mac_without_refresh_token(request: httpx.Request, answer: dict[str, object]) -> dict[str, object]:
        return {key: value for key, value in answer.items() if key != "refresh_token"} | {"token_type": "mac"}

    with (
        connect(logged_in.settings, transport=ManglingTokenAnswers(app, mac_without_refresh_token)) as service,
        pytest.raises(errors.InvalidResponse) as caught,
    ):
        service.client.status()
    assert str(caught.value) == "token response: token_type 'mac' is not Bearer"
    assert store.load() == logged_in.stored


@pytest.mark.parametrize("source", ["store", "secret"])
def test_a_refresh_answer_without_refresh_token_or_scope_keeps_the_ones_sent(
    logged_in: LoggedIn, app, db, tmp_path: Path, source: str
) -> None:
    """RFC 6749 sections 5.1 and 6: a refresh answer may leave out `refresh_token` (the one sent
    stays valid) and `scope` (the same as granted). The store then keeps the token sent and the
    scope it had (or, seeded from BLOGSVC_REFRESH_TOKEN, the scope of the settings)."""
    settings, environ = logged_in.settings, {}
    if source == "secret":
        settings = replace(settings, credentials_file=tmp_path / "ci" / "credentials.json")
        environ = {config.ENV_REFRESH_TOKEN: logged_in.stored.refresh_token}
    db.advance_clock(3601)

    def not_rotating(request: httpx.Request, answer: dict[str, object]) -> dict[str, object]:
        return {key: value for key, value in answer.items() if key not in ("refresh_token", "scope")}

    with connect(settings, transport=ManglingTokenAnswers(app, not_rotating), environ=environ) as service:
        assert service.client.status().blog.slug == logged_in.blog_slug
    saved = CredentialStore(settings.credentials_file).load()
    assert saved is not None and saved.refresh_token == logged_in.stored.refresh_token
    assert saved.access_token != logged_in.stored.access_token
    assert saved.scope == tuple(config.DEFAULT_SCOPE.split()) == logged_in.stored.scope


def test_a_refused_store_is_not_retried_when_the_secret_holds_the_same_token(logged_in: LoggedIn, app) -> None:
    """The store seeded from the secret and never rotated since: the secret is no second chance,
    so the refused token is sent once and the message names the store only."""
    store = CredentialStore(logged_in.settings.credentials_file)
    with connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as service:
        service.tokens.force_refresh()  # spends the stored token
    store.save(logged_in.stored)
    requests: list[str] = []
    environ = {config.ENV_REFRESH_TOKEN: logged_in.stored.refresh_token}
    with (
        connect(logged_in.settings, transport=counting_transport(app, requests), environ=environ) as service,
        pytest.raises(errors.ReauthorizationRequired) as caught,
    ):
        service.tokens.force_refresh()
    assert requests == ["refresh_token"]
    assert str(caught.value).startswith(f"the service refused the refresh token in {store.path} (")
    assert config.ENV_REFRESH_TOKEN + " (" not in str(caught.value) and "then the one in" not in str(caught.value)


def test_a_refresh_token_is_not_sent_at_the_second_it_expires(logged_in: LoggedIn, app) -> None:
    requests: list[str] = []
    expires = logged_in.stored.refresh_expires_at
    with (
        connect(
            logged_in.settings, transport=counting_transport(app, requests), environ={}, clock=lambda: expires
        ) as service,
        pytest.raises(errors.ReauthorizationRequired, match="expired on .* \\(it was not sent to the service\\)"),
    ):
        service.client.status()
    assert requests == []


def test_a_confidential_client_sends_its_secret_when_it_refreshes(app, db, tmp_path: Path) -> None:
    """The reference service lets a connection made with PKCE refresh without the secret, but
    a secret that is sent must be right, and other services may require it: it goes with
    every refresh."""
    owner = add_owner(db)
    client_id, secret = register_client(db, public=False)
    settings = site_settings(tmp_path, IN_PROCESS_URL, client_id, client_secret=secret)
    transport = httpx.WSGITransport(app=app)
    login(settings, open_browser=browser(owner, transport=transport), transport=transport, timeout=30)
    before = CredentialStore(settings.credentials_file).load()
    with connect(settings, transport=transport) as service:
        after = service.tokens.force_refresh()
        assert service.client.status().blog.slug == owner.blog_slug
    assert before is not None and after.refresh_token != before.refresh_token

    wrong = replace(settings, client_secret="not-the-secret")
    with connect(wrong, transport=transport) as service, pytest.raises(errors.InvalidClient):
        service.tokens.force_refresh()
    kept = CredentialStore(settings.credentials_file).load()
    assert kept is not None and kept.refresh_token == after.refresh_token  # a refused client spends nothing


def test_a_lost_refresh_answer_is_reported_as_such(logged_in: LoggedIn, app, db) -> None:
    """The service rotated, the answer never arrived: nothing can bring the new token back
    (the spec: log in again); the message says so instead of blaming the network settings."""
    db.advance_clock(3601)

    def lose(request: httpx.Request, answer: dict[str, object]) -> dict[str, object]:
        raise httpx.ReadError("connection reset by peer", request=request)

    with (
        connect(logged_in.settings, transport=ManglingTokenAnswers(app, lose)) as service,
        pytest.raises(errors.AnswerLost) as caught,
    ):
        service.client.status()
    message = str(caught.value)
    assert message.startswith(
        "the token request reached the Blog Content Service at http://testserver, but its "
        "answer did not arrive whole: connection reset by peer (ReadError). If the service rotated"
    )
    assert f"the one in {logged_in.settings.credentials_file} is spent" in message and "svc_" not in message
    with (
        connect(logged_in.settings, transport=httpx.WSGITransport(app=app)) as service,
        pytest.raises(errors.ReauthorizationRequired),
    ):
        service.client.status()  # as announced


def test_a_lost_refresh_answer_names_the_secret_when_the_secret_was_sent(
    logged_in: LoggedIn, app, db, tmp_path: Path
) -> None:
    """Found in review: when the refresh token sent came from BLOGSVC_REFRESH_TOKEN (a refused
    store, or none), a lost answer said the token in the store's path was spent, when the one
    spent was the secret (the one the owner must replace)."""
    transport = httpx.WSGITransport(app=app)
    with connect(logged_in.settings, transport=transport) as service:
        refused_store_secret = service.tokens.force_refresh().refresh_token
    CredentialStore(logged_in.settings.credentials_file).save(
        replace(logged_in.stored, refresh_token="svc_" + "d" * 40)
    )
    no_store = replace(logged_in.settings, credentials_file=tmp_path / "ci" / "credentials.json")
    elsewhere = replace(logged_in.settings, credentials_file=tmp_path / "owner" / "credentials.json")
    login(elsewhere, open_browser=browser(logged_in.owner, transport=transport), transport=transport, timeout=30)
    with connect(elsewhere, transport=transport) as owner:
        no_store_secret = owner.tokens.hand_over().refresh_token

    def lose(request: httpx.Request, answer: dict[str, object]) -> dict[str, object]:
        raise httpx.ReadError("connection reset by peer", request=request)

    db.advance_clock(3601)
    for settings, secret in ((logged_in.settings, refused_store_secret), (no_store, no_store_secret)):
        with (
            connect(
                settings, transport=ManglingTokenAnswers(app, lose), environ={config.ENV_REFRESH_TOKEN: secret}
            ) as service,
            pytest.raises(errors.AnswerLost) as caught,
        ):
            service.client.status()
        message = str(caught.value)
        assert f"the one in {config.ENV_REFRESH_TOKEN} is spent" in message, message
        assert str(settings.credentials_file) not in message and "svc_" not in message


@pytest.mark.parametrize("expires_in", [1e300, -5, "3600"])
def test_an_expires_in_outside_the_spec_is_saved_and_spends_one_refresh(
    logged_in: LoggedIn, app, db, expires_in: object
) -> None:
    """Found by review: 1e300 crashed the save with a traceback after the rotation (the new
    tokens lost); -5 had every data call of a build spend a refresh token."""
    db.advance_clock(3601)
    token_requests: list[str] = []

    def change(request: httpx.Request, answer: dict[str, object]) -> dict[str, object]:
        token_requests.append("refresh")
        return {**answer, "expires_in": expires_in}

    with connect(logged_in.settings, transport=ManglingTokenAnswers(app, change)) as service:
        for _ in range(3):
            service.client.status()
    saved = CredentialStore(logged_in.settings.credentials_file).load()
    assert saved is not None and saved.refresh_token != logged_in.stored.refresh_token
    assert token_requests == ["refresh"]


def test_credentials_are_bound_to_their_service_and_client(logged_in: LoggedIn) -> None:
    requests: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda request: requests.append(request) or httpx.Response(500))
    for change in ({"base_url": "https://evil.example"}, {"client_id": "another-client"}):
        settings = replace(logged_in.settings, **change)
        with connect(settings, transport=transport) as service, pytest.raises(errors.CredentialsError) as caught:
            service.client.status()
        assert "mkdocs-blogsvc login" in str(caught.value)
    assert requests == []  # nothing was sent anywhere


def test_no_store_and_no_environment_means_not_logged_in(tmp_path: Path, app) -> None:
    settings = settings_for(tmp_path, client_id="c")
    manager = connect(settings, transport=httpx.WSGITransport(app=app), environ={}).tokens
    with pytest.raises(errors.NotLoggedIn, match="run `mkdocs-blogsvc login`"):
        manager.access_token()
    assert manager.refresh_expires_soon() is None


def test_environment_refresh_token_seeds_the_store(logged_in: LoggedIn, app, tmp_path: Path) -> None:
    """CI: no store, BLOGSVC_REFRESH_TOKEN given: refresh at once, the rotated token is stored."""
    settings = replace(logged_in.settings, credentials_file=tmp_path / "ci" / "credentials.json")
    environ = {config.ENV_REFRESH_TOKEN: logged_in.stored.refresh_token}
    with connect(settings, transport=httpx.WSGITransport(app=app), environ=environ) as service:
        assert service.client.status().blog.slug == logged_in.blog_slug
    seeded = CredentialStore(settings.credentials_file).load()
    assert seeded is not None and seeded.refresh_token != logged_in.stored.refresh_token
    assert stat.S_IMODE(settings.credentials_file.stat().st_mode) == 0o600


def test_refresh_expiring_soon(logged_in: LoggedIn, app) -> None:
    client = connect(logged_in.settings, transport=httpx.WSGITransport(app=app)).client
    expires = logged_in.stored.refresh_expires_at
    soon = TokenManager(logged_in.settings, client, clock=lambda: expires - 6 * 86400)
    later = TokenManager(logged_in.settings, client, clock=lambda: expires - 8 * 86400)
    when = soon.refresh_expires_soon()
    assert when is not None and abs(when.timestamp() - expires) < 0.001
    assert later.refresh_expires_soon() is None
    client.close()


TWO_BUILDS = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mkdocs_blogsvc import config
    from mkdocs_blogsvc.connection import connect
    base_url, client_id, path, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    settings = config.Settings(
        base_url=base_url, client_id=client_id, client_secret=None, scope="articles:read blog:read",
        redirect_port=0, credentials_file=Path(path), blog_dir="blog", posts_dir="blog/posts",
        cache_dir=Path(path).parent / "cache")
    while time.time() < start:
        time.sleep(0.001)
    with connect(settings) as service:
        print(service.client.status().blog.slug, flush=True)
""")


def settings_for(
    tmp_path: Path, *, base_url: str = "http://testserver", client_id: str | None = None
) -> config.Settings:
    return config.Settings(
        base_url=base_url,
        client_id=client_id,
        client_secret=None,
        scope="articles:read blog:read",
        redirect_port=0,
        credentials_file=tmp_path / ".blogsvc" / "credentials.json",
        blog_dir="blog",
        posts_dir="blog/posts",
        cache_dir=tmp_path / ".cache" / "blogsvc",
    )


@pytest.mark.slow
def test_two_processes_with_an_expired_token_refresh_once(live_logged_in: LoggedIn, live_server) -> None:
    store = CredentialStore(live_logged_in.settings.credentials_file)
    assert live_server.admin("advance-clock", "3601").returncode == 0
    start = time.time() + 1.5  # both children are up by then and start together
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                TWO_BUILDS,
                live_server.url,
                live_logged_in.settings.client_id or "",
                str(store.path),
                str(start),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [child.communicate(timeout=60) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == live_logged_in.blog_slug
    after = store.load()
    assert after is not None and after.refresh_token != live_logged_in.stored.refresh_token
    # A single refresh: the rotated token still works (a second refresh with the old token would
    # have revoked the grant, and this would fail with invalid_grant).
    with connect(live_logged_in.settings) as service:
        service.tokens.force_refresh()
