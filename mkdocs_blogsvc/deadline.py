"""Deadlines: a point in time that work must not pass, not a per-operation timeout.

A per-read timeout resets with every byte, so a service that drip-feeds a response (or
retries and backoff added up) can hold a build for minutes under a "30 s timeout". One
`Deadline` for the whole sync is handed down to every request, retry, backoff pause and image
download; each image takes a child deadline (`within`) that ends at its own limit or the
sync's, whichever comes first. Network code asks `timeout()` for the time a blocking call may
take, and `check()` between chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mkdocs_blogsvc.errors import DeadlineExceeded


class Deadline:
    """`seconds` from now on a monotonic clock (immune to wall-clock changes)."""

    def __init__(
        self,
        seconds: float,
        *,
        what: str = "the sync",
        limit: str = "the `timeout` setting",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.seconds = seconds
        #: where `seconds` comes from, for the message (`exceeded`).
        self.limit = limit
        self.what = what
        self.ends = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self.ends - self._clock())

    @property
    def expired(self) -> bool:
        return self._clock() >= self.ends

    def timeout(self, cap: float | None = None) -> float:
        """Seconds a blocking call may take now: the time left, at most `cap`; raises when none is left."""
        self.check()
        left = self.remaining()
        return left if cap is None else min(left, cap)

    def check(self) -> None:
        if self.expired:
            raise self.exceeded()

    def exceeded(self) -> DeadlineExceeded:
        """The error that says this deadline passed."""
        return DeadlineExceeded(f"{self.what} did not finish within its {self.seconds:g} s ({self.limit})")

    def within(self, seconds: float, *, what: str, limit: str) -> Deadline:
        """A child deadline: `seconds` from now (set by `limit`), but never later than this one."""
        child = Deadline(seconds, what=what, limit=limit, clock=self._clock)
        if self.ends < child.ends:
            child.ends, child.seconds, child.what, child.limit = self.ends, self.seconds, self.what, self.limit
        return child

    def __repr__(self) -> str:
        return f"Deadline({self.what!r}, {self.remaining():.1f} s left of {self.seconds:g} s)"
