"""`mkdocs-blogsvc new DIR`: a site that builds at once (warning that the blog is left out until
login), then `login --no-browser` completed by pasting the redirected address (the listener is
never contacted), then a build with the blog's articles. As a user runs them: real processes,
the reference service as a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mkdocs_blogsvc import __version__, cli, installed
from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server.consent_driver import drive_consent
from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, add_article, add_owner
from tests.plugin.auth_helpers import register_client


def environment() -> dict[str, str]:
    """The test's environment (read when called: the autouse `not_in_ci` has removed `CI` then)."""
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"],
        cwd=site,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.slow
def test_a_new_site_builds_before_login_and_with_the_blog_after_a_pasted_login(
    live_server: LiveServer, tmp_path: Path
) -> None:
    db = Database.from_path(live_server.db_path)
    owner = add_owner(db)
    add_article(db, owner.blog_id, "Hello from the service", slug="hello")
    client_id, _ = register_client(db)
    db.dispose()
    site = tmp_path / "my-site"

    result = CliRunner().invoke(main, ["new", str(site), "--base-url", live_server.url, "--client-id", client_id])
    assert result.exit_code == 0, result.output
    config = yaml.load((site / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # !ENV tags kept as text
    [plugin] = [p["blogsvc"] for p in config["plugins"] if isinstance(p, dict) and "blogsvc" in p]
    assert plugin["client_id"] == client_id and plugin["base_url"] == live_server.url  # in the open
    assert ".blogsvc/" in (site / ".gitignore").read_text() and ".cache/" in (site / ".gitignore").read_text()
    assert (site / ".github" / "workflows" / "publish.yml").is_file()
    assert (site / "overrides" / "main.html").is_file() and (site / "overrides" / "blogsvc-head.html").is_file()
    workflow = yaml.safe_load((site / ".github" / "workflows" / "publish.yml").read_text())
    assert "BLOGSVC_CLIENT_ID" not in str(workflow) and "mkdocs build" in str(workflow)

    before = mkdocs_build(site)
    assert before.returncode == 0, before.stderr
    assert "WARNING -  blogsvc: no credentials for the blog at" in before.stderr
    assert not list((site / "site").glob("blog/hello/index.html"))

    login = subprocess.Popen(
        [sys.executable, "-m", "mkdocs_blogsvc", "login", "--no-browser", "--timeout", "60"],
        cwd=site,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert login.stdin is not None and login.stderr is not None and login.stdout is not None
    url = None
    for line in login.stderr:
        if "/api/oauth/authorize?" in line:
            url = line.strip()
            break
    assert url is not None, login.communicate(timeout=10)
    said = []
    for line in login.stderr:  # what it says before it reads the pasted line
        said.append(line)
        if "paste it here" in line:
            break
    assert "paste it here" in "".join(said), said
    # approved "on another device": the redirect is not followed, its address is pasted
    location = drive_consent(url, username=owner.username, password=owner.password, blog_slug=owner.blog_slug)
    login.stdin.write(location + "\n")
    login.stdin.close()
    assert login.stdout is not None
    out, err = login.stdout.read(), login.stderr.read()
    code = login.wait(timeout=60)
    login.stdout.close()
    login.stderr.close()
    assert code == 0, err
    assert "Connected to the blog" in out

    after = mkdocs_build(site)
    assert after.returncode == 0, after.stderr
    assert "blogsvc: 1 new" in after.stderr and "WARNING" not in after.stderr, after.stderr
    assert "Hello from the service" in (site / "site" / "blog" / "hello" / "index.html").read_text()


def test_new_refuses_a_folder_that_is_not_empty_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine\n")
    (tmp_path / "a-file").write_text("mine\n")
    for target in ("taken", "a-file"):
        result = CliRunner().invoke(
            main, ["new", str(tmp_path / target), "--base-url", "https://b.example", "--client-id", "x"]
        )
        assert result.exit_code == 1
        assert result.output == (
            f"Error: {tmp_path / target} already exists and is not an empty folder: `new` "
            "writes only into a new or empty folder; choose another DIR\n"
        )
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine\n" and len(list((tmp_path / "taken").iterdir())) == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--base-url", "ftp://b.example", "--client-id", "x"],
            "Error: --base-url: base_url must start with http:// or https://, not 'ftp://b.example': pass the "
            "service's address, such as https://blogs.example.com",
        ),
        (
            ["--base-url", "https://b.example", "--client-id", "two words"],
            "Error: --client-id 'two words' is not a client id",
        ),
        (["--client-id", "x"], "Error: --base-url is missing and there is no terminal to ask for it: pass --base-url"),
    ],
    ids=["bad-url", "bad-client-id", "no-terminal"],
)
def test_new_checks_its_values_before_writing_anything(tmp_path: Path, args: list[str], expected: str) -> None:
    result = CliRunner().invoke(main, ["new", str(tmp_path / "site"), *args])
    assert result.exit_code == 1 and result.output.startswith(expected), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "site").exists()


def test_new_asks_for_what_is_left_out_at_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_at_a_terminal", lambda: True)
    result = CliRunner().invoke(
        main, ["new", str(tmp_path / "site")], input="not a url\nhttps://blogs.example.com/\nclient-123\n"
    )
    assert result.exit_code == 0, result.output
    assert "Error: --base-url: base_url must start with http:// or https://" in result.output  # asked again
    text = (tmp_path / "site" / "mkdocs.yml").read_text()
    assert 'base_url: "https://blogs.example.com"' in text and 'client_id: "client-123"' in text


def _workflow_install_line(site: Path) -> str:
    workflow = yaml.safe_load((site / ".github" / "workflows" / "publish.yml").read_text())
    [line] = [step["run"] for step in workflow["jobs"]["build"]["steps"] if "pip install" in step.get("run", "")]
    return str(line)


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        ({}, f'pip install "mkdocs-blogsvc=={__version__}"'),
        (
            {"url": "https://github.com/ana/mkdocs-blogsvc.git", "vcs_info": {"vcs": "git", "commit_id": "0123abc"}},
            'pip install "mkdocs-blogsvc @ git+https://github.com/ana/mkdocs-blogsvc.git@0123abc"',
        ),
    ],
    ids=["from-pypi", "from-git"],
)
def test_the_workflow_installs_this_copy_where_ci_can_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, object], expected: str
) -> None:
    """Found by review: the workflow pinned `mkdocs-blogsvc==0.1.0`, a release not on PyPI, so a
    site started from a clone failed its first CI run. It installs what this copy was installed
    from (pip's PEP 610 record), the same release or the same commit."""
    monkeypatch.setattr(installed, "_direct_url", lambda: direct_url)
    result = CliRunner().invoke(
        main, ["new", str(tmp_path / "s"), "--base-url", "https://b.example", "--client-id", "x"]
    )
    assert result.exit_code == 0, result.output
    assert _workflow_install_line(tmp_path / "s").startswith(expected)
    assert "To do:" not in result.output


def test_a_copy_installed_from_a_folder_leaves_the_workflow_to_fill_in_and_says_so(tmp_path: Path) -> None:
    """This test environment is an editable install of the clone: no machine but this one can
    install that folder, so the workflow gets the CI recipe's form to fill in, and `new` says so."""
    result = CliRunner().invoke(
        main, ["new", str(tmp_path / "s"), "--base-url", "https://b.example", "--client-id", "x"]
    )
    assert result.exit_code == 0, result.output
    assert _workflow_install_line(tmp_path / "s").startswith(
        'pip install "mkdocs-blogsvc @ git+https://github.com/OWNER/mkdocs-blogsvc@COMMIT"'
    )
    [to_do] = [line for line in result.output.splitlines() if line.startswith("To do: ")]
    assert "installed from a folder" in to_do and "replace OWNER and COMMIT" in to_do


@pytest.mark.parametrize(
    ("base_url", "dev_addr"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8001"),
        ("http://localhost:8000/", "127.0.0.1:8001"),
        ("http://127.0.0.1:9000", None),
        ("https://blogs.example.com", None),
    ],
)
def test_a_site_of_a_service_on_the_serve_port_serves_elsewhere(
    tmp_path: Path, base_url: str, dev_addr: str | None
) -> None:
    """Found by review: with the reference service on its default port, `mkdocs serve` of a new
    site stopped with `Address already in use` (MkDocs' default is the same 127.0.0.1:8000)."""
    result = CliRunner().invoke(main, ["new", str(tmp_path / "s"), "--base-url", base_url, "--client-id", "x"])
    assert result.exit_code == 0, result.output
    config = yaml.load((tmp_path / "s" / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    assert config.get("dev_addr") == dev_addr
