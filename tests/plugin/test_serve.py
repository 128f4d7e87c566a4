"""Live updates under `mkdocs serve`: the background sync, the signal file that makes the
LiveReloadServer rebuild, and a real `mkdocs serve` process showing an article published on
the running reference service."""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.livereload import LiveReloadServer

from mkdocs_blogsvc import watch
from mkdocs_blogsvc.cache import SIGNAL_NAME, Cache
from mkdocs_blogsvc.coordinator import PAUSED
from mkdocs_blogsvc.plugin import BlogServicePlugin
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.ratelimit import Limit
from tests.conftest import (
    LiveServer,
    Owner,
    add_article,
    add_owner,
    free_port,
    issue_access_token,
    start_of_window,
    with_default_sigint,
)
from tests.e2e.sites import Service, snapshot, write_credentials, write_site

SIGNAL = SIGNAL_NAME


def make_site(tmp_path: Path, base_url: str, token: str, **plugin: object) -> Path:
    config = write_site(tmp_path, base_url, material=False, plugin=dict(plugin), site_url=None)
    write_credentials(tmp_path / "credentials.json", base_url, token)
    return config


def serve_build(config: Path, *, first: bool = False) -> BlogServicePlugin:
    """One build as `mkdocs serve` runs it (MkDocs hands back the cached plugin instance)."""
    loaded = load_config(str(config))
    plugin = loaded.plugins["blogsvc"]
    assert isinstance(plugin, BlogServicePlugin)
    if first:
        loaded.plugins.on_startup(command="serve", dirty=False)
    build(loaded)
    return plugin


def test_background_sync_signals_changes_only(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    add_article(db, owner.blog_id, "First words", minutes_ago=5)
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    plugin = serve_build(config, first=True)
    cache = tmp_path / ".cache" / "blogsvc"
    Cache(cache).prepare_signal()
    quiet = snapshot(cache)

    coordinator = plugin.coordinator
    assert coordinator is not None

    def poll_now() -> float:
        assert coordinator.last_sync_attempt is not None
        coordinator.last_sync_attempt -= 60  # as if sync_interval had passed
        return coordinator.poll()

    service.requests.clear()
    assert poll_now() == 60
    assert service.requests == ["/api/v1/sync"]
    assert snapshot(cache) == quiet, "a sync with no change rewrites neither the manifest nor the signal"

    add_article(db, owner.blog_id, "Second words")
    caplog.clear()
    poll_now()
    signalled = snapshot(cache)
    assert signalled[SIGNAL] != quiet[SIGNAL]
    assert re.search(
        r"blogsvc: 1 new, 0 updated, 0 deleted, 1 unchanged in \S+ s \(background sync: rebuilding the site\)",
        caplog.text,
    )

    service.requests.clear()
    caplog.clear()
    assert serve_build(config) is plugin  # the rebuild the signal causes
    assert service.requests == [], "the rebuild uses what the background sync fetched"
    assert "0 new, 0 updated, 0 deleted, 2 unchanged in " in caplog.text and "built from the cache" in caplog.text
    assert (tmp_path / "site" / "blog" / "posts" / "second-words" / "index.html").is_file()
    assert snapshot(cache)[SIGNAL] == signalled[SIGNAL], "a build never writes the signal"

    service.stop()
    caplog.clear()
    for _ in range(2):
        poll_now()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, "one warning per distinct error, not one per poll"
    assert "the background sync with" in warnings[0].getMessage() and "could not reach" in warnings[0].getMessage()
    assert warnings[0].exc_info is None and "svc_" not in caplog.text
    assert snapshot(cache)[SIGNAL] == signalled[SIGNAL]


def test_a_rate_limited_background_sync_warns_once(
    tmp_path: Path, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by review: the service's 429 says "retry after N seconds", N counting down, so each
    attempt was a new message to `WarnOnce` and the warning came again at every attempt."""
    start_of_window(db, 600)  # the attempts below, 5 s or so, all in the window the build spends
    service = Service(db, rate_limits={"token": Limit(1, 600)})
    try:
        # timeout: 1, so that each attempt gives up at once rather than waiting out its deadline
        config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60, timeout=1)
        coordinator = serve_build(config, first=True).coordinator  # spends the window's one request
        assert coordinator is not None and coordinator.last_sync_attempt is not None
        caplog.clear()
        for _ in range(3):
            coordinator.last_sync_attempt -= 60
            coordinator.poll()
            time.sleep(1.1)  # the next answer's Retry-After is a second shorter
    finally:
        service.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "HTTP 429" in warnings[0], warnings


def test_background_sync_waits_while_another_process_holds_the_cache(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    add_article(db, owner.blog_id, "First words")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    coordinator = serve_build(config, first=True).coordinator
    assert coordinator is not None and coordinator.last_sync_attempt is not None
    coordinator.last_sync_attempt -= 60
    service.requests.clear()
    with Cache(tmp_path / ".cache" / "blogsvc").locked():  # `mkdocs-blogsvc sync` running in another process
        assert coordinator.poll() == 1.0, "try again soon"
    assert service.requests == []
    assert coordinator.poll() == 60 and service.requests == ["/api/v1/sync"]
    assert not coordinator.lock.locked()


def test_on_serve_starts_and_on_shutdown_stops_the_poller(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    loaded = load_config(str(config))
    plugin.on_serve(server, config=loaded, builder=lambda: None)
    assert plugin.poller is not None and plugin.poller.alive
    assert str(tmp_path / ".cache" / "blogsvc" / SIGNAL) in server._watched_paths
    plugin.on_shutdown()
    assert plugin.poller is None
    assert not any(t.name.startswith("blogsvc-sync") for t in threading.enumerate())

    off = make_site(tmp_path / "off", service.url, issue_access_token(db, owner), sync_interval=0)
    plugin_off = serve_build(off, first=True)
    plugin_off.on_serve(server, config=load_config(str(off)), builder=lambda: None)
    assert plugin_off.poller is None, "sync_interval: 0 disables the background sync"
    server.server_close()


def test_what_serve_watches_follows_edits_of_mkdocs_yml(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: a template added, or a cache_dir changed, while serving was never
    watched (MkDocs calls on_serve once); the new cache was built empty, as if just synced."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=lambda: None)
    old_signal = str(tmp_path / ".cache" / "blogsvc" / SIGNAL)
    assert old_signal in server._watched_paths
    try:
        (tmp_path / "page.md.j2").write_text("# {{ article.title }}\n\nFrom the new template.\n", encoding="utf-8")
        edited = yaml.safe_load(config.read_text(encoding="utf-8"))
        edited["plugins"][0]["blogsvc"].update(cache_dir=".cache/other", page_template="page.md.j2")
        config.write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
        serve_build(config)  # the rebuild MkDocs runs when mkdocs.yml changes
        assert plugin.last_report is not None and plugin.last_report.new, "the new cache is synced at once"
        assert "From the new template." in (tmp_path / "site" / "blog" / "posts" / "served" / "index.html").read_text(
            encoding="utf-8"
        )
        assert old_signal not in server._watched_paths
        assert {str(tmp_path / ".cache" / "other" / SIGNAL), str(tmp_path / "page.md.j2")} <= set(server._watched_paths)
    finally:
        plugin.on_shutdown()
        server.server_close()


def edit_plugin(config: Path, **changes: object) -> None:
    """Change settings of the blogsvc plugin in mkdocs.yml, as a writer does while serving."""
    edited = yaml.safe_load(config.read_text(encoding="utf-8"))
    edited["plugins"][0]["blogsvc"].update(changes)
    config.write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")


def test_background_sync_pauses_when_mkdocs_yml_switches_the_plugin_off_while_serving(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: with `enabled: false` set while serving, the background sync went on
    syncing with the old settings and rebuilding the site at each change of the blog."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=lambda: None)
    coordinator = plugin.coordinator
    assert coordinator is not None
    try:
        edit_plugin(config, enabled=False)
        serve_build(config)
        add_article(db, owner.blog_id, "Written while switched off")
        service.requests.clear()
        signal_file = tmp_path / ".cache" / "blogsvc" / SIGNAL
        quiet = signal_file.read_bytes()
        assert coordinator.last_sync_attempt is not None
        coordinator.last_sync_attempt -= 60
        assert coordinator.poll() == PAUSED, "switched off: until a rebuild switches it on"
        assert service.requests == [] and signal_file.read_bytes() == quiet, "no sync, no rebuild"

        edit_plugin(config, enabled=True)
        serve_build(config)
        coordinator.last_sync_attempt -= 60
        assert coordinator.poll() == 60 and service.requests[-1] == "/api/v1/sync", "switched on again: it syncs"
    finally:
        plugin.on_shutdown()
        server.server_close()


def test_background_sync_stops_when_the_plugin_is_taken_out_of_mkdocs_yml_while_serving(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Taken out of mkdocs.yml while serving, the plugin is never called again (MkDocs keeps its
    instance), yet its background sync went on syncing and rebuilding the site at each change
    of the blog. It pauses from the edit; put back, the plugin syncs again."""
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=lambda: None)
    coordinator = plugin.coordinator
    assert coordinator is not None and coordinator.last_sync_attempt is not None
    with_plugin = config.read_text(encoding="utf-8")
    try:
        without = yaml.safe_load(with_plugin)
        without["plugins"] = []
        config.write_text(yaml.safe_dump(without, sort_keys=False), encoding="utf-8")
        build(load_config(str(config)))  # the rebuild MkDocs runs: the plugin is not called
        add_article(db, owner.blog_id, "Written after the plugin left")
        service.requests.clear()
        coordinator.last_sync_attempt -= 60
        assert coordinator.poll() == PAUSED and service.requests == [], "no sync for a site without the blog"

        config.write_text(with_plugin, encoding="utf-8")
        assert serve_build(config) is plugin  # put back: MkDocs hands back the same instance
        coordinator.last_sync_attempt -= 60
        assert coordinator.poll() == 60 and service.requests[-1] == "/api/v1/sync", "put back: it syncs"
    finally:
        plugin.on_shutdown()
        server.server_close()


@pytest.mark.parametrize("off", [{"sync_interval": 0}, {"offline": True}, {"enabled": False}])
def test_background_sync_starts_when_mkdocs_yml_switches_it_on_while_serving(
    tmp_path: Path, service: Service, db: Database, owner: Owner, off: dict[str, object]
) -> None:
    """Found by review: MkDocs calls on_serve once, so a background sync off when `mkdocs serve`
    started (sync_interval: 0, offline: true, enabled: false) never started once mkdocs.yml
    switched it on."""
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), **{"sync_interval": 60, **off})
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=lambda: None)
    try:
        assert plugin.poller is None
        edit_plugin(config, sync_interval=60, offline=False, enabled=True)
        serve_build(config)  # the rebuild MkDocs runs when mkdocs.yml changes
        assert plugin.poller is not None and plugin.poller.alive
        assert str(tmp_path / ".cache" / "blogsvc" / SIGNAL) in server._watched_paths
    finally:
        plugin.on_shutdown()
        server.server_close()
    assert not any(t.name.startswith("blogsvc-sync") for t in threading.enumerate())


@contextmanager
def reloading_server(tmp_path: Path, config: Path, plugin: BlogServicePlugin) -> Iterator[threading.Semaphore]:
    """A real LiveReloadServer serving the site, handed to the plugin's on_serve; the semaphore
    counts the rebuilds it asked for."""
    rebuilds = threading.Semaphore(0)
    server = LiveReloadServer(builder=rebuilds.release, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=rebuilds.release)
    threading.Thread(target=server.serve, daemon=True).start()
    try:
        yield rebuilds
    finally:
        plugin.on_shutdown()
        server.shutdown()


def test_the_site_still_rebuilds_after_the_cache_folder_is_deleted_while_serving(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: deleting the cache folder while serving (the troubleshooting page's advice
    for a damaged cache) took the server's watch of the signal file with it: the background
    sync logged "rebuilding the site" at each change of the blog, and nothing was rebuilt."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=1)
    plugin = serve_build(config, first=True)
    with reloading_server(tmp_path, config, plugin) as rebuilds:
        add_article(db, owner.blog_id, "Before")
        assert rebuilds.acquire(timeout=15), "a change of the blog rebuilds the site"
        shutil.rmtree(tmp_path / ".cache")
        assert rebuilds.acquire(timeout=15), "the cache synced anew rebuilds the site"
        add_article(db, owner.blog_id, "After")
        assert rebuilds.acquire(timeout=15), "and so does the next change of the blog"


def test_the_site_still_rebuilds_when_a_rebuild_came_between_the_deletion_and_the_next_sync(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: a rebuild right after the cache folder was deleted (an edit of a page)
    recorded the new folder as the watched one without watching it again; the server's watch had
    died with the old folder, so no change of the blog rebuilt the site any more."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=3)
    plugin = serve_build(config, first=True)
    with reloading_server(tmp_path, config, plugin) as rebuilds:
        add_article(db, owner.blog_id, "Before")
        assert rebuilds.acquire(timeout=15), "a change of the blog rebuilds the site"
        shutil.rmtree(tmp_path / ".cache")  # just after a background sync: the next one is 3 s away
        time.sleep(1)  # the server's watch of the signal file ends with its folder
        serve_build(config)  # a page edited meanwhile, before the next background sync
        assert rebuilds.acquire(timeout=15), "the cache synced anew rebuilds the site"
        add_article(db, owner.blog_id, "After")
        assert rebuilds.acquire(timeout=15), "and so does the next change of the blog"


def test_the_site_still_rebuilds_when_the_recreated_cache_folder_has_the_old_inode_number(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: a folder deleted and created again often gets the same inode number
    (ext4 gives a freed inode back at once), so comparing (st_dev, st_ino) took the recreated
    cache folder for the watched one: its dead watch was not renewed, and the site never rebuilt."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=3)
    plugin = serve_build(config, first=True)
    folder = tmp_path / ".cache" / "blogsvc"
    with reloading_server(tmp_path, config, plugin) as rebuilds:
        add_article(db, owner.blog_id, "Before")
        assert rebuilds.acquire(timeout=15), "a change of the blog rebuilds the site"
        # Gone for a moment, back with the same inode number: a rename away and back does that
        # every time; deleting it and creating it again does it when the file system reuses the
        # inode (the test cannot count on that).
        folder.rename(folder.with_name("away"))  # just after a background sync: the next one is 3 s away
        time.sleep(1)  # the server's watch of the signal file ends with its folder
        folder.with_name("away").rename(folder)
        time.sleep(4)  # the next background sync: nothing changed, no rebuild
        while rebuilds.acquire(timeout=0.1):
            pass
        add_article(db, owner.blog_id, "After")
        assert rebuilds.acquire(timeout=15), "and so does the next change of the blog"


def test_a_sync_interval_shortened_while_serving_counts_at_once(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """Found by review: the background sync slept out the old sync_interval (an hour, say)
    before it read the new one from mkdocs.yml."""
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=3600)
    plugin = serve_build(config, first=True)
    server = LiveReloadServer(builder=lambda: None, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=lambda: None)
    threading.Thread(target=server.serve, daemon=True).start()  # the poller starts once the server watches
    try:
        time.sleep(1)  # the poller is waiting out the hour
        edit_plugin(config, sync_interval=1)
        serve_build(config)
        service.requests.clear()
        wait_for(lambda: "/api/v1/sync" in service.requests, 10, "a background sync")
    finally:
        plugin.on_shutdown()
        server.shutdown()


def test_a_rebuild_after_an_edit_of_mkdocs_yml_syncs_itself_and_rebuilds_once(
    tmp_path: Path, service: Service, db: Database, owner: Owner, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by review: on_config woke the background sync before the build's own sync; with a
    sync due (a new cache_dir, the plugin switched on again after a pause) it synced first and
    raised the signal, so the site was built twice for one edit of mkdocs.yml."""
    add_article(db, owner.blog_id, "Served")
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=1)
    plugin = serve_build(config, first=True)
    rebuilds = threading.Semaphore(0)
    server = LiveReloadServer(builder=rebuilds.release, host="127.0.0.1", port=0, root=str(tmp_path / "site"))
    plugin.on_serve(server, config=load_config(str(config)), builder=rebuilds.release)
    threading.Thread(target=server.serve, daemon=True).start()
    try:
        for attempt in range(4):  # a race: the background sync won it most times
            edit_plugin(config, cache_dir=f".cache/new{attempt}")  # a new cache: a sync is due
            caplog.clear()
            serve_build(config)  # the rebuild MkDocs runs when mkdocs.yml changes
            assert "background sync" not in caplog.text and "built from the cache" not in caplog.text, (
                "the build syncs itself"
            )
            assert not rebuilds.acquire(timeout=0.7), "one edit of mkdocs.yml, one build"
    finally:
        plugin.on_shutdown()
        server.shutdown()


def test_poller_survives_a_crashing_step() -> None:
    calls: list[str] = []
    crashes: list[Exception] = []
    done = threading.Event()

    def step() -> float:
        calls.append("step")
        if len(calls) == 1:
            raise RuntimeError("boom")
        done.set()
        return 60.0

    poller = watch.Poller(step, on_crash=crashes.append, retry_after=0.01, name="blogsvc-test-poller")
    poller.start()
    assert done.wait(5)
    assert [str(c) for c in crashes] == ["boom"] and calls == ["step", "step"]
    poller.stop()
    assert not poller.alive


# --- a real `mkdocs serve` ------------------------------------------------------------------


def wait_for(check: Callable[[], object], seconds: float, what: str) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def fetch(url: str) -> str | None:
    try:
        response = httpx.get(url, timeout=5)
    except httpx.TransportError:
        return None
    return response.text if response.status_code == 200 else None


def epoch(page: str) -> str:
    """The version of the site the LiveReloadServer served (it changes on every rebuild)."""
    found = re.search(r"livereload\((\d+),", page)
    assert found, "live reload script missing: is live reload on?"
    return found.group(1)


@pytest.mark.slow
def test_mkdocs_serve_shows_an_article_published_on_the_service(tmp_path: Path, live_server: LiveServer) -> None:
    database = Database.from_path(live_server.db_path)
    try:
        owner_ = add_owner(database)
        add_article(database, owner_.blog_id, "First words", minutes_ago=5)
        token = issue_access_token(database, owner_)
    finally:
        database.dispose()
    config = make_site(tmp_path, live_server.url, token, sync_interval=2)
    port = free_port()
    log_path = tmp_path / "serve.log"
    service_log = live_server.db_path.with_suffix(".log")

    def served_log() -> str:
        return log_path.read_text(errors="replace")

    def sync_calls() -> int:
        return service_log.read_text(errors="replace").count('"POST /api/v1/sync"')

    with log_path.open("wb") as log_file:  # a file: a full pipe would block mkdocs
        # --livereload: with Click 8.2.2 to 8.3.x, MkDocs 1.6.1 starts without it (mkdocs#4032).
        process = subprocess.Popen(
            with_default_sigint(
                [sys.executable, "-m", "mkdocs", "serve", "--livereload", "-a", f"127.0.0.1:{port}", "-f", str(config)]
            ),
            cwd=tmp_path,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
    blog = f"http://127.0.0.1:{port}/blog/"
    try:
        first = wait_for(lambda: fetch(blog), 60, "mkdocs serve to answer")
        assert isinstance(first, str) and "First words" in first
        assert "blogsvc: checking http://127.0.0.1:" in served_log() and "for changes every 2 s" in served_log()

        # Quiet period: the poller keeps syncing, nothing changes, nothing is rebuilt.
        calls = sync_calls()
        time.sleep(5)
        assert sync_calls() >= calls + 2, "the background sync polls every sync_interval"
        again = fetch(blog)
        assert again is not None and epoch(again) == epoch(first), "no rebuild without a change"
        assert served_log().count("Building documentation") == 1

        added = live_server.admin(
            "add-article",
            "--blog",
            owner_.blog_slug,
            "--title",
            "Hot off the press",
            "--content",
            "Written while the site was being served.",
        )
        assert added.returncode == 0, added.stderr
        page = wait_for(lambda: fetch(f"http://127.0.0.1:{port}/blog/posts/hot-off-the-press/"), 30, "the new article")
        assert "Written while the site was being served." in str(page)
        index = wait_for(lambda: (text := fetch(blog)) and "Hot off the press" in text and text, 10, "the index")
        assert epoch(str(index)) != epoch(first)
        time.sleep(3)  # let a possible second rebuild show itself
        text = served_log()
        assert len(re.findall(r"1 new, 0 updated, 0 deleted, 1 unchanged in \S+ s \(background sync", text)) == 1
        assert text.count("Building documentation") == 2, "exactly one rebuild per change"
        assert "0 new, 0 updated, 0 deleted, 2 unchanged" in text and "built from the cache" in text

        # The service goes away: a warning (once per distinct error: see the test above); the site stays up.
        live_server.stop()
        wait_for(lambda: "the background sync with" in served_log(), 30, "the warning")
        text = served_log()
        assert "could not reach" in text and "Building documentation" not in text.split("the background sync with")[-1]
        assert fetch(blog) is not None
        assert "Traceback" not in text and "svc_" not in text
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: MkDocs shuts down and calls on_shutdown
        try:
            code = process.wait(timeout=60)  # a rebuild in progress ends first; loaded machines are slow
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    assert code == 0, served_log()
    assert "Shutting down" in served_log()


def test_sync_interval_0_turns_the_background_sync_off(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """`sync_interval: 0` (settings page): the build syncs, the background sync never does
    (without the check it would sync at every poll, hammering the service)."""
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=0)
    coordinator = serve_build(config, first=True).coordinator
    assert coordinator is not None
    synced = [request for request in service.requests if "/api/v1/sync" in request]
    assert len(synced) == 1
    assert coordinator.poll() == PAUSED and coordinator.poll() == PAUSED
    assert [request for request in service.requests if "/api/v1/sync" in request] == synced


def test_a_build_after_an_interrupted_one_takes_the_locks_again(
    tmp_path: Path, service: Service, db: Database, owner: Owner
) -> None:
    """A build interrupted after on_pre_build (Ctrl-C) never reached end_build: the next build
    releases what it held instead of waiting forever for its own locks."""
    config = make_site(tmp_path, service.url, issue_access_token(db, owner), sync_interval=60)
    coordinator = serve_build(config, first=True).coordinator
    assert coordinator is not None
    coordinator.begin_build(is_serve=True)  # interrupted: no end_build
    done = threading.Event()
    worker = threading.Thread(target=lambda: (coordinator.begin_build(is_serve=True), done.set()), daemon=True)
    worker.start()
    assert done.wait(10), "the second build waited for the locks of the interrupted one"
    coordinator.end_build()
