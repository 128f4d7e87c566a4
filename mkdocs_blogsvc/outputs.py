"""What the plugin derives from an article page in MkDocs' page hooks, kept in the cache by
the hash of its inputs: the page's sanitised HTML (`on_page_content`) and its head tags
(`on_post_page`). A build with nothing changed computes neither: it finds each by its key.

The key of an output is a SHA-256 of everything it depends on (`key`): for the HTML, the HTML
MkDocs and the site's extensions made of the page, and the sanitiser's code; for the head tags,
the article file's hash, the page's URL, the site's URLs of its images, the blog's language,
and the head template. An article's outputs are one file, `outputs/<sha256(id)[:24]>.json`
(`Cache.output_name`), read once per build when its page is built and written back after its
last page hook when an output changed; the article's manifest entry names it
(`Entry.outputs`), so it is deleted with the article. Writes are atomic but not flushed to disk:
a file lost or unreadable is computed again, never trusted in part.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from mkdocs_blogsvc.cache import Cache, Manifest
from mkdocs_blogsvc.fileio import atomic_write, compact_json, sha256
from mkdocs_blogsvc.logs import log

#: The kinds of output.
HTML = "html"
HEAD = "head"


def key(*inputs: Any, text: str = "") -> str:
    """The hash of an output's inputs: JSON values, and a long `text` hashed as it is (a page's
    HTML: not worth escaping into JSON first; JSON never holds a raw NUL, the separator)."""
    return sha256(compact_json(inputs) + "\0" + text)


class PageOutputs:
    """The outputs of one build's article pages; the caller holds the cache's lock from the
    first `get` to the last `flush`."""

    def __init__(self, cache: Cache, manifest: Manifest) -> None:
        self.cache = cache
        self.manifest = manifest
        #: article id -> its outputs as read or changed this build, until flushed.
        self._held: dict[str, dict[str, Any]] = {}
        self._changed: set[str] = set()
        self._folder_made = False

    def get(self, article_id: str, kind: str, inputs: str) -> dict[str, Any] | None:
        """The output of `kind` for this key (`inputs`), or None when it must be computed."""
        found = self._outputs(article_id).get(kind)
        if isinstance(found, dict) and found.get("key") == inputs and isinstance(found.get("text"), str):
            return found
        return None

    def put(self, article_id: str, kind: str, inputs: str, data: dict[str, Any]) -> None:
        """Keep `data` (with its `text`) as the output of `kind` for this key (written by `flush`)."""
        self._outputs(article_id)[kind] = {**data, "key": inputs}
        self._changed.add(article_id)

    def flush(self, article_id: str | None = None) -> None:
        """Write the changed outputs of one article (after its last page hook), or of all, and
        forget them. An unwritable cache only means they are computed again next time."""
        for found in [article_id] if article_id is not None else list(self._held):
            outputs = self._held.pop(found, None)
            if found in self._changed and outputs is not None:
                self._changed.discard(found)
                self._write(found, outputs)

    def _outputs(self, article_id: str) -> dict[str, Any]:
        held = self._held.get(article_id)
        if held is None:
            held = self._held[article_id] = self._read(article_id)
        return held

    def _read(self, article_id: str) -> dict[str, Any]:
        entry = self.manifest.entries.get(article_id)
        path = self.cache.locate(entry.outputs) if entry is not None and entry.outputs else None
        if path is None:
            return {}
        try:
            with open(path, "rb") as file:
                data = json.loads(file.read())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, article_id: str, outputs: dict[str, Any]) -> None:
        entry = self.manifest.entries.get(article_id)
        if entry is None:
            return
        name = self.cache.output_name(article_id)
        try:
            if not self._folder_made:
                os.makedirs(self.cache.root / os.path.dirname(name), exist_ok=True)
                self._folder_made = True
            atomic_write(self.cache.root / name, compact_json(outputs).encode("utf-8"), durable=False)
        except OSError as exc:
            log.debug("outputs of article %s not kept in the cache (%s)", article_id, exc)
            return
        if entry.outputs != name:
            self.manifest.entries[article_id] = replace(entry, outputs=name)
            self.manifest.refreshed = True
