"""Article HTML through an allowlist (nh3, the binding of Rust's ammonia): what the service sends
lands on the site owner's domain, so nothing in an article may run script there.

Two passes, because an article reaches HTML along two roads:

- `clean_markdown` neutralises the Markdown *source* when the page file is written. It is the
  only guarantee for what is rendered without our hooks: `mkdocs-blogsvc export` (Zensical runs
  no plugin) and Material's blog index, which converts each post's Markdown again for its
  excerpts. Raw HTML tags go one by one through nh3; link and image destinations, reference
  definitions, autolinks and `{: attr_list }` blocks are checked for their URL scheme and
  attributes. Fenced code blocks that every renderer reads as code are left as written.
- `clean_html` sanitises the *rendered* HTML of each article page (`on_page_content`). It is the
  safer pass: it sees what Markdown and the site's extensions produced, so tricks that become
  HTML only after rendering (`[x](javascript:...)`, reference links, autolinks, attr_list
  attributes) cannot slip through a gap between our reading of Markdown and the renderer's.

Both return the cleaned text and a `Removed` count (`<script>` elements, `onerror` attributes,
`javascript:` URLs...) that the plugin logs once per article.

Decisions where the issue left a choice:
- no `data:` URL at all, images included: every image the service means to show is listed in
  `inlineImageUrls` and downloaded, type-checked and size-limited by the plugin; a `data:` image
  would bypass those checks (and `data:` SVG documents are script carriers);
- `style` is removed everywhere except `text-align` (and `height`) on table cells, which is what
  Python-Markdown's tables extension writes for aligned columns, and exactly `height:auto` on
  images, which `imagemarkup` writes beside the sizes it adds (`filter_style_properties` keeps
  those two properties, `tag_attribute_values` that one value on `<img>`);
- HTML comments are removed, except in the Markdown pass those with no `<` or `>` inside, because
  `<!-- more -->` is Material's excerpt separator;
- element contents that a browser never shows as text (`script`, `style`, `iframe`, `noscript`...)
  are dropped with the element; other removed elements (`form`, `object`, unknown tags) keep
  their text.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable
from html.parser import HTMLParser

import nh3
from markdown.extensions.attr_list import get_attrs_and_remainder
from markdown.extensions.fenced_code import FencedBlockPreprocessor

from mkdocs_blogsvc.imagemarkup import HEIGHT_AUTO
from mkdocs_blogsvc.removals import Cleaned, Removed

# --- the allowlist -------------------------------------------------------------------------

#: Elements kept: nh3's defaults (tables, lists, headings, `details`, `img`, `a`, `sup`, `kbd`,
#: `figure`, `code`, `pre`...) plus what MkDocs' Markdown extensions write: task-list and
#: content-tab inputs with their labels, the inline SVG of Material's icons, and the
#: `<picture>` with WebP `<source>` of `optimize_images` (`imagemarkup`).
ALLOWED_TAGS: frozenset[str] = frozenset(
    nh3.ALLOWED_TAGS
    | {
        "details",
        "summary",
        "figure",
        "figcaption",
        "input",
        "label",
        "svg",
        "path",
        "g",
        "picture",
        "source",
    }
)

#: Elements dropped together with what they contain (browsers do not show it as text).
DROPPED_WITH_CONTENT: frozenset[str] = frozenset(
    {
        "script",
        "style",
        "iframe",
        "noscript",
        "noembed",
        "noframes",
        "template",
        "textarea",
        "title",
        "xmp",
        "object",
        "embed",
        "applet",
        "frameset",
        "math",
    }
)

_URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "cite",
        "action",
        "formaction",
        "poster",
        "background",
        "srcset",
        "data",
        "xlink:href",
        "longdesc",
        "usemap",
        "ping",
        "manifest",
        "codebase",
        "dynsrc",
        "lowsrc",
    }
)

ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class", "id", "title", "lang", "dir"},
    "a": {"href", "hreflang", "name"},
    "div": {"data-tabs"},  # pymdownx.tabbed's tab count
    "img": {"src", "alt", "width", "height", "loading", "decoding", "align"},
    "source": {"type", "srcset", "sizes", "width", "height"},
    "td": {"colspan", "rowspan", "align", "headers", "style"},
    "th": {"colspan", "rowspan", "align", "headers", "scope", "style"},
    "ol": {"start", "type", "reversed"},
    "li": {"value"},
    "col": {"span"},
    "colgroup": {"span"},
    "blockquote": {"cite"},
    "q": {"cite"},
    "del": {"cite", "datetime"},
    "ins": {"cite", "datetime"},
    "time": {"datetime"},
    "details": {"open"},
    "label": {"for"},
    "input": {"checked", "disabled", "name"},
    "svg": {"viewBox", "xmlns", "width", "height", "fill", "aria-hidden"},
    "path": {"d", "fill", "fill-rule", "clip-rule"},
    "g": {"fill"},
}
#: `type` of `<input>` is restricted to the two kinds Markdown extensions write; an image's
#: `style` to the one `imagemarkup` writes beside the sizes it adds (a theme with
#: `max-width: 100%` and no `height: auto` would squash the image otherwise).
_ATTRIBUTE_VALUES = {"input": {"type": {"checkbox", "radio"}}, "img": {"style": {HEIGHT_AUTO}}}
#: In the Markdown pass, md_in_html's switch is kept so `<details markdown>` still renders.
_MARKDOWN_ATTRIBUTES = {**ALLOWED_ATTRIBUTES, "*": ALLOWED_ATTRIBUTES["*"] | {"markdown"}}

#: URL schemes kept (nh3's list: http, https, mailto, tel, ftp...): no javascript:, vbscript:, data:.
URL_SCHEMES: frozenset[str] = frozenset(nh3.ALLOWED_URL_SCHEMES)

_CLEAN_OPTIONS = {
    "tags": set(ALLOWED_TAGS),
    "clean_content_tags": set(DROPPED_WITH_CONTENT),
    "tag_attribute_values": _ATTRIBUTE_VALUES,
    "url_schemes": set(URL_SCHEMES),
    "filter_style_properties": {"text-align", "height"},  # `height` for an image's `height:auto` only
    "link_rel": None,
}

#: What mkdocs-glightbox writes on the link it wraps around each image (its `on_page_content`
#: runs before the HTML pass), kept in the HTML pass only and only with values that do nothing
#: but size, place and caption the lightbox: `data-type` "image" (not "external", an iframe, or
#: "inline", a piece of the page), the caption's side, the light or dark gallery of
#: `auto_themed`, a CSS length as width or height, and a title (`auto_caption`: the image's alt
#: text) without `<` or `&`, because GLightbox shows the title as HTML. `data-description`
#: (HTML too, or a selector) stays removed.
_GLIGHTBOX_VALUES = {
    "data-type": {"image"},
    "data-desc-position": {"bottom", "top", "left", "right"},
    "data-gallery": {"light", "dark"},
}
_GLIGHTBOX_SIZES = frozenset({"data-width", "data-height"})
_CSS_LENGTH = re.compile(r"auto|\d{1,5}(\.\d{1,3})?(px|%|em|rem|vw|vh)?")


#: Material's `content.tooltips` turns every `title` of the page's content into a tooltip whose
#: HTML is the title (it sets the tooltip's innerHTML): `<abbr title="&lt;img src=x onerror=...&gt;">`
#: ran script when a reader pointed at it. A title holding `<` is removed; in the Markdown
#: (Material's blog index renders it again) every `<` that could open a tag inside a title a
#: renderer makes from text (a link's, an abbreviation's) is followed by an invisible WORD JOINER,
#: which the HTML pass, with no such title left, removes again.
_WORD_JOINER = "\u2060"
#: `<` as a character reference (Python-Markdown keeps only those that end with `;`), or as a
#: bare `<` that the Markdown pass writes back (`_clean_prose`): not already followed by a joiner.
_LT_REFERENCE = re.compile(r"&(?:lt|#0*60|#x0*3c);(?!\u2060)", re.IGNORECASE)
#: A bare `<` of the article that the Markdown pass writes as a reference: with two joiners, so
#: that the HTML pass tells it from a `&lt;` the article wrote. Where Markdown shows its text as
#: written (an indented code block, a math block of arithmatex) the reference reads `&amp;lt;`,
#: and the article's `if (a<b)` or `$$a<b$$` showed `a&lt;b`: the HTML pass makes it `&lt;` again.
_ESCAPED_LT = "&lt;" + _WORD_JOINER * 2
#: That `<` in the HTML where Markdown escaped its `&`, also when a highlighter split it into
#: tokens (`<span class="o">&amp;</span><span class="n">lt</span>...`): the HTML pass shows it as
#: `&lt;` again, keeping the highlighter's tags around it.
_SHOWN_ESCAPED_LT = re.compile(
    "&amp;(?P<a>(?:<[^<>]*>)*)lt(?P<b>(?:<[^<>]*>)*);(?P<c>(?:<[^<>]*>)*)\u2060(?P<d>(?:<[^<>]*>)*)\u2060"
)


#: Classes of the theme's page that its script reads the element's text from as HTML: Material
#: gives an `.md-ellipsis` that is cut short a tooltip whose HTML is its text as shown
#: (`innerText`), so an article's `<pre class="md-ellipsis">&lt;img src=x onerror=...&gt;...`
#: ran script when a reader pointed at it. Removed from every element (raw HTML, attr_list).
THEME_CLASSES: frozenset[str] = frozenset({"md-ellipsis"})
#: ... and, where the article itself writes it (the Markdown pass: raw HTML, attr_list),
#: `mermaid`: for every `pre.mermaid` Material (and Zensical) loads mermaid's script from
#: unpkg.com onto the site and renders the element's text with it, so an article made a site
#: that never chose mermaid run a third-party script. The HTML pass keeps it: there it is the
#: site's own superfences `mermaid` fence that wrote it, the owner's choice. Likewise for
#: Zensical's script (exported pages): it loads GLightbox from unpkg.com for every `.glightbox`,
#: and ace (Pyodide's editor) for every `.pyodide`; the HTML pass keeps
#: them for mkdocs-glightbox's links and markdown-exec's blocks.
ARTICLE_CLASSES: frozenset[str] = THEME_CLASSES | {"mermaid", "glightbox", "pyodide"}


def _without_classes(value: str, refused: frozenset[str]) -> str | None:
    names = value.split()
    if not refused.intersection(names):
        return value
    kept = [name for name in names if name not in refused]
    return " ".join(kept) if kept else None


def _join_lt_references(text: str) -> str:
    return _LT_REFERENCE.sub(lambda found: found.group(0) + _WORD_JOINER, text)


def _safe_srcset(value: str) -> str | None:
    """A `srcset` whose every candidate URL is relative or has an allowed scheme (nh3 checks
    `src` and `href` only), else None."""
    for candidate in value.split(","):
        url = candidate.strip().split(" ", 1)[0]
        scheme = url_scheme(url)
        if scheme is not None and scheme not in URL_SCHEMES:
            return None
    return value


def _html_attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "srcset":
        return _safe_srcset(value)
    if attribute == "title":
        return None if "<" in value else value
    if attribute == "class":
        return _without_classes(value, THEME_CLASSES)
    if attribute == "id":
        return None if _THEME_ID.match(value) else value
    if attribute in _GLIGHTBOX_SIZES:
        return value if _CSS_LENGTH.fullmatch(value) else None
    if attribute == "data-title":
        return None if "<" in value or "&" in value else value
    return value


_HTML_CLEANER = nh3.Cleaner(
    attributes={**ALLOWED_ATTRIBUTES, "a": ALLOWED_ATTRIBUTES["a"] | _GLIGHTBOX_SIZES | {"data-title"}},
    attribute_filter=_html_attribute_filter,
    **{**_CLEAN_OPTIONS, "tag_attribute_values": {**_ATTRIBUTE_VALUES, "a": _GLIGHTBOX_VALUES}},  # type: ignore[arg-type]  # nh3's stubs are narrower
)

#: Characters that Python-Markdown's inline patterns act on *before* they set raw HTML aside
#: (code spans, backslash escapes, links, attr_list): in an attribute value of a tag we write
#: back into Markdown they could split the tag again, so such values are dropped.
_MARKDOWN_ACTIVE = re.compile(r"[`\\\[\]{}]")


def _markdown_attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if (attribute == "id" and not _allowed_id(value)) or (attribute == "title" and "<" in value):
        return None
    if attribute == "srcset" and _safe_srcset(value) is None:
        return None
    kept = _without_classes(value, ARTICLE_CLASSES) if attribute == "class" else value
    return None if kept is None or _MARKDOWN_ACTIVE.search(kept) else kept


_TAG_CLEANER = nh3.Cleaner(
    attributes=_MARKDOWN_ATTRIBUTES,
    attribute_filter=_markdown_attribute_filter,
    **_CLEAN_OPTIONS,  # type: ignore[arg-type]  # nh3's stubs are narrower
)


class _Inventory(HTMLParser):
    """Start tags and their attributes, as a browser-like tokenizer sees them (for counting)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: Counter[str] = Counter()
        #: (element, attribute, URL scheme or "")
        self.attributes: Counter[tuple[str, str, str]] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements[tag] += 1
        for name, value in attrs:
            scheme = url_scheme(value or "") if name in _URL_ATTRIBUTES else None
            self.attributes[(tag, name, scheme or "")] += 1

    handle_startendtag = handle_starttag


def _inventory(text: str) -> _Inventory:
    parser = _Inventory()
    parser.feed(text)
    parser.close()
    return parser


def count_removed(before: str, after: str) -> Removed:
    """What is in `before` and not in `after` (elements by name, attributes by name, URLs by
    scheme): a difference of what the sanitiser actually did, not a second opinion."""
    old, new = _inventory(before), _inventory(after)
    removed = Removed()
    for name, number in (old.elements - new.elements).items():
        removed.add("element", name, number)
    for (tag, name, scheme), number in (old.attributes - new.attributes).items():
        if not new.elements[tag]:
            continue  # gone with its element, already counted
        if scheme:
            removed.add("url", scheme, number)
        else:
            removed.add("attribute", name, number)
    return removed


def url_scheme(url: str) -> str | None:
    """The scheme a browser would see (entities decoded, whitespace, control characters and
    backslashes dropped, lowercased), or None for a relative URL."""
    plain = re.sub(r"[\x00-\x20\x7f\\]+", "", html.unescape(url)).lower()
    match = re.match(r"([a-z][a-z0-9+.-]*):", plain)
    return match.group(1) if match else None


def _allowed_url(url: str) -> bool:
    scheme = url_scheme(url)
    return scheme is None or scheme in URL_SCHEMES


def _acts_as_a_tag(inner: str) -> bool:
    """Whether `<inner>` (an autolink, an e-mail autolink, a link destination in angle
    brackets), read by a browser as a tag, does something: it is an element that acts without
    attributes (`[x](<script>`, `[r]: <style>`), or it gives the tag an attribute that can act,
    a value for a name that may be an attribute's (`<https://x/onmouseover=alert(1)>`) or a
    quoted value that runs on past the `>`. Markdown passes a raw HTML block (and an unfinished
    link) as written, so such text can reach the page as that tag; it then goes through the
    allowlist, or is escaped, like any other tag. `<https://example.com/search?q=1>` and
    `<my file.md>` do nothing (`search?q` is no attribute's name, `my` no active element)."""
    name = _BROWSER_TAG_NAME.match(inner)
    if name is None or name.group(0).lower() in _ACTIVE_ELEMENTS:
        return name is not None
    position = name.end()
    while (found := _BROWSER_ATTRIBUTE.match(inner, position)) is not None:
        if found.group("open") or (
            found.group("value") is not None and _ATTRIBUTE_NAME.fullmatch(found.group("name").lower())
        ):
            return True
        position = found.end()
    return False


# --- the HTML pass ----------------------------------------------------------------------------


def clean_html(text: str) -> Cleaned:
    """The article page's rendered HTML through the allowlist."""
    cleaned = _HTML_CLEANER.clean(_SHOWN_ESCAPED_LT.sub(r"&lt;\g<a>\g<b>\g<c>\g<d>", text))
    # No title here holds `<` any more: the joiners the Markdown pass put after `<` can go,
    # wherever the Markdown put them (an indented code block shows `&lt;` as `&amp;lt;`), and
    # copying a code sample from the page copies no invisible character.
    cleaned = cleaned.replace(_WORD_JOINER, "")
    return Cleaned(cleaned, count_removed(text, cleaned) if cleaned != text else Removed())


# --- the Markdown pass --------------------------------------------------------------------

#: Python-Markdown's fenced_code (which MkDocs always loads) takes these out before anything
#: else; same expression, and `_trusted_fences` keeps those every renderer reads as code.
_FENCE: re.Pattern[str] = FencedBlockPreprocessor.FENCED_BLOCK_RE
#: A line that some renderer may read as a fence's start or end: pymdownx.superfences opens
#: fences indented (in a list, in a quote) and closes them with tabs after the backticks, and
#: Python-Markdown expands tabs before it looks for fences. A fence is trusted to be code (and
#: left as written) only when no such line comes before it outside a trusted fence, nor inside it.
_FENCE_LIKE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,})", re.MULTILINE)
_INDENTED_LINE = re.compile(r"^[ \t>]", re.MULTILINE)
#: A line that may open or close a fence, for `_escape_possible_code`: its marker.
_FENCE_LINE = re.compile(r"[ \t>]*(`{3,}|~{3,})(.*)")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>")
_AUTOMAIL = re.compile(r"<[^<>\s@!]+@[^<>\s@]+>")
#: Bounded lengths keep scanning linear on hostile input: a tag or comment too long to match
#: has its `<` escaped instead, which is safe.
_COMMENT = re.compile(r"<!--(.{0,4000}?)-->", re.DOTALL)
_TAG = re.compile(
    r"<(?P<close>/)?(?P<name>[A-Za-z][A-Za-z0-9-]{0,63})"
    r"(?:\s{1,200}[^\s\"'<>/=]{1,200}(?:\s*=\s*(?:\"[^\"]{0,4000}\"|'[^']{0,4000}'|[^\s\"'=<>`]{1,4000}))?){0,100}"
    r"\s{0,200}/?>"
)
_SCAN = re.compile(r"[`<]")
#: In a code span's text, what would act if a renderer did not read it as code: a tag, a
#: brace that could open or close an attr list with the text after the span, or a `<` that
#: ends it (what follows the span follows the `<` where its tags are stripped: see `_TAG_START`).
_CODE_MATERIAL = re.compile(r"<[A-Za-z/!?]|[{}]|<$")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
#: What may follow a `<` that a browser reads as a tag: a letter, `/`, `!`, `?`; a character
#: reference, which a title made from the text decodes into one (`<&#105;mg`); or markup whose
#: tags are stripped again where the text is shown, leaving its text right after the `<`: the
#: table of contents shows a heading's text without its tags, and Material's `content.tooltips`
#: shows a TOC entry cut short as HTML (`## <<b></b>img ...>`, `<*img ...*>`, `` <`img ...`> ``,
#: `<[img ...](#)>`). So anything but a space, a digit or `-` (no markup starts with one:
#: `a <- b` and snippets' `--8<--` stay as written).
_TAG_START = re.compile(r"[^\s\d-]")
_ANGLE_DESTINATION = re.compile(r"<([^<>\n]*)>")
#: An attribute as a browser's tokenizer reads it after a tag's name (WHATWG HTML, "before
#: attribute name state" on): separators, a name, and maybe a value; `open` is a quote that the
#: `>` does not close (the value runs on into the text after it).
_BROWSER_ATTRIBUTE = re.compile(
    r"[\t\n\f\r /]*(?P<name>[^\t\n\f\r />][^\t\n\f\r /=>]*)[\t\n\f\r ]*"
    r"(?:=[\t\n\f\r ]*(?P<value>\"[^\"]*\"|'[^']*'|(?P<open>[\"'])|[^\t\n\f\r >]*))?"
)
_BROWSER_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
#: A name that may be an attribute's (`onmouseover`, `style`, `data-x`); `search?q` is none.
_ATTRIBUTE_NAME = re.compile(r"[a-z][a-z0-9_.:-]*")
#: Elements that act with no attribute at all: they run or style their text, swallow the rest
#: of the page as text, switch the parser to SVG or MathML, or change how the page loads.
_ACTIVE_ELEMENTS: frozenset[str] = DROPPED_WITH_CONTENT | {
    "plaintext",
    "listing",
    "svg",
    "base",
    "meta",
    "link",
    "select",
}
_BEFORE_DESTINATION = re.compile(r"(?:\]\(\s*|\]:[ \t]*\n?[ \t>]*)$")
#: Inline destinations, and reference definitions wherever Python-Markdown reads one: at a
#: line's start after any indentation and block-quote markers (in a quote, in a list item).
#: Two patterns, each applied on its own: the "destination" of what looks like a definition
#: (`[^1]: [a](...)`, a footnote; `[[x]: [a](...)`, no definition at all) may be a link.
#: An inline destination may go on over line breaks (`[x](java` / `script:...)`): Markdown keeps
#: them in the URL (after a list's or a quote's indentation and markers) and browsers drop them.
#: It stops at a `]` (no scheme has one), so it never takes in the `](` of the next link.
_LINK_DESTINATIONS = (
    re.compile(r"(?P<lead>\]\(\s*)(?P<url>[^\s<>()\]]+(?:\n[ \t>]*[^\s<>()\]]+)*)"),
    re.compile(r"(?P<lead>^[ \t>]*\[[^\]\n]+\]:[ \t]*\n?[ \t>]*)(?P<url>[^\s<>()]+)", re.MULTILINE),
)
_ATTR_LIST = re.compile(r"\{:?[ ]*([^\}\n ][^\}\n]*)[ ]*\}")
#: attr_list as Python-Markdown reads it (`AttrListTreeprocessor.BASE_RE`): to the last `}`
#: of the line, so `{: title="}" onclick=... }` is one list there.
_GREEDY_ATTR_LIST = re.compile(r"\{\:?[ ]*([^\}\n ][^\n]*)[ ]*\}")
#: An id that can be printed anywhere unquoted or unescaped (a theme's table of contents
#: prints `#` + id raw into `href`): letters, digits, `-`, `_`, `.`, `:`.
_SAFE_ID = re.compile(r"[\w.:-]+")
#: Ids of the theme's own page, which an article's element takes over by coming first: Material's
#: and Zensical's script read their settings as JSON from `#__config`, and an article's
#: `<p id="__config">` holding JSON had the search results show its HTML (script ran on the
#: site). Every id starting with `__` is the theme's, except those the site's Markdown extensions
#: write into the article itself (pymdownx.highlight's line anchors and spans, pymdownx.tabbed's tabs).
_THEME_ID = re.compile(r"__(?!(?:codelineno|span)-\d+-\d+$|tabbed_\d+_\d+$)")


def _allowed_id(value: str) -> bool:
    return _SAFE_ID.fullmatch(value) is not None and _THEME_ID.match(value) is None


_HEADING_LINE = re.compile(r"[ ]{0,3}#")
_NEXT_BLOCK = re.compile(
    r"\n(?=[ ]{0,3}(?:#|>|[-*+][ \t]|\d{1,9}[.)][ \t]|(?:-{2,}|={2,})[ \t]*$|`{3}|~{3}))", re.MULTILINE
)
_ATTR_LIST_KEYS = frozenset({"id", "class", "title", "lang", "dir", "width", "height", "alt", "align", "loading"})
#: Table parts are ignored by an HTML parser outside their table: give them one to clean in.
_CONTEXT = {
    "tr": "<table><tbody>",
    "td": "<table><tbody><tr>",
    "th": "<table><tbody><tr>",
    "tbody": "<table>",
    "thead": "<table>",
    "tfoot": "<table>",
    "caption": "<table>",
    "colgroup": "<table>",
    "col": "<table><colgroup>",
    "path": "<svg>",
    "g": "<svg>",
}
_ROUNDS = 4


def clean_markdown(text: str) -> Cleaned:
    """Article Markdown with its raw HTML through the allowlist and its links checked.

    Repeated until nothing changes (at most a few rounds), so that removing one construct can
    never join its neighbours into a new one (`<img src=x <b>onerror=...`); if it still changes
    after that, every `<` outside fenced code is escaped.
    """
    removed = Removed()
    # As Python-Markdown does first: line ends, and STX/ETX (its placeholders' markers) removed.
    current = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x02", "").replace("\x03", "")
    for _ in range(_ROUNDS):
        cleaned, found = _clean_markdown_once(current)
        if cleaned == current:
            return Cleaned(cleaned, removed)
        removed.update(found)
        current = cleaned
    return Cleaned(
        _outside_fences(current, lambda prose: _join_lt_references(prose.replace("<", _ESCAPED_LT))), removed
    )


def _trusted_fences(text: str) -> list[re.Match[str]]:
    """The fenced code blocks that every renderer reads as code, in order. Not trusted, and
    cleaned as prose (a code sample there loses what the allowlist removes), are a fence whose
    start or end another renderer may read elsewhere (see `_FENCE_LIKE`), one in the same
    paragraph as an indented or quoted line (superfences gives a fence that an indented code
    block takes in back to Markdown), and every fence after them."""
    trusted, position = [], 0
    for fence in _FENCE.finditer(text):
        before = text[position : fence.start()]
        if (
            _FENCE_LIKE.search(before)
            or _FENCE_LIKE.search(fence.group("code"))
            or _INDENTED_LINE.search(_BLANK_LINE.split(before)[-1])
        ):
            break
        trusted.append(fence)
        position = fence.end()
    return trusted


def _outside_fences(text: str, change: Callable[[str], str]) -> str:
    out, position = [], 0
    for fence in _trusted_fences(text):
        out.append(change(text[position : fence.start()]))
        out.append(fence.group(0))
        position = fence.end()
    out.append(change(text[position:]))
    return "".join(out)


def _clean_markdown_once(text: str) -> tuple[str, Removed]:
    removed = Removed()
    out, position = [], 0
    for fence in _trusted_fences(text):
        out.append(_clean_prose(text[position : fence.start()], removed))
        block = fence.group(0)
        if fence.group("attrs") is not None:  # ```{ .lang #id key=value }: attr_list rules
            start, end = fence.span("attrs")
            attrs = _clean_attr_lists("{" + fence.group("attrs") + "}", removed)
            attrs = attrs[1:-1] if attrs.startswith("{") else ""
            block = text[fence.start() : start] + attrs + text[end : fence.end()]
        out.append(block)
        position = fence.end()
    out.append(_clean_prose(_escape_possible_code(text[position:]), removed))
    return "".join(out), removed


def _escape_possible_code(text: str) -> str:
    """`text` with each `<` escaped on the lines between a fence-like line and the next one that
    could close it: the part of an article from a fence the Markdown pass cannot trust on (an
    indented fence in a list, a tab, an admonition: `_trusted_fences`) is cleaned as prose, where
    a code sample's `#include <vector>` or `List<String>` would lose the tag the allowlist
    removes. Escaped, it is shown as written whether a renderer reads these lines as code (the
    HTML pass turns the escape back into `<`) or as prose; which is why no precision is needed
    here. Line by line: linear on any input."""
    lines = text.split("\n")
    fence: str | None = None  # the marker of the fence-like block these lines are in
    for number, line in enumerate(lines):
        found = _FENCE_LINE.match(line)
        marker, rest = found.groups() if found else ("", "")
        if fence is None:
            fence = marker or None
        elif marker[:1] == fence[0] and len(marker) >= len(fence) and not rest.strip():
            fence = None
        else:
            lines[number] = line.replace("<", _ESCAPED_LT)
    return "\n".join(lines)


def _clean_prose(text: str, removed: Removed) -> str:
    """Markdown outside fenced code: code spans, autolinks, comments, tags, plain text."""
    out: list[str] = []
    plain: list[str] = []  # text between code spans, checked for links and attr lists as one piece

    def flush() -> None:
        if plain:
            out.append(_clean_attr_lists(_clean_links(_join_lt_references("".join(plain)), removed), removed))
            plain.clear()

    position, length = 0, len(text)
    while position < length:
        found = _SCAN.search(text, position)
        if found is None:
            plain.append(text[position:])
            break
        start = found.start()
        plain.append(text[position:start])
        if text[start] == "`":
            token, position = _code_span(text, start)
            if token is None:
                plain.append(text[start:position])
            else:
                flush()
                out.append(token)
            continue
        # `<`: a link destination in angle brackets, an autolink, a comment, a tag, or text
        before = "".join(plain[-3:])
        destination = _ANGLE_DESTINATION.match(text, start)
        if destination and _BEFORE_DESTINATION.search(before) and not _acts_as_a_tag(destination.group(1)):
            if _allowed_url(destination.group(1)):
                plain.append(destination.group(0))
            else:
                removed.add("url", url_scheme(destination.group(1)) or "")
                plain.append("<#>")
            position = destination.end()
            continue
        autolink = _AUTOLINK.match(text, start)
        if autolink and not _acts_as_a_tag(autolink.group(1)):
            if _allowed_url(autolink.group(1)):
                plain.append(autolink.group(0))
            else:
                removed.add("url", url_scheme(autolink.group(1)) or "")
            position = autolink.end()
            continue
        automail = _AUTOMAIL.match(text, start)
        if automail and not _acts_as_a_tag(automail.group(0)[1:-1]):
            plain.append(automail.group(0))
            position = automail.end()
            continue
        # Tags and comments stay in `plain`: Python-Markdown reads an attr list across them
        # (raw HTML is a placeholder inside the same text), so it is checked across them too.
        comment = _COMMENT.match(text, start)
        if comment:
            if "<" not in comment.group(1) and ">" not in comment.group(1):
                plain.append(comment.group(0))  # `<!-- more -->`: Material's excerpt separator
            position = comment.end()
            continue
        tag = _TAG.match(text, start)
        if tag:
            plain.append(_clean_tag(tag, removed))
            position = tag.end()
            name = tag.group("name").lower()
            if not tag.group("close") and name in DROPPED_WITH_CONTENT:
                end = re.compile(rf"</{name}\s*>", re.IGNORECASE).search(text, position)
                position = end.end() if end else length
            continue
        if text[start + 1 : start + 2] and _TAG_START.match(text, start + 1):
            plain.append(_ESCAPED_LT)  # something a browser could read as a tag, that we cannot check
        else:
            plain.append("<")
        position = start + 1
    flush()
    return "".join(out)


def _code_span(text: str, start: int) -> tuple[str | None, int]:
    """(the code span at `start` as it should be written, its end), or (None, end of the
    backtick run) when the run opens no code span. A code span holding something that would act
    if it were not code (a tag, a brace of an attr list, a link to a refused scheme) is
    rewritten as `<code>` with its text escaped: shown the same, and harmless even where a
    renderer does not read a code span there (a raw HTML block; an indented code block, a
    setext heading, a rule, an admonition or a footnote that ends the paragraph inside it)."""
    run_end = start
    while run_end < len(text) and text[run_end] == "`":
        run_end += 1
    if start > 0 and text[start - 1] == "\\":
        return None, run_end
    ticks = text[start:run_end]
    # A code span ends with its paragraph: at a blank line, at a line that starts another block,
    # and at the end of a heading's line (reading it as longer than Python-Markdown does would
    # leave a link after it unchecked).
    ends = [len(text), run_end + 20_000]
    if blank := _BLANK_LINE.search(text, run_end):
        ends.append(blank.start())
    if block := _NEXT_BLOCK.search(text, run_end):
        ends.append(block.start())
    line_start = text.rfind("\n", 0, start) + 1
    if _HEADING_LINE.match(text, line_start) and (line_end := text.find("\n", run_end)) >= 0:
        ends.append(line_end)
    paragraph_end = min(ends)
    closing = re.compile(rf"(?<!`){ticks}(?!`)").search(text, run_end, paragraph_end)
    if closing is None:
        return None, run_end
    span = text[start : closing.end()]
    body = text[run_end : closing.start()]
    if not _CODE_MATERIAL.search(body.strip()) and _clean_links(body, Removed()) == body:
        return span, closing.end()
    escaped = html.escape(body.strip(), quote=False)
    # As entities, not backslash escapes: inert for Markdown, shown the same in a raw HTML block.
    escaped = re.sub(r"[\\`*_\[\](){}]", lambda c: f"&#{ord(c.group(0))};", escaped)
    return f"<code>{escaped}</code>", closing.end()


def _clean_tag(tag: re.Match[str], removed: Removed) -> str:
    """One tag as nh3 writes it back, or nothing; what went is added to `removed`."""
    name = tag.group("name").lower()
    if tag.group("close"):
        return f"</{name}>" if name in ALLOWED_TAGS else ""
    if name not in ALLOWED_TAGS:
        removed.add("element", name)
        return ""
    context = _CONTEXT.get(name, "")
    cleaned = _TAG_CLEANER.clean(context + tag.group(0))
    found = re.search(rf"<{name}\b[^>]*>", cleaned)
    if found is None:
        removed.add("element", name)
        return ""
    removed.update(count_removed(tag.group(0), found.group(0)))
    return found.group(0)


def _clean_links(text: str, removed: Removed) -> str:
    """Inline link and image destinations and reference definitions with a scheme outside the
    allowlist become `#`."""

    def check(match: re.Match[str]) -> str:
        url = re.sub(r"\n[ \t>]*", "", match.group("url"))  # the URL a browser gets: no line breaks
        if _allowed_url(url):
            return match.group(0)
        removed.add("url", url_scheme(url) or "")
        return f"{match.group('lead')}#"

    for destination in _LINK_DESTINATIONS:
        text = destination.sub(check, text)
    return text


def _clean_attr_lists(text: str, removed: Removed) -> str:
    """`{: #id .class key=value }` (attr_list) may set ids, classes and a few plain attributes:
    no `on*` handler, `style` or URL can be set on an element that way. A brace group that would
    set anything else has its `{` written as an entity: shown the same, read as text, so nothing
    is ever deleted (most braces in prose, `{1, 2, 3}` or `{{ page.title }}`, are no attr list at
    all). Bare words set nothing harmful (`{hidden}` is an empty attribute) and stay."""

    def allowed(key: str, value: str) -> bool:
        if key == "id":
            return _allowed_id(value)
        if (key == "title" and "<" in html.unescape(value)) or (key == "." and value in ARTICLE_CLASSES):
            return False
        return key == "." or (key in _ATTR_LIST_KEYS and not _MARKDOWN_ACTIVE.search(value))

    def neutralise(match: re.Match[str]) -> str:
        attrs, _rest = get_attrs_and_remainder(match.group(1))
        bad = [key for key, value in attrs if value is not None and not allowed(key, value)]
        if not bad:
            return match.group(0)
        for key in bad:
            removed.add("attribute", key)
        return "&#123;" + match.group(0)[1:]

    # Python-Markdown reads a list to the line's last `}` (`{: title="}" onclick=... }` is one
    # list there); the short pattern finds the lists of a line holding several.
    return _GREEDY_ATTR_LIST.sub(neutralise, _ATTR_LIST.sub(neutralise, text))
