"""Building a site that uses the plugin on a machine with no credentials at all (a contributor, a
fork's pull request): one warning and the rest of the site on a person's machine, a stop in CI,
the cache when there is one, and dead credentials that still stop every build.

Every build here sets `CI` itself: the suite runs in CI with `CI=true`.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from mkdocs_blogsvc.config import ENV_REFRESH_TOKEN
from mkdocs_blogsvc.plugin import BlogServicePlugin
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, write_credentials, write_site
from tests.plugin.auth_helpers import register_client

#: Variables that would give the build credentials or a CI context from the test's own environment.
_CONTROLLED = ("CI", ENV_REFRESH_TOKEN, "BLOGSVC_CLIENT_ID", "BLOGSVC_CLIENT_SECRET")


def mkdocs_build(config: Path, *args: str, ci: str | None = None) -> subprocess.CompletedProcess[str]:
    """`mkdocs build` in a new process, with `CI` set to `ci` (or absent) whatever the suite's own."""
    env = {key: value for key, value in os.environ.items() if key not in _CONTROLLED}
    env["NO_MKDOCS_2_WARNING"] = "1"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("WARNING")]


def article_pages(site: Path) -> list[str]:
    posts = site / "blog" / "posts"
    return sorted(path.parent.name for path in posts.rglob("index.html")) if posts.is_dir() else []


@pytest.fixture
def no_credentials_site(tmp_path: Path, service: Service, db: Database, owner: Owner) -> Path:
    """A Material site with the blog plugin whose blog has an article, and no credentials anywhere."""
    add_article(db, owner.blog_id, "Only for the owner")
    return write_site(tmp_path, service.url)


@pytest.mark.slow
def test_without_credentials_a_person_gets_the_site_without_the_blog(
    tmp_path: Path, service: Service, no_credentials_site: Path
) -> None:
    result = mkdocs_build(no_credentials_site)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "blog" / "index.html").is_file()
    assert article_pages(tmp_path / "site") == []
    [warning] = warnings_of(result.stderr)
    assert warning.startswith("WARNING -  blogsvc: no credentials for the blog at")
    assert f"(no {tmp_path / 'credentials.json'} and BLOGSVC_REFRESH_TOKEN is not set)" in warning
    assert "the blog's articles are left out of this build" in warning
    assert "run `mkdocs-blogsvc login`" in warning and "ask the site owner for access" in warning
    assert service.requests == [], "nothing to authenticate with: the service is not asked"


@pytest.mark.slow
@pytest.mark.parametrize("ci", ["true", "1", "woodpecker"])
def test_in_ci_a_build_without_credentials_stops_in_one_line(
    no_credentials_site: Path, tmp_path: Path, ci: str
) -> None:
    for args in ((), ("--strict",)):
        result = mkdocs_build(no_credentials_site, *args, ci=ci)
        assert result.returncode == 1, result.stderr
        [line] = [line for line in result.stderr.splitlines() if "blogsvc" in line]
        assert line.startswith("ERROR   -  blogsvc: no credentials for the blog at")
        assert f"and CI={ci} stops the build rather than publish the site without its articles" in line
        assert "BLOGSVC_REFRESH_TOKEN secret" in line and "on_missing_credentials: warn" in line
        assert "Traceback" not in result.stderr
        assert not (tmp_path / "site").exists(), "nothing was published"


@pytest.mark.slow
def test_strict_fails_on_the_warning_and_ci_false_is_a_person(no_credentials_site: Path) -> None:
    result = mkdocs_build(no_credentials_site, "--strict", ci="false")
    assert result.returncode == 1
    assert len(warnings_of(result.stderr)) == 1
    assert "Aborted with 1 warnings in strict mode!" in result.stdout + result.stderr


def test_with_a_cache_the_articles_come_from_it_with_the_warning(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(ENV_REFRESH_TOKEN, raising=False)
    add_article(db, owner.blog_id, "Synced once")
    config = write_site(tmp_path, service.url, material=False)
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    build(load_config(str(config)))  # the owner's build fills the cache
    (tmp_path / "credentials.json").unlink()
    add_article(db, owner.blog_id, "Published after the sync")
    service.requests.clear()
    caplog.clear()

    build(load_config(str(config)))
    assert article_pages(tmp_path / "site") == ["synced-once"]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "this build has the 1 article of an earlier sync, from the cache, as of that sync" in warning
    assert "run `mkdocs-blogsvc login`" in warning
    assert service.requests == []

    # Found by review: in CI the stop said "rather than publish the site without its articles",
    # with the articles right there in the cache.
    monkeypatch.setenv("CI", "true")
    caplog.clear()
    with pytest.raises(Abort):
        build(load_config(str(config)))
    [error] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert (
        "and CI=true stops the build rather than publish the site with the 1 article of a cache it cannot sync" in error
    )


@pytest.mark.parametrize(
    ("setting", "ci", "stops"),
    [
        ("warn", "true", False),
        ("fail", None, True),
        ("auto", "0", False),
        ("auto", " False ", False),  # `CI` is read case-insensitively, without surrounding blanks
    ],
)
def test_on_missing_credentials_chooses(
    tmp_path: Path,
    service: Service,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    setting: str,
    ci: str | None,
    stops: bool,
) -> None:
    monkeypatch.delenv(ENV_REFRESH_TOKEN, raising=False)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    config = write_site(tmp_path, service.url, material=False, plugin={"on_missing_credentials": setting})
    if stops:
        with pytest.raises(Abort):
            build(load_config(str(config)))
        assert "and on_missing_credentials is fail: run `mkdocs-blogsvc login`" in caplog.text
    else:
        build(load_config(str(config)))
        assert (tmp_path / "site" / "index.html").is_file()
        assert "the blog's articles are left out of this build" in caplog.text


def test_a_blank_refresh_token_secret_is_no_credentials(
    tmp_path: Path, service: Service, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A secret that holds only blanks (an empty secret pasted with its newline) is as good as
    none: a person's build goes on without the blog instead of stopping at `not logged in`."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(ENV_REFRESH_TOKEN, " \n")
    config = write_site(tmp_path, service.url, material=False)
    build(load_config(str(config)))
    assert (tmp_path / "site" / "index.html").is_file()
    assert "the blog's articles are left out of this build" in caplog.text
    assert service.requests == []


def test_the_setting_accepts_only_its_three_values(tmp_path: Path, service: Service) -> None:
    config = write_site(tmp_path, service.url, material=False, plugin={"on_missing_credentials": "ignore"})
    with pytest.raises(Abort):
        load_config(str(config))


@pytest.mark.parametrize("dead", ["corrupt-file", "spent-refresh-token"])
def test_dead_credentials_stop_the_build_even_with_warn(
    tmp_path: Path,
    service: Service,
    db: Database,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    dead: str,
) -> None:
    """Credentials that exist are never "missing": only the owner can mend them."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(ENV_REFRESH_TOKEN, raising=False)
    client_id, _ = register_client(db)
    config = write_site(
        tmp_path, service.url, material=False, plugin={"on_missing_credentials": "warn", "client_id": client_id}
    )
    if dead == "corrupt-file":
        (tmp_path / "credentials.json").write_text("{not json")
        expected = "cannot be read (not valid JSON): run `mkdocs-blogsvc login`"
    else:
        monkeypatch.setenv(ENV_REFRESH_TOKEN, "svc_rt_never_issued")
        expected = "the service refused the refresh token"
    with pytest.raises(Abort):
        build(load_config(str(config)))
    assert expected in caplog.text and "left out" not in caplog.text and "svc_rt_never_issued" not in caplog.text


def test_mkdocs_serve_without_credentials_waits_quietly_for_a_login(
    tmp_path: Path,
    service: Service,
    db: Database,
    owner: Owner,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The background sync of `mkdocs serve` neither warns again nor asks the service until
    credentials appear; then it syncs and the rebuild shows the articles."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(ENV_REFRESH_TOKEN, raising=False)
    add_article(db, owner.blog_id, "After the login")
    config = write_site(tmp_path, service.url, material=False, site_url=None, plugin={"sync_interval": 60})
    loaded = load_config(str(config))
    plugin = loaded.plugins["blogsvc"]
    assert isinstance(plugin, BlogServicePlugin)
    loaded.plugins.on_startup(command="serve", dirty=False)
    build(loaded)
    assert article_pages(tmp_path / "site") == []
    assert plugin.coordinator is not None
    caplog.clear()
    assert plugin.coordinator.poll() == 60
    assert plugin.coordinator.poll() == 60
    assert service.requests == [] and not [r for r in caplog.records if r.levelno >= logging.WARNING]

    write_credentials(
        tmp_path / "credentials.json", service.url, issue_access_token(db, owner)
    )  # `login` in another terminal
    assert plugin.coordinator.poll() == 60
    assert "/api/v1/sync" in service.requests
    build(load_config(str(config)))  # the rebuild the signal file causes
    assert article_pages(tmp_path / "site") == ["after-the-login"]
