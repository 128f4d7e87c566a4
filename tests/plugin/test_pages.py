"""pages.py renders a page only when its inputs changed, and cache.py hashes an article file
only when its size or mtime changed: what a no-change build skips, and what it still notices
(a template, a setting, an article, a file changed on disk behind the manifest's back)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.errors import CacheDamaged
from mkdocs_blogsvc.manifest import Manifest
from mkdocs_blogsvc.models import Article
from mkdocs_blogsvc.pages import RenderedSite, render_pages
from mkdocs_blogsvc.render import PagePaths, Renderer
from tests.plugin.test_render import article

IDS = ["ck1aaaaaaaaaaaaaaaaaaaaaa", "ck1bbbbbbbbbbbbbbbbbbbbbb", "ck1cccccccccccccccccccccc"]


class CountingRenderer(Renderer):
    """The real renderer, remembering which articles it rendered."""

    def __init__(self, page_template: Path | None = None) -> None:
        super().__init__(page_template)
        self.rendered: list[str] = []
        self.indexes = 0

    def page(self, article: Article, slug: str, paths: PagePaths, **options: Any) -> str:
        self.rendered.append(article.id)
        return super().page(article, slug, paths, **options)

    def index(self, title: str, items, src_uri: str) -> str:
        self.indexes += 1
        return super().index(title, items, src_uri)


def posts() -> list[Article]:
    return [
        article(id=i, slug=f"post-{n}", title=f"Post {n}", coverImageUrl=None, inlineImageUrls=[])
        for n, i in enumerate(IDS)
    ]


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    """A cache holding three articles, as a sync leaves it."""
    cache = Cache(tmp_path / "cache")
    manifest = Manifest(blog_name="Notes")
    for item in posts():
        manifest.entries[item.id] = cache.write_article(item)
    cache.save(manifest)
    return cache


def build(cache: Cache, renderer: Renderer, posts_dir: str = "blog/posts", index: bool = True) -> RenderedSite:
    """What a build does with the cache: read and check it, render the pages, save what changed
    (as the build session does)."""
    contents = cache.read()
    site = render_pages(cache, contents, renderer, blog_dir="blog", posts_dir=posts_dir, with_index=index)
    if contents.manifest.unsaved:
        cache.save(contents.manifest)
    return site


def test_a_build_with_nothing_changed_renders_and_writes_nothing(cache: Cache) -> None:
    first = CountingRenderer()
    site = build(cache, first)
    assert sorted(first.rendered) == sorted(IDS) and first.indexes == 1 and site.written == 4
    manifest = cache.manifest_path.read_bytes()

    again = CountingRenderer()
    site = build(cache, again)
    assert again.rendered == [] and again.indexes == 0 and site.written == 0
    assert [p.src_uri for p in site.pages] == [f"blog/posts/post-{n}.md" for n in range(3)]
    assert site.index is not None and site.index.abs_path.is_file()
    assert cache.manifest_path.read_bytes() == manifest, "nothing to record: the manifest is not rewritten"


def test_a_changed_page_template_renders_every_page_again(cache: Cache, tmp_path: Path) -> None:
    build(cache, CountingRenderer())
    template = tmp_path / "page.md.j2"
    template.write_text("---\ntitle: {{ article.title }}\n---\n\nversion one {{ slug }}\n")
    one = CountingRenderer(template)
    build(cache, one)
    assert sorted(one.rendered) == sorted(IDS)
    assert (cache.page_path("blog/posts/post-0.md")).read_text().endswith("version one post-0\n")

    build(cache, unchanged := CountingRenderer(template))
    assert unchanged.rendered == []
    template.write_text("---\ntitle: {{ article.title }}\n---\n\nversion two {{ slug }}\n")
    two = CountingRenderer(template)
    build(cache, two)
    assert sorted(two.rendered) == sorted(IDS)
    assert (cache.page_path("blog/posts/post-2.md")).read_text().endswith("version two post-2\n")


def test_a_changed_setting_renders_the_pages_again_where_it_says(cache: Cache) -> None:
    build(cache, CountingRenderer())
    moved = CountingRenderer()
    site = build(cache, moved, posts_dir="blog/posts/2025")
    assert sorted(moved.rendered) == sorted(IDS)
    assert all(p.abs_path.is_file() and "/2025/" in p.src_uri for p in site.pages)
    assert not cache.page_path("blog/posts/post-0.md").exists(), "the old page is removed"


def test_an_updated_article_renders_only_its_own_page(cache: Cache) -> None:
    build(cache, CountingRenderer())
    contents = cache.read()
    edited = article(
        id=IDS[1], slug="post-1", title="Post 1, edited", coverImageUrl=None, inlineImageUrls=[], contentHash="1" * 64
    )
    contents.manifest.entries[IDS[1]] = cache.write_article(edited)
    cache.save(contents.manifest)
    renderer = CountingRenderer()
    build(cache, renderer)
    assert renderer.rendered == [IDS[1]] and renderer.indexes == 1, "the index lists the new title"
    assert "Post 1, edited" in cache.page_path("blog/posts/post-1.md").read_text()


@pytest.mark.parametrize("damage", ["edited", "same size, other mtime", "other size, same mtime", "deleted"])
def test_a_page_changed_behind_the_manifests_back_is_rendered_again(cache: Cache, damage: str) -> None:
    build(cache, CountingRenderer())
    page = cache.page_path("blog/posts/post-0.md")
    good = page.read_bytes()
    if damage == "edited":
        page.write_text("tampered")
    elif damage == "same size, other mtime":
        page.write_bytes(good.replace(b"Post 0", b"Post X"))
        os.utime(page, ns=(page.stat().st_atime_ns, page.stat().st_mtime_ns + 5_000_000_000))
    elif damage == "other size, same mtime":
        mtime = page.stat().st_mtime_ns
        page.write_bytes(good + b"\nappended")
        os.utime(page, ns=(mtime, mtime))
    else:
        page.unlink()
    renderer = CountingRenderer()
    site = build(cache, renderer)
    assert renderer.rendered == [IDS[0]] and site.written == 1
    assert page.read_bytes() == good

    build(cache, again := CountingRenderer())
    assert again.rendered == [], "the repaired page is recorded"


def test_an_article_file_is_hashed_only_when_its_size_or_mtime_changed(cache: Cache) -> None:
    entry = cache.load().entries[IDS[0]]
    assert entry.article_stat is not None
    path = cache.root / entry.article_file
    data = json.loads(path.read_bytes())

    # Same bytes, new mtime: hashed, found intact, the new stat recorded (and saved by the build).
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    contents = cache.read()
    assert set(contents.articles) == set(IDS) and contents.manifest.unsaved
    build(cache, CountingRenderer())
    assert cache.load().entries[IDS[0]].article_stat == (path.stat().st_size, path.stat().st_mtime_ns)

    # Altered behind the manifest's back (same size, so only the mtime tells): hashed, dropped.
    data["title"] = data["title"].replace("0", "9")
    path.write_text(json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n")
    contents = cache.read()
    assert set(contents.articles) == set(IDS[1:]), "the altered article is sent again by the next sync"


def _drop_from_every_entry(cache: Cache, name: str) -> None:
    """The manifest as an older version of the plugin wrote it: without `name` in its entries."""
    data = json.loads(cache.manifest_path.read_bytes())
    for entry in data["articles"].values():
        del entry[name]
    cache.manifest_path.write_text(json.dumps(data))


def test_a_manifest_without_stats_is_checked_by_hash_and_then_records_them(cache: Cache) -> None:
    _drop_from_every_entry(cache, "articleStat")
    assert all(entry.article_stat is None for entry in cache.load().entries.values())
    build(cache, CountingRenderer())
    assert all(entry.article_stat is not None for entry in cache.load().entries.values())


def _same_size_garbage(path: Path) -> None:
    """Overwrite `path` with bytes that are not JSON, keeping its size and mtime."""
    found = path.stat()
    path.write_bytes(b"x" * found.st_size)
    os.utime(path, ns=(found.st_atime_ns, found.st_mtime_ns))


def test_a_build_with_nothing_changed_reads_no_article_file(cache: Cache, tmp_path: Path) -> None:
    build(cache, CountingRenderer())
    for entry in cache.load().entries.values():
        _same_size_garbage(cache.root / entry.article_file)  # trusted by size and mtime, never read

    contents = cache.read()
    assert list(contents.articles) == IDS and [s.slug for s in contents.articles.summaries.values()] == [
        "post-0",
        "post-1",
        "post-2",
    ]
    site = render_pages(
        cache, contents, again := CountingRenderer(), blog_dir="blog", posts_dir="blog/posts", with_index=True
    )
    assert again.rendered == [] and site.written == 0

    # A page that must be rendered reads its article: the damage is named, with the way out.
    template = tmp_path / "page.md.j2"
    template.write_text("---\ntitle: {{ article.title }}\n---\n\n{{ body }}\n")
    with pytest.raises(CacheDamaged, match=r"changed during the build; delete the cache folder .* and build again"):
        build(cache, CountingRenderer(template))


def test_a_manifest_without_summaries_reads_each_article_once_and_records_them(cache: Cache) -> None:
    _drop_from_every_entry(cache, "summary")
    assert all(entry.summary is None for entry in cache.load().entries.values())

    build(cache, CountingRenderer())
    summaries = {entry.id: entry.summary for entry in cache.load().entries.values()}
    assert {s.title for s in summaries.values() if s is not None} == {"Post 0", "Post 1", "Post 2"}
    assert all(s is not None and s.image_urls == () and s.cover_image_url is None for s in summaries.values())


# --- found by mutation testing -------------------------------------------------------------------


def test_an_image_downloaded_later_renders_the_page_again(cache: Cache) -> None:
    """An image that failed (the page used its remote URL) and is downloaded by a later sync:
    the page must now name the site's copy."""
    url = "https://img.test/a.png"
    contents = cache.read()
    shown = article(id=IDS[0], slug="post-0", title="Post 0", coverImageUrl=url, inlineImageUrls=[])
    contents.manifest.entries[IDS[0]] = cache.write_article(shown)
    cache.save(contents.manifest)
    build(cache, CountingRenderer())
    page = cache.page_path("blog/posts/post-0.md")
    assert url in page.read_text()
    contents = cache.read()
    relative = Cache.image_name(url, "png")
    (cache.root / relative).parent.mkdir(parents=True, exist_ok=True)
    (cache.root / relative).write_bytes(b"\x89PNG")
    contents.manifest.entries[IDS[0]].images[url] = relative
    contents.manifest.entries[IDS[0]].image_sizes[url] = 4
    cache.save(contents.manifest)
    renderer = CountingRenderer()
    build(cache, renderer)
    assert renderer.rendered == [IDS[0]] and f"../{relative}" in page.read_text()


def test_an_image_two_articles_share_is_one_file_of_the_site(cache: Cache) -> None:
    contents = cache.read()
    relative = Cache.image_name("https://img.test/a.png", "png")
    (cache.root / relative).parent.mkdir(parents=True, exist_ok=True)
    (cache.root / relative).write_bytes(b"\x89PNG")
    for article_id in IDS[:2]:
        contents.manifest.entries[article_id].images["https://img.test/a.png"] = relative
        contents.manifest.entries[article_id].image_sizes["https://img.test/a.png"] = 4
    cache.save(contents.manifest)
    site = build(cache, CountingRenderer())
    assert [image.src_uri for image in site.images] == [f"blog/{relative}"]


def test_pages_are_listed_in_the_order_of_their_paths(cache: Cache) -> None:
    contents = cache.read()
    for n, article_id in enumerate(IDS):  # slugs in the reverse order of the manifest's entries
        contents.manifest.entries[article_id] = cache.write_article(
            article(id=article_id, slug=f"post-{9 - n}", title=f"Post {n}", coverImageUrl=None, inlineImageUrls=[])
        )
    cache.save(contents.manifest)
    site = build(cache, CountingRenderer())
    assert [p.src_uri for p in site.pages] == ["blog/posts/post-7.md", "blog/posts/post-8.md", "blog/posts/post-9.md"]


def test_a_renamed_blog_renders_the_index_again(cache: Cache) -> None:
    build(cache, CountingRenderer())
    assert "# Notes" in cache.page_path("blog/index.md").read_text()
    contents = cache.read()
    contents.manifest.blog_name = "Field Notes"
    cache.save(contents.manifest)
    renderer = CountingRenderer()
    build(cache, renderer)
    assert renderer.indexes == 1 and "# Field Notes" in cache.page_path("blog/index.md").read_text()


def test_page_records_keep_what_was_removed_and_the_remote_hosts(cache: Cache) -> None:
    from mkdocs_blogsvc.pages import markdown_removed, remote_hosts

    contents = cache.read()
    hostile = article(
        id=IDS[0],
        slug="post-0",
        title="Post 0",
        coverImageUrl=None,
        inlineImageUrls=[],
        content="Hi <script>alert(1)</script> ![x](https://cdn.example/x.png)",
    )
    contents.manifest.entries[IDS[0]] = cache.write_article(hostile)
    cache.save(contents.manifest)
    build(cache, CountingRenderer())
    contents = cache.read()
    assert markdown_removed(contents.manifest.entries[IDS[0]])
    assert not markdown_removed(contents.manifest.entries[IDS[1]])
    assert remote_hosts(contents) == {"//cdn.example", "//img.test"}  # the others show https://img.test/a.png
    saved = json.loads(cache.manifest_path.read_bytes())
    saved["articles"][IDS[1]]["records"]["page"]["remote"] = [1, None, "//odd.example"]  # a tampered record
    cache.manifest_path.write_text(json.dumps(saved))
    contents = cache.read()
    assert contents.manifest.entries[IDS[1]].records.page is None, "a record that cannot be read is not trusted"
    assert remote_hosts(contents) == {"//cdn.example", "//img.test"}
