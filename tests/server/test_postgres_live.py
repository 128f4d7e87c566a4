"""`server run` and `server admin` as real processes on a PostgreSQL URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mkdocs_blogsvc.server.database import Database
from tests.conftest import LiveServer, start_live_server
from tests.postgres import PostgresCluster

#: SQL behaviour: every test here runs on SQLite and on PostgreSQL (tests/server/conftest.py).
pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_live_server(tmp_path: Path, postgres_url: str) -> Iterator[LiveServer]:
    server = start_live_server(tmp_path / "pg", database_url=postgres_url)
    yield server
    server.stop()


@pytest.mark.slow
def test_a_server_on_postgresql_serves_what_the_admin_commands_write(
    pg_live_server: LiveServer, postgres_url: str
) -> None:
    seeded = pg_live_server.admin("seed")
    assert seeded.returncode == 0, seeded.stderr
    listed = json.loads(pg_live_server.admin("list-articles", "--blog", "demo-blog", "--json").stdout)["articles"]
    assert len(listed) == json.loads(seeded.stdout)["articles"]  # the published ones
    page = httpx.get(f"{pg_live_server.url}/blogs/demo-blog/{listed[0]['slug']}", timeout=10)
    assert page.status_code == 200 and listed[0]["title"].split(":")[0] in page.text
    moved = pg_live_server.admin("update-article", listed[0]["slug"], "--slug", "moved-on-postgres")
    assert moved.returncode == 0, moved.stderr
    assert httpx.get(f"{pg_live_server.url}/blogs/demo-blog/moved-on-postgres", timeout=10).status_code == 200
    # The session key is kept in the database, where every process of the service finds it.
    db = Database(postgres_url)
    try:
        assert len(db.service_key("session")) == 64
    finally:
        db.dispose()


def test_a_database_that_does_not_exist_names_the_next_step(postgres_cluster: PostgresCluster) -> None:
    """Found by review: the message stopped at PostgreSQL's `database "..." does not exist`."""
    from mkdocs_blogsvc.server.errors import DatabaseError

    with pytest.raises(DatabaseError) as raised:
        Database.open(postgres_cluster.url("nosuchdb"))
    message = str(raised.value)
    assert 'database "nosuchdb" does not exist' in message and "\n" not in message
    assert message.endswith("; create it first (createdb NAME, as the deployment section shows), then start again")
