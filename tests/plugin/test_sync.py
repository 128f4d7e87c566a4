"""sync.py against the real service in-process: the transaction, deletions, rendering without rewrites."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from mkdocs_blogsvc import manifest
from mkdocs_blogsvc.api import BlogServiceClient
from mkdocs_blogsvc.credentials import open_client
from mkdocs_blogsvc.errors import TransportError
from mkdocs_blogsvc.render import Renderer
from mkdocs_blogsvc.server import media, store
from mkdocs_blogsvc.sync import read_cache, render_all, sync_cache
from tests.conftest import IN_PROCESS_URL, Owner, add_article, add_owner, issue_access_token
from tests.e2e.sites import settings, snapshot, write_credentials

PNG = (Path(media.__file__).parent / "sample_media" / "cover-01.png").read_bytes()


@pytest.fixture
def blog(db: store.Database, app, tmp_path: Path) -> Iterator[tuple[Owner, BlogServiceClient, Path]]:  # type: ignore[no-untyped-def]
    owner = add_owner(db)
    config = settings(tmp_path, IN_PROCESS_URL)
    write_credentials(config.credentials_file, IN_PROCESS_URL, issue_access_token(db, owner))
    with open_client(config, transport=httpx.WSGITransport(app=app)) as client:
        yield owner, client, config.cache_dir


def with_cover(db: store.Database, owner: Owner, title: str, **fields) -> str:  # type: ignore[no-untyped-def]
    with db.session() as session:
        key = media.store_image(session, owner.blog_id, PNG)
    return add_article(db, owner.blog_id, title, cover_media_key=key, inline_media_keys=[key],
                       content=f"# {title}\n\n![inline]({store.MEDIA_PLACEHOLDER}{key})\n", **fields)


def render(cache_dir: Path, index: bool = False):  # type: ignore[no-untyped-def]
    return render_all(cache_dir, read_cache(cache_dir), Renderer(), blog_dir="blog", posts_dir="blog/posts",
                      index_title="Blog" if index else None)


def test_first_sync_caches_articles_images_and_renders_pages(db: store.Database, blog) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    first = with_cover(db, owner, "First Post", minutes_ago=5)
    add_article(db, owner.blog_id, "A Draft", status="draft")
    state, report = sync_cache(cache_dir, client)
    assert (report.new, report.updated, report.deleted, report.unchanged) == ([first], [], [], 0)
    assert state.manifest.blog_language == "en" and state.manifest.blog_name == "Alice's Blog"
    entry = state.manifest.entries[first]
    assert len(entry.images) == 1 and (cache_dir / next(iter(entry.images.values()))).read_bytes() == PNG
    site = render(cache_dir, index=True)
    assert [p.src_uri for p in site.pages] == ["blog/posts/first-post.md"] and site.index is not None
    text = site.pages[0].abs_path.read_text()
    assert "](../images/" in text and "/media/" not in text
    assert [i.src_uri for i in site.images] == [f"blog/{next(iter(entry.images.values()))}"]


def test_changes_on_the_service_are_applied_and_old_files_removed(db: store.Database, blog) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    keep = add_article(db, owner.blog_id, "Keep")
    edit = add_article(db, owner.blog_id, "Edit")
    hide = with_cover(db, owner, "Hide")
    gone = add_article(db, owner.blog_id, "Gone")
    sync_cache(cache_dir, client)
    render(cache_dir)
    before = snapshot(cache_dir)
    with db.session() as session:
        session.execute(update(store.Article).where(store.Article.id == edit).values(title="Edited", updated_at=db.now() + timedelta(minutes=1)))
        session.execute(update(store.Article).where(store.Article.id == hide).values(status="unpublished"))
        session.execute(store.Article.__table__.delete().where(store.Article.id == gone))
    added = add_article(db, owner.blog_id, "Added")
    state, report = sync_cache(cache_dir, client)
    assert (report.new, report.updated, sorted(report.deleted), report.unchanged) == ([added], [edit], sorted([hide, gone]), 1)
    assert "1 new, 1 updated, 2 deleted, 1 unchanged in " in report.summary()
    assert set(state.articles) == {keep, edit, added}
    site = render(cache_dir)
    assert sorted(p.src_uri for p in site.pages) == ["blog/posts/added.md", "blog/posts/edit.md", "blog/posts/keep.md"]
    after = snapshot(cache_dir)
    assert not any(name.startswith("images/") for name in after), "the deleted article's image is removed"
    assert not (cache_dir / "docs/blog/posts/hide.md").exists() and not (cache_dir / "docs/blog/posts/gone.md").exists()
    assert "Edited" in (cache_dir / "docs/blog/posts/edit.md").read_text()
    assert after["docs/blog/posts/keep.md"] == before["docs/blog/posts/keep.md"], "unchanged page not rewritten"


def test_a_second_sync_without_changes_rewrites_nothing(db: store.Database, blog) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    with_cover(db, owner, "One")
    add_article(db, owner.blog_id, "Two")
    sync_cache(cache_dir, client)
    render(cache_dir, index=True)
    before = snapshot(cache_dir)
    _state, report = sync_cache(cache_dir, client)
    site = render(cache_dir, index=True)
    assert (len(report.new), len(report.updated), len(report.deleted), report.unchanged) == (0, 0, 0, 2)
    assert site.written == 0 and snapshot(cache_dir) == before


def test_damaged_cache_is_repaired_by_the_next_sync(db: store.Database, blog) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    article_id = with_cover(db, owner, "One")
    state, _ = sync_cache(cache_dir, client)
    image = cache_dir / next(iter(state.manifest.entries[article_id].images.values()))
    image.unlink()
    _state, report = sync_cache(cache_dir, client)
    assert report.new == [article_id] and image.read_bytes() == PNG
    (cache_dir / "manifest.json").write_text("{broken")
    _state, report = sync_cache(cache_dir, client)
    assert report.new == [article_id]
    assert len(list((cache_dir / "articles").iterdir())) == 1


def test_a_failed_sync_leaves_the_cache_untouched(db: store.Database, blog, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    add_article(db, owner.blog_id, "One")
    sync_cache(cache_dir, client)
    before = snapshot(cache_dir)
    config = settings(tmp_path, "http://127.0.0.1:9")  # nothing listens on the discard port
    write_credentials(config.credentials_file, config.base_url, "svc_at_x")
    with open_client(config) as offline:
        offline.retries = 0
        with pytest.raises(TransportError):
            sync_cache(cache_dir, offline)
    assert snapshot(cache_dir) == before


def test_deletes_only_files_the_manifest_owns_inside_the_cache(db: store.Database, blog, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    owner, client, cache_dir = blog
    article_id = add_article(db, owner.blog_id, "One")
    sync_cache(cache_dir, client)
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
    with db.session() as session:
        session.execute(update(store.Article).where(store.Article.id == article_id).values(status="draft"))
    _state, report = sync_cache(cache_dir, client)
    render(cache_dir)
    assert report.deleted == [article_id]
    assert victim.read_text() == "keep me" and stranger.exists()
    assert manifest.load(cache_dir).entries == {}
    assert not any(p for p in (cache_dir / "articles").iterdir() if p != stranger)
    assert not page.exists()
