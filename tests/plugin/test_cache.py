"""cache.py's manifest: load never crashes, check drops damaged entries, save is atomic, paths
stay inside, recorded data survives."""

from __future__ import annotations

import gc
import json
from datetime import datetime, timezone
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.fileio import inputs_hash, inside, sha256
from mkdocs_blogsvc.manifest import AddressRecord, Entry, EntryRecords, Manifest, PageRecord
from mkdocs_blogsvc.models import Article, ArticleSummary
from tests.plugin.test_render import article


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def cached(cache_dir: Path, item: Article, image: bytes | None = b"\x89PNG\r\n\x1a\nimage") -> Entry:
    data = json.dumps(item.to_json()).encode()
    relative = f"articles/{item.id}.json"
    write(cache_dir / relative, data)
    images, sizes = {}, {}
    if image is not None:
        write(cache_dir / "images" / "c.png", image)
        images, sizes = {"https://img.test/cover.png": "images/c.png"}, {"https://img.test/cover.png": len(image)}
    return Entry(
        id=item.id,
        content_hash=item.content_hash,
        article_file=relative,
        article_sha256=sha256(data),
        images=images,
        image_sizes=sizes,
    )


def test_round_trip(tmp_path: Path) -> None:
    entry = cached(tmp_path, article())
    saved = Manifest({entry.id: entry}, rendered=["docs/blog/posts/a.md"], blog_language="en", blog_name="B")
    Cache(tmp_path).save(saved)
    loaded = Cache(tmp_path).load()
    assert loaded == saved
    assert Cache(tmp_path).check(loaded) == {entry.id: article()}
    assert loaded.known_articles()[0].content_hash == "0" * 64
    assert loaded.owned_files() == {"articles/ck1abcdefghijklmnopqrstuv.json", "images/c.png", "docs/blog/posts/a.md"}


def test_entries_and_summaries_compare_hash_and_change_like_frozen_dataclasses() -> None:
    """Frozen msgspec structs: changed by replacing them, compared by value, no dict each."""
    summary = ArticleSummary.of(article())
    entry = Entry(id="c1", content_hash="h", article_file="articles/a.json", article_sha256="d", summary=summary)
    assert replace(summary) == summary and hash(replace(summary)) == hash(summary)
    renamed = replace(summary, title="Renamed")
    assert (renamed.title, summary.title) == ("Renamed", article().title) and renamed != summary
    assert replace(entry, article_sha256="e") != entry and entry.article_sha256 == "d"
    assert not hasattr(entry, "__dict__") and not hasattr(summary, "__dict__")  # slots: no dict per article
    with pytest.raises(AttributeError):
        entry.article_sha256 = "e"  # type: ignore[misc]


NESTED = b'{"version":1,"articles":{"a":{"contentHash":"h","article":"a","articleSha256":"s","records":{"x":'


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"[]",
        b'{"version": 99, "articles": {}}',
        b"\xff\xfe",
        NESTED + b"[" * 100_000 + b"]" * 100_000 + b"}}}}",  # deeper than any decoder recurses
    ],
)
def test_missing_corrupt_or_unknown_version_is_an_empty_manifest(tmp_path: Path, content: bytes) -> None:
    assert Cache(tmp_path).load() == Manifest()
    (tmp_path / "manifest.json").write_bytes(content)
    assert Cache(tmp_path).load() == Manifest()


def test_a_broken_entry_is_dropped_and_the_others_kept(tmp_path: Path) -> None:
    good = cached(tmp_path, article())
    data = Manifest({good.id: good}).to_json()
    data["articles"]["broken"] = {"contentHash": 5}
    data["articles"]["empty"] = {**data["articles"][good.id], "contentHash": ""}
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    loaded = Cache(tmp_path).load()
    assert list(loaded.entries) == [good.id] and loaded.entries[good.id] == good  # read entry by entry, ids given


@pytest.mark.parametrize(
    "damage",
    [
        {"imageUrls": ["https://img.test/a.png", 1]},
        {"coverImageUrl": 5},
        {"title": None},
        {"updatedAt": "2026-01-01T00:00:00"},  # no offset: never compared with the aware ones
        {"publishedAt": "yesterday"},
    ],
)
def test_a_summary_with_a_field_of_the_wrong_type_is_read_again_from_the_article(
    tmp_path: Path, damage: dict[str, object]
) -> None:
    """The manifest's summary is trusted by every build that reads no article file: one with a
    field of the wrong type is dropped (the article file is read instead), never used."""
    entry = replace(cached(tmp_path, article()), summary=ArticleSummary.of(article()))
    data = Manifest({entry.id: entry}).to_json()
    data["articles"][entry.id]["summary"].update(damage)
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    loaded = Cache(tmp_path).load()
    assert list(loaded.entries) == [entry.id] and loaded.entries[entry.id].summary is None


@pytest.mark.parametrize(
    "damage", ["json missing", "json altered", "image missing", "image truncated", "path escapes", "image path escapes"]
)
def test_verify_drops_damaged_articles_so_they_are_sent_again(tmp_path: Path, damage: str) -> None:
    entry = cached(tmp_path, article())
    other = cached(tmp_path, article(id="other1"), image=None)
    if damage == "json missing":
        (tmp_path / entry.article_file).unlink()
    elif damage == "json altered":
        (tmp_path / entry.article_file).write_text(json.dumps(article(title="Changed").to_json()))
    elif damage == "image missing":
        (tmp_path / "images" / "c.png").unlink()
    elif damage == "image truncated":
        (tmp_path / "images" / "c.png").write_bytes(b"x")
    elif damage == "image path escapes":
        outside = tmp_path.parent / "outside.png"
        outside.write_bytes(b"x")
        entry = replace(
            entry,
            images={"https://img.test/cover.png": "../outside.png"},
            image_sizes={"https://img.test/cover.png": 1},
        )
    else:
        outside = tmp_path.parent / "outside.json"
        outside.write_text(json.dumps(article().to_json()))
        entry = replace(entry, article_file="../outside.json", article_sha256=sha256(outside.read_bytes()), images={})
    loaded = Manifest({entry.id: entry, other.id: other})
    assert list(Cache(tmp_path).check(loaded)) == [other.id]
    assert [known.id for known in loaded.known_articles()] == [other.id]


def test_inside_refuses_every_way_out() -> None:
    root = Path("/cache")
    assert inside(root, "images/a.png") == Path("/cache/images/a.png")
    for bad in ("", "/etc/passwd", "../x", "a/../../x", "a\\..\\x", "C:/x", "images/a\0.png"):  # NUL: open() raises
        assert inside(root, bad) is None


def test_save_creates_the_folder_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    cache_dir = tmp_path / "new" / "cache"
    Cache(cache_dir).save(Manifest(blog_name="one"))
    Cache(cache_dir).save(Manifest(blog_name="two"))
    assert Cache(cache_dir).load().blog_name == "two"
    assert [p.name for p in cache_dir.iterdir()] == ["manifest.json"]


def test_recorded_data_of_entries_and_of_the_blog_survives_a_round_trip(tmp_path: Path) -> None:
    entry = cached(tmp_path, article())
    page = PageRecord("abc", 10, 20, links=(("b", True),), removed=[["element", "script", 1]], remote=("//cdn",))
    addresses = (AddressRecord("blog/posts/a/", "blog/posts/a/index.html", datetime(2026, 1, 1, tzinfo=timezone.utc)),)
    recorded = replace(entry, records=EntryRecords(page=page, addresses=addresses))
    saved = Manifest({entry.id: recorded}, records={"redirects": {"old/": "new/"}})  # a blog-wide record unknown
    Cache(tmp_path).save(saved)
    assert Cache(tmp_path).load() == saved
    plain = Manifest({entry.id: entry})
    assert "records" not in plain.to_json() and "records" not in plain.to_json()["articles"][entry.id]


def test_an_entry_s_records_are_read_leniently_and_unknown_kinds_dropped(tmp_path: Path) -> None:
    """A page record that cannot be read is left out (the page is rendered again), so is an
    address that cannot; the addresses that can, the entry and the other entries are kept."""
    good, other = cached(tmp_path, article()), cached(tmp_path, article(id="b"))
    stored = good.to_json()
    stored["records"] = {
        "page": {"inputs": "abc", "size": "ten", "mtimeNs": 20},
        "addresses": [
            {"url": "blog/a/", "path": "blog/a/index.html", "since": "2026-01-01T00:00:00.000Z"},
            {"url": "x/", "path": "../../etc/passwd", "since": "2026-01-01T00:00:00.000Z"},
        ],
        "renderHash": "a kind this version does not know",
    }
    raw = json.dumps({"version": 1, "articles": {good.id: stored, other.id: other.to_json()}}).encode()
    manifest = Manifest.decode(raw, on_dropped=lambda article_id, exc: pytest.fail(f"{article_id} dropped: {exc}"))
    records = manifest.entries[good.id].records
    assert records.page is None
    assert [(found.url, found.path) for found in records.addresses] == [("blog/a/", "blog/a/index.html")]
    assert manifest.entries[good.id].to_json()["records"] == {"addresses": [records.addresses[0].to_json()]}
    assert manifest.entries[other.id] == other


def test_finish_pending_deletes_only_files_named_as_the_plugin_names_them(tmp_path: Path) -> None:
    """After a killed sync, only unnamed files of the plugin's own naming go: a file someone
    else put in `articles/` or `images/` is not the plugin's to delete."""
    cache = Cache(tmp_path)
    kept = cached(tmp_path, article())
    orphan = tmp_path / Cache.image_name("https://img.test/orphan.png", "png")
    foreign = [tmp_path / "images" / "logo.png", tmp_path / "articles" / "notes.json"]
    for path in (orphan, *foreign):
        write(path, b"x")
    cache.save(Manifest({kept.id: kept}))
    cache.mark_pending()
    cache.finish_pending(cache.read())
    assert not orphan.exists() and not (tmp_path / "sync-in-progress").exists()
    assert all(path.exists() for path in (*foreign, tmp_path / kept.article_file, tmp_path / "images" / "c.png"))


def test_sweep_removes_only_temp_files_of_the_atomic_writer(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    left = [
        tmp_path / ".manifest.json.0123456789abcdef.tmp",
        tmp_path / "docs" / "blog" / ".a.md.0123456789abcdef.tmp",
        tmp_path / ".images.json.0123456789abcdef.tmp",
        tmp_path / "variants" / ".a-webp-480.webp.0123456789abcdef.tmp",
    ]
    foreign = [tmp_path / "docs" / "blog" / ".draft.tmp", tmp_path / "images" / ".editor-swap.tmp"]
    for path in (*left, *foreign):
        write(path, b"x")
    cache.sweep_temp_files()
    assert not any(path.exists() for path in left)
    assert all(path.exists() for path in foreign)


def test_what_reading_the_cache_set_aside_from_the_collector_is_given_back_with_the_lock(tmp_path: Path) -> None:
    """`collector.paused` freezes what a build made (later passes skip it); the last release of
    the cache's lock unfreezes it, so a `mkdocs serve` process building again and again leaks
    nothing."""
    cache, item = Cache(tmp_path), cached(tmp_path, article())
    cache.save(Manifest({item.id: item}))
    gc.unfreeze()
    with cache.locked():
        with cache.locked():  # nested: the outer hold still works on what was read
            cache.read()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_the_inputs_hash_encoding_stays_as_every_cached_key_was_made() -> None:
    """Every page record and output key in users' caches was hashed this way: a change here
    would render and sanitise every article again. The inputs as one compact JSON array (UTF-8,
    tuples as arrays, a NUL escaped), a NUL, then the text."""
    encoded = '["s",null,[],[["u","é"]],"a\\u0000b",7]\0<p>page</p>'
    assert inputs_hash("s", None, [], [("u", "é")], "a\0b", 7, text="<p>page</p>") == sha256(encoded)
    assert inputs_hash("only") == sha256('["only"]\0')
    assert inputs_hash("a", "b") != inputs_hash("a\0b") != inputs_hash("ab")


def test_summaries_an_older_version_made_are_made_again_from_the_article_files_once(tmp_path: Path) -> None:
    """Found by review: a summary is trusted by every build that reads no article file, so one an
    older version made (before non-web image URLs and control characters were left out when an
    article is read) had stayed until the article changed: a `javascript:` cover warned at
    every sync. The code that makes summaries is recorded; when it differs, each is made again."""
    entry = cached(tmp_path, article(), image=None)
    stale = msgspec.structs.replace(
        ArticleSummary.of(article()), title="Bad\x00Title", cover_image_url="javascript:alert(1)"
    )
    older = Manifest({entry.id: replace(entry, summary=stale, article_stat=Cache(tmp_path)._article_stat(entry))})
    Cache(tmp_path).save(older)
    assert "summariesFrom" not in (tmp_path / "manifest.json").read_text()

    manifest = Cache(tmp_path).load()
    Cache(tmp_path).check(manifest)
    remade = manifest.entries[entry.id].summary
    assert (
        remade == ArticleSummary.of(article())
        and remade is not None
        and remade.cover_image_url == article().cover_image_url
    )
    assert manifest.unsaved and manifest.summaries_from is not None

    Cache(tmp_path).save(manifest)
    again = Cache(tmp_path).load()
    Cache(tmp_path).check(again)
    assert not again.unsaved  # the summaries of this code are trusted: no article file read, nothing to save

    again.set_summaries_from("0" * 64)  # another version's
    again.update_entry(entry.id, summary=stale)
    Cache(tmp_path).check(again)
    assert again.entries[entry.id].summary == ArticleSummary.of(article())
