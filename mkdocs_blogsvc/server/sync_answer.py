"""The sync endpoint's answer for a blog of any size, bounded in memory.

The blog's published articles are read in batches (`yield_per`) from the blog's index, never
all at once. Each one is compared with the client's `knownArticles`; only new and updated
articles are serialised, each into a spool (`SpooledTemporaryFile`: memory up to
`SPOOL_BYTES`, then a temporary file), and the answer streams from the spools. So a first sync
of a 100,000-article blog (every article new, hundreds of MB of JSON) holds one batch of rows
and a few MB in memory, and a sync with everything known serialises nothing.

An unchanged known article is recognised by its `contentHash` alone, without building its
whole JSON object. A first sync (nothing known: every article new) is one pass instead: one
statement reads the blog's published articles whole, in the listing index's order, and each
row goes straight to the spool, so the articles come from one snapshot on every database.
Rows are plain rows (`serialize.ARTICLE_COLUMNS`), never ORM objects.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from mkdocs_blogsvc.server import tables
from mkdocs_blogsvc.server.serialize import (
    ARTICLE_COLUMNS,
    article_json,
    content_hash,
    served_content,
)

#: Rows fetched per round trip.
BATCH = 500
#: Bytes of JSON kept in memory per list before the spool moves to a temporary file.
SPOOL_BYTES = 4 * 1024 * 1024


class JsonArraySpool:
    """A JSON array written item by item, read back as byte chunks."""

    def __init__(self) -> None:
        self._file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (closed by close())
        self.count = 0

    def append(self, item: Any) -> None:
        if self.count:
            self._file.write(b",")
        self._file.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        self.count += 1

    def chunks(self) -> Iterator[bytes]:
        yield b"["
        self._file.seek(0)
        while chunk := self._file.read(64 * 1024):
            yield chunk
        yield b"]"

    def close(self) -> None:
        self._file.close()


def load_published(session: Session, blog_id: str, ids: list[str]) -> list[Row[Any]]:
    """The blog's published articles among `ids`, in the order of `ids` (an id that is no
    longer a published article of the blog is left out).

    Looked up by primary key alone, the blog and status checked here: with them in the WHERE
    clause, PostgreSQL walks the blog's listing index and tests each of its rows against the
    list of ids, whenever the table has no statistics yet (freshly bulk-loaded, before
    autovacuum's ANALYZE) and, statistics or not, in the generic plan it switches to once
    psycopg has prepared the statement: 2 s per batch of 500 ids on a 100,000-article blog,
    where 500 primary-key lookups take a few ms. Only the primary key matches this query.
    """
    if not ids:
        return []
    article = tables.Article
    query = select(*ARTICLE_COLUMNS, article.blog_id, article.status).where(article.id.in_(ids))
    found = {row.id: row for row in session.execute(query)}
    return [
        found[article_id]
        for article_id in ids
        if article_id in found and found[article_id].blog_id == blog_id and found[article_id].status == "published"
    ]


class SyncAnswer:
    """New, updated and deleted articles of one sync; `chunks` streams the JSON answer."""

    def __init__(self) -> None:
        self.new = JsonArraySpool()
        self.updated = JsonArraySpool()
        self.deleted: list[str] = []

    def compute(
        self,
        session: Session,
        blog_id: str,
        published: Select[tables.Article],
        known: dict[str, set[str]],
        base: str,
    ) -> None:
        """Compare every published article of the blog (`published`, read in batches) with `known`.

        With nothing known, one pass sends every article. Otherwise the first pass reads only
        what the hash covers; the articles to send are then loaded whole, a batch of ids at a
        time (`load_published`), in the same order.
        """
        article = tables.Article
        if not known:  # a first sync: every article is sent, read whole in one pass
            for row in session.execute(
                published.with_only_columns(*ARTICLE_COLUMNS).execution_options(yield_per=BATCH)
            ):
                self.new.append(article_json(row, base))
            return
        hashed = published.with_only_columns(
            article.id, article.title, article.description, article.content, article.tags
        )
        unseen = set(known)
        new_ids: list[str] = []
        updated_ids: list[str] = []
        for row in session.execute(hashed.execution_options(yield_per=BATCH)):
            hashes = known.get(row.id)
            if hashes is None:
                new_ids.append(row.id)
                continue
            unseen.discard(row.id)
            current = content_hash(row.title, row.description, served_content(row.content, base), list(row.tags or []))
            if hashes != {current}:
                updated_ids.append(row.id)
        for ids, spool in ((new_ids, self.new), (updated_ids, self.updated)):
            for start in range(0, len(ids), BATCH):
                # One gone since the first pass is simply not sent.
                for loaded in load_published(session, blog_id, ids[start : start + BATCH]):
                    spool.append(article_json(loaded, base))
        self.deleted = [article_id for article_id in known if article_id in unseen]

    def chunks(self, synced_at: str) -> Iterator[bytes]:
        """The answer's JSON, keys in the spec's order; closes the spools when done."""
        try:
            yield b'{"new":'
            yield from self.new.chunks()
            yield b',"updated":'
            yield from self.updated.chunks()
            yield b',"deleted":' + json.dumps(self.deleted).encode("utf-8")
            yield b',"syncedAt":' + json.dumps(synced_at).encode("utf-8") + b"}"
        finally:
            self.close()

    def close(self) -> None:
        self.new.close()
        self.updated.close()
