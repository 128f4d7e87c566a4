"""Material's privacy plugin must not fetch the addresses an article names.

The privacy plugin downloads, at build time, every external image of every page and publishes
the copy on the site. An article is remote content: an `<img>` of it pointing at
`http://169.254.169.254/...` or an internal host would make the build machine fetch that
address and publish the answer (or an SVG with a script) on the site's own origin. So the
external hosts the article pages name (recorded with each page when it is rendered:
`remote_hosts`, kept in the page record by `pages`; this file is part of the renderer's
fingerprint, so a change here records them again) are added to the privacy plugin's
`assets_exclude`, every address on them, before any page is built: those images stay remote,
as without the privacy plugin, and the build requests none of them. The images the plugin
downloads itself (covers, the service's inline images) are the site's own files already.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

#: Where an external address starts and its host ends, as `urlsplit` cuts it (the host ends at
#: `/`, `?` or `#`): `//host`, `http(s)://host`.
_REMOTE_HOST = re.compile(r"""(?:https?:)?//([^/?#\s"'<>]+)""", re.IGNORECASE)
#: Characters `urlsplit` deletes anywhere in an address (so `127.0.&#10;0.1` is `127.0.0.1`).
_URL_UNSAFE = str.maketrans("", "", "\t\r\n")
#: Markdown's backslash escapes (`127\.0.0.1` is written `127.0.0.1` in the HTML).
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def remote_hosts(markdown: str) -> list[str]:
    """The external hosts a page's Markdown names, as `//host` addresses, sorted, once each.

    Hosts, not whole addresses: the privacy plugin sees the address in the HTML that Markdown,
    the site's extensions and the sanitiser make of the page (entities decoded, `&amp;` in a
    query, parentheses, spaces or quotes in a path, backslash escapes), and no reading of the
    Markdown names every such address exactly as it will. The host is found in each of those
    spellings, so every address under it is excluded (`exclude`)."""
    unescaped = _MD_ESCAPE.sub(r"\1", markdown)
    spellings = {markdown, unescaped, html.unescape(markdown), html.unescape(unescaped)}
    spellings |= {text.translate(_URL_UNSAFE) for text in spellings}
    return sorted({f"//{host}" for text in spellings for host in _REMOTE_HOST.findall(text)})


def fetching_plugins(plugins: Iterable[Any]) -> list[Any]:
    """The enabled instances of Material's privacy plugin that download external assets."""
    return [
        plugin
        for plugin in plugins
        if type(plugin).__module__.startswith("material.plugins.privacy")
        and all(plugin.config.get(name, True) for name in ("enabled", "assets", "assets_fetch"))
    ]


def exclude(plugins: Iterable[Any], hosts: Iterable[str]) -> None:
    """Add every address on each host (`//host`, from `remote_hosts`) to the `assets_exclude`
    patterns of each privacy plugin (as the plugin names an address: `host/path`, glob
    characters escaped)."""
    import glob  # only for sites with the privacy plugin

    for plugin in plugins:
        patterns: list[str] = plugin.config.assets_exclude
        known = set(patterns)
        for address in hosts:
            host = glob.escape(address.removeprefix("//"))
            # every address on the host: `host/...` (and a `host` alone, as `_path_from_url` names none)
            for pattern in (host, f"{host}/*"):
                if pattern not in known:
                    patterns.append(pattern)
                    known.add(pattern)
