"""A worker process opening the rate-limit counters, for tests/server/test_rate_limits.py: a
module of its own, imported by its package name, so a forkserver can preload it (a test module's
own name under pytest is not importable by another process)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from mkdocs_blogsvc.server import ratelimit
from mkdocs_blogsvc.server.database import Database


def open_counters(path: str, start: Any, errors: Any) -> None:
    """One worker process starting: open the database and its rate-limit counters."""
    db = Database.from_path(path)
    try:
        start.wait(timeout=60)
        ratelimit.counter_engine(db).dispose()
    except SQLAlchemyError as exc:  # reported to the test, which names it (anything else: exit code 1)
        errors.put(f"{type(exc).__name__}: {exc}")
    finally:
        db.dispose()
