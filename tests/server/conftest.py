"""The server suite's database: SQLite for every test, and PostgreSQL as well where the test's
subject is SQL behaviour.

A test (or a module, through `pytestmark = pytest.mark.postgres`) marked `postgres` runs once on
SQLite and once on a fresh database of its worker's throwaway PostgreSQL cluster
(`tests/postgres.py`); every other test that uses `db` runs on SQLite only. Running everything
twice doubled the server suite's time for tests whose answers do not depend on the engine (the
HTTP, OAuth and CLI layers see the database only through the ORM). The test ids keep their
`[sqlite]` / `[postgresql]` suffix either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mkdocs_blogsvc.server.database import Database

ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`db` (asked for directly or through `app`, `owner`, `api`, ...) is parametrized here
    rather than with `params=` on the fixture, so the `postgres` marker can pick the engines."""
    if "db" in metafunc.fixturenames:
        engines = ENGINES if metafunc.definition.get_closest_marker("postgres") else ENGINES[:1]
        metafunc.parametrize("db", engines, indirect=True)


@pytest.fixture
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
