"""Tokens across real `mkdocs build` runs against the service running as a process: no token
request while the access token is valid, exactly one refresh when it is not (even with two
builds at once), the rotated token dead, and no token in a whole build's debug output.

Token requests are counted twice, independently: in the service's access log (the
`"POST /api/oauth/token" 200` lines that `server run` writes to `<db>.log`) and as refresh-token
rows in its database (each refresh mints exactly one).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mkdocs_blogsvc import errors
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
from mkdocs_blogsvc.server import security, tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer
from tests.e2e.sites import write_site
from tests.plugin.auth_helpers import LoggedIn

pytestmark = pytest.mark.slow

TOKEN_LINE = '"POST /api/oauth/token" 200'
REFRESH_DEBUG_LINE = "tokens refreshed and saved"


def make_site(root: Path, logged_in: LoggedIn) -> Path:
    """A site (plain MkDocs theme: the theme is not under test) using the logged-in store."""
    return write_site(
        root,
        logged_in.settings.base_url,
        material=False,
        plugin={
            "client_id": logged_in.settings.client_id,
            "credentials_file": str(logged_in.settings.credentials_file),
        },
    )


def build_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "mkdocs", "build", "-v", "-f", str(config)]  # -v: DEBUG logging


#: Built at import, before the `not_in_ci` fixture runs: `CI` is left out here too.
BUILD_ENV = {**{key: value for key, value in os.environ.items() if key != "CI"}, "NO_MKDOCS_2_WARNING": "1"}


def build(config: Path) -> str:
    """Run a real build; its whole output (stdout and stderr) once it succeeded."""
    done = subprocess.run(
        build_command(config), capture_output=True, text=True, timeout=120, env=BUILD_ENV, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


class TokenCounter:
    """Token requests that reached the service, from its access log and from its database."""

    def __init__(self, server: LiveServer) -> None:
        self.log = server.db_path.with_suffix(".log")
        self.db = Database.from_path(server.db_path)

    def counts(self) -> tuple[int, int]:
        """(token endpoint hits in the access log, refresh tokens ever issued)."""
        with self.db.session() as session:
            issued = session.scalar(
                select(func.count()).select_from(tables.Token).where(tables.Token.kind == "refresh")
            )
        return self.log.read_text(errors="replace").count(TOKEN_LINE), int(issued or 0)

    def refresh_token(self, raw: str) -> tables.Token:
        with self.db.session() as session:
            token = session.scalar(select(tables.Token).where(tables.Token.token_hash == security.token_hash(raw)))
            assert token is not None
            return token


@pytest.fixture
def counter(live_server: LiveServer):
    counting = TokenCounter(live_server)
    yield counting
    counting.db.dispose()


def saved(logged_in: LoggedIn) -> StoredCredentials:
    stored = CredentialStore(logged_in.settings.credentials_file).load()
    assert stored is not None
    return stored


def assert_no_token_in(output: str, *known: StoredCredentials) -> None:
    assert "svc_at_" not in output and "svc_rt_" not in output
    for credentials in known:
        for value in (credentials.access_token, credentials.refresh_token):
            assert value not in output and value.split("_", 2)[-1] not in output


def test_a_build_within_the_hour_makes_no_token_request(
    live_logged_in: LoggedIn, counter: TokenCounter, tmp_path: Path
) -> None:
    before = counter.counts()
    assert before[0] >= 1 and before[1] == 1  # the login's code exchange is in the log
    output = build(make_site(tmp_path / "site", live_logged_in))
    assert "First post" in (tmp_path / "site" / "site" / "blog" / "posts" / "first-post" / "index.html").read_text()
    assert counter.counts() == before
    assert saved(live_logged_in) == live_logged_in.stored  # nothing rotated, nothing rewritten
    assert REFRESH_DEBUG_LINE not in output
    assert_no_token_in(output, live_logged_in.stored)


def test_after_an_hour_a_build_refreshes_once_and_the_old_token_is_dead(
    live_logged_in: LoggedIn,
    live_server: LiveServer,
    counter: TokenCounter,
    tmp_path: Path,
) -> None:
    config = make_site(tmp_path / "site", live_logged_in)
    old = live_logged_in.stored
    assert live_server.admin("advance-clock", "3601").returncode == 0
    hits, issued = counter.counts()

    output = build(config)  # the stored token still looks valid here: the service answers 401
    assert counter.counts() == (hits + 1, issued + 1)
    new = saved(live_logged_in)
    assert new.refresh_token != old.refresh_token and new.access_token != old.access_token
    assert output.count(REFRESH_DEBUG_LINE) == 1  # DEBUG logging was on, and the refresh is in it
    assert_no_token_in(output, old, new)

    assert counter.refresh_token(old.refresh_token).rotated_at is not None
    assert counter.refresh_token(new.refresh_token).rotated_at is None
    next_output = build(config)  # the new access token is used: no further refresh
    assert counter.counts() == (hits + 1, issued + 1)
    assert_no_token_in(next_output, old, new)

    with BlogServiceClient(live_server.url) as client, pytest.raises(errors.InvalidGrant):
        client.token_request(
            {"grant_type": "refresh_token", "refresh_token": old.refresh_token, "client_id": old.client_id}
        )


def test_two_builds_at_once_with_an_expired_token_refresh_once(
    live_logged_in: LoggedIn,
    live_server: LiveServer,
    counter: TokenCounter,
    tmp_path: Path,
) -> None:
    """Two sites share one store, each with its own cache (the cache lock would otherwise make
    the second build wait for the first). The test holds the store's lock until both builds
    have reached their sync, so both find the token expired and queue for the same refresh."""
    sites = [make_site(tmp_path / name, live_logged_in) for name in ("one", "two")]
    store_file = CredentialStore(live_logged_in.settings.credentials_file)
    assert live_server.admin("advance-clock", "3601").returncode == 0
    store_file.save(replace(live_logged_in.stored, access_expires_at=time.time() - 10))
    hits, issued = counter.counts()

    with store_file.locked():
        builds = [
            subprocess.Popen(
                build_command(config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=BUILD_ENV
            )
            for config in sites
        ]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            (config.parent / ".cache" / "blogsvc").is_dir() for config in sites
        ):
            if any(process.poll() is not None for process in builds):
                break
            time.sleep(0.05)
        time.sleep(0.3)  # from its cache lock to the token: a few milliseconds
        assert all(process.poll() is None for process in builds)  # both are waiting for the lock
        assert counter.counts() == (hits, issued)
    outputs = [process.communicate(timeout=120)[0] for process in builds]

    for process, output in zip(builds, outputs, strict=True):
        assert process.returncode == 0, output
    assert counter.counts() == (hits + 1, issued + 1)  # one refresh, and no invalid_grant
    assert sum(output.count(REFRESH_DEBUG_LINE) for output in outputs) == 1
    new = saved(live_logged_in)
    assert counter.refresh_token(new.refresh_token).revoked_at is None  # the grant is alive
    for output in outputs:
        assert_no_token_in(output, live_logged_in.stored, new)


def test_an_unusable_credentials_folder_fails_the_build_naming_the_credentials(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "missing")  # a folder nobody, not even root, can create
    config = write_site(
        tmp_path / "site",
        "http://127.0.0.1:9",
        material=False,
        plugin={"credentials_file": str(tmp_path / "link" / "credentials.json")},
    )
    # A CI secret to seed the store from: without any credentials the build would go on without the blog.
    env = {**BUILD_ENV, "BLOGSVC_REFRESH_TOKEN": "svc_rt_from_a_ci_secret"}
    done = subprocess.run(build_command(config), capture_output=True, text=True, timeout=120, env=env, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in output
    assert f"cannot create the folder {tmp_path / 'link'} (File exists)" in output
    assert "cannot be written" not in output  # it used to blame the cache
