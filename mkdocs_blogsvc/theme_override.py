"""The theme override that `mkdocs-blogsvc export --theme-dir DIR` writes, for generators that
run no plugins (Zensical), and what exported pages carry for it (`ExportHead`).

The plugin inserts JSON-LD, Open Graph, `article:` and keywords tags into each article page in
its `on_post_page` hook, which Zensical never runs. Exported pages carry the values of these
tags, the JSON-LD included (already serialised for a `<script>`), in a `blogsvc` front matter
mapping; Material's and Zensical's templates read `page.meta`, so a small override
(`blogsvc-head.html`, included in `{% block extrahead %}` of `main.html`) prints them into
`<head>`. Pages without that mapping, the plugin's own included, get nothing from it, so one
`custom_dir` serves both generators. Where the site's theme does not use the override
(`override_in_use`), the page ends with a copy of the JSON-LD instead (search engines read it
in the body too).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs_blogsvc.fileio import atomic_write

if TYPE_CHECKING:  # render is imported by the export, which renders pages anyway
    from mkdocs_blogsvc.models import Article
    from mkdocs_blogsvc.redirects import PostUrls
    from mkdocs_blogsvc.render import PagePaths

HEAD_PARTIAL = "blogsvc-head.html"
MAIN = "main.html"


@dataclass(frozen=True)
class OverrideResult:
    """What `write_theme_override` did, for the command's output."""

    written: list[Path]
    #: A main.html that was already there and does not include the partial: the user's to edit.
    main_to_edit: Path | None = None


def _template(name: str) -> bytes:
    return (resources.files("mkdocs_blogsvc") / "templates" / "theme" / name).read_bytes()


def write_theme_override(theme_dir: Path) -> OverrideResult:
    """Write `blogsvc-head.html` into `theme_dir` (ours: replaced when it differs) and
    `main.html` when there is none (the user's from then on: never changed once it exists)."""
    theme_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    partial, data = theme_dir / HEAD_PARTIAL, _template(HEAD_PARTIAL)
    if not partial.is_file() or partial.read_bytes() != data:
        atomic_write(partial, data)
        written.append(partial)
    main = theme_dir / MAIN
    if not main.exists():
        atomic_write(main, _template(MAIN))
        written.append(main)
        return OverrideResult(written)
    try:
        includes = HEAD_PARTIAL in main.read_text(encoding="utf-8", errors="replace")
    except OSError:
        includes = False
    return OverrideResult(written, None if includes else main)


def override_in_use(custom_dir: Path | None) -> bool:
    """Whether the theme prints the exported pages' head tags: `custom_dir` holds this version
    of `blogsvc-head.html` and a template of it includes it. An older partial (from an export
    of an earlier version) prints no JSON-LD, so it counts as not in use."""
    if custom_dir is None:
        return False
    try:
        if (custom_dir / HEAD_PARTIAL).read_bytes() != _template(HEAD_PARTIAL):
            return False
        return any(
            HEAD_PARTIAL in path.read_text(encoding="utf-8", errors="replace")
            for path in custom_dir.rglob("*.html")
            if path.name != HEAD_PARTIAL
        )
    except OSError:
        return False


@dataclass(frozen=True)
class ExportHead:
    """What an exported page carries so that it gets the plugin's head tags without the plugin.

    The page's address is computed from mkdocs.yml (`urls`, as the generator's blog places the
    post: `redirects.PostUrls`), so the JSON-LD names it (`url`, `mainEntityOfPage`) and the
    site's copies of its images, absolute with `site_url`, else relative to the page: the same
    data as the plugin's page (`jsonld.for_page`). Without `urls` the page's address is not
    known: the JSON-LD then names no page, and no image without `site_url`. `in_head`: the
    theme uses the override (`override_in_use`); otherwise the JSON-LD is also written at the end
    of the page body."""

    site_url: str | None
    language: str | None
    urls: PostUrls | None = None
    in_head: bool = False
    #: whether the site's Markdown has attr_list: images then carry their size (`render.image_attrs`).
    attr_list: bool = False

    def _page(self, article: Article, slug: str, paths: PagePaths) -> tuple[str | None, str | None]:
        """(the page's absolute URL or None, its site-relative path or None)."""
        address = self.urls.address(paths.src_uri, slug, article.published_at) if self.urls is not None else None
        if address is None:
            return None, None
        absolute = f"{self.site_url.rstrip('/')}/{address.url}" if self.site_url else None
        return absolute, address.path

    def _on_site(self, src: str, page_path: str | None) -> str | None:
        """The URL of the site's file `src` (absolute with `site_url`, else relative to the page)."""
        if self.site_url:
            return f"{self.site_url.rstrip('/')}/{src}"
        if page_path is None:
            return None
        return posixpath.relpath(src, posixpath.dirname(page_path) or ".")

    def image_url(self, article: Article, paths: PagePaths, page_path: str | None = None) -> str | None:
        """The cover's URL: the site's copy, or the remote one when it was not downloaded."""
        if not article.cover_image_url:
            return None
        local = paths.images.get(article.cover_image_url)
        return article.cover_image_url if local is None else self._on_site(local, page_path)

    @staticmethod
    def cover_size(article: Article, paths: PagePaths) -> tuple[int, int] | None:
        """The downloaded cover's intrinsic size (`og:image:width`, the JSON-LD's ImageObject)."""
        cover = article.cover_image_url
        return paths.sizes.get(cover) if cover is not None and cover in paths.images else None

    def site_images(self, paths: PagePaths, page_path: str | None = None) -> dict[str, str]:
        """Remote URL -> the URL of the site's copy (as `image_url`)."""
        found = {url: self._on_site(local, page_path) for url, local in paths.images.items()}
        return {url: local for url, local in found.items() if local is not None}

    def json_ld(self, article: Article, slug: str, paths: PagePaths) -> str:
        """The page's JSON-LD, serialised for a `<script>` element (no value can close it), keys
        sorted: an unchanged article gives an unchanged file."""
        from mkdocs_blogsvc.jsonld import for_page
        from mkdocs_blogsvc.render import script_json

        page_url, page_path = self._page(article, slug, paths)
        data = for_page(
            article,
            page_url=page_url,
            image_url=self.image_url(article, paths, page_path),
            language=self.language,
            images=self.site_images(paths, page_path),
            image_size=self.cover_size(article, paths),
        )
        return str(script_json(data, sort_keys=True))

    def front_matter(self, article: Article, slug: str, paths: PagePaths) -> dict[str, str]:
        """The `blogsvc` mapping the override reads: dates, the cover's URL, the JSON-LD."""
        from mkdocs_blogsvc.models import format_timestamp
        from mkdocs_blogsvc.render import neutral

        _, page_path = self._page(article, slug, paths)
        image_url = self.image_url(article, paths, page_path)
        size = self.cover_size(article, paths) if image_url else None
        values: Mapping[str, str | None] = {
            "published": format_timestamp(article.published_at),
            "modified": format_timestamp(article.updated_at),
            "image": neutral(image_url) if image_url else None,
            "image_width": str(size[0]) if size else None,
            "image_height": str(size[1]) if size else None,
            "json_ld": self.json_ld(article, slug, paths),
        }
        return {key: value for key, value in values.items() if value is not None}

    def finish(self, text: str, article: Article, slug: str, paths: PagePaths) -> str:
        """The rendered page, ending with the JSON-LD when the theme does not print it in `<head>`:
        a raw HTML block of its own (blank lines around it), which Python-Markdown passes through."""
        if self.in_head:
            return text
        return f'{text.rstrip()}\n\n<script type="application/ld+json">{self.json_ld(article, slug, paths)}</script>\n'
