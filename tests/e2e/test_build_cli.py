"""`mkdocs-blogsvc sync` and `export`, and the plugin's serve/offline/token-expiry behaviour."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import PluginError

from mkdocs_blogsvc import cache as cache_module
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.credentials import CredentialStore
from mkdocs_blogsvc.plugin import BlogServicePlugin
from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.database import Database
from tests.conftest import Owner, add_article, issue_access_token
from tests.e2e.sites import Service, snapshot, write_credentials, write_site


def make_site(tmp_path: Path, service: Service, db: Database, owner: Owner, **plugin: object) -> Path:
    config = write_site(tmp_path, service.url, material=False, plugin=dict(plugin))
    write_credentials(tmp_path / "credentials.json", service.url, issue_access_token(db, owner))
    return config


def test_sync_command_prints_what_changed(tmp_path: Path, service: Service, db: Database, owner: Owner) -> None:
    article_id = add_article(db, owner.blog_id, "First words")
    config = make_site(tmp_path, service, db, owner)
    result = CliRunner().invoke(main, ["sync", "-f", str(config)])
    assert result.exit_code == 0, result.output
    assert f"new      First words  ({article_id})" in result.output
    assert "blogsvc: 1 new, 0 updated, 0 deleted, 0 unchanged in " in result.output
    again = CliRunner().invoke(main, ["sync", "-f", str(config)])
    assert "blogsvc: 0 new, 0 updated, 0 deleted, 1 unchanged" in again.output


def test_sync_command_failure_is_one_line_and_exit_1(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    config = make_site(tmp_path, service, db, owner)
    (tmp_path / "credentials.json").unlink()
    result = CliRunner().invoke(main, ["sync", "-f", str(config)])
    assert result.exit_code == 1 and "mkdocs-blogsvc login" in result.output and "Traceback" not in result.output


def test_export_writes_plain_files_and_removes_its_own_stale_ones(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    keep = add_article(db, owner.blog_id, "Kept")
    drop = add_article(db, owner.blog_id, "Dropped")
    config = make_site(tmp_path, service, db, owner)
    dest = tmp_path / "exported"
    (dest / "blog" / "posts").mkdir(parents=True)
    (dest / "blog" / "posts" / "mine.md").write_text("# Mine\n")
    result = CliRunner().invoke(main, ["export", str(dest), "-f", str(config), "--index"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (dest / "blog" / "posts").iterdir()) == ["dropped.md", "kept.md", "mine.md"]
    assert "Kept" in (dest / "blog" / "index.md").read_text()
    before = snapshot(dest)
    with db.session(write=True) as session:
        session.get(tables.Article, drop).status = "unpublished"
    result = CliRunner().invoke(main, ["export", str(dest), "-f", str(config)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (dest / "blog" / "posts").iterdir()) == ["kept.md", "mine.md"]
    assert not (dest / "blog" / "index.md").exists()
    assert snapshot(dest)["blog/posts/kept.md"] == before["blog/posts/kept.md"]
    assert keep


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "{{ article.title }}\n{{ artcle.title }}\n",
            r"cannot be rendered \(article \w+\): line 2: 'artcle' is undefined",
        ),
        ("{{ article.title }}\n{% if %}\n", r"cannot be loaded: line 2: Expected an expression"),
    ],
)
def test_export_with_a_broken_template_fails_in_one_line(
    tmp_path: Path, service: Service, db: Database, owner: Owner, source: str, expected: str
) -> None:
    add_article(db, owner.blog_id, "One")
    (tmp_path / "page.j2").write_text(source)
    config = make_site(tmp_path, service, db, owner, page_template="page.j2")
    result = CliRunner().invoke(main, ["export", str(tmp_path / "docs"), "-f", str(config)])
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and re.match(rf"Error: page_template \S+page\.j2 {expected}", lines[0]), result.output
    assert not (tmp_path / "docs" / "blog" / "posts" / "one.md").exists()


@pytest.mark.parametrize("command", ["sync", "export"])
def test_sync_and_export_wait_for_the_cache_lock_then_fail_in_one_line(
    tmp_path: Path, service: Service, db: Database, owner: Owner, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    add_article(db, owner.blog_id, "One")
    config = make_site(tmp_path, service, db, owner)
    monkeypatch.setattr(cache_module, "LOCK_TIMEOUT", 0.2)
    args = [command, *([str(tmp_path / "docs")] if command == "export" else []), "-f", str(config)]
    with Cache(tmp_path / ".cache" / "blogsvc").locked():  # a build or `mkdocs serve` in another process
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.output.startswith(
        f"Waiting for another process that is using the cache in {tmp_path / '.cache' / 'blogsvc'}...\n"
    )
    assert "Error: the cache in " in result.output and "is still in use by another process" in result.output
    assert "Traceback" not in result.output and "/api/v1/sync" not in service.requests
    assert CliRunner().invoke(main, args).exit_code == 0, "the lock is free again"


def build_with(config: Path, *, serve: bool | None = False) -> BlogServicePlugin:
    """One build as `mkdocs serve` runs it: MkDocs hands back the same plugin instance on each
    `load_config` (it caches plugins that define on_startup), and on_startup runs once."""
    loaded = load_config(str(config))
    instance = loaded.plugins["blogsvc"]
    assert isinstance(instance, BlogServicePlugin)
    if serve is not None:
        loaded.plugins.on_startup(command="serve" if serve else "build", dirty=False)
    build(loaded)
    return instance


def test_serve_syncs_first_then_only_after_sync_interval(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    add_article(db, owner.blog_id, "One")
    config = make_site(tmp_path, service, db, owner, sync_interval=60)
    plugin = build_with(config, serve=True)
    assert service.requests.count("/api/v1/sync") == 1
    assert build_with(config, serve=None) is plugin
    assert service.requests.count("/api/v1/sync") == 1, "a rebuild within sync_interval uses the cache"
    assert plugin.coordinator is not None and plugin.coordinator.last_sync_attempt is not None
    plugin.coordinator.last_sync_attempt -= 61
    build_with(config, serve=None)
    assert service.requests.count("/api/v1/sync") == 2


def test_offline_makes_no_request(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    add_article(db, owner.blog_id, "One")
    config = make_site(tmp_path, service, db, owner)
    build_with(config)
    offline = config.read_text().replace("base_url:", "offline: true\n    base_url:")
    config.write_text(offline)
    service.requests.clear()
    build_with(config)
    assert service.requests == []
    assert "(offline: built from the cache)" in caplog.text
    assert (tmp_path / "site" / "blog" / "posts" / "one" / "index.html").exists()


def test_refresh_token_expiring_soon_warns(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_site(tmp_path, service, db, owner)
    store_file = CredentialStore(tmp_path / "credentials.json")
    stored = store_file.load()
    assert stored is not None
    from dataclasses import replace

    store_file.save(replace(stored, refresh_expires_at=time.time() + 3 * 86400))
    build_with(config)
    assert "the stored refresh token expires on" in caplog.text and "mkdocs-blogsvc login" in caplog.text
    assert "svc_rt_" not in caplog.text and "svc_at_" not in caplog.text


def test_an_unwritable_cache_is_one_message_for_the_build_sync_and_export(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    add_article(db, owner.blog_id, "One")
    (tmp_path / "in-the-way").write_text("a file where the cache's parent folder should be\n")
    config = make_site(tmp_path, service, db, owner, cache_dir="in-the-way/cache")
    expected = (
        f"the cache in {tmp_path / 'in-the-way' / 'cache'} cannot be written (Not a directory); "
        "a file is in the way on that path where a folder should be (it is not a folder): move it, "
        "or set `cache_dir` in mkdocs.yml to another folder"
    )
    for args in (["sync"], ["export", str(tmp_path / "docs")]):
        result = CliRunner().invoke(main, [*args, "-f", str(config)])
        assert result.exit_code == 1 and result.output == f"Error: {expected}\n", result.output
    loaded = load_config(str(config))
    loaded.plugins.on_startup(command="build", dirty=False)
    loaded = loaded.plugins.on_config(loaded)
    with pytest.raises(PluginError) as caught:  # on_pre_build: where `mkdocs build` takes the cache
        loaded.plugins.on_pre_build(config=loaded)
    assert str(caught.value) == f"blogsvc: {expected}"
    assert "/api/v1/sync" not in service.requests


def test_offline_with_nothing_cached_warns_that_the_blog_is_left_out(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: a fresh CI runner with `offline: true` published the site without its
    blog, exit 0 even with --strict, and said only "(offline: built from the cache)"."""
    add_article(db, owner.blog_id, "One")
    config = make_site(tmp_path, service, db, owner)
    config.write_text(config.read_text().replace("base_url:", "offline: true\n    base_url:"))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert (
        "WARNING -  blogsvc: offline is true and the cache holds no article, so the blog's articles are left "
        "out of this build; set offline: false to sync them (in CI, restore .cache/ as the CI recipe does)"
    ) in result.stderr
    assert service.requests == []


def test_offline_with_a_synced_blog_that_has_no_article_builds_without_a_warning(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: the warning for a cache never synced also fired for a blog synced and
    empty (nothing is left out), and so stopped `--strict` builds of a blog with no article yet."""
    config = make_site(tmp_path, service, db, owner)
    synced = CliRunner().invoke(main, ["sync", "-f", str(config)])
    assert synced.exit_code == 0, synced.output
    config.write_text(config.read_text().replace("base_url:", "offline: true\n    base_url:"))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "offline is true and the cache holds no article" not in result.stderr


def test_a_cache_that_fails_during_the_sync_stops_the_build_even_with_on_error_warn(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """An unwritable cache is no outage of the service: `on_error: warn` does not build from it."""
    add_article(db, owner.blog_id, "One")
    config = make_site(tmp_path, service, db, owner, cache_dir="cache", on_error="warn")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "articles").write_text("a file where the cache's articles folder should be\n")
    loaded = load_config(str(config))
    loaded.plugins.on_startup(command="build", dirty=False)
    loaded = loaded.plugins.on_config(loaded)
    with pytest.raises(PluginError, match=r"blogsvc: the cache in .* cannot be written"):
        loaded.plugins.on_pre_build(config=loaded)
    assert "/api/v1/sync" in service.requests  # it failed while syncing, not before
