"""Messages that name the fix: what was wrong, with the value, and the one next step, naming the
setting when a setting is the likely cause. Real builds against the reference service."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from mkdocs_blogsvc.credentials import CredentialStore, StoredCredentials
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import CLIENT_ID, Service, write_credentials, write_site


def build_error(config: Path, caplog: pytest.LogCaptureFixture) -> str:
    """The one error line of a build that must stop."""
    caplog.clear()
    with pytest.raises(Abort):
        build(load_config(str(config)))
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "\n" not in line and "svc_" not in line
    return line


@pytest.mark.parametrize("changed", ["base_url", "client_id", "both"])
def test_changed_settings_name_the_setting_and_both_ways_out(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture, changed: str
) -> None:
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    moved = "http://127.0.0.1:9"
    plugin = {
        "base_url": {"base_url": moved},
        "client_id": {"client_id": "new-client"},
        "both": {"base_url": moved, "client_id": "new-client"},
    }[changed]
    config = write_site(tmp_path, service.url, material=False, plugin=plugin)
    line = build_error(config, caplog)
    assert line.startswith(f"blogsvc: the credentials in {tmp_path / 'credentials.json'} were issued ")
    if changed == "base_url":
        assert f"by the service at {service.url}, but `base_url` is now {moved}" in line
        assert (
            f"set `base_url` in mkdocs.yml back to {service.url}; if the service moved, run `mkdocs-blogsvc login`"
            in line
        )
        assert CLIENT_ID not in line, "the unchanged client id is not worth a mention"
    elif changed == "client_id":
        assert (
            f"to client_id {CLIENT_ID!r}, but `client_id` is now 'new-client' (mkdocs.yml or BLOGSVC_CLIENT_ID)" in line
        )
        assert f"set it back to {CLIENT_ID!r}; if the site was registered again, run `mkdocs-blogsvc login`" in line
        assert line.count(service.url) == 0
    else:
        assert f"client_id {CLIENT_ID!r} by the service at {service.url}" in line
        assert f"client_id 'new-client' at {moved}" in line and "run `mkdocs-blogsvc login`" in line
    assert service.requests == [], "credentials are never sent to another address"


def test_a_client_the_service_does_not_know_stops_the_build_naming_client_id(
    tmp_path: Path, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    """`invalid_client` at a refresh is a setting to fix, not an outage: `on_error: warn` does not hide it."""
    now = time.time()
    CredentialStore(tmp_path / "credentials.json").save(
        StoredCredentials(
            base_url=service.url,
            client_id=CLIENT_ID,
            access_token="svc_at_expired",
            access_expires_at=now - 10,
            refresh_token="svc_rt_whatever",
            refresh_expires_at=now + 86400,
            scope=("articles:read",),
        )
    )
    config = write_site(tmp_path, service.url, material=False)  # CLIENT_ID is not registered with this service
    line = build_error(config, caplog)
    assert line.startswith(f"blogsvc: the sync with {service.url} failed: invalid_client (HTTP 400)")
    assert "check `client_id` in mkdocs.yml (or BLOGSVC_CLIENT_ID)" in line


def test_a_connection_without_the_scope_stops_the_build_naming_scope(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    add_article(db, owner.blog_id, "One")
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner, scope="blog:read"))
    config = write_site(tmp_path, service.url, material=False)
    line = build_error(config, caplog)
    assert "insufficient_scope (HTTP 403): Required scope: articles:read" in line
    assert "add the scope to `scope` in mkdocs.yml" in line and "run `mkdocs-blogsvc login`" in line


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        (
            "sync_interval",
            -5,
            "sync_interval must be 0 or more and at most 86400 seconds, not -5: fix it in mkdocs.yml",
        ),
        (
            "timeout",
            0,
            "timeout must be more than 0 and at most 86400 seconds, not 0: fix it in mkdocs.yml (default 30)",
        ),
        ("timeout", 10_000_000_000, "timeout must be more than 0 and at most 86400 seconds, not 10000000000"),
        ("full_sync_interval", -1, "full_sync_interval must be 0 or more and at most 31536000 seconds, not -1"),
        ("redirect_port", 70000, "redirect_port must be 0 or more and at most 65535, not 70000: fix it in mkdocs.yml"),
        (
            "scope",
            "blog:read",
            "scope must include articles:read (the plugin reads the articles with it), not 'blog:read'",
        ),
        ("base_url", "http://", "base_url 'http://' has no host name: set it in mkdocs.yml to the service's address"),
    ],
)
def test_bad_settings_say_the_value_and_where_to_fix_it(
    tmp_path: Path, service: Service, caplog: pytest.LogCaptureFixture, setting: str, value: object, expected: str
) -> None:
    config = write_site(tmp_path, service.url, material=False, plugin={setting: value})
    with pytest.raises(Abort):
        build(load_config(str(config)))
    assert expected in caplog.text
