"""Links between articles: a link to another article of the blog on the service becomes a link
to that article's page on the site, so readers stay on the site.

Addresses of an article on the service that are recognised (`HostedBlog.reference`), with
`{base_url}` the plugin's `base_url` (scheme and host compared case-insensitively):

    {base_url}/blogs/{blog_slug}/{article_slug}      the hosted blog's article page (by slug)
    /blogs/{blog_slug}/{article_slug}                the same, root-relative (as on the hosted blog)
    {base_url}/api/v1/articles/{id_or_slug}          the data API's article (by id or by slug)

each with an optional trailing slash, query (dropped) and fragment (kept). `{blog_slug}` must be
the connected blog's: links to other blogs of the service are left alone.

A recognised link is rewritten to the relative path of the target's Markdown page
(`../other-slug.md`), so MkDocs (and Material's blog plugin, whose post URLs are computed before
Markdown is rendered) turn it into the target's final URL, whatever `post_url_format` or
`use_directory_urls` say; `mkdocs-blogsvc export` gets the same links. A link to an article the
site does not have (a draft, an unpublished or deleted one, an unknown slug) stays as it is and
is reported, so the plugin can say so.

Where: inline links and images `[text](url "title")`, `[text](<url>)`, reference definitions
`[label]: url`, and autolinks `<url>` (which become `[the target's title](path)`). Not inside
code (fenced blocks, indented blocks, code spans), and not in raw HTML (`<a href>`), which MkDocs
leaves unresolved.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from mkdocs_blogsvc.models import Listed

#: The hosted blog's article path below the service's root: `/blogs/<blog>/<article>`.
_HOSTED_PATH = re.compile(r"/blogs/(?P<blog>[^/?#]+)/(?P<article>[^/?#]+)/?")
#: The data API's article path: `/api/v1/articles/<idOrSlug>`.
_API_PATH = re.compile(r"/api/v1/articles/(?P<article>[^/?#]+)/?")


@dataclass(frozen=True)
class Reference:
    """A recognised link: the article's id or slug (`key`) and the fragment to keep (`#...` or "")."""

    key: str
    fragment: str
    by_id_or_slug: bool  # True for the API form (an id or a slug), False for the hosted page (a slug)


@dataclass(frozen=True)
class HostedBlog:
    """Where the connected blog lives on the service."""

    base_url: str  # the plugin's base_url, without a trailing slash
    blog_slug: str | None  # None when not known yet: then only the API form is recognised

    def reference(self, url: str) -> Reference | None:
        """The article `url` points at on the service, or None when it is not such a link."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        base = urlsplit(self.base_url)
        prefix = base.path.rstrip("/")
        if parts.scheme or parts.netloc:
            if parts.scheme.lower() != base.scheme.lower() or parts.netloc.lower() != base.netloc.lower():
                return None
        elif not parts.path.startswith("/"):
            return None  # a relative link: a page of the site, not the service
        if not parts.path.startswith(prefix + "/"):
            return None
        rest = parts.path[len(prefix) :]
        fragment = f"#{parts.fragment}" if parts.fragment else ""
        hosted = _HOSTED_PATH.fullmatch(rest)
        if hosted is not None:
            if self.blog_slug is None or unquote(hosted["blog"]) != self.blog_slug:
                return None
            return Reference(unquote(hosted["article"]), fragment, False)
        api = _API_PATH.fullmatch(rest)
        if api is not None and (parts.scheme or parts.netloc):
            return Reference(unquote(api["article"]), fragment, True)
        return None


@dataclass(frozen=True)
class Target:
    article: Listed
    src_uri: str  # the docs-relative path of its page (`blog/posts/slug.md`)


class Targets:
    """The articles a link can point at: by id and by the service's slug. Two articles sharing
    a slug (the service may allow it): the slug names the older, the one the site gives the
    plain slug to (see `slugs.assign_slugs`)."""

    def __init__(self, pages: Iterable[tuple[Listed, str]]) -> None:
        #: consumed once, by the first look-up (a generator costs nothing until then)
        self._pages: Iterable[tuple[Listed, str]] | None = pages
        self._by_id: dict[str, Target] | None = None
        self._by_slug: dict[str, Target] = {}

    def resolve(self, references: Iterable[tuple[str, bool]]) -> list[tuple[str, bool, str | None]]:
        """Each (key, by_id_or_slug) with the page it names now (None: not on the site): the part
        of a page's inputs that other articles decide (see `pages`)."""
        return [
            (key, by_id, target.src_uri if (target := self.find(Reference(key, "", by_id))) else None)
            for key, by_id in references
        ]

    def find(self, reference: Reference) -> Target | None:
        by_id = self._index()
        if reference.by_id_or_slug and reference.key in by_id:
            return by_id[reference.key]
        return self._by_slug.get(reference.key)

    def _index(self) -> dict[str, Target]:
        """Built on the first look-up: a build whose pages hold no links never sorts the blog."""
        if self._by_id is None:
            self._by_id = {}
            pages, self._pages = self._pages or (), None
            for article, src_uri in sorted(pages, key=lambda item: (item[0].published_at, item[0].id)):
                target = Target(article, src_uri)
                self._by_id[article.id] = target
                self._by_slug.setdefault(article.slug, target)
        return self._by_id


@dataclass
class Rewritten:
    text: str
    #: links to the service's articles that the site does not have, left as they were.
    unresolved: list[str] = field(default_factory=list)
    #: how many links were rewritten.
    count: int = 0
    #: every recognised link's (key, by_id_or_slug), resolved or not: what the page depends on.
    references: list[tuple[str, bool]] = field(default_factory=list)


# --- Markdown scanning ----------------------------------------------------------------------

#: Fenced code blocks (``` or ~~~, closed by a fence at least as long, or the end of the text).
_FENCE = re.compile(
    r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}(?P=fence)[`~]*[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)
#: Indented code blocks: lines indented by 4 spaces or a tab after a blank line.
_INDENTED = re.compile(r"(?:(?<=\n\n)|\A)(?:(?: {4}|\t)[^\n]*(?:\n|\Z))+")
#: Code spans: a run of backticks, text, the same run.
_SPAN = re.compile(r"(?P<ticks>`+)(?:(?!(?P=ticks)).)+?(?P=ticks)", re.DOTALL)

#: Link destinations: after `](` (optionally in `<...>`), after `]:` of a reference definition,
#: and autolinks `<scheme://...>`. Group `url` is what may be replaced.
_LINKS = re.compile(
    r"(?P<inline>\]\([ \t]*(?P<open><)?)(?P<url>(?(open)[^>\n]+|[^\s)]+))"
    r"|(?P<refdef>^[ ]{0,3}\[[^\]\n]+\]:[ \t]*(?P<ropen><)?)(?P<rurl>(?(ropen)[^>\n]+|\S+))"
    r"|<(?P<auto>https?://[^\s<>]+)>",
    re.MULTILINE | re.IGNORECASE,
)


def _protected(text: str) -> list[tuple[int, int]]:
    """Spans of `text` that are code (never rewritten), sorted."""
    spans: list[tuple[int, int]] = []
    for pattern in (_FENCE, _INDENTED):
        spans += [match.span() for match in pattern.finditer(text)]

    def inside(position: int) -> bool:
        return any(start <= position < end for start, end in spans)

    spans += [match.span() for match in _SPAN.finditer(text) if not inside(match.start())]
    return sorted(spans)


def rewrite(
    markdown: str,
    *,
    here: str,
    blog: HostedBlog,
    targets: Targets,
    link_text: Callable[[Listed], str],
) -> Rewritten:
    """`markdown` (the body of the page at docs-relative `here`) with every link to an article
    of `blog` that `targets` has replaced by the relative path of that article's page.
    `link_text` gives the Markdown text of an autolink made a link (the target's title, escaped)."""
    protected = _protected(markdown)
    result = Rewritten(markdown)
    folder = posixpath.dirname(here)

    def in_code(position: int) -> bool:
        return any(start <= position < end for start, end in protected)

    def local(url: str) -> tuple[str, Target] | None:
        reference = blog.reference(url)
        if reference is None:
            return None
        result.references.append((reference.key, reference.by_id_or_slug))
        target = targets.find(reference)
        if target is None:
            result.unresolved.append(url)
            return None
        result.count += 1
        path = quote(posixpath.relpath(target.src_uri, folder or "."), safe="/-._~")
        return path + reference.fragment, target

    def replace(match: re.Match[str]) -> str:
        if in_code(match.start()):
            return match.group(0)
        if match["auto"] is not None:
            found = local(match["auto"])
            if found is None:
                return match.group(0)
            path, target = found
            return f"[{link_text(target.article)}]({path})"
        name = "url" if match["inline"] is not None else "rurl"
        found = local(match[name].strip())
        if found is None:
            return match.group(0)
        start, end = match.span(name)
        offset = match.start()
        return match.group(0)[: start - offset] + found[0] + match.group(0)[end - offset :]

    result.text = _LINKS.sub(replace, markdown)
    return result
