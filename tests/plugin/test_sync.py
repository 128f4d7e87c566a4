"""sync.py (and pages.py, cache.py) against the real service in-process: the transaction,
deletions, rendering without rewrites, interrupted syncs, bad answers, the cache lock."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec.structs import replace
from sqlalchemy import update

from mkdocs_blogsvc import cache as cache_module
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.errors import CacheBusy, CacheUnwritable, InvalidResponse, TransportError
from mkdocs_blogsvc.manifest import AddressRecord, EntryRecords, PageRecord
from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.pages import render_pages
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.server import media, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.sync import sync_cache
from tests.conftest import IN_PROCESS_URL, Owner, add_article, add_owner, issue_access_token
from tests.e2e.sites import settings, snapshot, write_credentials
from tests.plugin.test_render import article as sample_article

PNG = (Path(media.__file__).parent / "sample_media" / "cover-01.png").read_bytes()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def seen() -> list[str]:
    """The paths the in-process service was asked for, in order."""
    return []


@pytest.fixture
def blog(db: Database, app, tmp_path: Path, seen: list[str]) -> Iterator[tuple[Owner, BlogServiceClient, Path]]:
    owner = add_owner(db)
    config = settings(tmp_path, IN_PROCESS_URL)
    write_credentials(config.credentials_file, IN_PROCESS_URL, issue_access_token(db, owner))

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        seen.append(environ["PATH_INFO"])
        return app(environ, start_response)

    with connect(config, transport=httpx.WSGITransport(app=counting)) as service:
        yield owner, service.client, config.cache_dir


def mock_client(tmp_path: Path, handler: Callable[[httpx.Request], httpx.Response]) -> BlogServiceClient:
    """A client of the blog fixture's settings whose answers come from `handler` (for answers
    the reference service cannot give)."""
    client = connect(settings(tmp_path, IN_PROCESS_URL), transport=httpx.MockTransport(handler)).client
    client.retries = 0
    return client


def with_cover(db: Database, owner: Owner, title: str, **fields) -> str:
    with db.session(write=True) as session:
        key = media.store_image(session, owner.blog_id, PNG)
    return add_article(
        db,
        owner.blog_id,
        title,
        cover_media_key=key,
        inline_media_keys=[key],
        content=f"# {title}\n\n![inline]({tables.MEDIA_PLACEHOLDER}{key})\n",
        **fields,
    )


def render(cache_dir: Path, index: bool = False):
    cache = Cache(cache_dir)
    contents = cache.read()
    site = render_pages(cache, contents, Renderer(), blog_dir="blog", posts_dir="blog/posts", with_index=index)
    if contents.manifest.unsaved:  # as the build session does
        cache.save(contents.manifest)
    return site


def test_first_sync_caches_articles_images_and_renders_pages(db: Database, blog) -> None:
    owner, client, cache_dir = blog
    first = with_cover(db, owner, "First Post", minutes_ago=5)
    add_article(db, owner.blog_id, "A Draft", status="draft")
    state, report = sync_cache(Cache(cache_dir), client)
    assert (report.new, report.updated, report.deleted, report.unchanged) == ([first], [], [], 0)
    assert state.manifest.blog_language == "en" and state.manifest.blog_name == "Alice's Blog"
    entry = state.manifest.entries[first]
    assert len(entry.images) == 1 and (cache_dir / next(iter(entry.images.values()))).read_bytes() == PNG
    site = render(cache_dir, index=True)
    assert [p.src_uri for p in site.pages] == ["blog/posts/first-post.md"] and site.index is not None
    text = site.pages[0].abs_path.read_text()
    assert "](../images/" in text and "/media/" not in text
    assert [i.src_uri for i in site.images] == [f"blog/{next(iter(entry.images.values()))}"]


def test_changes_on_the_service_are_applied_and_old_files_removed(db: Database, blog) -> None:
    owner, client, cache_dir = blog
    keep = add_article(db, owner.blog_id, "Keep")
    edit = add_article(db, owner.blog_id, "Edit")
    hide = with_cover(db, owner, "Hide")
    gone = add_article(db, owner.blog_id, "Gone")
    sync_cache(Cache(cache_dir), client)
    render(cache_dir)
    before = snapshot(cache_dir)
    with db.session(write=True) as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id == edit)
            .values(title="Edited", updated_at=db.now() + timedelta(minutes=1))
        )
        session.execute(update(tables.Article).where(tables.Article.id == hide).values(status="unpublished"))
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    added = add_article(db, owner.blog_id, "Added")
    state, report = sync_cache(Cache(cache_dir), client)
    assert (report.new, report.updated, sorted(report.deleted), report.unchanged) == (
        [added],
        [edit],
        sorted([hide, gone]),
        1,
    )
    assert "1 new, 1 updated, 2 deleted, 1 unchanged in " in report.summary()
    assert set(state.articles) == {keep, edit, added}
    site = render(cache_dir)
    assert sorted(p.src_uri for p in site.pages) == ["blog/posts/added.md", "blog/posts/edit.md", "blog/posts/keep.md"]
    after = snapshot(cache_dir)
    assert not any(name.startswith("images/") for name in after), "the deleted article's image is removed"
    assert not (cache_dir / "docs/blog/posts/hide.md").exists() and not (cache_dir / "docs/blog/posts/gone.md").exists()
    assert "Edited" in (cache_dir / "docs/blog/posts/edit.md").read_text()
    assert after["docs/blog/posts/keep.md"] == before["docs/blog/posts/keep.md"], "unchanged page not rewritten"


def test_a_second_sync_without_changes_rewrites_nothing(db: Database, blog) -> None:
    owner, client, cache_dir = blog
    with_cover(db, owner, "One")
    add_article(db, owner.blog_id, "Two")
    sync_cache(Cache(cache_dir), client)
    render(cache_dir, index=True)
    before = snapshot(cache_dir)
    _state, report = sync_cache(Cache(cache_dir), client)
    site = render(cache_dir, index=True)
    assert (len(report.new), len(report.updated), len(report.deleted), report.unchanged) == (0, 0, 0, 2)
    assert site.written == 0 and snapshot(cache_dir) == before


def test_new_article_files_are_durable_before_the_manifest_that_names_them(
    db: Database, blog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The articles of a sync are written without an fsync each, then made durable together
    (one fsync per file, their folder once), and only then is the manifest written."""
    owner, client, cache_dir = blog
    for number in range(3):
        add_article(db, owner.blog_id, f"Article {number}", minutes_ago=number)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    sync_cache(Cache(cache_dir), client)
    articles_dir = os.fspath(cache_dir / "articles")
    articles = [path for path in synced if os.path.dirname(path) == articles_dir]
    manifest = next(i for i, path in enumerate(synced) if os.path.basename(path).startswith(".manifest.json."))
    assert len(articles) == 3 == len(set(articles)) and synced.count(articles_dir) == 1
    assert max(synced.index(path) for path in [*articles, articles_dir]) < manifest


def test_damaged_cache_is_repaired_by_the_next_sync(db: Database, blog) -> None:
    owner, client, cache_dir = blog
    article_id = with_cover(db, owner, "One")
    state, _ = sync_cache(Cache(cache_dir), client)
    image = cache_dir / next(iter(state.manifest.entries[article_id].images.values()))
    image.unlink()
    _state, report = sync_cache(Cache(cache_dir), client)
    assert report.new == [article_id] and image.read_bytes() == PNG
    (cache_dir / "manifest.json").write_text("{broken")
    _state, report = sync_cache(Cache(cache_dir), client)
    assert report.new == [article_id]
    assert len(list((cache_dir / "articles").iterdir())) == 1


def test_the_files_of_a_damaged_entry_are_cleaned_up_when_its_article_is_gone(db: Database, blog) -> None:
    """The check drops a damaged entry, so the service is not asked about it and never says it
    was deleted: its files are still the cache's to clean up (`CacheContents.dropped`)."""
    owner, client, cache_dir = blog
    gone = with_cover(db, owner, "Gone")
    kept = add_article(db, owner.blog_id, "Kept")
    state, _ = sync_cache(Cache(cache_dir), client)
    entry = state.manifest.entries[gone]
    (cache_dir / entry.article_file).write_text("{}")  # damaged: the check drops the entry
    with db.session(write=True) as session:
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    contents = Cache(cache_dir).read()
    assert set(entry.files()) <= contents.dropped and set(entry.files()) <= contents.owned
    state, report = sync_cache(Cache(cache_dir), client, contents=contents)
    assert list(state.manifest.entries) == [kept] and report.new == [] and report.deleted == []
    assert not any((cache_dir / path).exists() for path in entry.files()), "a dropped entry's file was left behind"
    assert files_on_disk(cache_dir) == Cache(cache_dir).load().owned_files()


def test_a_failed_sync_leaves_the_cache_untouched(db: Database, blog, tmp_path: Path) -> None:
    owner, client, cache_dir = blog
    add_article(db, owner.blog_id, "One")
    sync_cache(Cache(cache_dir), client)
    before = snapshot(cache_dir)
    config = settings(tmp_path, "http://127.0.0.1:9")  # nothing listens on the discard port
    write_credentials(config.credentials_file, config.base_url, "svc_at_x")
    with connect(config) as offline:
        offline.client.retries = 0
        with pytest.raises(TransportError):
            sync_cache(Cache(cache_dir), offline.client)
    assert snapshot(cache_dir) == before


def test_deletes_only_files_the_manifest_owns_inside_the_cache(db: Database, blog, tmp_path: Path) -> None:
    owner, client, cache_dir = blog
    article_id = add_article(db, owner.blog_id, "One")
    sync_cache(Cache(cache_dir), client)
    render(cache_dir)
    page = cache_dir / "docs" / "blog" / "posts" / "one.md"
    assert page.exists()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    stranger = cache_dir / "articles" / "not-ours.json"
    stranger.write_text("{}")
    data = json.loads((cache_dir / "manifest.json").read_text())
    data["rendered"].append("../victim.txt")
    (cache_dir / "manifest.json").write_text(json.dumps(data))
    with db.session(write=True) as session:
        session.execute(update(tables.Article).where(tables.Article.id == article_id).values(status="draft"))
    _state, report = sync_cache(Cache(cache_dir), client)
    render(cache_dir)
    assert report.deleted == [article_id]
    assert victim.read_text() == "keep me" and stranger.exists()
    assert Cache(cache_dir).load().entries == {}
    assert not any(p for p in (cache_dir / "articles").iterdir() if p != stranger)
    assert not page.exists()


def test_download_images_off_downloads_nothing_and_drops_cached_images(db: Database, blog, seen: list[str]) -> None:
    """`download_images: false` keeps the service's URLs; turned off after a sync that
    downloaded, the cached images go and the page links to the service again."""
    owner, client, cache_dir = blog
    article_id = with_cover(db, owner, "One")
    state, _ = sync_cache(Cache(cache_dir), client)
    image = cache_dir / next(iter(state.manifest.entries[article_id].images.values()))
    assert image.read_bytes() == PNG
    seen.clear()
    state, _ = sync_cache(Cache(cache_dir), client, download_images=False)
    assert not any(path.startswith("/media/") for path in seen)
    assert state.manifest.entries[article_id].images == {} and not image.exists()
    text = render(cache_dir).pages[0].abs_path.read_text()
    assert "/media/" in text and "../images/" not in text


def test_download_images_off_from_the_first_sync(db: Database, blog, seen: list[str]) -> None:
    owner, client, cache_dir = blog
    article_id = with_cover(db, owner, "One")
    state, _ = sync_cache(Cache(cache_dir), client, download_images=False)
    assert not any(path.startswith("/media/") for path in seen)
    assert state.manifest.entries[article_id].images == {} and not (cache_dir / "images").exists()


def test_an_update_that_keeps_its_image_urls_downloads_nothing(db: Database, blog, seen: list[str]) -> None:
    owner, client, cache_dir = blog
    article_id = with_cover(db, owner, "One")
    state, _ = sync_cache(Cache(cache_dir), client)
    images = state.manifest.entries[article_id].images
    assert len(images) == 1 and any(path.startswith("/media/") for path in seen)
    with db.session() as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id == article_id)
            .values(title="One, edited", updated_at=db.now() + timedelta(minutes=1))
        )
    seen.clear()
    state, report = sync_cache(Cache(cache_dir), client)
    assert report.updated == [article_id]
    assert seen == ["/api/v1/sync"], "the cached copy of an unchanged image URL is reused"
    assert state.manifest.entries[article_id].images == images
    assert (cache_dir / next(iter(images.values()))).read_bytes() == PNG


def test_image_urls_are_logged_without_their_query_string(
    tmp_path: Path, blog, caplog: pytest.LogCaptureFixture
) -> None:
    _owner, _client, cache_dir = blog
    caplog.set_level(logging.DEBUG)
    signed = sample_article(
        coverImageUrl="https://cdn.test/cover.png?token=secret-1",
        inlineImageUrls=["https://cdn.test/inline.png?X-Signature=secret-2#frag-secret-3"],
    )
    answer = {"new": [signed.to_json()], "updated": [], "deleted": [], "syncedAt": format_timestamp(signed.updated_at)}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/sync":
            return httpx.Response(200, json=answer)
        if request.url.path == "/cover.png":
            return httpx.Response(404)
        if request.url.path == "/inline.png":
            return httpx.Response(200, content=b"<html>not an image</html>", headers={"Content-Type": "image/png"})
        return httpx.Response(404, json={"error": "not_found"})

    with mock_client(tmp_path, handler) as client:
        _state, report = sync_cache(Cache(cache_dir), client)
    assert len(report.image_failures) == 2
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("mkdocs"))
    assert (
        "image https://cdn.test/cover.png of article" in ours and "image https://cdn.test/inline.png of article" in ours
    )
    assert "secret" not in ours


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{not json", "not JSON"),
        (b"[]", "sync answer is not a JSON object"),
        (
            b'{"new": {}, "updated": [], "deleted": [], "syncedAt": "2025-01-01T00:00:00.000Z"}',
            "field 'new' has the wrong type",
        ),
        (b'{"new": [], "updated": [], "syncedAt": "2025-01-01T00:00:00.000Z"}', "field 'deleted' is missing"),
    ],
)
def test_a_malformed_sync_answer_leaves_the_cache_untouched(
    db: Database,
    blog,
    tmp_path: Path,
    body: bytes,
    problem: str,
) -> None:
    owner, client, cache_dir = blog
    with_cover(db, owner, "One")
    sync_cache(Cache(cache_dir), client)
    render(cache_dir)
    before = snapshot(cache_dir)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})

    with mock_client(tmp_path, handler) as broken, pytest.raises(InvalidResponse, match=problem):
        sync_cache(Cache(cache_dir), broken)
    assert snapshot(cache_dir) == before


@pytest.mark.parametrize(
    ("contradict", "problem"),
    [
        (lambda answer: {**answer, "new": answer["new"] + answer["new"][:1]}, "is listed twice among new and updated"),
        (lambda answer: {**answer, "deleted": [answer["new"][0]["id"]]}, "is listed as changed and as deleted"),
    ],
)
def test_a_sync_answer_that_contradicts_itself_is_refused_whole(
    db: Database,
    blog,
    app,
    tmp_path: Path,
    contradict: Callable[[dict[str, Any]], dict[str, Any]],
    problem: str,
) -> None:
    """Found by review: a duplicated article was counted twice (the last copy won), and one
    both updated and deleted was kept, silently; the spec's answer has neither."""
    owner, client, cache_dir = blog
    add_article(db, owner.blog_id, "One")
    sync_cache(Cache(cache_dir), client)
    before = snapshot(cache_dir)
    add_article(db, owner.blog_id, "Two")
    real = httpx.WSGITransport(app=app)

    def handler(request: httpx.Request) -> httpx.Response:
        answer = real.handle_request(request)
        return httpx.Response(answer.status_code, json=contradict(json.loads(answer.read())))

    with mock_client(tmp_path, handler) as contradicting, pytest.raises(InvalidResponse, match=problem):
        sync_cache(Cache(cache_dir), contradicting)
    assert snapshot(cache_dir) == before


# --- an interrupted sync ----------------------------------------------------------------------

#: Runs one sync like `mkdocs-blogsvc sync` (under the cache lock) and is SIGKILLed while the
#: manifest, the sync's commit point, is half written: no `finally` and no cleanup runs.
KILLED_CHILD = """
import os, signal, sys
from pathlib import Path
import httpx
from mkdocs_blogsvc import cache
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.sync import sync_cache
from tests.e2e.sites import settings

root = Path(sys.argv[1])

real_write = cache.atomic_write

def killed_mid_write(path, data, **options):
    if path.name != cache.MANIFEST_NAME:  # the mark of a sync in progress is written before the manifest
        return real_write(path, data, **options)
    path.with_name(f".{path.name}.0123456789abcdef.tmp").write_bytes(data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

cache.atomic_write = killed_mid_write
app = create_app(Database.from_path(root / "service.db"), secret_key="test")
config = settings(root, "http://testserver")
with cache.Cache(config.cache_dir).locked(), connect(config, transport=httpx.WSGITransport(app=app)) as service:
    sync_cache(cache.Cache(config.cache_dir), service.client)
"""


def fail_saving_the_manifest(monkeypatch: pytest.MonkeyPatch, cache_dir: Path, client: BlogServiceClient) -> None:
    def disk_full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(Cache, "save", disk_full)
        with pytest.raises(CacheUnwritable, match="No space left"):
            sync_cache(Cache(cache_dir), client)


def kill_a_sync_process(monkeypatch: pytest.MonkeyPatch, cache_dir: Path, client: BlogServiceClient) -> None:
    child = subprocess.run(
        [sys.executable, "-c", KILLED_CHILD, str(cache_dir.parent)],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert list(cache_dir.glob(".manifest.json.*.tmp")), "the child died while writing the manifest"


@pytest.mark.parametrize(
    "interrupt",
    [
        pytest.param(fail_saving_the_manifest, id="manifest-save-fails"),
        pytest.param(kill_a_sync_process, id="sigkill", marks=pytest.mark.slow),
    ],
)
def test_an_interrupted_sync_leaves_the_previous_cache_usable_and_the_next_sync_repairs_it(
    db: Database,
    blog,
    monkeypatch: pytest.MonkeyPatch,
    interrupt: Callable[..., None],
) -> None:
    owner, client, cache_dir = blog
    edit = with_cover(db, owner, "Edit")
    gone = add_article(db, owner.blog_id, "Gone")
    sync_cache(Cache(cache_dir), client)
    render(cache_dir)
    with db.session() as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id == edit)
            .values(title="Edited", updated_at=db.now() + timedelta(minutes=1))
        )
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    added = with_cover(db, owner, "Added")

    interrupt(monkeypatch, cache_dir, client)

    # The previous site still builds from the cache: same articles, every page and image there.
    state = Cache(cache_dir).read()
    assert set(state.articles) == {edit, gone} and state.articles[edit].title == "Edit"
    site = render(cache_dir)
    assert sorted(p.src_uri for p in site.pages) == ["blog/posts/edit.md", "blog/posts/gone.md"]
    assert all(f.abs_path.is_file() for f in [*site.pages, *site.images])
    probe = Cache(cache_dir)
    assert probe.try_acquire(0), "an interrupted sync leaves the cache unlocked"
    probe.release()

    # The next sync repairs everything: the changes applied, no stray file left.
    state, report = sync_cache(Cache(cache_dir), client)
    assert (report.new, report.updated, report.deleted) == ([added], [edit], [gone])
    render(cache_dir)
    assert state.articles[edit].title == "Edited"
    bookkeeping = (
        cache_module.MANIFEST_NAME,
        cache_module.LOCK_NAME,
        cache_module.IMAGE_TABLE_NAME,
    )  # the cache's own, not an article's
    on_disk = {name for name in snapshot(cache_dir) if name not in bookkeeping}
    assert on_disk == Cache(cache_dir).load().owned_files()


# --- the cross-process cache lock -------------------------------------------------------------


def test_the_cache_lock_excludes_other_holders_and_names_the_cache_when_it_gives_up(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cache_dir = tmp_path / "cache"
    holder = Cache(cache_dir)
    holder.acquire()
    monkeypatch.setattr(cache_module, "LOCK_TIMEOUT", 0.2)
    started = time.monotonic()
    with pytest.raises(CacheBusy, match=f"the cache in {cache_dir} is still in use by another process"):
        Cache(cache_dir).acquire()
    assert time.monotonic() - started >= 0.2
    assert "waiting for another process that is using the cache in" in caplog.text
    holder.release()
    with Cache(cache_dir).locked():
        assert not Cache(cache_dir).try_acquire(0)


def recorded(article_id: str) -> EntryRecords:
    """Records of an article's page: where it was, and its inputs."""
    since = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return EntryRecords(
        page=PageRecord("inputs", 1, 2),
        addresses=(AddressRecord(f"blog/posts/{article_id}/", f"blog/posts/{article_id}/index.html", since),),
    )


def test_recorded_data_follows_its_article_through_updates_and_goes_with_it(db: Database, blog) -> None:
    owner, client, cache_dir = blog
    kept = add_article(db, owner.blog_id, "Kept")
    gone = add_article(db, owner.blog_id, "Gone")
    cache = Cache(cache_dir)
    sync_cache(cache, client)
    manifest = cache.load()
    for article_id in (kept, gone):
        manifest.entries[article_id] = replace(manifest.entries[article_id], records=recorded(article_id))
    manifest.records = {**manifest.records, "redirects": {"old/": "new/"}}  # blogSlug kept
    cache.save(manifest)
    with db.session(write=True) as session:
        session.execute(
            update(tables.Article)
            .where(tables.Article.id == kept)
            .values(title="Kept, edited", updated_at=db.now() + timedelta(minutes=1))
        )
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    contents, report = sync_cache(cache, client)
    assert (report.updated, report.deleted) == ([kept], [gone])
    assert contents.manifest.entries[kept].records == recorded(kept)
    assert cache.load().entries[kept].records == recorded(kept)
    assert gone not in cache.load().entries and cache.load().records == manifest.records


def test_a_skipped_article_id_is_logged_so_it_cannot_forge_a_line(
    tmp_path: Path, blog, caplog: pytest.LogCaptureFixture
) -> None:
    _owner, _client, cache_dir = blog
    forged = "ck1\nINFO    -  blogsvc: all articles verified safe\x1b[2K"
    article = {"id": forged, "slug": "s", "title": "T"}  # skipped twice over: a bad id, missing fields
    body = {"new": [article], "updated": [], "deleted": [], "syncedAt": "2025-01-02T03:04:05Z"}
    client = mock_client(tmp_path, lambda request: httpx.Response(200, json=body))
    with caplog.at_level(logging.WARNING), client:
        _state, report = sync_cache(Cache(cache_dir), client)
    (record,) = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert "\n" not in record.getMessage() and "\x1b" not in record.getMessage()
    assert len(report.skipped) == 1 and "\n" not in report.skipped[0]


# --- what a killed sync leaves behind ----------------------------------------------------------

#: One sync like `mkdocs-blogsvc sync`, SIGKILLed at `where`: "download" once the first new
#: image is written, "commit" when the new manifest is
#: about to be written (the new article and image files are on disk, no manifest names them),
#: "cleanup" at the first file the committed sync removes.
KILLED_AT_CHILD = """
import os, signal, sys
from pathlib import Path
import httpx
from mkdocs_blogsvc import cache
from mkdocs_blogsvc.connection import connect
from mkdocs_blogsvc.server import create_app
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.sync import sync_cache
from tests.e2e.sites import settings

root, where = Path(sys.argv[1]), sys.argv[2]
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
if where == "download":  # the first downloaded image is whole on disk, no manifest names it
    from mkdocs_blogsvc import images
    real_write = images.write_if_changed
    def write_then_die(*args, **kwargs):
        real_write(*args, **kwargs)
        die()
    images.write_if_changed = write_then_die
elif where == "commit":
    cache.Cache.save = die
else:
    real = cache.Cache.remove_unowned
    def remove_then_die(self, before, after):
        if before - after:
            die()
        real(self, before, after)
    cache.Cache.remove_unowned = remove_then_die
app = create_app(Database.from_path(root / "service.db"), secret_key="test")
config = settings(root, "http://testserver")
with cache.Cache(config.cache_dir).locked(), connect(config, transport=httpx.WSGITransport(app=app)) as service:
    sync_cache(cache.Cache(config.cache_dir), service.client)
"""


def files_on_disk(cache_dir: Path) -> set[str]:
    return {name for name in snapshot(cache_dir) if name not in ("manifest.json", ".lock")}


@pytest.mark.parametrize("where", ["download", "commit", "cleanup"])
def test_files_of_a_killed_sync_do_not_stay_forever(db: Database, blog, where: str) -> None:
    owner, client, cache_dir = blog
    first = with_cover(db, owner, "First")
    sync_cache(Cache(cache_dir), client)
    # The blog changes: "First" is edited (new article file) and gets a sibling with an image.
    with db.session(write=True) as session:
        session.execute(update(tables.Article).where(tables.Article.id == first).values(title="First, edited"))
    if where == "download":  # an image no earlier sync downloaded
        with db.session(write=True) as session:
            key = media.store_image(session, owner.blog_id, PNG + b"another image")
        second = add_article(db, owner.blog_id, "Second", cover_media_key=key)
    else:
        second = with_cover(db, owner, "Second")
    if where == "cleanup":  # the killed sync deletes "Second" again: its files become garbage
        sync_cache(Cache(cache_dir), client)
        with db.session(write=True) as session:
            session.execute(tables.Article.__table__.delete().where(tables.Article.id == second))

    child = subprocess.run(
        [sys.executable, "-c", KILLED_AT_CHILD, str(cache_dir.parent), where],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr

    # Before the next sync the blog changes again: the killed sync's new files are not wanted.
    with db.session(write=True) as session:
        session.execute(tables.Article.__table__.delete().where(tables.Article.id.in_([first, second])))
    with Cache(cache_dir).locked() as cache:  # as every sync runs: the killed holder's mark goes too
        sync_cache(cache, client)
        sync_cache(cache, client)  # and once more, for a sync with nothing to do
    assert files_on_disk(cache_dir) == Cache(cache_dir).load().owned_files()
