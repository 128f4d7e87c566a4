"""A throwaway PostgreSQL server for the test session, and a fresh database per test.

Debian's `initdb` and `pg_ctl` (`/usr/lib/postgresql/<version>/bin`) make a cluster in a temporary
folder, listening only on a Unix socket in that folder (no TCP port at all), tuned for tests
(no fsync). PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres`
user and its commands run through `runuser`. The cluster is stopped and deleted when the session
ends. Tests that ask for it are skipped, with the reason, only when the binaries are absent.

Fixtures:
- `postgres_cluster` (session): the running cluster; `cluster.new_database()` gives the SQLAlchemy
  URL of a new empty database, `cluster.drop(url)` removes it.
- `postgres_url` (function): the URL of a new empty database, dropped after the test.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN_GLOB = "/usr/lib/postgresql/*/bin"


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin folder, or None."""
    found = [Path(d) for d in glob.glob(BIN_GLOB) if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists()]
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0) if found else None


@dataclass
class PostgresCluster:
    socket_dir: Path
    _names: Iterator[int]

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@/{name}?host={self.socket_dir}"

    def new_database(self) -> str:
        name = f"test_{os.getpid()}_{next(self._names)}"
        self.sql(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
        return self.url(name)

    def drop(self, url: str) -> None:
        name = url.rsplit("/", 1)[1].split("?", 1)[0]
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(host=str(self.socket_dir), user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(statement.encode())


def _as_postgres(command: list[str]) -> list[str]:
    """`command` run as the `postgres` user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip(
            f"PostgreSQL server binaries not found ({BIN_GLOB}/initdb and pg_ctl): install Debian's postgresql package"
        )
    root = Path(tempfile.mkdtemp(prefix="blogsvc-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(root, account.pw_uid, account.pw_gid)
    subprocess.run(
        _as_postgres(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-k {root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    subprocess.run(
        _as_postgres(
            [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield PostgresCluster(root, itertools.count(1))
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            check=False,
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    url = postgres_cluster.new_database()
    yield url
    postgres_cluster.drop(url)
