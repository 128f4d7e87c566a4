"""The server suite runs on both databases: every test that uses `db` runs once on SQLite and
once on a fresh database of the session's throwaway PostgreSQL cluster (`tests/postgres.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mkdocs_blogsvc.server.database import Database


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        database = Database.from_path(tmp_path / "service.db")
    else:
        database = Database(request.getfixturevalue("postgres_url"))
    yield database
    database.dispose()


def db_argument(db: Database) -> str:
    """What `--db` takes to reach `db`: its SQLite path, or its URL."""
    return db.url.removeprefix("sqlite:///") if db.is_sqlite else db.url
