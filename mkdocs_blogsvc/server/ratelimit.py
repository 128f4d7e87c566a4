"""Rate limits kept in the database, so they hold across worker processes and hosts.

Fixed windows: a limit is "COUNT requests per SECONDS". Where the counters live: `counter_engine`.
If they cannot be counted in time (a busy counter store), the request goes through (fail open). Each hit is one upsert statement,
`INSERT ... ON CONFLICT (key, window) DO UPDATE SET count = count + 1 RETURNING count`, so two
workers counting at once never lose a hit. Windows follow the service's clock (`Database.now()`,
test clock included). Rows of past windows are deleted now and then (one hit in 200, through the
`expires_at` index).

Limits (name: what is counted, the key):

| name | counts | default |
|---|---|---|
| `token` | data API requests per access token (its hash) | 3000 per 60 s |
| `client` | data API requests per OAuth client, all its tokens | 30000 per 60 s |
| `token_endpoint` | token requests per client_id | 300 per 60 s |
| `refresh_token` | token requests per refresh token presented | 30 per 60 s |
| `signin_account` | failed sign-ins per username | 10 per 900 s |
| `signin_address` | failed sign-ins per client address | 50 per 900 s |

Past a limit: `429 too_many_requests` with `Retry-After` (seconds to the window's end) and the
spec's Error object; on the sign-in page, a 429 page saying when to try again (no password is
checked while locked out). A count of 0 switches a limit off. Configure with
`BLOGSVC_RATE_LIMITS="token=100/60,signin_account=5/300"` or `server run --rate-limit
token=100/60` (repeatable).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, create_engine, delete, event, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable

from mkdocs_blogsvc.server import faults, tables
from mkdocs_blogsvc.server.database import Database
from mkdocs_blogsvc.server.errors import ApiError

#: The app config key holding the service's `Limits`.
CONFIG_KEY = "BLOGSVC_RATE_LIMITS"
ENV_VARIABLE = "BLOGSVC_RATE_LIMITS"
#: Seconds a hit waits for the counters' lock before the request goes through uncounted.
COUNTER_TIMEOUT = 2.0
#: Seconds a starting worker keeps trying to open the counters while others create them.
COUNTER_SETUP_SECONDS = 10.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    count: int
    seconds: int

    def __str__(self) -> str:
        return f"{self.count}/{self.seconds}"


DEFAULTS: Mapping[str, Limit] = {
    "token": Limit(3000, 60),
    "client": Limit(30000, 60),
    "token_endpoint": Limit(300, 60),
    "refresh_token": Limit(30, 60),
    "signin_account": Limit(10, 900),
    "signin_address": Limit(50, 900),
}


def parse(text: str, base: Mapping[str, Limit] = DEFAULTS) -> dict[str, Limit]:
    """`name=COUNT/SECONDS,...` over `base`; ValueError with one line naming the bad part."""
    limits = dict(base)
    for part in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in DEFAULTS:
            raise ValueError(f"unknown rate limit {name!r} in {part!r}: known limits are {', '.join(DEFAULTS)}")
        count, _, seconds = value.partition("/")
        try:
            limit = Limit(int(count), int(seconds))
        except ValueError:
            limit = Limit(-1, 0)
        if limit.count < 0 or limit.seconds < 1:
            raise ValueError(f"invalid rate limit {part!r}: write NAME=COUNT/SECONDS, for example token=3000/60 (COUNT 0 turns it off)")
        limits[name] = limit
    return limits


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int
    limit: Limit


class RateLimiter:
    """Counts hits in the database and says whether a request is within its limits."""

    def __init__(self, db: Database, limits: Mapping[str, Limit]) -> None:
        self.db = db
        self.limits = dict(limits)
        self.engine = counter_engine(db)
        self.sessions = sessionmaker(self.engine)

    def hit(self, name: str, key: str, *, session: Session | None = None, now: float | None = None) -> Verdict:
        """Count one hit of `key` against limit `name` (one upsert); the verdict includes it."""
        limit = self.limits[name]
        if limit.count == 0:
            return Verdict(True, 0, limit)
        now = self.db.now().timestamp() if now is None else now
        window = int(now // limit.seconds)
        if session is None:
            with self.sessions.begin() as own:
                count = self._count(own, f"{name}:{key}", window, (window + 1) * limit.seconds, now)
        else:
            count = self._count(session, f"{name}:{key}", window, (window + 1) * limit.seconds, now)
        retry_after = max(1, math.ceil((window + 1) * limit.seconds - now))
        return Verdict(count <= limit.count, retry_after, limit)

    def forgive(self, name: str, key: str) -> None:
        """Take back one hit of `key` in the current window (an attempt that turned out fine)."""
        limit = self.limits[name]
        if limit.count == 0:
            return
        window = int(self.db.now().timestamp() // limit.seconds)
        counter = tables.RateCounter
        with self.sessions.begin() as session:
            session.execute(update(counter).where(
                counter.key == f"{name}:{key}", counter.window == window, counter.count > 0,
            ).values(count=counter.count - 1))

    def enforce(self, name: str, key: str, what: str) -> None:
        """Count a hit; raise 429 `too_many_requests` past the limit."""
        self.enforce_all([(name, key, what)])

    def enforce_all(self, hits: list[tuple[str, str, str]]) -> None:
        """Count one hit of each (name, key, what) in one write transaction; raise 429 for the
        first one past its limit."""
        active = [hit for hit in hits if self.limits[hit[0]].count]
        if not active:
            return
        now = self.db.now().timestamp()
        try:
            with self.sessions.begin() as session:
                verdicts = [(self.hit(name, key, session=session, now=now), what) for name, key, what in active]
        except OperationalError as exc:  # the counters are busy: let the request through
            log.warning("rate limits not counted: %s", str(exc.orig).splitlines()[0])
            return
        for verdict, what in verdicts:
            if not verdict.allowed:
                raise too_many_requests(verdict, what)

    def _count(self, session: Session, key: str, window: int, expires_at: float, now: float) -> int:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        counter = tables.RateCounter
        upsert = insert(counter).values(key=key, window=window, count=1, expires_at=expires_at).on_conflict_do_update(
            index_elements=[counter.key, counter.window], set_={"count": counter.count + 1}
        )
        count = int(session.execute(upsert.returning(counter.count)).scalar_one())
        if random.random() < 0.005:  # housekeeping, not security
            session.execute(delete(counter).where(counter.expires_at < now))
        return count


def counter_engine(db: Database) -> Engine:
    """Where the counters live. PostgreSQL (or another server): the service's database, shared
    by every host. SQLite: a file of their own next to the database (`<db>.ratelimits`, WAL,
    `synchronous=OFF`: counters are disposable), so counting a read never waits for, or holds,
    the write lock of the service's data, and shared by every process on the host."""
    if db.engine.dialect.name != "sqlite":
        return db.engine
    database = db.engine.url.database
    in_memory = not database or database == ":memory:"
    engine = create_engine(
        "sqlite://" if in_memory else f"sqlite:///{database}.ratelimits",
        connect_args={"check_same_thread": False, "timeout": COUNTER_TIMEOUT},
        **({"poolclass": StaticPool} if in_memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.close()

    _create_counter_table(engine)
    return engine


def _create_counter_table(engine: Engine) -> None:
    """Every worker process runs this as it starts, all at once. `IF NOT EXISTS` is in the
    statements themselves (create_all's check-then-create lets two workers both create the
    table). A new SQLite file is switched to WAL by the first connections, and SQLite answers
    "database is locked" at once, without waiting, to a connection that would otherwise wait
    for another one waiting for it: such a start (any `faults.is_transient` error) is tried
    again, for `COUNTER_SETUP_SECONDS`."""
    table = cast("Table", tables.RateCounter.__table__)
    deadline, pause = time.monotonic() + COUNTER_SETUP_SECONDS, 0.01
    while True:
        try:
            with engine.begin() as connection:
                connection.execute(CreateTable(table, if_not_exists=True))
                for index in table.indexes:
                    connection.execute(CreateIndex(index, if_not_exists=True))
            return
        except OperationalError as exc:
            if not faults.is_transient(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def too_many_requests(verdict: Verdict, what: str) -> ApiError:
    """429 with `Retry-After` and the Error object naming the limit."""
    return ApiError(
        429, "too_many_requests",
        f"Rate limit exceeded: at most {verdict.limit.count} requests per {verdict.limit.seconds} seconds {what}; "
        f"retry after {verdict.retry_after} seconds",
        {"Retry-After": str(verdict.retry_after)},
    )
