"""Article -> page Markdown, index Markdown and head HTML, through Jinja2 templates; slug safety.

Pure functions of their inputs (no files written, no network): `pages.render_pages` decides
what reaches the disk. Three rules keep bad data from the service harmless:

- slugs become file names, so anything but `[a-z0-9-]{1,100}` is replaced (see `safe_slug`);
- front matter is produced by `yaml.safe_dump` from real values (datetimes stay datetimes);
  text that themes print unescaped (`title`, `description`, tags) has `<`, `>` and `"` turned
  into entities, because MkDocs' themes render `page.title` with autoescape off (and more, see
  `neutral`: Material's tooltips take a title as shown for HTML); a remote
  cover's URL (`image`) is percent-encoded (`md_url`): mkdocs-rss-plugin prints it unescaped;
- the head template autoescapes, and JSON-LD is serialised so no value can close `<script>`.

A template that cannot be loaded or rendered (a custom one with a typo, under StrictUndefined)
raises `BadTemplate`, naming the file, the line and Jinja2's message: the plugin and the CLI
show it as one line, never a traceback.
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import jinja2
import markdown
import yaml
from markupsafe import Markup

from mkdocs_blogsvc import __version__, jsonld
from mkdocs_blogsvc.errors import BadTemplate
from mkdocs_blogsvc.links import HostedBlog, Targets
from mkdocs_blogsvc.links import rewrite as rewrite_links
from mkdocs_blogsvc.logs import log
from mkdocs_blogsvc.models import Article, format_timestamp

if TYPE_CHECKING:  # imported when a page is rendered: a build with nothing changed renders none
    from mkdocs_blogsvc.removals import Removed
    from mkdocs_blogsvc.theme_override import ExportHead

# --- escaping -----------------------------------------------------------------------------


#: A character reference as browsers read one (named ones decode even without their `;`).
_REFERENCE = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);?")
#: A `<` that a browser would read as a tag's start, were the text shown taken as HTML again.
_TAG_OPENING = re.compile(r"<(?=[A-Za-z/!?])")


def neutral(text: str) -> str:
    """Text safe to print unescaped in HTML text or a double-quoted attribute, and shown as
    written, once more safe when a script takes what is shown as HTML.

    That last one is Material's `content.tooltips`: a title cut short by the header, the
    navigation or the footer gets a tooltip whose HTML is the title *as shown* (`innerText`),
    so a title `&lt;img src=x onerror=...&gt;` or `<img src=x onerror=...>` ran script when a
    reader pointed at it. A `<` that could open a tag is followed by an invisible WORD JOINER
    (U+2060), and a character reference the service wrote (`&lt;`) has its `&` escaped, so
    that it shows as written rather than as the `<` it stands for. Other ampersands are left
    alone on purpose: a bare one is harmless and escaping it would show up as `&amp;` in feeds
    that escape again.
    """
    text = _REFERENCE.sub(
        lambda found: (
            "&amp;" + found.group(0)[1:] if html.unescape(found.group(0)) != found.group(0) else found.group(0)
        ),
        text,
    )
    text = _TAG_OPENING.sub("&lt;\u2060", text)
    return text.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}#!|])")


def md_text(text: str | None) -> str:
    """Text shown literally inside Markdown (a heading, link text, alt text): no HTML, no markup.
    Quotes stay as they are: Markdown puts text in attributes escaped, and an entity (`&#x27;`)
    would show as itself wherever a theme or a feed escapes the text again (None: "")."""
    one_line = " ".join((text or "").split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def md_url(url: str | None) -> str:
    """A URL usable inside `(...)` of a Markdown link or image (None: "")."""
    return quote(url or "", safe=":/?#@!$&'*+,;=%~[]-._")


def script_json(value: Any, *, sort_keys: bool = False) -> Markup:
    """JSON for a `<script>` element: `<`, `>`, `&`, U+2028 and U+2029 become `\\uXXXX`
    escapes (valid JSON, identical value), so no string inside can end the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return Markup(text)


# --- templates ----------------------------------------------------------------------------


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mkdocs_blogsvc", "templates"),
        autoescape=autoescape,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md_text"] = md_text
    env.filters["md_url"] = md_url
    return env


#: Exceptions a template can raise while rendering: Jinja2's own, and Python's from expressions
#: such as `{{ article.tags + 1 }}` (a user's template is code we run, its errors are its own).
_RENDER_ERRORS = (jinja2.TemplateError, ArithmeticError, AttributeError, LookupError, TypeError, ValueError)


class _Template:
    """A template, how to name it in a message, and its source (for `fingerprint`). A built-in
    template is compiled when first rendered (a build with nothing changed renders none); a
    user's is compiled when loaded, so its errors stop the build at once."""

    def __init__(
        self, template: jinja2.Template | Callable[[], jinja2.Template], label: str, filename: str, source: str
    ) -> None:
        self._template = template
        self.label = label  # "page_template /site/page.md.j2" or "the built-in template page.md.j2"
        self.filename = filename
        self.source = source

    @property
    def template(self) -> jinja2.Template:
        if not isinstance(self._template, jinja2.Template):
            self._template = self._template()
        return self._template

    def render(self, what: str, **context: Any) -> str:
        try:
            return self.template.render(**context)
        except _RENDER_ERRORS as exc:
            raise BadTemplate(f"{self.label} cannot be rendered ({what}): {_describe(exc, self.filename)}") from None


def _describe(exc: Exception, filename: str) -> str:
    """`line N: message` (the line of the template file where it failed, when known)."""
    message = exc.message if isinstance(exc, jinja2.TemplateError) and exc.message else str(exc)
    if not isinstance(exc, jinja2.TemplateError):
        message = f"{type(exc).__name__}: {message}"
    line = exc.lineno if isinstance(exc, jinja2.TemplateSyntaxError) else None
    frame = exc.__traceback__
    while frame is not None:  # Jinja2 rewrites the traceback: template frames carry template lines
        if frame.tb_frame.f_code.co_filename == filename:
            line = frame.tb_lineno
        frame = frame.tb_next
    return f"line {line}: {message}" if line else message


@dataclass(frozen=True)
class ArticleLinks:
    """Links between articles (see `links`): where the blog is hosted, and its pages.
    `found` keeps, by article id, the links each rendered page holds (for its page record), and
    `unresolved` the links to no published article (logged; `export` prints them)."""

    blog: HostedBlog
    targets: Targets
    found: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    unresolved: dict[str, list[str]] = field(default_factory=dict)

    def rewrite(self, article: Article, body: str, src_uri: str) -> str:
        done = rewrite_links(
            body, here=src_uri, blog=self.blog, targets=self.targets, link_text=lambda target: md_text(target.title)
        )
        self.found[article.id] = sorted(set(done.references))
        self.unresolved[article.id] = list(dict.fromkeys(done.unresolved))
        for url in self.unresolved[article.id]:
            log.info(
                "article %s links to %s, which is not a published article of the blog: the link is left as it is",
                article.id,
                url,
            )
        return done.text


@dataclass(frozen=True, slots=True)
class PagePaths:
    """Where one article lives in the site (docs-relative POSIX paths)."""

    src_uri: str
    #: remote URL -> docs-relative path of the local copy, for images downloaded.
    images: Mapping[str, str]
    #: remote URL -> (width, height) of the local copy, for exported pages (`ExportHead.attr_list`).
    sizes: Mapping[str, tuple[int, int]] = field(default_factory=dict)


class Renderer:
    """The three templates of the plugin, built-in or replaced through settings.

    `fingerprint` names everything a page's Markdown depends on besides the article, its slug
    and its paths: the plugin's version, this module's code, the versions of Jinja2 and PyYAML,
    and the page and index templates. `pages.render_pages` records it with each page and
    renders again only when it (or the article) changed. An option that changes what `page` or
    `index` produce must be added to it; one that changes `head`, to `head_fingerprint`.
    """

    def __init__(
        self,
        page_template: Path | None = None,
        head_template: Path | None = None,
        *,
        sanitise: bool = True,
        optimize_images: bool = False,
        image_budget: float = 30.0,
    ) -> None:
        markdown_env, html_env = _environment(False), _environment(True)
        #: article bodies pass `sanitize.clean_markdown` (off with `trust_article_html: true`).
        self.sanitise = sanitise
        #: WebP variants of the images (`imagesizes.prepare`), made within `image_budget` seconds.
        self.optimize_images = optimize_images
        self.image_budget = image_budget
        #: article id -> what the last `page` call removed from its body (pages are rendered
        #: again only when their inputs change, so this names the articles rendered this time).
        self.removed: dict[str, Removed] = {}
        self.page_template = _load(markdown_env, page_template, "page.md.j2", "page_template")
        self.index_template = _load(markdown_env, None, "index.md.j2", "index")
        self.head_template = _load(html_env, head_template, "head.html.j2", "head_template")
        # the sanitiser shapes the page too: its switch, its code and what it builds on
        sanitiser = (_SANITIZE_SOURCE.read_text(encoding="utf-8"), importlib.metadata.version("nh3"))
        self.fingerprint = _fingerprint(
            self.page_template.source,
            self.index_template.source,
            f"sanitise={sanitise}",
            *sanitiser,
            markdown.__version__,
            Path(__file__).read_text(encoding="utf-8"),  # this code writes the pages
            _SUMMARY_SOURCE.read_text(encoding="utf-8"),  # the description of an article without one
            _MODELS_SOURCE.read_text(encoding="utf-8"),  # what an article keeps of the service's fields
            # what a page's record keeps for Material's privacy plugin (`privacy.remote_hosts`):
            # a cache written by a version that read fewer addresses, or none, is read again
            _PRIVACY_SOURCE.read_text(encoding="utf-8"),
        )
        #: what an article page's head tags and its sanitised HTML depend on besides their
        #: inputs (see `outputs`): the head template, the JSON-LD code and this code, the sanitiser.
        self.head_fingerprint = _fingerprint(
            self.head_template.source,
            Path(jsonld.__file__).read_text(encoding="utf-8"),
            Path(__file__).read_text(encoding="utf-8"),
            _SUMMARY_SOURCE.read_text(encoding="utf-8"),
            _MODELS_SOURCE.read_text(encoding="utf-8"),
        )
        self.html_fingerprint = _fingerprint(*sanitiser)

    def page(
        self,
        article: Article,
        slug: str,
        paths: PagePaths,
        *,
        export: ExportHead | None = None,
        links: ArticleLinks | None = None,
    ) -> str:
        """The Markdown page of `article`: YAML front matter, heading, cover image, body.

        With `export` (pages for generators that run no plugins, see
        `theme_override.ExportHead`), the front matter also carries the head tags' values in a
        `blogsvc` mapping, and the page may end with a copy of the JSON-LD. With `links`, links to
        other articles on the service point at their pages on the site."""
        here = posixpath.dirname(paths.src_uri)

        def local(url: str) -> str | None:
            target = paths.images.get(url)
            return posixpath.relpath(target, here) if target else None

        cover, cover_attrs, sized = None, "", export is not None and export.attr_list
        if article.cover_image_url:
            cover = local(article.cover_image_url) or md_url(article.cover_image_url)
            if sized and (size := paths.sizes.get(article.cover_image_url)):
                cover_attrs = image_attrs(size, lazy=False)
        body = article.content
        for url in sorted(article.inline_image_urls, key=len, reverse=True):
            relative = local(url)
            if relative:
                body = body.replace(url, relative)
        if links is not None:
            body = links.rewrite(article, body, paths.src_uri)
        if self.sanitise:  # last: no replacement above can change what it checked (a URL ending in "`")
            from mkdocs_blogsvc.sanitize import clean_markdown  # only when a page is rendered

            cleaned = clean_markdown(body)
            body = cleaned.text
            self.removed[article.id] = cleaned.removed
        if sized:  # after the sanitiser, which escapes an article's own `{`; the plugin's pages get
            # these from `imagemarkup`, after MkDocs rewrote the links
            body = _size_inline_images(body, article, paths, local, first_is_lazy=cover is not None)
        heading, body = _split_heading(body)
        extra = export.front_matter(article, slug, paths) if export is not None else None
        text = self.page_template.render(
            f"article {article.id}",
            article=article,
            slug=slug,
            front_matter=front_matter(article, slug, paths, extra),
            heading=heading or f"# {md_text(article.title)}",
            cover=cover,
            cover_alt=md_text(article.title),
            cover_attrs=cover_attrs,
            body=body.strip("\n"),
        )
        text = escape_snippets(text)
        return text if export is None else export.finish(text, article, slug, paths)

    def index(self, title: str, items: Sequence[tuple[Article, str]], src_uri: str) -> str:
        """The blog index (used without Material's blog plugin): newest first."""
        here = posixpath.dirname(src_uri)
        rows = [
            {
                "article": article,
                "title": md_text(article.title),
                "link": posixpath.relpath(page_src, here),
                "date": article.published_at.strftime("%Y-%m-%d"),
                "description": md_text(description(article) or ""),
            }
            for article, page_src in sorted(items, key=lambda item: (item[0].published_at, item[0].id), reverse=True)
        ]
        meta = dump_yaml({"title": neutral(title), **NO_TEMPLATES})  # titles are the service's text
        return escape_snippets(
            self.index_template.render("the blog index", title=md_text(title), front_matter=meta, items=rows)
        )

    def head(
        self,
        article: Article,
        *,
        page_url: str | None,
        image_url: str | None,
        language: str | None,
        images: Mapping[str, str] | None = None,
        image_size: tuple[int, int] | None = None,
    ) -> str:
        """The HTML inserted before `</head>` of the article's page. `images`: remote URL -> the
        site's URL of each image downloaded, so the JSON-LD names the site's copies
        (`jsonld.localise`); `image_url` is the cover's URL on the site when it was downloaded,
        `image_size` its intrinsic width and height when known (`og:image:width`, ImageObject)."""
        data = jsonld.for_page(
            article, page_url=page_url, image_url=image_url, language=language, images=images, image_size=image_size
        )
        return self.head_template.render(
            f"article {article.id}",
            article=article,
            # keys sorted, as in the exported pages: the cached article's JSON is stored sorted,
            # the service's answer is not, and the same article must give the same bytes
            json_ld=script_json(data, sort_keys=True),
            title=article.title,
            description=description(article),
            image=image_url,
            image_size=image_size,
            url=page_url,
            published=format_timestamp(article.published_at),
            modified=format_timestamp(article.updated_at),
            tags=article.tags,
            keywords=", ".join(article.seo_keywords),
        )


def _load(env: jinja2.Environment, override: Path | None, name: str, setting: str) -> _Template:
    """The built-in template `name`, or the file `override` compiled under its own path (so
    that errors, at load and at render time, carry its file name and line numbers)."""
    if override is None:
        assert env.loader is not None
        source, filename, _ = env.loader.get_source(env, name)
        return _Template(lambda: env.get_template(name), f"the built-in template {name}", filename or name, source)
    filename = str(override)
    label = f"{setting} {filename}"
    try:
        source = override.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadTemplate(f"{label} cannot be read ({reason})") from None
    try:
        code = env.compile(source, name=override.name, filename=filename)
    except jinja2.TemplateError as exc:
        raise BadTemplate(f"{label} cannot be loaded: {_describe(exc, filename)}") from None
    return _Template(env.template_class.from_code(env, code, env.make_globals(None)), label, filename, source)


#: The sanitiser's code, part of the fingerprints (read as a file: a build that renders no page
#: never imports it).
_SANITIZE_SOURCE = Path(__file__).with_name("sanitize.py")
#: How a page's external hosts are read for its record (see `fingerprint`).
_PRIVACY_SOURCE = Path(__file__).with_name("privacy.py")
#: How an article without a description gets one (see `description`).
_SUMMARY_SOURCE = Path(__file__).with_name("summary.py")
#: How an article is read from the service's JSON (an image URL that is not http(s) is left out):
#: pages and head tags made by a version that kept more are made again.
_MODELS_SOURCE = Path(__file__).with_name("models.py")


#: A line pymdownx.snippets would read as an include (`--8<-- "file"`, or a block of file names
#: between two `--8<--` lines), however many `;` escapes it already has.
_SNIPPET_MARKER = re.compile(r"^([ \t]*)(?=;*-+8<-+)", re.MULTILINE)


def escape_snippets(text: str) -> str:
    """Every snippets marker of a page with one more `;`, the extension's own escape: a site
    that enables pymdownx.snippets shows the line as written instead of including a local file
    (`--8<-- ".blogsvc/credentials.json"` would publish the tokens). Whatever the sanitiser's
    setting: it reads files, it is not HTML. Without the extension the `;` shows."""
    return _SNIPPET_MARKER.sub(r"\1;", text)


def _fingerprint(*sources: str) -> str:
    """See `Renderer`: what pages depend on besides their article (a SHA-256, hex)."""
    digest = hashlib.sha256()
    for part in (
        __version__,
        Path(__file__).read_text(encoding="utf-8"),
        jinja2.__version__,
        yaml.__version__,
        *sources,
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def image_attrs(size: tuple[int, int], *, lazy: bool) -> str:
    """attr_list's `{ ... }` after a Markdown image: its size, and lazy loading (exported pages)."""
    extra = ' loading="lazy" decoding="async"' if lazy else ""
    return f'{{ width="{size[0]}" height="{size[1]}"{extra} }}'


def _size_inline_images(
    body: str, article: Article, paths: PagePaths, local: Callable[[str], str | None], *, first_is_lazy: bool
) -> str:
    """Each Markdown image `](<local copy>)` of the body followed by its attr_list size."""
    lazy = first_is_lazy
    for url in article.inline_image_urls:
        relative, size = local(url), paths.sizes.get(url)
        if not relative or not size:
            continue
        marker = f"]({relative})"
        if marker in body:
            body = body.replace(marker, marker + image_attrs(size, lazy=lazy))
            lazy = True
    return body


def _split_heading(body: str) -> tuple[str | None, str]:
    """(first line if the body starts with a level-1 heading, the rest)."""
    stripped = body.lstrip("\n")
    first, _, rest = stripped.partition("\n")
    if first.startswith("# "):
        return first.rstrip(), rest
    return None, body


def front_matter(article: Article, slug: str, paths: PagePaths, blogsvc: dict[str, str] | None = None) -> str:
    """YAML for Material's blog (`date`, `slug`), tags (`tags`), rss (`image`, dates) and
    MkDocs (`title`, `description`); `blogsvc` for exported pages. Datetimes are dumped as YAML timestamps, never as text."""
    meta: dict[str, Any] = {"title": neutral(article.title)}
    if text := description(article):
        # only ever printed into `<meta name="description">` (never shown, so never a tooltip):
        # no WORD JOINER, which would be read as part of the text there
        meta["description"] = neutral(text).replace("\u2060", "")
    meta["date"] = {"created": _utc(article.published_at), "updated": _utc(article.updated_at)}
    meta["slug"] = slug
    if article.tags:
        meta["tags"] = [neutral(tag) for tag in article.tags]
    if article.seo_keywords:
        meta["keywords"] = [neutral(keyword) for keyword in article.seo_keywords]
    if article.cover_image_url:  # feeds print it unescaped (mkdocs-rss-plugin's enclosure url="...")
        meta["image"] = paths.images.get(article.cover_image_url) or md_url(article.cover_image_url)
    if blogsvc is not None:  # exported pages only: read by the theme override (theme_override.py)
        meta["blogsvc"] = blogsvc
    meta.update(NO_TEMPLATES)
    return dump_yaml(meta)


#: Front matter that keeps template plugins away from pages made of the service's text:
#: mkdocs-macros-plugin renders every page's Markdown (and its title) as Jinja2 without a
#: sandbox, so `{{ cycler.__init__.__globals__.os.environ }}` in an article would run in the
#: build and publish its secrets. `render_macros: false` wins over every setting of macros
#: (`render_by_default`, `force_render_paths`).
NO_TEMPLATES: dict[str, Any] = {"render_macros": False}


#: libyaml's emitter when PyYAML has it (five times faster: front matter is most of the cost
#: of a build with nothing to sync), else the pure-Python one. Both are safe dumpers.
_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data: dict[str, Any]) -> str:
    """Block-style YAML, keys in the given order, Unicode kept, long lines never folded."""
    return str(
        yaml.dump(data, Dumper=_YAML_DUMPER, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    )


def description(article: Article) -> str | None:
    """The article's description, else a summary of its text (`summary.summarise`): for the
    meta description, `og:description`, feeds and the blog index."""
    if article.description:
        return article.description
    from mkdocs_blogsvc.summary import summarise  # only when a page is rendered

    return summarise(article.content)


def _utc(moment: datetime) -> datetime:
    return moment.replace(microsecond=(moment.microsecond // 1000) * 1000)
