"""Schema versions on both databases: the revisions build exactly the tables the code uses, a
database made by the previous version is refused with one line and upgraded by `migrate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import create_engine, inspect, text

from mkdocs_blogsvc.cli import main
from mkdocs_blogsvc.server import schema
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import StaleDatabase
from mkdocs_blogsvc.server.tables import Base
from tests.server.conftest import db_argument


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database, no schema at all."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def previous_version_database(url: str) -> None:
    """What the version before migrations left: revision 0001's tables, no version table, data."""
    engine = create_engine(url)
    with engine.begin() as connection:
        schema.upgrade(connection, schema.FIRST_REVISION)
        connection.execute(text(f"DROP TABLE {schema.VERSION_TABLE}"))
        connection.execute(
            text("INSERT INTO users (username, password_hash, created_at) VALUES ('olga', 'x', '2026-01-02 03:04:05')")
        )
    engine.dispose()


def test_the_newest_revision_is_the_one_the_code_uses() -> None:
    config = Config()
    config.set_main_option("script_location", str(schema.MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == schema.SCHEMA_REVISION


def test_the_revisions_build_exactly_the_tables_of_the_code(empty_url: str) -> None:
    engine = create_engine(empty_url)
    try:
        with engine.begin() as connection:
            schema.upgrade(connection, "head")
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
            assert differences == []
            assert schema.revision(connection) == schema.SCHEMA_REVISION
    finally:
        engine.dispose()


def test_an_empty_database_gets_the_current_schema_on_first_use(empty_url: str) -> None:
    db = Database(empty_url)
    try:
        with db.engine.connect() as connection:
            assert schema.revision(connection) == schema.SCHEMA_REVISION
            assert set(Base.metadata.tables) <= set(inspect(connection).get_table_names())
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
    finally:
        db.dispose()
    Database(empty_url).dispose()  # and a second opening accepts it


def test_a_database_of_the_previous_version_is_refused_then_migrated(empty_url: str) -> None:
    previous_version_database(empty_url)
    with pytest.raises(StaleDatabase) as refused:
        Database(empty_url)
    message = str(refused.value)
    assert f"was created before schema migrations existed, this version needs {schema.SCHEMA_REVISION}" in message
    assert message.endswith("migrate`") and "\n" not in message

    db = Database(empty_url, check_schema=False)
    try:
        assert db.migrate() == (None, schema.SCHEMA_REVISION)
        assert db.migrate() == (schema.SCHEMA_REVISION, schema.SCHEMA_REVISION)  # again: nothing to do
    finally:
        db.dispose()
    db = Database(empty_url)
    try:
        with db.engine.connect() as connection:
            assert connection.execute(text("SELECT username FROM users")).scalars().all() == ["olga"]
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        assert len(db.service_key("session")) == 64 and db.service_key("session") == db.service_key("session")
    finally:
        db.dispose()


def test_a_revision_behind_is_refused_naming_it(empty_url: str) -> None:
    engine = create_engine(empty_url)
    with engine.begin() as connection:
        schema.upgrade(connection, schema.FIRST_REVISION)
    engine.dispose()
    with pytest.raises(StaleDatabase, match=f"has schema revision 0001, this version needs {schema.SCHEMA_REVISION}"):
        Database(empty_url)


def test_the_commands_refuse_a_stale_database_and_migrate_upgrades_it(empty_url: str) -> None:
    previous_version_database(empty_url)
    db = Database(empty_url, check_schema=False)
    argument = db_argument(db)
    db.dispose()
    for command in (
        ["server", "admin", "--db", argument, "list-users"],
        ["server", "run", "--db", argument, "--port", "0"],
    ):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1, result.output
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
        assert result.stderr.startswith("Error: database ") and "server admin --db" in result.stderr
        assert result.stderr.rstrip().endswith(" migrate`")
    migrated = CliRunner().invoke(main, ["server", "admin", "--db", argument, "migrate"])
    assert migrated.exit_code == 0, migrated.output
    assert json.loads(migrated.stdout)["from"] is None and json.loads(migrated.stdout)["to"] == schema.SCHEMA_REVISION
    listed = CliRunner().invoke(main, ["server", "admin", "--db", argument, "list-users", "--json"])
    assert [user["username"] for user in json.loads(listed.stdout)["users"]] == ["olga"]


def test_a_database_of_another_application_is_refused_not_taken_for_an_old_one(empty_url: str) -> None:
    engine = create_engine(empty_url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    argument = db_argument(Database(empty_url, check_schema=False))
    for command in (["list-users"], ["migrate"]):
        result = CliRunner().invoke(main, ["server", "admin", "--db", argument, *command])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert result.stderr.strip().endswith(
            "holds tables that are not the service's (invoices): give --db an empty database or one of this service"
        )
    engine = create_engine(empty_url)
    assert inspect(engine).get_table_names() == ["invoices"]  # nothing created, nothing stamped
    engine.dispose()


def test_a_password_in_the_url_is_never_shown() -> None:
    url = "postgresql+psycopg://blog:s3cret-pw@127.0.0.1:1/blog"
    result = CliRunner().invoke(main, ["server", "admin", "--db", url, "list-users"])
    assert result.exit_code == 1 and "s3cret-pw" not in result.output
    assert result.stderr.startswith("Error: cannot open database postgresql+psycopg://blog:***@127.0.0.1:1/blog: ")


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_a_postgresql_url_without_a_driver_uses_psycopg(postgres_url: str, scheme: str) -> None:
    """`postgres://` (the DATABASE_URL of most hosts) and `postgresql://` (SQLAlchemy 2.0's
    default driver is psycopg2, which the [server] extra does not install) mean psycopg 3."""
    url = postgres_url.replace("postgresql+psycopg://", f"{scheme}://", 1)
    result = CliRunner().invoke(main, ["server", "admin", "--db", url, "list-users", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"users": []}


def test_the_migrate_hint_for_a_database_with_a_password_asks_for_it_not_for_stars() -> None:
    """Found by an operator's review: the hint held `blogsvc:***@`, which fails to sign in when pasted."""
    db = Database("postgresql+psycopg://blogsvc:s3cret@127.0.0.1:1/blogsvc", check_schema=False)
    try:
        assert db.argument == "'postgresql+psycopg://blogsvc:PASSWORD@127.0.0.1:1/blogsvc'"
        assert "s3cret" not in db.argument and "s3cret" not in db.shown
    finally:
        db.dispose()
