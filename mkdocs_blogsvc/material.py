"""How the plugin's pages meet the rest of the site: Material's blog plugin, the files
`mkdocs-blogsvc export` left in docs_dir, and pages that land on an article page's address.

Why a module of its own: these are decisions about other plugins and other people's files,
not about the blog, and each is testable on a `Files` collection without running a build.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mkdocs.structure.files import Files

from mkdocs_blogsvc.logs import log


def material_blogs(plugins: Iterable[Any]) -> list[Any]:
    """Material's blog plugin instances that are active (each builds its blog's index itself)."""
    return [
        plugin
        for plugin in plugins
        if type(plugin).__module__.startswith("material.plugins.blog") and plugin.config.get("enabled", True)
    ]


def post_dir(blog_plugin: Any) -> str:
    """The docs-relative folder a Material blog reads its posts from."""
    blog_dir = str(blog_plugin.config.blog_dir)
    return posixpath.normpath(str(blog_plugin.config.post_dir).format(blog=blog_dir)).strip("/")


def check_post_dir(blog_plugins: list[Any], posts_dir: str) -> None:
    """Warn unless one of the site's Material blogs reads posts from `posts_dir` (a site may
    have several blogs; a blog at the site's root reads `./posts`, the same as `posts`)."""
    post_dirs = [post_dir(plugin) for plugin in blog_plugins]
    if any(posts_dir == found or posts_dir.startswith(found + "/") or found == "." for found in post_dirs):
        return
    log.warning(
        f"posts_dir is {posts_dir!r} but Material's blog plugin reads posts from "
        f"{' or '.join(repr(found) for found in post_dirs)}: the articles will not be blog posts; "
        "set posts_dir (or the blog plugin's post_dir) to match"
    )


def has_own_index(docs_dir: Path, blog_dir: str, exported: set[str]) -> bool:
    """Whether docs_dir has the blog's index page of its own (not one `export --index` wrote)."""
    return any(
        (docs_dir / blog_dir / name).is_file() and f"{blog_dir}/{name}" not in exported
        for name in ("index.md", "README.md")
    )


def leave_out_exported(files: Files, exported: set[str]) -> None:
    """Leave out of the build the files `mkdocs-blogsvc export` wrote into docs_dir (`exported`,
    its record): the plugin adds the current ones itself. So one mkdocs.yml and one docs folder
    serve the plugin and generators that run none (Zensical), without a warning per file,
    without an article the blog deleted since the export. Nothing is deleted from docs_dir."""
    left_out = 0
    for src_uri in sorted(exported):
        file = files.get_file_from_path(src_uri)
        if file is not None:
            files.remove(file)
            left_out += 1
    if left_out:
        log.debug(f"{left_out} files of `mkdocs-blogsvc export` in docs_dir left out: the plugin adds its own")


def warn_about_shared_addresses(files: Files, article_pages: dict[str, str]) -> None:
    """Warn when a page of docs_dir is written where an article page is (Material's blog
    computes post URLs from slugs and dates, so a hand-written post with an article's slug
    lands on the same file): one would replace the other without a word. `article_pages` maps
    each article page's dest_uri to its src_uri; the URLs are final once Material's on_files ran."""
    for file in files:  # Material's posts are not "included" pages to `documentation_pages()`
        article = article_pages.get(file.dest_uri)
        if article is not None and article != file.src_uri and file.is_documentation_page():
            log.warning(
                f"{file.src_uri} of docs_dir and the article page {article} are both written to "
                f"{file.dest_uri}: one replaces the other; give one of them another slug"
            )
