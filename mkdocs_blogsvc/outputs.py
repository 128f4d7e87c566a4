"""What the plugin derives from an article page in MkDocs' page hooks, kept in the cache by
the hash of its inputs: the page's sanitised HTML (`on_page_content`) and its head tags
(`on_post_page`). A build with nothing changed computes neither: it finds each by its key.

The key of an output is a SHA-256 of everything it depends on (`key`): for the HTML, the HTML
MkDocs and the site's extensions made of the page, and the sanitiser's code; for the head tags,
the article file's hash, the page's URL, the site's URLs of its images, the blog's language,
and the head template.

Storage: one append-only file, `outputs.pack` (`Cache.outputs_path`), holding one record per
article: its outputs' texts as raw UTF-8, one after the other. The article's manifest entry
names its record (`Entry.outputs`: offset and length) and holds its header
(`Entry.outputs_header`: per output its key, its size in bytes, what else it keeps, and the
CRC-32 of the texts). So a build compares keys in the manifest it has parsed anyway (one JSON
parse for all articles, not one per record), and reads the pack only for a text it needs: an
HTML output equal to its input (the usual article: nothing to remove) keeps no text at all, so
only the head tags are read. The pack is mapped once (about 1.3 kB an article), each record taken
from memory: no file to open and no seek per article.

A changed record is appended, never written over, so whatever manifest is on disk names
records that are intact; a record whose texts do not match the CRC-32 the manifest holds
(another article's, a damaged or shortened file, texts changed in place) is computed again,
never trusted in part. Records of articles changed or deleted are garbage; when the file holds
more garbage than live records, `flush` writes it again with the live ones only. Writes are
not flushed to disk: a lost record is recomputed.
"""

from __future__ import annotations

import mmap
import os
import secrets
import zlib
from typing import Any, BinaryIO

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.fileio import inputs_hash
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import Manifest

#: The kinds of output.
HTML = "html"
HEAD = "head"
#: The pack is written again without its garbage when it is larger than twice its live records
#: and than this (a small blog's pack is never worth rewriting).
COMPACT_ABOVE = 1 << 20
#: The header's key of the CRC-32 of the record's texts.
_CHECK = "crc"


def key(*inputs: Any, text: str = "") -> str:
    """The hash of an output's inputs (`fileio.inputs_hash`), a long `text` (a page's HTML)
    hashed as it is."""
    return inputs_hash(*inputs, text=text)


class PageOutputs:
    """The outputs of one build's article pages; the caller holds the cache's lock from the
    first `get` to the last `flush`, then calls `close`."""

    def __init__(self, cache: Cache, manifest: Manifest) -> None:
        self.cache = cache
        self.manifest = manifest
        #: article id -> its outputs (kind -> data with its `key` and `text`: no `text` yet
        #: when only its header was read) as read or changed this build, until flushed.
        self._held: dict[str, dict[str, dict[str, Any]]] = {}
        self._changed: set[str] = set()
        #: the pack as it was when first read (mapped, not copied: at 10,000 articles 13 MB; the
        #: records appended since are read from the file).
        self._data: bytes | mmap.mmap | None = None
        self._reader: BinaryIO | None = None  # unbuffered: one seek and one read per record
        self._writer: BinaryIO | None = None

    def get(self, article_id: str, kind: str, inputs: str) -> dict[str, Any] | None:
        """The output of `kind` for this key (`inputs`): a dict with its `text` (None: the
        output equals its input) and what else was kept; None when it must be computed."""
        held = self._held.get(article_id)
        if held is None:  # nothing put or read for this article yet: the usual page of a build
            return self._from_header(article_id, kind, inputs)
        found = held.get(kind)
        if found is None or found.get("key") != inputs:
            return None
        if "text" not in found and not self._read_texts(article_id, held):
            return None
        return found

    def put(self, article_id: str, kind: str, inputs: str, data: dict[str, Any]) -> None:
        """Keep `data` (with its `text`, str or None) as the output of `kind` for this key
        (written by `flush`)."""
        self._outputs(article_id)[kind] = {**data, "key": inputs}
        self._changed.add(article_id)

    def flush(self, article_id: str | None = None) -> None:
        """Write the changed outputs of one article (after its last page hook), or of all and
        then the pack without its garbage when worthwhile, and forget them. An unwritable
        cache only means they are computed again next time."""
        if article_id is not None and article_id not in self._held:
            return  # the usual article page of a build: nothing read beyond the manifest, nothing changed
        for found in [article_id] if article_id is not None else list(self._held):
            held = self._held.pop(found, None)
            if found in self._changed and held is not None:
                self._changed.discard(found)
                self._append(found, held)
        if article_id is None:
            self._compact_if_worthwhile()

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()  # before the pack is replaced (Windows cannot replace a mapped file)
        self._data = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # --- reading ----------------------------------------------------------------------------

    def _from_header(self, article_id: str, kind: str, inputs: str) -> dict[str, Any] | None:
        """`get` straight from the header in the manifest, holding nothing (a build with nothing
        changed calls this twice per article page: no copy of the other outputs)."""
        entry = self.manifest.entries.get(article_id)
        if entry is None or entry.outputs is None or entry.outputs_header is None:
            return None
        header = entry.outputs_header
        if type(header.get(_CHECK)) is not int:
            return None
        data = header.get(kind)
        if type(data) is not dict or data.get("key") != inputs:
            return None
        size = data.get("size")
        if size is None:
            return {**data, "text": None}
        record = self._record_bytes(entry.outputs) if type(size) is int else None
        texts = _texts(record, header) if record is not None else None
        return {**data, "text": texts[kind]} if texts is not None and kind in texts else None

    def _outputs(self, article_id: str) -> dict[str, dict[str, Any]]:
        held = self._held.get(article_id)
        if held is None:
            entry = self.manifest.entries.get(article_id)
            header = entry.outputs_header if entry is not None and entry.outputs is not None else None
            held = self._held[article_id] = _outputs_of(header)
        return held

    def _read_texts(self, article_id: str, held: dict[str, dict[str, Any]]) -> bool:
        """Give each output of `held` still without its text (as read from the header) its text
        from the pack; False, and those outputs dropped, when the record does not match."""
        entry = self.manifest.entries[article_id]
        record = self._record_bytes(entry.outputs) if entry.outputs is not None else None
        texts = _texts(record, entry.outputs_header) if record is not None else None
        for kind, data in list(held.items()):
            if "text" not in data:
                if texts is None:
                    del held[kind]
                else:
                    data["text"] = texts.get(kind)
        return texts is not None

    def _record_bytes(self, where: tuple[int, int]) -> bytes | None:
        offset, length = where
        try:
            if self._data is None:  # the whole pack mapped once: a seek and a read per article cost twice as much
                self._data = _mapped(self.cache.outputs_path)
            if offset + length <= len(self._data):
                return self._data[offset : offset + length]
            if self._reader is None:  # appended by this build after the pack was mapped
                self._reader = open(self.cache.outputs_path, "rb", buffering=0)  # noqa: SIM115  (closed by close())
            self._reader.seek(offset)
            return self._reader.read(length)  # os.pread would save a call, but Windows has none
        except OSError:
            self._data = b""  # no pack (or an unreadable one): every output is computed
            return None

    # --- writing ----------------------------------------------------------------------------

    def _append(self, article_id: str, outputs: dict[str, dict[str, Any]]) -> None:
        entry = self.manifest.entries.get(article_id)
        if entry is None:
            return
        if any("text" not in data for data in outputs.values()):
            self._read_texts(article_id, outputs)  # outputs kept but not asked for this build
        header, body = _record(outputs)
        try:
            if self._writer is None:
                self.cache.remove_legacy_outputs()
                self._writer = open(self.cache.outputs_path, "ab")  # noqa: SIM115  (closed by close())
            offset = self._writer.seek(0, os.SEEK_END)
            self._writer.write(body)
            self._writer.flush()  # readable by the reader at once
        except OSError as exc:
            log.debug("outputs of article %s not kept in the cache (%s)", article_id, exc)
            return
        self.manifest.update_entry(article_id, outputs=(offset, len(body)), outputs_header=header)

    def _compact_if_worthwhile(self) -> None:
        """Write the pack again with the live records only, when it holds more garbage than
        them (changed and deleted articles' records). The new file replaces the old one
        atomically; the manifest saved after it names the new offsets, and a manifest saved
        before names records that no longer match: they are computed again."""
        live = {
            article_id: entry.outputs
            for article_id, entry in self.manifest.entries.items()
            if entry.outputs is not None and entry.outputs_header is not None
        }
        try:
            size = os.path.getsize(self.cache.outputs_path)
        except OSError:
            return
        if size <= max(COMPACT_ABOVE, 2 * sum(length for _offset, length in live.values())):
            return
        self.close()
        path = self.cache.outputs_path
        temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")  # a killed writer's: swept
        moved: dict[str, tuple[int, int]] = {}
        try:
            with open(path, "rb") as old, open(temp, "wb") as new:
                for article_id, (offset, length) in sorted(live.items(), key=lambda item: item[1][0]):
                    old.seek(offset)
                    record = old.read(length)
                    if _texts(record, self.manifest.entries[article_id].outputs_header) is not None:  # else left behind
                        moved[article_id] = (new.tell(), len(record))
                        new.write(record)
            os.replace(temp, path)
        except OSError as exc:
            log.debug("the outputs pack was not compacted (%s)", exc)
            temp.unlink(missing_ok=True)
            return
        for article_id, entry in list(self.manifest.entries.items()):
            if entry.outputs is not None:
                found = moved.get(article_id)
                self.manifest.update_entry(
                    article_id, outputs=found, outputs_header=entry.outputs_header if found else None
                )
        log.debug("outputs pack compacted: %d to %d bytes", size, os.path.getsize(path))


def _mapped(path: os.PathLike[str] | str) -> bytes | mmap.mmap:
    """The pack's bytes as they are now, mapped read-only (an empty pack cannot be mapped).
    Raises `OSError`."""
    with open(path, "rb") as pack:
        try:
            return mmap.mmap(pack.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty
            return b""


def _record(outputs: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], bytes]:
    """One record: its header (for the manifest) and its texts as UTF-8 (for the pack)."""
    header: dict[str, Any] = {}
    texts = []
    for kind, data in outputs.items():
        text = data.get("text")
        encoded = text.encode("utf-8") if isinstance(text, str) else b""
        header[kind] = {
            **{k: v for k, v in data.items() if k != "text"},
            "size": len(encoded) if isinstance(text, str) else None,
        }
        texts.append(encoded)
    body = b"".join(texts)
    header[_CHECK] = zlib.crc32(body)  # a record's texts damaged, or another's, are noticed, not served
    return header, body


def _outputs_of(header: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The outputs a record's header (as stored in the manifest) describes, their texts not yet
    read (a text of size None is None: the output equals its input); none when it is malformed."""
    if header is None or type(header.get(_CHECK)) is not int:
        return {}  # none, or written before records had a checksum: computed again
    outputs: dict[str, dict[str, Any]] = {}
    for kind, data in header.items():
        if kind == _CHECK:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("key"), str):
            return {}
        size = data.get("size")
        if size is None:
            outputs[kind] = {**data, "text": None}
        elif type(size) is int and size >= 0:
            outputs[kind] = dict(data)
        else:
            return {}
    return outputs


def _texts(record: bytes, header: dict[str, Any] | None) -> dict[str, str] | None:
    """The texts of `record` by kind when it is the whole record `header` describes, else None."""
    if header is None or zlib.crc32(record) != header.get(_CHECK):
        return None  # damaged, shortened, or another article's
    texts: dict[str, str] = {}
    position = 0
    try:
        for kind, data in header.items():
            size = data.get("size") if kind != _CHECK else None
            if size is not None:
                texts[kind] = record[position : position + size].decode("utf-8")
                position += size
    except (AttributeError, TypeError, UnicodeDecodeError):
        return None
    return texts if position == len(record) else None
