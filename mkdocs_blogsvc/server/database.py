"""The service's database: engine, transactions, schema check and the test clock.

SQLite by default (WAL mode, so a running server and `server admin` commands share one
database file and see each other's writes at once), or PostgreSQL for several processes and
hosts (`postgresql+psycopg://user:password@host/name`). `Database.open` takes either a SQLite
file path or a SQLAlchemy URL. Races that matter are settled by one conditional statement in
the database, never by a lock in one process, so they hold on both.
"""

from __future__ import annotations

import functools
import math
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, insert, select
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from mkdocs_blogsvc.server import schema
from mkdocs_blogsvc.server.bulkhead import WriterBulkhead, slots_for
from mkdocs_blogsvc.server.errors import DatabaseError
from mkdocs_blogsvc.server.tables import ClockOffset, ServiceKey

#: How the admin commands are named in messages that tell the operator what to run.
ADMIN_COMMAND = "mkdocs-blogsvc server admin --db"

#: How long a transaction waits for a lock (or a connection) by default: admin commands may queue.
DEFAULT_LOCK_TIMEOUT = 30.0
#: How long a request of the running service waits: past it the request is answered 503 with
#: `Retry-After` (`faults.py`) instead of holding a worker and answering 500 after 30 s.
REQUEST_LOCK_TIMEOUT = 5.0

#: The SQLAlchemy drivers the service runs on: SQLite, and PostgreSQL through psycopg 3 (the
#: `[server]` extra installs it; PostgreSQL-specific code such as `_nul_safe_strings` needs it).
SUPPORTED_DRIVERS = frozenset({"sqlite", "sqlite+pysqlite", "postgresql+psycopg"})
POSTGRESQL_URL_SHAPE = "postgresql+psycopg://USER:PASSWORD@HOST/NAME"

#: The connection execution option `Database.session(write=True)` sets: the transaction may write.
WRITE_TRANSACTION = "blogsvc_write"
#: SQLite connections kept open per process (more are opened when needed, never waited for).
SQLITE_POOL_SIZE = 8


class Database:
    """The engine, a session factory and the clock of one service database."""

    def __init__(self, url: str, *, check_schema: bool = True) -> None:
        """Connect to `url`; with `check_schema`, create the schema of an empty database and
        refuse one at another revision (`StaleDatabase`, see `schema`)."""
        self.url = url
        self.is_sqlite = is_sqlite = url.startswith("sqlite")
        self._lock_timeout = DEFAULT_LOCK_TIMEOUT
        #: SQLite write transactions under way at once in this process (`bound_writers`); None: any number.
        self.writers: WriterBulkhead | None = None
        self.engine: Engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": DEFAULT_LOCK_TIMEOUT}
            if is_sqlite
            else {"connect_timeout": 10},
            # SQLite: a connection is a file handle, and one waiting for the write lock must not
            # keep a reader from a connection (SQLAlchemy's default pool is 5 + 10 with a 30 s
            # wait: a status read once waited 4 s behind 16 queued syncs). No pool wait at all:
            # 8 connections kept, more opened as needed; a writer waits only for the lock itself.
            **_pool_options(url),
        )
        if is_sqlite:
            event.listen(
                self.engine, "connect", lambda connection, _record: _sqlite_pragmas(connection, self._lock_timeout)
            )
            event.listen(self.engine, "begin", _begin)
        else:
            event.listen(
                self.engine, "connect", lambda connection, _record: _server_timeouts(connection, self._lock_timeout)
            )
            event.listen(self.engine, "connect", lambda connection, _record: _nul_safe_strings(connection))
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        if check_schema:
            try:
                with self._schema_transaction() as connection:
                    schema.check(connection, self.shown, f"{ADMIN_COMMAND} {self.argument}")
            except BaseException:
                self.engine.dispose()
                raise

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Database:
        return cls(f"sqlite:///{os.fspath(path)}")

    @classmethod
    def open(cls, target: str, *, check_schema: bool = True, create: bool = True) -> Database:
        """The database named on a command line: a SQLAlchemy URL (`scheme://...`) or a SQLite
        file path (a new file when `create`: else a missing one is refused, so that a path
        mistyped or relative to the wrong folder does not quietly start an empty database).
        Every failure is a `DatabaseError` with one line naming the database."""
        if not target.strip():  # an unset variable in `--db "$DB"`: SQLite would use a throwaway in-memory one
            raise DatabaseError(f"--db is empty: give a SQLite file path or a URL such as {POSTGRESQL_URL_SHAPE}")
        if "://" in target:
            try:
                url = make_url(target)
            except (ArgumentError, ValueError):  # ValueError: a port that is not a number
                raise DatabaseError(
                    f"invalid database URL {_without_password(target)!r}: use {POSTGRESQL_URL_SHAPE} or a SQLite file path"
                ) from None
            if url.drivername in (
                "postgres",
                "postgresql",
            ):  # a host's DATABASE_URL; SQLAlchemy 2.0 would pick psycopg2
                url = url.set(drivername="postgresql+psycopg")
            shown = url.render_as_string(hide_password=True)
            if url.drivername not in SUPPORTED_DRIVERS:
                raise DatabaseError(f"unsupported database {shown}: use {POSTGRESQL_URL_SHAPE} or a SQLite file path")
        else:
            path = Path(target)
            if not path.parent.is_dir():
                raise DatabaseError(f"cannot open database {target}: folder {path.parent} does not exist")
            if not create and not path.exists():
                raise DatabaseError(
                    f"no database at {path.absolute()}: check --db (a relative path starts from the current "
                    "folder); `server admin --db PATH create-user` or `seed` starts a new one"
                )
            url, shown = make_url(f"sqlite:///{target}"), target
        try:
            return cls(url.render_as_string(hide_password=False), check_schema=check_schema)
        except DatabaseError:
            raise
        except (SQLAlchemyError, ImportError) as exc:
            reason = first_line(exc)
            if "database is locked" in reason:  # SQLite, after its busy timeout
                reason += (
                    f" (another process held a write lock for {DEFAULT_LOCK_TIMEOUT:g} s: a sqlite3 shell or "
                    "an admin command in a transaction; end it and try again)"
                )
            raise DatabaseError(f"cannot open database {shown}: {reason}{_next_step(reason, url.drivername)}") from None

    @property
    def shown(self) -> str:
        """The database as messages name it: a SQLite path, or the URL without its password."""
        url = make_url(self.url)
        if self.is_sqlite:
            return url.database or ":memory:"
        return url.render_as_string(hide_password=True)

    @property
    def argument(self) -> str:
        """What to pass to `--db` to reach this database again, the password (if any) shown as
        PASSWORD for the operator to fill in (`***` in a command would fail to sign in)."""
        if self.is_sqlite:
            return self.shown
        url = self.engine.url
        shown = url.set(password="PASSWORD").render_as_string(hide_password=False) if url.password else self.shown
        return f"'{shown}'"

    @contextmanager
    def _schema_transaction(self) -> Iterator[Connection]:
        """A write transaction for schema work (SQLite's write lock taken at BEGIN)."""
        with self.engine.connect().execution_options(**{WRITE_TRANSACTION: True}) as connection, connection.begin():
            yield connection

    def migrate(self) -> tuple[str | None, str]:
        """Upgrade the schema to this version's revision; (revision before, after)."""
        with self._schema_transaction() as connection:
            return schema.migrate(connection, self.shown)

    def service_key(self, name: str) -> str:
        """A secret shared by every process on this database, made on first use (first writer wins)."""
        with self.session() as session:
            value = session.get(ServiceKey, name)
            if value is not None:
                return value.value
        try:
            with self.session(write=True) as session:
                if session.get(ServiceKey, name) is None:
                    session.execute(insert(ServiceKey).values(name=name, value=secrets.token_hex(32)))
        except IntegrityError:
            pass  # another process stored it first: theirs is read below
        with self.session() as session:
            stored = session.get(ServiceKey, name)
            assert stored is not None
            return stored.value

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception.

        `write=True` is for every transaction that may write. On SQLite it takes the write lock
        at BEGIN (`BEGIN IMMEDIATE`): writers queue up (waiting up to the busy timeout) instead
        of failing with "database is locked" when a transaction that has read tries to write
        after another one committed. Reads (the default) use a deferred BEGIN and, in WAL mode,
        neither wait for nor block anyone. With `bound_writers` set (the running service), a
        write transaction first takes a slot of the process's bulkhead (`bulkhead`).
        """
        with ExitStack() as stack:
            got_lock = None
            if write and self.writers is not None:
                got_lock = stack.enter_context(self.writers.slot())  # WritersQueued when full and stuck
            session = stack.enter_context(self.sessions())
            stack.enter_context(session.begin())
            if write:
                # Options of the session's first connection apply before its BEGIN.
                session.connection(execution_options={WRITE_TRANSACTION: True})
                if got_lock is not None:
                    got_lock()
            yield session

    def bound_writers(self, threads: int | None) -> None:
        """Keep a thread free for reads in a process serving requests on `threads` threads (None:
        a thread per request): SQLite write transactions beyond `bulkhead.slots_for(threads)` are
        refused with `WritersQueued` while the write lock does not move. PostgreSQL is left as it
        is (row locks, and a pool wait of its own)."""
        self.writers = WriterBulkhead(slots_for(threads)) if self.is_sqlite else None

    @property
    def lock_timeout(self) -> float:
        """Seconds a statement waits for a lock before it fails (SQLite's busy timeout,
        PostgreSQL's `lock_timeout`). Setting it closes pooled connections, so it applies at once."""
        return self._lock_timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self._lock_timeout = seconds
        self.engine.dispose()

    def now(self) -> datetime:
        """The service's notion of now: wall clock plus the test clock's offset."""
        # Read outside any transaction (AUTOCOMMIT: the "begin" listener issues no BEGIN), so it
        # can be called anywhere, even inside the caller's own write transaction.
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            offset = connection.scalar(select(ClockOffset.offset_seconds).where(ClockOffset.id == 1))
        return datetime.now(timezone.utc) + timedelta(seconds=offset or 0.0)

    def advance_clock(self, seconds: float, *, at_most: float = math.inf) -> float | None:
        """Move the test clock forward; returns the new total offset in seconds, or None (and
        the clock left as it is) when that would be more than `at_most`."""
        with self.session(write=True) as session:
            clock = session.get(ClockOffset, 1)
            if clock is None:
                clock = ClockOffset(id=1, offset_seconds=0.0)
                session.add(clock)
            if clock.offset_seconds + seconds > at_most:
                return None
            clock.offset_seconds += seconds
            return clock.offset_seconds

    def dispose(self) -> None:
        self.engine.dispose()


def _next_step(reason: str, driver: str) -> str:
    """What to do about a database that would not open, after its reason (none when the reason says it)."""
    if "database is locked" in reason:
        return ""
    if driver.startswith("sqlite"):
        return "; check --db: a file this user can read and write, in a folder it can write to"
    if "does not exist" in reason:
        return "; create it first (createdb NAME, as the deployment section shows), then start again"
    return "; check --db (host, port, user, password, database name) and that the server runs"


def _begin(connection: Any) -> None:
    """Start SQLite transactions ourselves (pysqlite's own handling is off, see `_sqlite_pragmas`):
    `BEGIN IMMEDIATE` for write transactions, a deferred `BEGIN` for reads, none in AUTOCOMMIT."""
    options = connection.get_execution_options()
    if options.get("isolation_level") == "AUTOCOMMIT":
        return
    connection.exec_driver_sql("BEGIN IMMEDIATE" if options.get(WRITE_TRANSACTION) else "BEGIN")


def _pool_options(url: str) -> dict[str, Any]:
    """The engine's pool settings: see `Database.__init__`. An in-memory SQLite database (one
    connection per thread, SQLAlchemy's own choice) keeps its pool as it is."""
    if not url.startswith("sqlite"):
        return {"pool_timeout": REQUEST_LOCK_TIMEOUT, "pool_pre_ping": True}
    database = make_url(url).database
    if not database or database == ":memory:":
        return {}
    return {"pool_size": SQLITE_POOL_SIZE, "max_overflow": -1}


def _sqlite_pragmas(dbapi_connection: Any, lock_timeout: float) -> None:
    dbapi_connection.isolation_level = None  # let the "begin" listener issue BEGIN
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(lock_timeout * 1000)}")
    cursor.close()


def _server_timeouts(dbapi_connection: Any, lock_timeout: float) -> None:
    """A database server's lock wait limit (PostgreSQL's `lock_timeout`), set per connection."""
    cursor = dbapi_connection.cursor()
    cursor.execute(f"SET lock_timeout = {int(lock_timeout * 1000)}")
    cursor.close()
    dbapi_connection.commit()


def _nul_safe_strings(dbapi_connection: Any) -> None:
    """psycopg's connections send strings with `_nul_safe_dumpers`."""
    if dbapi_connection.__class__.__module__.startswith("psycopg"):
        for dumper in _nul_safe_dumpers():
            dbapi_connection.adapters.register_dumper(str, dumper)


@functools.cache
def _nul_safe_dumpers() -> tuple[type, ...]:
    """psycopg's string dumpers, with U+FFFD for each NUL. PostgreSQL's text cannot hold NUL and
    psycopg refuses such a parameter (a 500 for `GET /api/v1/articles/a%00b`, a `client_id` or a
    username with one); no identifier the service stores holds either character, so a lookup
    with one finds nothing, as it does on SQLite, and a rate-limit key with one still counts."""
    from psycopg.types.string import StrBinaryDumper, StrDumperUnknown

    class NulSafeText(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(obj.replace("\0", "\ufffd"))

    class NulSafeBinary(StrBinaryDumper):
        def dump(self, obj: str) -> Any:
            return super().dump(obj.replace("\0", "\ufffd"))

    return NulSafeText, NulSafeBinary


def first_line(exc: BaseException) -> str:
    """The first line of a database failure, as the driver put it."""
    return str(getattr(exc, "orig", None) or exc).splitlines()[0]


def _without_password(target: str) -> str:
    """A URL that `make_url` could not parse, with whatever stands between `user:` and the
    last `@` shown as `***` (the password, even when it holds an unescaped `@`)."""
    return re.sub(r"^([^:/]+://[^:/@]*:).*@", r"\1***@", target)
