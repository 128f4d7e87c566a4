"""Rate limits kept in the database, so they hold across worker processes and hosts.

A limit is "COUNT requests per SECONDS", held as a sliding window: no span of SECONDS seconds,
wherever it starts, holds more than COUNT allowed hits (fixed windows let a client spend COUNT
just before a window's end and COUNT more just after it: twice the limit in a moment). Hits are
counted in buckets of SECONDS/`BUCKETS` seconds, and a hit is judged against the current bucket
and the `BUCKETS` before it, a span of SECONDS to 1.1 × SECONDS that holds every SECONDS-long span
ending now: a hit is remembered for between SECONDS and 1.1 × SECONDS, never less. Each hit is
one upsert of its bucket, `INSERT ... ON CONFLICT (key, window) DO UPDATE SET count = count + 1
RETURNING count` (two workers counting at once never lose a hit), plus one indexed sum of the
older buckets, which no longer change. A refused request is given back its hits (in the same
transaction, or by the sign-in page with `forgive`): a client that retries a little before
`Retry-After` (the plugin caps one wait at 10 s) is not shut out for longer by knocking, and
`Retry-After` says when the hits that must go have gone. Buckets follow the
service's clock (`Database.now()`, test clock included). Rows past their use are deleted now
and then (one hit in 200, through the `expires_at` index). Where the counters live: `counter_engine`.

When the counters cannot be written (a counter store busy past `COUNTER_TIMEOUT`, PostgreSQL
restarting, a full disk): the sign-in limits fail closed (`FAIL_CLOSED`: 503 with `Retry-After`,
no password is checked, as a lockout must not lapse because its store did), the others fail open
(the request is served uncounted and a warning logged: they limit load, not guesses at a secret,
and a build should not fail because a counter did).

Limits (name: what is counted, the key):

| name | counts | default |
|---|---|---|
| `token` | data API requests per access token (its hash) | 3000 per 60 s |
| `client` | data API requests per OAuth client, all its tokens | 30000 per 60 s |
| `token_endpoint` | token requests per client_id | 300 per 60 s |
| `refresh_token` | token requests per refresh token presented | 30 per 60 s |
| `signin_account` | failed sign-ins per username | 10 per 900 s |
| `signin_address` | failed sign-ins per client address | 50 per 900 s |

Past a limit: `429 too_many_requests` with `Retry-After` (seconds until a hit would be allowed)
and the spec's Error object; on the sign-in page, a 429 page saying when to try again (no
password is checked while locked out). A count of 0 switches a limit off. Configure with
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

from flask import Flask, Response, request
from sqlalchemy import Table, create_engine, delete, event, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable

from mkdocs_blogsvc.server import faults, tables
from mkdocs_blogsvc.server.database import SQLITE_POOL_SIZE, Database, first_line
from mkdocs_blogsvc.server.errors import ApiError, ReferenceServiceError
from mkdocs_blogsvc.server.responses import json_response

#: The app config key holding the service's `Limits`.
CONFIG_KEY = "BLOGSVC_RATE_LIMITS"
ENV_VARIABLE = "BLOGSVC_RATE_LIMITS"
#: Seconds a hit waits for the counters' lock before the counters count as unavailable.
COUNTER_TIMEOUT = 2.0
#: Buckets per limit period: a hit is remembered for SECONDS to (1 + 1/BUCKETS) x SECONDS.
BUCKETS = 10
#: Limits that refuse (503) rather than let a request through uncounted when the counters
#: cannot be written: they stand between an attacker and a password.
FAIL_CLOSED = frozenset({"signin_account", "signin_address"})
#: `Retry-After` of that 503.
UNAVAILABLE_RETRY_AFTER = 5
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
            raise ValueError(
                f"invalid rate limit {part!r}: write NAME=COUNT/SECONDS, for example token=3000/60 (COUNT 0 turns it off)"
            )
        limits[name] = limit
    return limits


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after: int
    limit: Limit


class CountersUnavailable(ReferenceServiceError):
    """A limit in `FAIL_CLOSED` could not be counted: the request is refused with 503."""


class RateLimiter:
    """Counts hits in the database and says whether a request is within its limits."""

    def __init__(self, db: Database, limits: Mapping[str, Limit]) -> None:
        self.db = db
        self.limits = dict(limits)
        self.engine = counter_engine(db)
        self.sessions = sessionmaker(self.engine)

    def hit(self, name: str, key: str, *, session: Session | None = None, now: float | None = None) -> Verdict:
        """Count one hit of `key` against limit `name`; the verdict includes it. Without a
        `session`, a failure to count is `CountersUnavailable` for a `FAIL_CLOSED` limit, and an
        allowed, uncounted hit for the others."""
        limit = self.limits[name]
        if limit.count == 0:
            return Verdict(True, 0, limit)
        now = self.db.now().timestamp() if now is None else now
        if session is not None:
            return self._judge(session, name, key, limit, now)
        try:
            with self.sessions.begin() as own:
                return self._judge(own, name, key, limit, now)
        except SQLAlchemyError as exc:
            return self._uncounted([name], exc)

    def forgive(self, name: str, key: str) -> None:
        """Take back one hit of `key` in its latest bucket (an attempt that turned out fine). If
        the counters cannot be written the hit stays counted: the safe side."""
        limit = self.limits[name]
        if limit.count == 0:
            return
        now = self.db.now().timestamp()
        try:
            with self.sessions.begin() as session:
                self._take_back(session, name, key, now)
        except SQLAlchemyError as exc:
            log.warning("rate limit %s: a hit could not be taken back: %s", name, first_line(exc))

    def _take_back(self, session: Session, name: str, key: str, now: float) -> None:
        """Take one hit off the latest bucket of `key` that has one (within the window)."""
        counter = tables.RateCounter
        latest = session.scalar(
            select(func.max(counter.window)).where(
                counter.key == f"{name}:{key}",
                counter.window >= bucket_of(now, self.limits[name]) - BUCKETS,
                counter.count > 0,
            )
        )
        if latest is not None:
            session.execute(
                update(counter)
                .where(
                    counter.key == f"{name}:{key}",
                    counter.window == latest,
                    counter.count > 0,
                )
                .values(count=counter.count - 1)
            )

    def enforce(self, name: str, key: str, what: str) -> None:
        """Count a hit; raise 429 `too_many_requests` past the limit."""
        self.enforce_all([(name, key, what)])

    def enforce_all(self, hits: list[tuple[str, str, str]]) -> None:
        """Count one hit of each (name, key, what) in one write transaction; raise 429 for the
        first one past its limit, every hit of the refused request taken back in the same
        transaction (503 when they cannot be counted and one is `FAIL_CLOSED`)."""
        active = [hit for hit in hits if self.limits[hit[0]].count]
        if not active:
            return
        now = self.db.now().timestamp()
        try:
            with self.sessions.begin() as session:
                verdicts = [(self.hit(name, key, session=session, now=now), what) for name, key, what in active]
                if not all(verdict.allowed for verdict, _what in verdicts):  # not served: not counted
                    for name, key, _what in active:
                        self._take_back(session, name, key, now)
        except SQLAlchemyError as exc:
            self._uncounted([name for name, _key, _what in active], exc)
            return
        for verdict, what in verdicts:
            if not verdict.allowed:
                raise too_many_requests(verdict, what)

    def _uncounted(self, names: list[str], exc: SQLAlchemyError) -> Verdict:
        """Fail closed for a `FAIL_CLOSED` limit, open (logged) for the others."""
        closed = [name for name in names if name in FAIL_CLOSED]
        if closed:
            log.warning("rate limit %s cannot be counted, refusing (503): %s", closed[0], first_line(exc))
            raise CountersUnavailable(f"the {closed[0]} rate limit cannot be counted: {first_line(exc)}") from exc
        log.warning("rate limits %s not counted, letting the request through: %s", ", ".join(names), first_line(exc))
        return Verdict(True, 0, self.limits[names[0]])

    def _judge(self, session: Session, name: str, key: str, limit: Limit, now: float) -> Verdict:
        """Count the hit in its bucket; allowed when the bucket and the `BUCKETS` before it hold
        at most `limit.count` hits (this one included)."""
        full_key, bucket = f"{name}:{key}", bucket_of(now, limit)
        width = limit.seconds / BUCKETS
        current = self._count(session, full_key, bucket, (bucket + BUCKETS + 1) * width, now)
        counter = tables.RateCounter
        older: dict[int, int] = {
            window: count
            for window, count in session.execute(
                select(counter.window, counter.count).where(
                    counter.key == full_key,
                    counter.window >= bucket - BUCKETS,
                    counter.window < bucket,
                )
            )
        }
        total = current + sum(older.values())
        if total <= limit.count:
            return Verdict(True, 0, limit)
        # The next hit is allowed once the buckets that leave the span hold enough hits (this
        # refused one is taken back by the caller).
        current -= 1
        left = total - 1
        for leaving in range(bucket - BUCKETS, bucket + 1):
            left -= older.get(leaving, 0) if leaving < bucket else current
            if left + 1 <= limit.count:
                break
        retry_after = max(1, math.ceil((leaving + BUCKETS + 1) * width - now))
        return Verdict(False, retry_after, limit)

    def _count(self, session: Session, key: str, window: int, expires_at: float, now: float) -> int:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        counter = tables.RateCounter
        upsert = (
            insert(counter)
            .values(key=key, window=window, count=1, expires_at=expires_at)
            .on_conflict_do_update(index_elements=[counter.key, counter.window], set_={"count": counter.count + 1})
        )
        count = int(session.execute(upsert.returning(counter.count)).scalar_one())
        if random.random() < 0.005:  # housekeeping, not security
            session.execute(delete(counter).where(counter.expires_at < now))
        return count


def bucket_of(now: float, limit: Limit) -> int:
    """The bucket `now` falls in, for `limit` (buckets of `limit.seconds / BUCKETS` seconds)."""
    return int(now * BUCKETS // limit.seconds)


def register(app: Flask) -> None:
    """Answer `CountersUnavailable` with 503 and `Retry-After` (JSON under `/api/`, as `faults`)."""

    @app.errorhandler(CountersUnavailable)
    def _unavailable(error: CountersUnavailable) -> Response:
        headers = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER), "Cache-Control": "no-store"}
        description = (
            f"Sign-in is unavailable: its rate-limit counters cannot be written; "
            f"retry after {UNAVAILABLE_RETRY_AFTER} seconds"
        )
        if request.path.startswith("/api/") and not request.path.startswith("/api/oauth/authorize"):
            return json_response({"error": "temporarily_unavailable", "error_description": description}, 503, headers)
        return Response(f"{description}.\n", status=503, headers=headers, mimetype="text/plain")


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
        # As the service's own SQLite engine: no request ever waits for a pooled connection.
        **({"poolclass": StaticPool} if in_memory else {"pool_size": SQLITE_POOL_SIZE, "max_overflow": -1}),
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
        429,
        "too_many_requests",
        f"Rate limit exceeded: at most {verdict.limit.count} requests per {verdict.limit.seconds} seconds {what}; "
        f"retry after {verdict.retry_after} seconds",
        {"Retry-After": str(verdict.retry_after)},
    )
