"""Old addresses of articles on the site, and the redirect pages that keep them working.

An article's address on the site changes when its slug changes on the service, when it stops
being a `-2` page because its older namesake was deleted, when Material's blog plugin puts a
date or a category into the URL (`post_url_format`) and that moves, or when the site's own
settings (`posts_dir`, `use_directory_urls`) change. Links to the old address from elsewhere
on the web would then break.

So each build records the address every article page really got (read from the built page's
`File` after every plugin ran, never predicted), and the cache keeps the addresses each article
has had (`AddressRecord`, in the article's manifest entry). For as long as the article exists,
every earlier address gets a redirect page in `site_dir` pointing at the current one, in the
convention of mkdocs-redirects: `<meta http-equiv="refresh">`, `<link rel="canonical">` and a
plain link, no script. When the article is deleted its entry goes, and its redirects with it.

Rules (`plan`):
- an address that is any article's current page is never a redirect;
- an address two articles have had goes to the one that had it last (the later `since`);
- a file already in `site_dir` that is not one of our redirect pages is never overwritten
  (`write`): a page of the site always wins over an old address.

No MkDocs imports: the plugin hands in plain paths and URLs.

`mkdocs-blogsvc export` (for Zensical, which runs no plugin) cannot read the address a page
got: it computes it from mkdocs.yml (`PostUrls`, as Material's blog plugin and Zensical's, which
reads the same settings, place a post), keeps the same history in the same manifest record, and
writes the same redirect pages into the docs folder (`export.redirect_files`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import jinja2

from mkdocs_blogsvc.cache import Entry, Manifest
from mkdocs_blogsvc.errors import InvalidResponse
from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.models import format_timestamp, parse_timestamp

#: The record of an article's manifest entry that lists the addresses its page had.
ADDRESSES = "addresses"
#: Most addresses remembered per article (the oldest are forgotten first).
MAX_ADDRESSES = 20
#: The first line of every redirect page we write: how `write` tells ours from the site's pages.
MARKER = "<!-- mkdocs-blogsvc redirect -->"


@dataclass(frozen=True)
class Address:
    """Where a page is on the site: its URL and the file behind it, both relative to the site
    root (`blog/2025/03/04/slug/` and `blog/2025/03/04/slug/index.html`)."""

    url: str
    path: str


@dataclass(frozen=True)
class AddressRecord:
    """An address an article's page had, and since when (the build that first put it there)."""

    url: str
    path: str
    since: datetime

    @property
    def address(self) -> Address:
        return Address(self.url, self.path)

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "path": self.path, "since": format_timestamp(self.since)}

    @classmethod
    def from_json(cls, data: Any) -> AddressRecord:
        """Raises ValueError for anything but `{"url": str, "path": str, "since": timestamp}`
        with a relative path that stays inside the site."""
        if not isinstance(data, dict):
            raise ValueError("address is not an object")  # noqa: TRY004  (callers catch ValueError)
        url, path, since = data.get("url"), data.get("path"), data.get("since")
        if not isinstance(url, str) or not isinstance(path, str) or not isinstance(since, str):
            raise ValueError("address has fields of the wrong type")  # noqa: TRY004
        if not site_relative(path) or url.startswith(("/", "\\")) or "://" in url:
            raise ValueError(f"address {path!r} is not a path inside the site")
        try:
            moment = parse_timestamp(since)
        except InvalidResponse as exc:
            raise ValueError(str(exc)) from None
        return cls(url, path, moment)


def site_relative(path: str) -> bool:
    """True for a relative POSIX path with no `..`, empty part, backslash or drive: a path
    that stays inside site_dir (every path read back from the cache goes through this)."""
    parts = path.split("/")
    return (
        bool(path) and not path.startswith("/") and "\\" not in path and ":" not in path
        and ".." not in parts and "" not in parts and "." not in parts
    )


def remember(history: Sequence[AddressRecord], current: Address, now: datetime | None = None) -> tuple[AddressRecord, ...]:
    """`history` (oldest first) ending with `current`: unchanged when it already does, else
    with `current` moved or added to the end as of `now`, keeping the last `MAX_ADDRESSES`."""
    if history and history[-1].address == current:
        return tuple(history)
    moment = now or datetime.now(timezone.utc)
    kept = [record for record in history if record.path != current.path]
    kept.append(AddressRecord(current.url, current.path, moment))
    return tuple(kept[-MAX_ADDRESSES:])


def history(entry: Entry) -> tuple[AddressRecord, ...]:
    """The addresses recorded in a manifest entry, oldest first; unreadable items are dropped."""
    value = entry.records.get(ADDRESSES)
    found: list[AddressRecord] = []
    for item in value if isinstance(value, list) else ():
        try:
            found.append(AddressRecord.from_json(item))
        except ValueError:
            continue
    return tuple(found)


def record(manifest: Manifest, current: Mapping[str, Address]) -> tuple[dict[str, tuple[AddressRecord, ...]], bool]:
    """Record each article's `current` address in its manifest entry (in memory); returns the
    history of every article in `current` whose page ever had another address (the others need
    no redirect, and a build reads nothing more of them) and whether any changed (then the
    caller saves the manifest)."""
    histories: dict[str, tuple[AddressRecord, ...]] = {}
    changed = False
    for article_id, address in current.items():
        entry = manifest.entries.get(article_id)
        if entry is None or _always_at(entry, address):
            continue
        old = history(entry)
        updated = remember(old, address)
        if updated != old:
            manifest.entries[article_id] = replace(
                entry, records={**entry.records, ADDRESSES: [item.to_json() for item in updated]}
            )
            changed = True
        histories[article_id] = updated
    return histories, changed


def forget(manifest: Manifest) -> int:
    """Drop every article's recorded addresses (in memory), so that the next build records the
    current ones and redirects none of the others: the way out of addresses a settings mistake
    gave the pages for a build (`sync --forget-addresses`). Returns how many articles had more than one."""
    forgotten = 0
    for article_id, entry in list(manifest.entries.items()):
        if ADDRESSES in entry.records:
            forgotten += 1 if len(history(entry)) > 1 else 0
            records = {key: value for key, value in entry.records.items() if key != ADDRESSES}
            manifest.entries[article_id] = replace(entry, records=records)
    return forgotten


def _always_at(entry: Entry, address: Address) -> bool:
    """Whether the entry records one address, this one (the common case: compared as stored)."""
    value = entry.records.get(ADDRESSES)
    return (isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict)
            and value[0].get("url") == address.url and value[0].get("path") == address.path
            and isinstance(value[0].get("since"), str))


@dataclass(frozen=True)
class Redirect:
    """A redirect page to write: at `source` (an old address), to `target` (the current one)."""

    source: Address
    target: Address
    article_id: str


def plan(histories: Mapping[str, Sequence[AddressRecord]], current: Mapping[str, Address]) -> list[Redirect]:
    """The redirects of a build: every remembered address of an article whose page exists now
    (`current`, by article id), except addresses that are a current page. Sorted by path."""
    pages = {address.path for address in current.values()}
    claims: dict[str, tuple[datetime, str, AddressRecord]] = {}
    for article_id, records in histories.items():
        if article_id not in current:
            continue
        for record in records:
            if record.path in pages:
                continue
            claim = (record.since, article_id, record)
            held = claims.get(record.path)
            if held is None or (claim[0], claim[1]) > (held[0], held[1]):
                claims[record.path] = claim
    return [
        Redirect(record.address, current[article_id], article_id)
        for _since, article_id, record in (claims[path] for path in sorted(claims))
    ]


def relative_url(target: Address, source: Address) -> str:
    """The URL of `target` as written in the page at `source` (a browser resolves it against
    the folder of `source.path`; a directory URL keeps its trailing slash)."""
    relative = posixpath.relpath(target.url or ".", posixpath.dirname(source.path) or ".")
    if target.url.endswith("/") or not target.url:
        relative = "./" if relative == "." else relative + "/"
    return relative


_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("mkdocs_blogsvc", "templates"),
    autoescape=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)


def page(redirect: Redirect, *, title: str, site_url: str | None, language: str | None) -> str:
    """The HTML of a redirect page: `MARKER`, then a meta refresh, a canonical link (absolute
    when the site has a `site_url`) and a plain link, all to the article's current address."""
    url = relative_url(redirect.target, redirect.source)
    canonical = urljoin(site_url.rstrip("/") + "/", redirect.target.url) if site_url else url
    text = _ENVIRONMENT.get_template("redirect.html.j2").render(
        url=url, canonical=canonical, title=title, language=language or "en"
    )
    return f"{MARKER}\n{text}"


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    #: old addresses that are now a file of the site (a page, an asset): no redirect there.
    occupied: list[str] = field(default_factory=list)
    unchanged: int = 0


def write(site_dir: Path, pages: Iterable[tuple[Redirect, str]]) -> WriteReport:
    """Write each (redirect, html) into `site_dir`, never over a file that is not one of our
    redirect pages (a `--dirty` build finds its own from before, and may update them)."""
    report = WriteReport()
    for redirect, html in pages:
        path = redirect.source.path
        if not site_relative(path):
            continue
        target = site_dir.joinpath(*path.split("/"))
        data = html.encode("utf-8")
        if target.is_dir() or target.is_symlink():
            report.occupied.append(path)
            continue
        try:
            existing = target.read_bytes()
        except FileNotFoundError:
            existing = None
        if existing is not None and not existing.startswith(MARKER.encode("utf-8")):
            report.occupied.append(path)
            continue
        if existing == data:
            report.unchanged += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data, durable=False)
        report.written.append(path)
    return report


# --- where a post is placed, computed from mkdocs.yml (for `export`) -----------------------------


@dataclass(frozen=True)
class PostUrls:
    """How the site's generator places an article page: Material's blog plugin (MkDocs) and
    Zensical's blog, which reads the same settings of mkdocs.yml, move a post under `blog_dir`
    to `post_url_format` (`{date}`, `{slug}`, `{file}`, `{categories}`); without a blog reading
    `posts_dir` (`blog_dir` None) the page stays where its file is. Then MkDocs' rule:
    `<path>/index.html` with `use_directory_urls`, else `<path>.html`."""

    blog_dir: str | None = None
    url_format: str = "{date}/{slug}"
    date_format: str = "yyyy/MM/dd"
    use_directory_urls: bool = True
    language: str = "en"

    def address(self, src_uri: str, slug: str, created: datetime) -> Address | None:
        """The address of the page whose docs-relative file is `src_uri` (`<posts_dir>/<slug>.md`),
        or None when `date_format` cannot be computed here (the page then names no URL)."""
        if self.blog_dir is None:
            path = src_uri
        else:
            date = _format_date(created.astimezone(timezone.utc), self.date_format, self.language) \
                if "{date}" in self.url_format else ""
            if date is None:
                return None
            stem = posixpath.splitext(posixpath.basename(src_uri))[0]
            try:  # the exported pages name no categories: `{categories}` is empty, as for such a post
                formatted = self.url_format.format(categories="", date=date, file=stem, slug=slug)
            except (KeyError, IndexError, ValueError):
                return None
            path = posixpath.normpath(posixpath.join(self.blog_dir, posixpath.normpath(formatted.strip("/")) + ".md"))
        return _page_address(path, self.use_directory_urls)


def post_urls(blogs: Iterable[Mapping[str, Any]], posts_dir: str, *, use_directory_urls: bool,
              language: str | None) -> PostUrls:
    """The `PostUrls` of the blog that reads `posts_dir` among the site's blog plugin settings
    (`blog_dir`, `post_dir`, `post_url_format`, `post_url_date_format` of each), or of plain pages."""
    for blog in blogs:
        blog_dir = str(blog.get("blog_dir", "blog"))
        post_dir = posixpath.normpath(str(blog.get("post_dir", "{blog}/posts")).format(blog=blog_dir)).strip("/")
        if posts_dir == post_dir or posts_dir.startswith(post_dir + "/") or post_dir == ".":
            return PostUrls(blog_dir, str(blog.get("post_url_format", "{date}/{slug}")),
                            str(blog.get("post_url_date_format", "yyyy/MM/dd")), use_directory_urls, language or "en")
    return PostUrls(None, use_directory_urls=use_directory_urls, language=language or "en")


def _page_address(src_uri: str, use_directory_urls: bool) -> Address:
    """MkDocs' address of the page built from `src_uri` (`File._get_dest_path` and `url`)."""
    parent, name = posixpath.split(src_uri)
    stem = posixpath.splitext(name)[0]
    if not use_directory_urls:
        path = posixpath.join(parent, f"{stem}.html")
        return Address(path, path)
    folder = parent if stem in ("index", "README") else posixpath.join(parent, stem)
    return Address(f"{folder}/" if folder else "./", posixpath.join(folder, "index.html"))


#: The numeric fields of a CLDR date pattern (what babel formats for Material), quoted text, and
#: everything else: letters outside these need babel's locale data.
_DATE_TOKEN = re.compile(r"'([^']*)'|(y+|M+|d+)|([A-Za-z])|([^A-Za-z']+)")


def _format_date(moment: datetime, pattern: str, language: str) -> str | None:
    """`moment` in the blog's `post_url_date_format`, with babel as Material formats it when it is
    installed (it comes with Material), else the numeric patterns (`yyyy/MM/dd`) here; None for
    a pattern that needs babel's locale data without it."""
    try:
        from babel.core import UnknownLocaleError
        from babel.dates import format_date, format_datetime
    except ImportError:
        pass
    else:
        locale = language.replace("-", "_")
        try:
            if pattern in ("full", "long", "medium", "short"):
                return str(format_date(moment, format=pattern, locale=locale))
            return str(format_datetime(moment, format=pattern, locale=locale))
        except (UnknownLocaleError, ValueError):
            return None
    parts: list[str] = []
    for match in _DATE_TOKEN.finditer(pattern):
        quoted, field, other, literal = match.groups()
        if quoted is not None:
            parts.append(quoted or "'")
        elif literal is not None:
            parts.append(literal)
        elif other is not None or field is None or (field[0] in "Md" and len(field) > 2):
            return None  # a letter babel reads with locale data (`MMMM`: a month's name, `EEE`...)
        elif field[0] == "y":
            parts.append(f"{moment.year % 100:02d}" if len(field) == 2 else f"{moment.year:0{len(field)}d}")
        else:
            value = moment.month if field[0] == "M" else moment.day
            parts.append(f"{value:0{len(field)}d}")
    return "".join(parts)
