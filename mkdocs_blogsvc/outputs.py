"""What the plugin derives from an article page in MkDocs' page hooks, kept in the cache by
the hash of its inputs: the page's sanitised HTML (`on_page_content`) and its head tags
(`on_post_page`). A build with nothing changed computes neither: it finds each by its key.

The key of an output is a SHA-256 of everything it depends on (`key`): for the HTML, the
HTML MkDocs and the site's extensions made of the page, and the sanitiser's code; for the head
tags, the article file's hash, the page's URL, the site's URLs of its images, the blog's
language, and the head template. Each output is a file `outputs/<key>.json` (`Cache.output_name`)
holding the text and what the caller keeps with it; the article's manifest entry names its
current file per kind (`Entry.outputs`), so outputs are deleted with their article, and those
a build replaced are deleted once the manifest no longer names them (`PageOutputs.finish`).
Writes are atomic but not flushed to disk: a file lost or unreadable is computed again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from mkdocs_blogsvc.cache import Cache, Manifest
from mkdocs_blogsvc.fileio import atomic_write, sha256
from mkdocs_blogsvc.logs import log

#: The kinds of output (keys of `Entry.outputs`).
HTML = "html"
HEAD = "head"


def key(*inputs: Any) -> str:
    """The hash of an output's inputs (JSON values)."""
    return sha256(json.dumps(inputs, ensure_ascii=False, separators=(",", ":")))


class PageOutputs:
    """The outputs of one build's article pages; the caller holds the cache's lock from the
    first `get` to `finish`."""

    def __init__(self, cache: Cache, manifest: Manifest) -> None:
        self.cache = cache
        self.manifest = manifest
        #: the files of outputs this build replaced (deleted by `finish`).
        self._replaced: set[str] = set()
        self._folder_made = False

    def get(self, article_id: str, kind: str, inputs: str) -> dict[str, Any] | None:
        """The output of `kind` for this key (`inputs`), or None when it must be computed."""
        entry = self.manifest.entries.get(article_id)
        name = self.cache.output_name(inputs)
        if entry is None or entry.outputs.get(kind) != name:
            return None
        path = self.cache.locate(name)
        try:
            with open(path or "", "rb") as file:
                data = json.loads(file.read())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("text"), str) else None

    def put(self, article_id: str, kind: str, inputs: str, data: dict[str, Any]) -> None:
        """Keep `data` (with its `text`) as the output of `kind` for this key. An unwritable
        cache only means it is computed again next time."""
        entry = self.manifest.entries.get(article_id)
        if entry is None:
            return
        name = self.cache.output_name(inputs)
        path = self.cache.resolve(name)
        assert path is not None
        try:
            if not self._folder_made:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._folder_made = True
            atomic_write(path, json.dumps(data, ensure_ascii=False).encode("utf-8"), durable=False)
        except OSError as exc:
            log.debug("output %s of article %s not kept in the cache (%s)", kind, article_id, exc)
            return
        old = entry.outputs.get(kind)
        if old is not None and old != name:
            self._replaced.add(old)
        self.manifest.entries[article_id] = replace(entry, outputs={**entry.outputs, kind: name})
        self.manifest.refreshed = True

    def finish(self) -> None:
        """Delete the outputs this build replaced, once the manifest on disk names the new
        ones (the caller saved it) and no other article's entry names them."""
        if self._replaced:
            self.cache.remove_unowned(self._replaced, self.manifest.owned_files())
            self._replaced.clear()
