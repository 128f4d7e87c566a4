"""The outputs pack (`outputs.PageOutputs`): records found again by key in a later build, never
trusted when they do not match, compacted when mostly garbage, and the earlier layout removed."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from msgspec.structs import replace

from mkdocs_blogsvc import outputs
from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.manifest import Entry, Manifest
from mkdocs_blogsvc.outputs import HEAD, HTML, Output, PageOutputs


def manifest_of(*article_ids: str) -> Manifest:
    manifest = Manifest()
    for article_id in article_ids:
        manifest.entries[article_id] = Entry(
            id=article_id, content_hash="h" * 64, article_file=f"articles/{article_id}.json", article_sha256="s" * 64
        )
    return manifest


def build(cache: Cache, manifest: Manifest, writes: dict[str, dict[str, tuple[str, str | None]]]) -> None:
    """One build that computes these outputs: article -> kind -> (key, text)."""
    kept = PageOutputs(cache, manifest)
    for article_id, kinds in writes.items():
        for kind, (key, text) in kinds.items():
            kept.put(article_id, kind, Output(key, text, [["element", "script", 1]] if kind == HTML else None))
        kept.flush(article_id)
    kept.flush()
    kept.close()


def read(cache: Cache, manifest: Manifest, article_id: str, kind: str, key: str) -> str | bool | None:
    """The text kept for this key, or False when it must be computed."""
    kept = PageOutputs(cache, manifest)
    try:
        found = kept.get(article_id, kind, key)
    finally:
        kept.close()
    return False if found is None else found.text


def test_outputs_are_found_by_their_key_in_a_later_build(tmp_path: Path) -> None:
    cache, manifest = Cache(tmp_path), manifest_of("a", "b")
    build(cache, manifest, {"a": {HTML: ("k1", None), HEAD: ("k2", '<meta name="é">\n')}, "b": {HEAD: ("k3", "")}})
    assert manifest.unsaved and all(entry.outputs for entry in manifest.entries.values())
    assert read(cache, manifest, "a", HTML, "k1") is None  # the HTML equals its input: no text kept
    assert read(cache, manifest, "a", HEAD, "k2") == '<meta name="é">\n'
    assert read(cache, manifest, "b", HEAD, "k3") == ""
    assert read(cache, manifest, "a", HEAD, "another key") is False
    assert read(cache, manifest, "b", HTML, "k1") is False
    kept = PageOutputs(cache, manifest)
    assert kept.get("a", HTML, "k1") == Output("k1", None, [["element", "script", 1]])
    kept.close()
    pack = cache.outputs_path.read_bytes()
    assert pack == '<meta name="é">\n'.encode(), "the pack holds the texts only, the headers are in the manifest"
    saved = manifest.entries["a"].to_json()
    assert saved["outputsHeader"] == {
        "crc": zlib.crc32('<meta name="é">\n'.encode()),
        "html": {"key": "k1", "removed": [["element", "script", 1]]},
        "head": {"key": "k2", "size": len('<meta name="é">\n'.encode())},
    }
    assert Entry.from_json("a", saved).outputs_header == manifest.entries["a"].outputs_header


@pytest.mark.parametrize(
    "damage", ["garbage written over it", "shortened", "another article's record", "no pack", "no checksum"]
)
def test_a_record_that_does_not_match_is_computed_again(tmp_path: Path, damage: str) -> None:
    cache, manifest = Cache(tmp_path), manifest_of("a", "b")
    build(cache, manifest, {"a": {HEAD: ("k", "head of a")}, "b": {HEAD: ("k", "head of b")}})
    a, b = manifest.entries["a"], manifest.entries["b"]
    assert a.outputs is not None and b.outputs is not None and a.outputs[0] < b.outputs[0]
    pack = cache.outputs_path
    if damage == "garbage written over it":
        with open(pack, "r+b") as file:
            file.seek(a.outputs[0])
            file.write(b"{]")
    elif damage == "shortened":  # the last record, b's, loses its last byte
        with open(pack, "r+b") as file:
            file.truncate(pack.stat().st_size - 1)
    elif damage == "no checksum":  # a header written before records had one: not trusted
        stored = a.to_json()
        del stored["outputsHeader"]["crc"]
        manifest.entries["a"] = Entry.from_json("a", stored)
        assert manifest.entries["a"].outputs_header is None
    elif damage == "another article's record":
        manifest.entries["a"] = replace(a, outputs=b.outputs)  # a's header, b's texts (of a's length)
    else:
        pack.unlink()
    target = "b" if damage == "shortened" else "a"
    assert read(cache, manifest, target, HEAD, "k") is False
    build(cache, manifest, {target: {HEAD: ("k", "computed again")}})
    assert read(cache, manifest, target, HEAD, "k") == "computed again"


def test_the_pack_is_compacted_when_it_holds_more_garbage_than_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outputs, "COMPACT_ABOVE", 0)
    cache, manifest = Cache(tmp_path), manifest_of("a", "b", "gone")
    build(
        cache,
        manifest,
        {"a": {HEAD: ("k", "a" * 100)}, "b": {HEAD: ("k", "b" * 100)}, "gone": {HEAD: ("k", "g" * 100)}},
    )
    size = cache.outputs_path.stat().st_size
    del manifest.entries["gone"]
    build(cache, manifest, {})  # gone's record is garbage: 1 of 3, kept
    assert cache.outputs_path.stat().st_size == size
    build(cache, manifest, {"a": {HEAD: ("k2", "A" * 100)}, "b": {HEAD: ("k2", "B" * 100)}})  # 3 of 5: compacted
    live = sorted(entry.outputs for entry in manifest.entries.values() if entry.outputs)
    assert [offset for offset, _length in live] == [0, live[0][1]]
    assert cache.outputs_path.stat().st_size == sum(length for _offset, length in live)
    assert read(cache, manifest, "a", HEAD, "k2") == "A" * 100
    assert read(cache, manifest, "b", HEAD, "k2") == "B" * 100
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_earlier_layout_is_removed_when_the_pack_is_first_written(tmp_path: Path) -> None:
    """An earlier version kept a file per article in `outputs/`: only files of its naming go,
    and the folder only when nothing else is in it."""
    cache, manifest = Cache(tmp_path), manifest_of("a")
    legacy = tmp_path / "outputs"
    legacy.mkdir()
    (legacy / ("0123456789abcdef01234567.json")).write_text("{}")
    (legacy / "notes.txt").write_text("the owner's")
    build(cache, manifest, {"a": {HEAD: ("k", "head")}})
    assert [p.name for p in legacy.iterdir()] == ["notes.txt"]
    (legacy / "notes.txt").unlink()
    (legacy / ("fedcba9876543210fedcba98.json")).write_text("{}")
    cache.remove_legacy_outputs()
    assert not legacy.exists()


def test_an_unwritable_pack_means_computing_again_not_failing(tmp_path: Path) -> None:
    cache, manifest = Cache(tmp_path), manifest_of("a")
    cache.outputs_path.mkdir()  # not a file: every open fails
    build(cache, manifest, {"a": {HEAD: ("k", "head")}})
    assert manifest.entries["a"].outputs is None and not manifest.unsaved
    assert read(cache, manifest, "a", HEAD, "k") is False


def test_an_entry_from_an_earlier_manifest_names_no_record() -> None:
    """The earlier layout named a file (`outputs/<hash>.json`); such an entry has no record."""
    entry = Entry.from_json(
        "a",
        {
            "contentHash": "h",
            "article": "articles/a.json",
            "articleSha256": "s",
            "outputs": "outputs/0123456789abcdef01234567.json",
        },
    )
    assert entry.outputs is None
    entry = Entry.from_json(
        "a", {"contentHash": "h", "article": "articles/a.json", "articleSha256": "s", "outputs": [10, 20]}
    )
    assert entry.outputs == (10, 20) and entry.to_json()["outputs"] == [10, 20]


def test_a_damaged_outputs_record_of_the_same_length_is_computed_again(tmp_path: Path) -> None:
    cache, manifest = Cache(tmp_path), manifest_of("a")
    build(cache, manifest, {"a": {HEAD: ("k", '<meta property="og:title" content="Hello">\n')}})
    pack = cache.outputs_path
    pack.write_bytes(pack.read_bytes().replace(b"og:title", b"og:EVIL!"))  # bit rot, a torn write
    assert read(cache, manifest, "a", HEAD, "k") is False, "a damaged record was served"


def test_the_key_of_an_output_depends_on_its_text() -> None:
    """The HTML output's key hashes the page's HTML as `text`: a changed page is sanitised again."""
    assert outputs.key(HTML, "a", "fingerprint", text="<p>one</p>") != outputs.key(
        HTML, "a", "fingerprint", text="<p>two</p>"
    )


def test_only_outputs_changed_are_written_and_once(tmp_path: Path) -> None:
    """A build that only reads its outputs appends nothing; one that reads an output again after
    flushing it does not write it a second time: the append-only pack grows only with changes."""
    cache, manifest = Cache(tmp_path), manifest_of("a", "b")
    build(cache, manifest, {"a": {HEAD: ("k", "head of a")}, "b": {HEAD: ("k", "head of b")}})
    size = cache.outputs_path.stat().st_size
    manifest.unsaved = False
    kept = PageOutputs(cache, manifest)
    assert kept.get("a", HEAD, "k") is not None and kept.get("b", HEAD, "k") is not None
    kept.flush("a")
    kept.put("b", HEAD, Output("k2", "new head of b"))
    kept.flush("b")
    assert kept.get("b", HEAD, "k2") is not None, "a record is readable at once by the build that wrote it"
    kept.flush()
    kept.close()
    [b_record] = [entry.outputs for entry in manifest.entries.values() if entry.outputs and entry.outputs[0] >= size]
    assert cache.outputs_path.stat().st_size == size + b_record[1]
    assert (
        read(cache, manifest, "a", HEAD, "k") == "head of a"
        and read(cache, manifest, "b", HEAD, "k2") == "new head of b"
    )


def test_a_compaction_in_a_build_that_changed_nothing_is_saved_and_drops_damaged_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction moves records: the manifest must be saved (`unsaved`) even when no output
    changed, or every record is computed again next build; a damaged record is not moved and
    its entry names no record."""
    monkeypatch.setattr(outputs, "COMPACT_ABOVE", 0)
    cache, manifest = Cache(tmp_path), manifest_of("a", "b", "gone1", "gone2", "gone3")
    build(cache, manifest, {article_id: {HEAD: ("k", article_id * 50)} for article_id in manifest.entries})
    b = manifest.entries["b"].outputs
    assert b is not None
    with open(cache.outputs_path, "r+b") as file:
        file.seek(b[0] + b[1] - 1)
        file.write(b"!")  # b's text damaged in place
    for gone in ("gone1", "gone2", "gone3"):
        del manifest.entries[gone]
    manifest.unsaved = False
    build(cache, manifest, {})
    assert manifest.unsaved
    assert manifest.entries["a"].outputs == (0, cache.outputs_path.stat().st_size)
    assert manifest.entries["b"].outputs is None
    assert read(cache, manifest, "a", HEAD, "k") == "a" * 50


def test_an_empty_pack_means_computing_again(tmp_path: Path) -> None:
    """An empty file cannot be mapped: the outputs are computed, then appended to it."""
    cache, manifest = Cache(tmp_path), manifest_of("a")
    build(cache, manifest, {"a": {HEAD: ("k", "<meta>")}})
    cache.outputs_path.write_bytes(b"")
    assert read(cache, manifest, "a", HEAD, "k") is False
    build(cache, manifest, {"a": {HEAD: ("k", "<meta>")}})
    assert read(cache, manifest, "a", HEAD, "k") == "<meta>"


def test_an_output_not_asked_for_is_kept_when_another_changes(tmp_path: Path) -> None:
    """With `trust_article_html` a build never asks for the HTML output; when the head tags
    change, the record written again still holds the HTML's text, read from the old record."""
    cache, manifest = Cache(tmp_path), manifest_of("a")
    build(cache, manifest, {"a": {HTML: ("k1", "<p>clean</p>"), HEAD: ("k2", "<meta>")}})
    build(cache, manifest, {"a": {HEAD: ("k3", "<meta changed>")}})
    assert read(cache, manifest, "a", HTML, "k1") == "<p>clean</p>"
    assert read(cache, manifest, "a", HEAD, "k3") == "<meta changed>"
    cache.outputs_path.write_bytes(b"")  # the pack lost: the HTML cannot be carried over, only dropped
    build(cache, manifest, {"a": {HEAD: ("k4", "<meta again>")}})
    assert read(cache, manifest, "a", HTML, "k1") is False
    assert read(cache, manifest, "a", HEAD, "k4") == "<meta again>"


def test_an_html_output_equal_to_its_input_is_found_without_the_pack(tmp_path: Path) -> None:
    """Its key and size are in the manifest's header and it has no text: the usual article page
    of a build with nothing changed never touches the pack for its HTML."""
    cache, manifest = Cache(tmp_path), manifest_of("a")
    build(cache, manifest, {"a": {HTML: ("k1", None), HEAD: ("k2", "<meta>")}})
    cache.outputs_path.unlink()
    kept = PageOutputs(cache, manifest)
    try:
        assert kept.get("a", HTML, "k1") == Output("k1", None, [["element", "script", 1]])
        assert kept.get("a", HEAD, "k2") is None, "a text that is not there is computed again"
    finally:
        kept.close()
