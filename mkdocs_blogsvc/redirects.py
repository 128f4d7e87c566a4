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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import jinja2

from mkdocs_blogsvc.fileio import atomic_write
from mkdocs_blogsvc.manifest import Address, AddressRecord, Manifest, site_relative

#: Most addresses remembered per article (the oldest are forgotten first).
MAX_ADDRESSES = 20
#: The first line of every redirect page we write: how `write` tells ours from the site's pages.
MARKER = "<!-- mkdocs-blogsvc redirect -->"


def remember(
    history: Sequence[AddressRecord], current: Address, now: datetime | None = None
) -> tuple[AddressRecord, ...]:
    """`history` (oldest first) ending with `current`: unchanged when it already does, else
    with `current` moved or added to the end as of `now`, keeping the last `MAX_ADDRESSES`."""
    if history and history[-1].address == current:
        return tuple(history)
    moment = now or datetime.now(timezone.utc)
    kept = [record for record in history if record.path != current.path]
    kept.append(AddressRecord(current.url, current.path, moment))
    return tuple(kept[-MAX_ADDRESSES:])


def record(manifest: Manifest, current: Mapping[str, Address]) -> dict[str, tuple[AddressRecord, ...]]:
    """Record each article's `current` address in its manifest entry (in memory: the caller
    saves it); returns the history of every article in `current` whose page ever had another
    address (the others need no redirect, and a build reads nothing more of them)."""
    histories: dict[str, tuple[AddressRecord, ...]] = {}
    for article_id, address in current.items():
        entry = manifest.entries.get(article_id)
        if entry is None or entry.always_at(address):
            continue
        old = entry.records.addresses
        updated = remember(old, address)
        if updated != old:
            manifest.set_addresses(article_id, updated)
        histories[article_id] = updated
    return histories


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
            date = (
                _format_date(created.astimezone(timezone.utc), self.date_format, self.language)
                if "{date}" in self.url_format
                else ""
            )
            if date is None:
                return None
            stem = posixpath.splitext(posixpath.basename(src_uri))[0]
            try:  # the exported pages name no categories: `{categories}` is empty, as for such a post
                formatted = self.url_format.format(categories="", date=date, file=stem, slug=slug)
            except (KeyError, IndexError, ValueError):
                return None
            path = posixpath.normpath(posixpath.join(self.blog_dir, posixpath.normpath(formatted.strip("/")) + ".md"))
        return _page_address(path, self.use_directory_urls)


def post_urls(
    blogs: Iterable[Mapping[str, Any]], posts_dir: str, *, use_directory_urls: bool, language: str | None
) -> PostUrls:
    """The `PostUrls` of the blog that reads `posts_dir` among the site's blog plugin settings
    (`blog_dir`, `post_dir`, `post_url_format`, `post_url_date_format` of each), or of plain pages."""
    for blog in blogs:
        blog_dir = str(blog.get("blog_dir", "blog"))
        post_dir = posixpath.normpath(str(blog.get("post_dir", "{blog}/posts")).format(blog=blog_dir)).strip("/")
        if posts_dir == post_dir or posts_dir.startswith(post_dir + "/") or post_dir == ".":
            return PostUrls(
                blog_dir,
                str(blog.get("post_url_format", "{date}/{slug}")),
                str(blog.get("post_url_date_format", "yyyy/MM/dd")),
                use_directory_urls,
                language or "en",
            )
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
