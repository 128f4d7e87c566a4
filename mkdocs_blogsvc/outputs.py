"""What the plugin derives from an article page in MkDocs' page hooks, kept in the cache by
the hash of its inputs: the page's sanitised HTML (`on_page_content`) and its head tags
(`on_post_page`). A build with nothing changed computes neither: it finds each by its key.

The key of an output is a SHA-256 of everything it depends on (`key`): for the HTML, the HTML
MkDocs and the site's extensions made of the page, and the sanitiser's code; for the head tags,
the article file's hash, the page's URL, the site's URLs of its images, the blog's language,
and the head template.

Storage: one append-only file, `outputs.pack` (`Cache.outputs_path`), holding one record per
article: its outputs' texts as raw UTF-8, the HTML's then the head tags'. The article's
manifest entry names its record (`Entry.outputs`: offset and length) and holds its header
(`Entry.outputs_header`, a `manifest.OutputsHeader`: per output its key, its size in bytes and
what the sanitiser removed, and the CRC-32 of the texts). So a build compares keys in the
manifest it has decoded anyway (typed, in the one pass over all articles), and reads the pack
only for a text it needs: an HTML output equal to its input (the usual article: nothing to
remove) keeps no text at all, so only the head tags are read. The pack is mapped once (about 1.3 kB an article), each record taken
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

import msgspec

from mkdocs_blogsvc.cache import Cache
from mkdocs_blogsvc.fileio import inputs_hash
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.manifest import Entry, KeptOutput, Manifest, OutputsHeader

#: The kinds of output, in the order of their texts in a record (`OutputsHeader`'s fields).
HTML = "html"
HEAD = "head"
KINDS = (HTML, HEAD)
#: The pack is written again without its garbage when it is larger than twice its live records
#: and than this (a small blog's pack is never worth rewriting).
COMPACT_ABOVE = 1 << 20


class Output(msgspec.Struct, frozen=True, gc=False):
    """One output of an article page: the hash of its inputs, its text (None: the output equals
    its input, as the HTML of the usual article) and what the sanitiser removed (the HTML's)."""

    key: str
    text: str | None
    removed: Any = None


#: The hash of an output's inputs, a long `text` (a page's HTML) hashed as it is: the same as a
#: page's (`fileio.inputs_hash`; a name, not a function around it, as it runs twice per page).
key = inputs_hash


class PageOutputs:
    """The outputs of one build's article pages; the caller holds the cache's lock from the
    first `get` to the last `flush`, then calls `close`."""

    def __init__(self, cache: Cache, manifest: Manifest) -> None:
        self.cache = cache
        self.manifest = manifest
        #: article id -> its outputs by kind (texts read) since one was put this build, until flushed.
        self._held: dict[str, dict[str, Output]] = {}
        #: the pack as it was when first read (mapped, not copied: at 10,000 articles 13 MB; the
        #: records appended since are read from the file).
        self._data: bytes | mmap.mmap | None = None
        self._reader: BinaryIO | None = None  # unbuffered: one seek and one read per record
        self._writer: BinaryIO | None = None

    def get(self, article_id: str, kind: str, inputs: str) -> Output | None:
        """The output of `kind` for this key (`inputs`); None when it must be computed."""
        held = self._held.get(article_id)
        if held is not None:  # an output of this article was put this build
            found = held.get(kind)
            return found if found is not None and found.key == inputs else None
        entry = self.manifest.entries.get(article_id)  # the usual page of a build: straight from the header
        if entry is None or entry.outputs_header is None:
            return None
        kept: KeptOutput | None = getattr(entry.outputs_header, kind)
        if kept is None or kept.key != inputs:
            return None
        if kept.size is None:  # no text to read: the pack is not touched
            return Output(inputs, None, kept.removed)
        texts = self._texts(entry)
        text = texts.get(kind) if texts is not None else None
        return Output(inputs, text, kept.removed) if text is not None else None

    def put(self, article_id: str, kind: str, output: Output) -> None:
        """Keep `output` as the article's output of `kind` (written by `flush`)."""
        held = self._held.get(article_id)
        if held is None:  # the article's other outputs, as kept so far, go into its new record too
            held = self._held[article_id] = self._kept(article_id)
        held[kind] = output

    def flush(self, article_id: str | None = None) -> None:
        """Write the changed outputs of one article (after its last page hook), or of all and
        then the pack without its garbage when worthwhile, and forget them. An unwritable
        cache only means they are computed again next time."""
        if article_id is not None:
            held = self._held.pop(article_id, None)
            if held is not None:  # else the usual article page of a build: nothing changed
                self._append(article_id, held)
            return
        for found, held in list(self._held.items()):
            del self._held[found]
            self._append(found, held)
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

    def _kept(self, article_id: str) -> dict[str, Output]:
        """Every output the article's record holds intact, texts read (none when it does not match)."""
        entry = self.manifest.entries.get(article_id)
        texts = self._texts(entry) if entry is not None else None
        if entry is None or entry.outputs_header is None or texts is None:
            return {}
        header = entry.outputs_header
        return {kind: Output(kept.key, texts[kind], kept.removed) for kind in KINDS if (kept := getattr(header, kind))}

    def _texts(self, entry: Entry) -> dict[str, str | None] | None:
        """The texts of the entry's record by kind; None when it has none, or it does not match its header."""
        if entry.outputs is None or entry.outputs_header is None:
            return None
        record = self._record_bytes(entry.outputs)
        return _texts(record, entry.outputs_header) if record is not None else None

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

    def _append(self, article_id: str, outputs: dict[str, Output]) -> None:
        if article_id not in self.manifest.entries:
            return
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
        try:
            size = os.path.getsize(self.cache.outputs_path)
        except OSError:
            return
        entries = self.manifest.entries.values()
        live_bytes = sum(entry.outputs[1] for entry in entries if entry.outputs and entry.outputs_header)
        if size <= max(COMPACT_ABOVE, 2 * live_bytes):
            return  # every build asks: no record per article made to answer
        live = {
            article_id: (entry.outputs, entry.outputs_header)
            for article_id, entry in self.manifest.entries.items()
            if entry.outputs is not None and entry.outputs_header is not None
        }
        self.close()
        path = self.cache.outputs_path
        temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")  # a killed writer's: swept
        moved: dict[str, tuple[int, int]] = {}
        try:
            with open(path, "rb") as old, open(temp, "wb") as new:
                for article_id, ((offset, length), header) in sorted(live.items(), key=lambda item: item[1][0]):
                    old.seek(offset)
                    record = old.read(length)
                    if _texts(record, header) is not None:  # else left behind
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


def _record(outputs: dict[str, Output]) -> tuple[OutputsHeader, bytes]:
    """One record: its header (for the manifest) and its texts as UTF-8 (for the pack), in the
    order of `KINDS`."""
    kept: dict[str, KeptOutput] = {}
    texts = []
    for kind in KINDS:
        output = outputs.get(kind)
        if output is not None:
            encoded = output.text.encode("utf-8") if output.text is not None else None
            kept[kind] = KeptOutput(output.key, len(encoded) if encoded is not None else None, output.removed)
            texts.append(encoded or b"")
    body = b"".join(texts)
    # the CRC-32: a record's texts damaged, or another's, are noticed, not served
    return OutputsHeader(zlib.crc32(body), **kept), body


def _texts(record: bytes, header: OutputsHeader) -> dict[str, str | None] | None:
    """The texts of `record` by kind when it is the whole record `header` describes, else None."""
    if zlib.crc32(record) != header.crc:
        return None  # damaged, shortened, or another article's
    texts: dict[str, str | None] = {}
    position = 0
    for kind in KINDS:
        kept: KeptOutput | None = getattr(header, kind)
        if kept is not None:
            if kept.size is None:
                texts[kind] = None
            else:
                try:
                    texts[kind] = record[position : position + kept.size].decode("utf-8")
                except UnicodeDecodeError:
                    return None
                position += kept.size
    return texts if position == len(record) else None
