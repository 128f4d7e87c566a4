"""The cache's manifest in memory: one `Entry` per article, blog-wide facts, and the typed
records other features keep in it (a page's inputs, its addresses on the site).

Why a module of its own: the manifest is the cache's single source of truth, and many parts
of a build learn something worth keeping in it. They all change it through `Manifest`'s
methods, which keep entries immutable (each change replaces the entry) and set the one flag,
`unsaved`, that says a save is worthwhile. Only `cache.Cache.save` writes it (and clears the
flag), called by whoever owns the transaction: the sync, the build session, `sync
--forget-addresses`. The JSON format is `MANIFEST_VERSION` 1, unchanged by the typing.
Blog-wide record data unknown to this version is kept as it is; an article's records are typed
(`EntryRecords`), and a kind this version does not know is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, TypeVar

import msgspec

from mkdocs_blogsvc.errors import InvalidResponse
from mkdocs_blogsvc.models import ArticleSummary, KnownArticle, format_timestamp, parse_timestamp

MANIFEST_VERSION = 1
#: Keys of an entry's records: its page's (`PageRecord`) and the addresses its page had.
PAGE_RECORD = "page"
ADDRESSES = "addresses"
#: Keys of the blog-wide records: the index page's, the last full sync, the blog's slug, and
#: what the articles' summaries were made by (`Cache.check`).
INDEX_RECORD = "indexPage"
LAST_FULL_SYNC = "lastFullSync"
BLOG_SLUG = "blogSlug"
SUMMARIES_FROM = "summariesFrom"


class PageRecord(msgspec.Struct, frozen=True, gc=False, rename="camel", omit_defaults=True):
    """A page rendered into the cache: the hash of its inputs and the file's size and mtime
    (so a build with nothing changed renders nothing), and for article pages the links it
    holds (`(article id, whether it has a page)`), what the sanitiser's Markdown pass removed
    (`Removed.to_json`) and the external hosts it names (kept from Material's privacy plugin).
    A msgspec `Struct`: decoded with its entry, checked in C."""

    inputs: str
    size: int
    mtime_ns: int
    links: tuple[tuple[str, bool], ...] | None = None
    removed: Any = None
    remote: tuple[str, ...] = ()


class Address(msgspec.Struct, frozen=True, gc=False):
    """Where a page is on the site: its URL and the file behind it, both relative to the site
    root (`blog/2025/03/04/slug/` and `blog/2025/03/04/slug/index.html`). A msgspec `Struct`:
    one is made for every article page of every build, in a seventh of a frozen dataclass's time."""

    url: str
    path: str


class AddressRecord(msgspec.Struct, frozen=True, gc=False):
    """An address an article's page had, and since when (the build that first put it there).
    Only a relative path that stays inside the site and a URL relative to it are accepted
    (`__post_init__`, run on every decode too): a redirect page is written at that path."""

    url: str
    path: str
    since: Annotated[datetime, msgspec.Meta(tz=True)]

    def __post_init__(self) -> None:
        if not site_relative(self.path) or self.url.startswith(("/", "\\")) or "://" in self.url:
            raise ValueError(f"address {self.path!r} is not a path inside the site")

    @property
    def address(self) -> Address:
        return Address(self.url, self.path)

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "path": self.path, "since": format_timestamp(self.since)}

    @classmethod
    def from_json(cls, data: Any) -> AddressRecord:
        """Raises ValueError for anything but `{"url": str, "path": str, "since": timestamp}`
        with a relative path that stays inside the site."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(str(exc)) from None


class EntryRecords(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """What other features record in an article's entry: its page's record (`pages`) and the
    addresses its page had, oldest first (`redirects`). A kind of record this version does not
    know is dropped when the manifest is written again: records are derived data, and the one
    that cannot be derived again, the addresses, is a kind this version knows."""

    page: PageRecord | None = None
    addresses: tuple[AddressRecord, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.page is not None:
            data[PAGE_RECORD] = msgspec.to_builtins(self.page)
        if self.addresses:
            data[ADDRESSES] = [item.to_json() for item in self.addresses]
        return data

    @classmethod
    def from_json(cls, data: Any) -> EntryRecords:
        """The records of their JSON as stored, read leniently: a page record that cannot be
        read is left out (the page is rendered again), and so is an address that cannot."""
        if not isinstance(data, dict):
            return cls()
        addresses = data.get(ADDRESSES)
        return cls(
            page=_converted(data.get(PAGE_RECORD), PageRecord),
            addresses=tuple(
                found
                for item in (addresses if isinstance(addresses, list) else ())
                if (found := _converted(item, AddressRecord)) is not None
            ),
        )


def site_relative(path: str) -> bool:
    """True for a relative POSIX path with no `..`, empty part, backslash or drive: a path
    that stays inside site_dir (every path read back from the cache goes through this)."""
    parts = path.split("/")
    return (
        bool(path)
        and not path.startswith("/")
        and "\\" not in path
        and ":" not in path
        and ".." not in parts
        and "" not in parts
        and "." not in parts
    )


#: A string that must not be empty (an entry's hashes and file).
_Filled = Annotated[str, msgspec.Meta(min_length=1)]


class KeptOutput(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One output of an article page as its record's header describes it (`outputs`): the hash
    of its inputs, the length in bytes of its text in the pack (None: no text, the output
    equals its input), and what the sanitiser removed (`Removed.to_json`, the HTML's only)."""

    key: str
    size: Annotated[int, msgspec.Meta(ge=0)] | None = None
    removed: Any = None


class OutputsHeader(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """The header of an article's record in the outputs pack (`outputs`): each output's
    `KeptOutput`, and the CRC-32 of the record's texts, which are the HTML's then the head tags'."""

    crc: int
    html: KeptOutput | None = None
    head: KeptOutput | None = None


class Entry(msgspec.Struct, frozen=True, kw_only=True, gc=False, rename="camel"):
    """What the cache holds for one article. A msgspec `Struct`, so that the manifest's JSON is
    decoded straight into entries, fields checked in C (`decode`: at 10,000 articles 60 ms,
    where `json.loads` and then building the entries took 160). Changed through
    `Manifest.update_entry` only, which replaces it."""

    #: the article's id: the manifest's key, not part of the entry's JSON (set when read).
    id: str = ""
    content_hash: _Filled
    article_file: _Filled = msgspec.field(name="article")
    article_sha256: _Filled
    #: remote URL -> cached image file (relative to the cache folder), for images downloaded.
    images: dict[str, str] = {}
    #: size of each image file, checked by `check` (cheap, unlike hashing megabytes each build).
    image_sizes: dict[str, int] = {}
    #: what other features record for this article: its page's record, its page's addresses.
    records: EntryRecords = msgspec.field(default_factory=EntryRecords)
    #: (size, mtime in ns) of the article file when its hash was last checked or it was written:
    #: `check` hashes the file only when these differ.
    article_stat: tuple[int, int] | None = None
    #: what a build needs of the article without reading its file (None in a manifest written
    #: before summaries existed: `check` reads the file once and records it).
    summary: ArticleSummary | None = None
    #: (offset, length) of the record in `OUTPUTS_NAME` of the outputs derived from the
    #: article's page (see `outputs`).
    outputs: tuple[int, int] | None = None
    #: that record's header.
    outputs_header: OutputsHeader | None = None

    def files(self) -> Iterator[str]:
        yield self.article_file
        yield from self.images.values()

    def always_at(self, address: Address) -> bool:
        """Whether the entry records one address, this one (the common case of a build)."""
        addresses = self.records.addresses
        return len(addresses) == 1 and addresses[0].url == address.url and addresses[0].path == address.path

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "contentHash": self.content_hash,
            "article": self.article_file,
            "articleSha256": self.article_sha256,
            "images": dict(sorted(self.images.items())),
            "imageSizes": dict(sorted(self.image_sizes.items())),
        }
        if records := self.records.to_json():
            data["records"] = records
        if self.article_stat is not None:
            data["articleStat"] = list(self.article_stat)
        if self.summary is not None:
            data["summary"] = self.summary.to_json()
        if self.outputs is not None:
            data["outputs"] = list(self.outputs)
        if self.outputs_header is not None:
            data["outputsHeader"] = msgspec.to_builtins(self.outputs_header)
        return data

    @classmethod
    def from_json(cls, article_id: str, data: Any) -> Entry:
        """The entry of its JSON as stored (already parsed), read leniently: a summary, stat or
        outputs place that cannot be read is left out (the summary is then read from the article
        file again). Raises ValueError when the entry itself cannot be read."""
        if not isinstance(data, dict):
            raise ValueError("entry is not an object")
        loose = {key: data[key] for key in _LOOSE_FIELDS if key in data}
        try:
            entry = msgspec.convert({key: value for key, value in data.items() if key not in loose}, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(f"entry cannot be read: {exc}") from None
        return _with_id(
            msgspec.structs.replace(
                entry,
                summary=_converted(loose.get("summary"), ArticleSummary),  # None: read from the article again
                records=EntryRecords.from_json(loose.get("records")),
                article_stat=_stat(loose.get("articleStat")),
                outputs=_stat(loose.get("outputs")),  # an earlier version's file name: none
                outputs_header=_converted(loose.get("outputsHeader"), OutputsHeader),  # None: computed again
            ),
            article_id,
        )


#: The fields `Entry.from_json` reads leniently (one that cannot be read is left out).
_LOOSE_FIELDS = ("summary", "records", "articleStat", "outputs", "outputsHeader")


def _with_id(entry: Entry, article_id: str) -> Entry:
    """The entry just decoded, given its id (the manifest's key) and its summary's: set in place,
    as nothing else holds it yet (a copy of each would cost 10,000 copies a build)."""
    msgspec.structs.force_setattr(entry, "id", article_id)
    if entry.summary is not None:
        msgspec.structs.force_setattr(entry.summary, "id", article_id)
    return entry


_Struct = TypeVar("_Struct", bound=msgspec.Struct)


def _converted(value: Any, kind: type[_Struct]) -> _Struct | None:
    """`value` (JSON as stored) as a `kind`, None when absent or of another shape."""
    try:
        return msgspec.convert(value, kind) if value is not None else None
    except msgspec.ValidationError:
        return None


def _stat(value: Any) -> tuple[int, int] | None:
    """Two integers from a JSON list (a size and an mtime, an offset and a length)."""
    if type(value) is list and len(value) == 2:  # read twice per article of every build: no generator
        first, second = value
        if type(first) is int and type(second) is int:
            return first, second
    return None


@dataclass
class Manifest:
    """The manifest in memory. `entries` by article id (read them freely; change them through
    the methods below); `rendered` lists the page files we wrote."""

    entries: dict[str, Entry] = field(default_factory=dict)
    rendered: list[str] = field(default_factory=list)
    blog_language: str | None = None
    blog_name: str | None = None
    #: blog-wide data (JSON values): the typed ones through properties below, others kept as-is.
    records: dict[str, Any] = field(default_factory=dict)
    #: set by every change made through the methods below (a new stat or summary of an article,
    #: new outputs, a page rendered, an address recorded); cleared by `Cache.save` only.
    unsaved: bool = field(default=False, compare=False)

    # --- changes: each replaces what it changes and marks the manifest unsaved ---------------

    def update_entry(self, article_id: str, **changes: Any) -> None:
        """Replace the article's entry with `changes` applied (entries are immutable)."""
        self.entries[article_id] = msgspec.structs.replace(self.entries[article_id], **changes)
        self.unsaved = True

    def drop_entry(self, article_id: str) -> None:
        del self.entries[article_id]
        self.unsaved = True

    def set_page(self, article_id: str, record: PageRecord) -> None:
        records = self.entries[article_id].records
        self.update_entry(article_id, records=msgspec.structs.replace(records, page=record))

    def set_addresses(self, article_id: str, history: tuple[AddressRecord, ...]) -> None:
        records = self.entries[article_id].records
        self.update_entry(article_id, records=msgspec.structs.replace(records, addresses=history))

    def forget_addresses(self) -> int:
        """Drop every article's recorded addresses; returns how many articles had more than one."""
        forgotten = 0
        for article_id, entry in list(self.entries.items()):
            if entry.records.addresses:
                forgotten += 1 if len(entry.records.addresses) > 1 else 0
                self.set_addresses(article_id, ())
        return forgotten

    def set_rendered(self, rendered: list[str]) -> None:
        self.rendered = rendered
        self.unsaved = True

    def set_index_page(self, record: PageRecord) -> None:
        self.records[INDEX_RECORD] = msgspec.to_builtins(record)
        self.unsaved = True

    def learn_blog(self, *, language: str | None, name: str | None, slug: str) -> None:
        """The blog's language (`inLanguage`), name (the index's title) and slug (links to the hosted blog)."""
        self.blog_language, self.blog_name = language, name
        self.records[BLOG_SLUG] = slug
        self.unsaved = True

    def set_last_full_sync(self, moment: datetime) -> None:
        self.records[LAST_FULL_SYNC] = format_timestamp(moment)
        self.unsaved = True

    def set_summaries_from(self, made_by: str) -> None:
        self.records[SUMMARIES_FROM] = made_by
        self.unsaved = True

    # --- typed reads --------------------------------------------------------------------------

    @property
    def index_page(self) -> PageRecord | None:
        return _converted(self.records.get(INDEX_RECORD), PageRecord)

    @property
    def blog_slug(self) -> str | None:
        slug = self.records.get(BLOG_SLUG)
        return slug if isinstance(slug, str) else None

    @property
    def summaries_from(self) -> str | None:
        """The hash of the code the entries' summaries were made by (None: an older version's)."""
        made_by = self.records.get(SUMMARIES_FROM)
        return made_by if isinstance(made_by, str) else None

    @property
    def last_full_sync(self) -> datetime | None:
        last = self.records.get(LAST_FULL_SYNC)
        try:
            return parse_timestamp(last) if isinstance(last, str) else None
        except InvalidResponse:
            return None

    # --- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": MANIFEST_VERSION,
            "blogLanguage": self.blog_language,
            "blogName": self.blog_name,
            "articles": {key: self.entries[key].to_json() for key in sorted(self.entries)},
            "rendered": sorted(set(self.rendered)),
        }
        if self.records:
            data["records"] = dict(sorted(self.records.items()))
        return data

    @classmethod
    def decode(cls, raw: bytes, on_dropped: Callable[[str, Exception], object]) -> Manifest:
        """The manifest of a version-1 file's bytes; `on_dropped(article_id, exc)` for each entry
        that cannot be read (the service sends its article again). Raises `OtherVersion` for a
        file of another format version, ValueError for one that is not JSON.

        Decoded in one pass into typed entries (`_ManifestFile`); a file that does not fit those
        types (an entry damaged, or read leniently: `Entry.from_json`) is read again as plain
        JSON, entry by entry."""
        try:
            typed: _ManifestFile | None = _MANIFEST_FILE.decode(raw)
        except msgspec.ValidationError:
            typed = None
        except (msgspec.DecodeError, RecursionError) as exc:  # not JSON, or nested too deep for it
            raise ValueError(str(exc)) from None
        if typed is not None:
            if typed.version != MANIFEST_VERSION:
                raise OtherVersion(typed.version)
            manifest = cls._of_file(typed.blog_language, typed.blog_name, typed.rendered, typed.records)
            manifest.entries = {article_id: _with_id(entry, article_id) for article_id, entry in typed.articles.items()}
            return manifest
        try:
            data = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            raise OtherVersion(data.get("version") if isinstance(data, dict) else None)
        manifest = cls._of_file(
            data.get("blogLanguage"), data.get("blogName"), data.get("rendered"), data.get("records")
        )
        articles = data.get("articles")
        for article_id, stored in articles.items() if isinstance(articles, dict) else ():
            try:
                manifest.entries[article_id] = Entry.from_json(article_id, stored)
            except ValueError as exc:
                on_dropped(article_id, exc)
        return manifest

    @classmethod
    def _of_file(cls, language: Any, name: Any, rendered: Any, records: Any) -> Manifest:
        """A manifest with the file's blog-wide fields (each left out when of the wrong type)."""
        return cls(
            rendered=[path for path in rendered if isinstance(path, str)] if isinstance(rendered, list) else [],
            blog_language=language if isinstance(language, str) else None,
            blog_name=name if isinstance(name, str) else None,
            records={str(key): value for key, value in records.items()} if isinstance(records, dict) else {},
        )

    def known_articles(self) -> list[KnownArticle]:
        return [KnownArticle(entry.id, entry.content_hash) for entry in self.entries.values()]

    def owned_files(self) -> set[str]:
        """Every cache file (relative path) the manifest says we created."""
        owned = {path for entry in self.entries.values() for path in entry.files()}
        return owned | set(self.rendered)


class OtherVersion(ValueError):
    """A manifest file of another format version (None: not a JSON object)."""

    def __init__(self, version: Any) -> None:
        super().__init__(f"format version {version!r}, not {MANIFEST_VERSION!r}")
        self.version = version


class _ManifestFile(msgspec.Struct, rename="camel"):
    """The manifest file as this version writes it: what `Manifest.decode` reads in one pass.
    The blog-wide fields are checked by `Manifest._of_file`, the entries by their types."""

    version: Any = None
    blog_language: Any = None
    blog_name: Any = None
    articles: dict[str, Entry] = {}
    rendered: Any = None
    records: Any = None


_MANIFEST_FILE = msgspec.json.Decoder(_ManifestFile)
