"""Material's privacy plugin must not fetch the addresses an article names.

The privacy plugin downloads, at build time, every external image of every page and publishes
the copy on the site. An article is remote content: an `<img>` of it pointing at
`http://169.254.169.254/...` or an internal host would make the build machine fetch that
address and publish the answer (or an SVG with a script) on the site's own origin. So the
remote addresses of the article pages (recorded with each page when it is rendered:
`remote_urls`, kept in the page record by `pages`) are added to the privacy plugin's
`assets_exclude` before any page is built: those images stay remote, as without the privacy
plugin, and the build requests none of them. The images the plugin downloads itself (covers,
the service's inline images) are the site's own files already.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

#: What the privacy plugin takes for an external address (`//host/...`, `http(s)://host/...`),
#: as it can appear in a page's Markdown (an image, an `<img>`, or a link: links cost nothing).
_REMOTE = re.compile(r"""(?:https?:)?//[^\s"'<>()\[\]]+""", re.IGNORECASE)


def remote_urls(markdown: str) -> list[str]:
    """The external addresses in a page's Markdown, sorted, once each."""
    return sorted(set(_REMOTE.findall(markdown)))


def fetching_plugins(plugins: Iterable[Any]) -> list[Any]:
    """The enabled instances of Material's privacy plugin that download external assets."""
    return [plugin for plugin in plugins
            if type(plugin).__module__.startswith("material.plugins.privacy")
            and all(plugin.config.get(name, True) for name in ("enabled", "assets", "assets_fetch"))]


def exclude(plugins: Iterable[Any], urls: Iterable[str]) -> None:
    """Add each address to the `assets_exclude` patterns of each privacy plugin (as that plugin
    names the address, glob characters escaped)."""
    import glob  # only for sites with the privacy plugin

    for plugin in plugins:
        patterns: list[str] = plugin.config.assets_exclude
        known = set(patterns)
        for url in urls:
            pattern = glob.escape(_path_of(plugin, url))
            if pattern not in known:
                patterns.append(pattern)
                known.add(pattern)


def _path_of(plugin: Any, url: str) -> str:
    """The address as the privacy plugin matches it against `assets_exclude` (its own
    `_path_from_url` when it has one; else `host/path`, as Material 9 computes it)."""
    parts = urlparse(url if "://" in url else f"https:{url}")
    path_from_url = getattr(plugin, "_path_from_url", None)
    if callable(path_from_url):
        return str(path_from_url(parts))
    return f"{parts.netloc}{parts.path}"
