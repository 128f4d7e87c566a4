"""Full syncs (`full_sync_interval`): how a slug change, which `contentHash` does not cover,
reaches the cache; against the real service in-process."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import httpx
from sqlalchemy import update

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.manifest import BLOG_SLUG, LAST_FULL_SYNC, Manifest
from mkdocs_blogsvc.models import format_timestamp
from mkdocs_blogsvc.server import content, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.sync import full_sync_due, sync_cache
from tests.conftest import add_article
from tests.plugin.test_sync import blog, mock_client, render, seen  # noqa: F401  (fixtures)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def test_a_slug_change_is_seen_by_a_full_sync_only(db: Database, blog) -> None:  # noqa: F811
    owner, client, cache_dir = blog
    moving = add_article(db, owner.blog_id, "Moving")
    other = add_article(db, owner.blog_id, "Other")
    state, _ = sync_cache(Cache(cache_dir), client, full_sync_interval=3600)
    assert state.manifest.records[BLOG_SLUG] == owner.blog_slug
    assert LAST_FULL_SYNC in state.manifest.records  # the first sync is a full one
    content.update_article(db, moving, content.ArticleInput(slug="moved"))

    # Incremental (the last full sync is recent): the service does not report a slug change.
    state, report = sync_cache(Cache(cache_dir), client, full_sync_interval=3600)
    assert (report.new, report.updated, report.unchanged) == ([], [], 2)
    assert state.articles[moving].slug == "moving"

    # Full: the changed article comes in as updated, the other one stays as it was.
    with db.session(write=True) as session:  # a view counts on the hosted blog: not a change
        session.execute(update(tables.Article).where(tables.Article.id == other).values(view_count=7))
    before = Cache(cache_dir).load().entries[other]
    state, report = sync_cache(Cache(cache_dir), client, full_sync_interval=0)
    assert (report.new, report.updated, report.deleted, report.unchanged) == ([], [moving], [], 1)
    assert state.articles[moving].slug == "moved"
    assert state.manifest.entries[other] == before
    assert sorted(p.src_uri for p in render(cache_dir).pages) == ["blog/posts/moved.md", "blog/posts/other.md"]


def test_a_full_sync_deletes_what_the_service_no_longer_sends(db: Database, blog) -> None:  # noqa: F811
    owner, client, cache_dir = blog
    keep = add_article(db, owner.blog_id, "Keep")
    gone = add_article(db, owner.blog_id, "Gone")
    sync_cache(Cache(cache_dir), client, full_sync_interval=0)
    with db.session(write=True) as session:
        session.execute(tables.Article.__table__.delete().where(tables.Article.id == gone))
    state, report = sync_cache(Cache(cache_dir), client, full_sync_interval=0)
    assert (report.deleted, report.unchanged) == ([gone], 1)
    assert set(state.articles) == {keep}


def test_full_sync_due() -> None:
    manifest = Manifest()
    assert full_sync_due(manifest, None, NOW) is False
    assert full_sync_due(manifest, 3600, NOW) is True  # empty cache: everything is asked for anyway
    manifest.entries["x"] = object()
    assert full_sync_due(manifest, 3600, NOW) is True  # never recorded
    manifest.records[LAST_FULL_SYNC] = format_timestamp(NOW - timedelta(minutes=30))
    assert full_sync_due(manifest, 3600, NOW) is False
    assert full_sync_due(manifest, 0, NOW) is True
    manifest.records[LAST_FULL_SYNC] = format_timestamp(NOW - timedelta(hours=2))
    assert full_sync_due(manifest, 3600, NOW) is True
    manifest.records[LAST_FULL_SYNC] = format_timestamp(NOW + timedelta(days=2))  # a clock set back
    assert full_sync_due(manifest, 3600, NOW) is True
    manifest.records[LAST_FULL_SYNC] = "not a time"
    assert full_sync_due(manifest, 3600, NOW) is True


def test_a_full_sync_brings_in_the_blogs_new_name_slug_and_language(db: Database, blog) -> None:  # noqa: F811
    """Found by review: they were asked once, at the first sync, and never again."""
    owner, client, cache_dir = blog
    add_article(db, owner.blog_id, "One")
    sync_cache(Cache(cache_dir), client, full_sync_interval=3600)
    with db.session(write=True) as session:
        session.execute(
            update(tables.Blog)
            .where(tables.Blog.id == owner.blog_id)
            .values(name="Renamed", slug="renamed", language="de")
        )
    state, _ = sync_cache(Cache(cache_dir), client, full_sync_interval=3600)  # incremental: one request
    assert state.manifest.blog_name != "Renamed"
    state, _ = sync_cache(Cache(cache_dir), client, full_sync_interval=0)
    assert (state.manifest.blog_name, state.manifest.records[BLOG_SLUG], state.manifest.blog_language) == (
        "Renamed",
        "renamed",
        "de",
    )
    assert Cache(cache_dir).load().blog_name == "Renamed"  # saved, though no article changed


def test_an_article_the_full_sync_sends_malformed_keeps_its_cached_version(tmp_path, db: Database, blog) -> None:  # noqa: F811
    """A full sync deletes what the service did not send; an article it sent but the plugin had
    to skip (a field of the wrong type) was sent, so its earlier version stays."""
    owner, client, cache_dir = blog
    broken = add_article(db, owner.blog_id, "Broken")
    gone = add_article(db, owner.blog_id, "Gone")
    sync_cache(Cache(cache_dir), client, full_sync_interval=0)
    body = {
        "new": [{"id": broken, "slug": "broken", "title": 5}],
        "updated": [],
        "deleted": [],
        "syncedAt": "2025-01-02T03:04:05Z",
    }
    with mock_client(tmp_path, lambda request: httpx.Response(200, json=body)) as malformed:
        state, report = sync_cache(Cache(cache_dir), malformed, full_sync_interval=0)
    assert len(report.skipped) == 1 and broken in report.skipped[0]
    assert (report.deleted, set(state.articles)) == ([gone], {broken})
    assert state.articles[broken].title == "Broken"


def test_a_deleted_id_the_cache_never_had_is_not_reported(tmp_path, db: Database, blog) -> None:  # noqa: F811
    owner, client, cache_dir = blog
    kept = add_article(db, owner.blog_id, "Kept")
    sync_cache(Cache(cache_dir), client)
    body = {"new": [], "updated": [], "deleted": ["ck1neverseenbythiscache00"], "syncedAt": "2025-01-02T03:04:05Z"}
    with mock_client(tmp_path, lambda request: httpx.Response(200, json=body)) as service:
        state, report = sync_cache(Cache(cache_dir), service)
    assert (report.deleted, report.unchanged, set(state.articles)) == ([], 1, {kept})
