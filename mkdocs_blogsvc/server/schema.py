"""The schema's version: a new database gets the current schema, an older one is migrated.

Schema changes go through Alembic revisions (`migrations/versions/`); `SCHEMA_REVISION` is the
newest one, the revision this code reads and writes. Decision (the service on start):

- an **empty** database is given the current schema at once (`create_all`, then stamped with
  `SCHEMA_REVISION`), so `--db new.db` or a new PostgreSQL database just works;
- a database at **another revision** (or created before migrations existed, without Alembic's
  version table) is refused with one line naming `server admin migrate`: migrating is an
  operator's decision (back up first), never a side effect of starting a worker;
- `server admin migrate` upgrades to `SCHEMA_REVISION`; a database from before migrations is
  first stamped as revision 0001, whose tables it holds.

Both run in one write transaction that holds the database's lock (SQLite: `BEGIN IMMEDIATE`;
PostgreSQL: a transaction-scoped advisory lock), so processes that start together agree.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, inspect, text

from mkdocs_blogsvc.server.errors import DatabaseError, StaleDatabase
from mkdocs_blogsvc.server.tables import Base

#: The newest revision in `migrations/versions`, which this code's tables match.
SCHEMA_REVISION = "0003"
#: The revision a database created before migrations existed is at.
FIRST_REVISION = "0001"
#: Tables every database of the service has held since the first revision.
FIRST_REVISION_TABLES = frozenset({"users", "blogs", "articles", "clients"})
VERSION_TABLE = "alembic_version"
MIGRATIONS = Path(__file__).parent / "migrations"
#: Key of the PostgreSQL advisory lock held while the schema is created or migrated.
_LOCK_KEY = 0x626C6F67  # "blog"


def lock(connection: Connection) -> None:
    """Serialise schema work between processes (SQLite's BEGIN IMMEDIATE already does)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})


def revision(connection: Connection) -> str | None:
    """The database's revision; None when it has no version table."""
    if VERSION_TABLE not in inspect(connection).get_table_names():
        return None
    return connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def is_empty(connection: Connection) -> bool:
    return not inspect(connection).get_table_names()


def _refuse_foreign(connection: Connection, shown: str) -> None:
    """A database with tables but neither a version table nor the first revision's tables
    belongs to something else: neither "made before migrations" nor to be migrated."""
    tables = set(inspect(connection).get_table_names())
    if VERSION_TABLE in tables or tables >= FIRST_REVISION_TABLES:
        return
    listed = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
    raise DatabaseError(
        f"database {shown} holds tables that are not the service's ({listed}): "
        "give --db an empty database or one of this service"
    )


def create(connection: Connection) -> None:
    """The current schema in an empty database, stamped with `SCHEMA_REVISION`."""
    Base.metadata.create_all(connection)
    _stamp(connection, SCHEMA_REVISION)


def check(connection: Connection, shown: str, command: str) -> None:
    """Create the schema in an empty database, accept a current one, refuse any other."""
    lock(connection)
    if is_empty(connection):
        create(connection)
        return
    _refuse_foreign(connection, shown)
    found = revision(connection)
    if found == SCHEMA_REVISION:
        return
    what = "was created before schema migrations existed" if found is None else f"has schema revision {found}"
    raise StaleDatabase(
        f"database {shown} {what}, this version needs {SCHEMA_REVISION}: back it up, then run `{command} migrate`"
    )


def migrate(connection: Connection, shown: str) -> tuple[str | None, str]:
    """Upgrade to `SCHEMA_REVISION`; returns (revision before, revision after)."""
    lock(connection)
    if is_empty(connection):
        create(connection)
        return None, SCHEMA_REVISION
    _refuse_foreign(connection, shown)
    before = revision(connection)
    if before is None:
        _stamp(connection, FIRST_REVISION)
    upgrade(connection, "head")
    return before, SCHEMA_REVISION


def upgrade(connection: Connection, target: str) -> None:
    """Run the Alembic revisions up to `target` on `connection` (no alembic.ini needed)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, target)


def _stamp(connection: Connection, revision_id: str) -> None:
    connection.execute(
        text(f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
    )
    connection.execute(text(f"DELETE FROM {VERSION_TABLE}"))
    connection.execute(text(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES (:v)"), {"v": revision_id})
