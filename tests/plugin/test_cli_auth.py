"""`mkdocs-blogsvc login | status | logout | token` as a user runs them, against the reference
service running as a process on a loopback port."""

from __future__ import annotations

import logging
import os
import re
import stat
import subprocess
import sys
import webbrowser
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from mkdocs_blogsvc import config, errors
from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.credentials import CredentialStore
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, Owner, add_article, add_owner
from tests.plugin.auth_helpers import browser, register_client

TOKEN = re.compile(r"svc_(at|rt)_")


def write_site(folder: Path, base_url: str, client_id: str, *, extra_instance: bool = False) -> Path:
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    second = (
        f"  - blogsvc:\n      base_url: {base_url}\n      client_id: {client_id}\n"
        "      blog_dir: news\n      credentials_file: .blogsvc/news.json\n"
        if extra_instance
        else ""
    )
    (folder / "mkdocs.yml").write_text(
        "site_name: Test site\n"
        "plugins:\n"
        f"  - blogsvc:\n      base_url: {base_url}\n      client_id: {client_id}\n"
        f"{second}"
    )
    return folder / "mkdocs.yml"


class Site:
    """A site folder with mkdocs.yml, a user with a blog, and a registered public client."""

    def __init__(self, live_server: LiveServer, tmp_path: Path) -> None:
        self.server = live_server
        self.db = Database.from_path(live_server.db_path)
        self.owner: Owner = add_owner(self.db)
        add_article(self.db, self.owner.blog_id, "Hello world")
        self.client_id, _ = register_client(self.db)
        self.config_file = write_site(tmp_path / "site", live_server.url, self.client_id)
        self.credentials = CredentialStore(tmp_path / "site" / ".blogsvc" / "credentials.json")

    def settings(self) -> config.Settings:
        [settings] = config.load_site_settings(str(self.config_file))
        return settings

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The real command in a new process, as a user types it."""
        return subprocess.run(
            [sys.executable, "-m", "mkdocs_blogsvc", *args, "-f", str(self.config_file)],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **(env or {})},
        )


@pytest.fixture
def site(live_server: LiveServer, tmp_path: Path):
    site = Site(live_server, tmp_path)
    yield site
    site.db.dispose()


@pytest.mark.slow
def test_login_status_refresh_logout_never_show_a_token(site: Site, monkeypatch, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(webbrowser, "open", browser(site.owner))
    runner = CliRunner()
    outputs = []

    result = runner.invoke(main, ["login", "-f", str(site.config_file), "--timeout", "30"])
    outputs.append(result.output)
    assert result.exit_code == 0, result.output
    assert f'Connected to the blog "Alice\'s Blog" ({site.owner.blog_slug}, 1 published article)' in result.output
    assert str(site.credentials.path) in result.output
    assert stat.S_IMODE(site.credentials.path.stat().st_mode) == 0o600

    result = runner.invoke(main, ["status", "-f", str(site.config_file)])
    outputs.append(result.output)
    assert result.exit_code == 0, result.output
    for line in (
        "Blog:",
        "Alice's Blog (alice-blog)",
        "Language:",
        " en",
        "Published articles: 1",
        "Scopes:",
        "articles:read blog:read",
        "Connected at:",
        "Last sync:",
        "never",
        "Access token:",
        "valid for 59 minutes",
        "Refresh token:",
        "(in 30 days)",
    ):
        assert line in result.output
    before = site.credentials.load()

    site.db.advance_clock(3601)  # the next call is refused (401), refreshes once and retries
    result = runner.invoke(main, ["status", "-f", str(site.config_file)])
    outputs.append(result.output)
    assert result.exit_code == 0, result.output
    after = site.credentials.load()
    assert before is not None and after is not None and after.refresh_token != before.refresh_token

    for expected in ("Logged out: deleted", "Not logged in: there are no credentials"):
        result = runner.invoke(main, ["logout", "-f", str(site.config_file)])
        outputs.append(result.output)
        assert result.exit_code == 0 and expected in result.output
    assert not site.credentials.path.exists()

    result = runner.invoke(main, ["status", "-f", str(site.config_file)])
    outputs.append(result.output)
    assert result.exit_code == 1 and "run `mkdocs-blogsvc login`" in result.output

    assert not TOKEN.search("".join(outputs)), "a token was printed"
    assert not TOKEN.search(caplog.text), "a token was logged"
    assert "svc_" not in repr(after) and "svc_" not in repr(site.settings())


@pytest.mark.slow
def test_login_without_a_browser_prints_the_address_and_waits(site: Site) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mkdocs_blogsvc",
            "login",
            "--no-browser",
            "--timeout",
            "60",
            "-f",
            str(site.config_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    url = None
    for line in process.stderr:
        if "/api/oauth/authorize?" in line:
            url = line.strip()
            break
    assert url is not None and url.startswith(site.server.url)
    location = drive_consent(url, username=site.owner.username, password=site.owner.password)
    assert httpx.get(location, timeout=10).status_code == 200  # the "you can close this tab" page
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Connected to the blog" in out and site.credentials.load() is not None


@pytest.mark.slow
def test_a_revoked_grant_stops_status_with_one_actionable_line(site: Site, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(webbrowser, "open", browser(site.owner))
        assert CliRunner().invoke(main, ["login", "-f", str(site.config_file)]).exit_code == 0
    old = site.credentials.load()
    assert old is not None
    with connect(site.settings()) as service:
        service.tokens.force_refresh()  # rotation: `old.refresh_token` is spent
        with pytest.raises(errors.InvalidGrant):  # reuse detected: the service revokes the grant
            service.client.token_request(
                {"grant_type": "refresh_token", "refresh_token": old.refresh_token, "client_id": site.client_id}
            )
    assert site.server.admin("advance-clock", "3601").returncode == 0

    result = site.run("status")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "rotated, revoked or has expired" in lines[0] and "Run `mkdocs-blogsvc login` again" in lines[0]
    assert result.stdout == "" and not TOKEN.search(result.stderr)


@pytest.mark.slow
def test_token_command_hands_a_fresh_refresh_token_to_ci(site: Site) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(webbrowser, "open", browser(site.owner))
        assert CliRunner().invoke(main, ["login", "-f", str(site.config_file)]).exit_code == 0
    stored = site.credentials.load()
    assert stored is not None

    result = site.run("token", "--print-refresh-token")
    assert result.returncode == 0, result.stderr
    printed = result.stdout.strip()
    assert re.fullmatch(r"svc_rt_[A-Za-z0-9_-]+", printed) and printed != stored.refresh_token
    assert "previous refresh token is now dead" in result.stderr and not TOKEN.search(result.stderr)
    assert not site.credentials.path.exists()  # handed over: this machine will not spend it

    # What CI then does: no store, the secret in the environment. The store is seeded and the
    # rotated token kept there for the next run.
    result = site.run("status", env={config.ENV_REFRESH_TOKEN: printed})
    assert result.returncode == 0, result.stderr
    seeded = site.credentials.load()
    assert seeded is not None and seeded.refresh_token != printed
    assert not TOKEN.search(result.stdout + result.stderr)


# --- choosing the site's settings (no service needed) ----------------------------------------


def test_settings_errors_name_the_file(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = tmp_path / "nowhere" / "mkdocs.yml"
    result = runner.invoke(main, ["status", "-f", str(missing)])
    assert result.exit_code == 1 and "does not exist" in result.output and str(missing) in result.output

    plain = tmp_path / "plain" / "mkdocs.yml"
    (plain.parent / "docs").mkdir(parents=True)
    plain.write_text("site_name: Plain\nplugins:\n  - search\n")
    result = runner.invoke(main, ["login", "-f", str(plain)])
    assert result.exit_code == 1 and "no blogsvc plugin in" in result.output

    broken = tmp_path / "broken" / "mkdocs.yml"
    (broken.parent / "docs").mkdir(parents=True)
    broken.write_text("site_name: Broken\nplugins:\n  - blogsvc:\n      base_url: ftp://example.com\n")
    result = runner.invoke(main, ["status", "-f", str(broken)])
    assert result.exit_code == 1 and "base_url must start with http" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["login", "logout"])
def test_an_unusable_credentials_folder_is_one_line_not_a_traceback(tmp_path: Path, command: str) -> None:
    config_file = write_site(tmp_path / "site", "http://127.0.0.1:9", "client-1")
    (tmp_path / "site" / ".blogsvc").write_text("a file where the credentials folder should be\n")
    result = CliRunner().invoke(
        main, [command, "-f", str(config_file), *(["--no-browser"] if command == "login" else [])]
    )
    assert result.exit_code == 1 and not isinstance(result.exception, OSError)
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: cannot ") and str(tmp_path / "site" / ".blogsvc") in line
    assert "`credentials_file`" in line


@pytest.mark.parametrize("command", ["status", "sync"])
def test_a_yaml_syntax_error_in_mkdocs_yml_is_one_line(tmp_path: Path, command: str) -> None:
    """Found by review: YAML's message runs over several lines (the problem, then where)."""
    config_file = tmp_path / "mkdocs.yml"
    config_file.write_text("site_name: Broken\nplugins: [blogsvc\n  - search\n")
    result = CliRunner().invoke(main, [command, "-f", str(config_file)])
    assert result.exit_code == 1, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith(f"Error: cannot load {config_file}: ") and "line 2, column 10" in line, line


def test_several_instances_need_a_choice(tmp_path: Path) -> None:
    config_file = write_site(tmp_path / "site", "http://127.0.0.1:9", "client-1", extra_instance=True)
    instances = config.load_site_settings(str(config_file))
    assert [s.blog_dir for s in instances] == ["blog", "news"]
    assert instances[1].credentials_file == tmp_path / "site" / ".blogsvc" / "news.json"

    runner = CliRunner()
    result = runner.invoke(main, ["logout", "-f", str(config_file)])
    assert result.exit_code == 1 and "--instance" in result.output and "blog, news" in result.output
    result = runner.invoke(main, ["logout", "-f", str(config_file), "--instance", "news"])
    assert result.exit_code == 0 and "news.json" in result.output
    result = runner.invoke(main, ["logout", "-f", str(config_file), "--blog-dir", "nope"])
    assert result.exit_code == 1 and "no blogsvc instance has blog_dir 'nope'" in result.output


def test_token_command_needs_its_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["token"])
    assert result.exit_code == 2 and "--print-refresh-token" in result.output


def test_login_refuses_a_credentials_file_that_the_site_would_publish(tmp_path: Path) -> None:
    """What a build refuses, `login` must not write: tokens inside docs_dir would be deployed."""
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text(
        "site_name: Test\nplugins:\n  - blogsvc:\n      client_id: c1\n      credentials_file: docs/creds.json\n"
    )
    result = CliRunner().invoke(main, ["login", "--no-browser", "--timeout", "1", "-f", str(site / "mkdocs.yml")])
    assert result.exit_code == 1
    assert "credentials_file" in result.output and "is inside docs_dir" in result.output
    assert "Open this address" not in result.output and not (site / "docs" / "creds.json").exists()


def test_status_without_client_id_or_credentials_names_client_id_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(config.ENV_CLIENT_ID, raising=False)
    monkeypatch.delenv(config.ENV_REFRESH_TOKEN, raising=False)
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "mkdocs.yml").write_text("site_name: Test\nplugins:\n  - blogsvc\n")
    result = CliRunner().invoke(main, ["status", "-f", str(site / "mkdocs.yml")])
    assert result.exit_code == 1
    assert "client_id is not set" in result.output and "Traceback" not in result.output


def test_without_f_the_commands_find_properdocs_yml_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by review: ProperDocs asks to rename mkdocs.yml to properdocs.yml, and then no
    command found the site."""
    monkeypatch.chdir(tmp_path)
    missing = CliRunner().invoke(main, ["sync"])
    assert missing.exit_code == 1 and missing.output == (
        f"Error: no mkdocs.yml (nor mkdocs.yaml, properdocs.yml, properdocs.yaml) in {tmp_path}: run the command from the site's "
        "folder, or pass -f path/to/mkdocs.yml\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "properdocs.yml").write_text("site_name: Plain\nplugins:\n  - search\n")
    found = CliRunner().invoke(main, ["sync"])
    assert found.exit_code == 1 and "no blogsvc plugin in" in found.output and "properdocs.yml" in found.output
