"""`export.keep_exporting`, the loop of `export --watch` on the background sync's poller: what it
says, when it stops."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from mkdocs_blogsvc.errors import NotLoggedIn, RateLimited, TransportError
from mkdocs_blogsvc.export import ExportRound, ExportWatch, keep_exporting

NOTHING = ExportRound("blogsvc: 0 new, 0 updated, 0 deleted, 3 unchanged in 0.01 s", False)
ONE_NEW = ExportRound("blogsvc: 1 new, 0 updated, 0 deleted, 3 unchanged in 0.01 s", True, 1, 0)


def rounds(*outcomes: ExportRound | Exception) -> tuple[Callable[[], ExportRound], threading.Event]:
    """A round function playing `outcomes` in turn, then setting the stop event."""
    stop = threading.Event()
    pending = list(outcomes)

    def one_round() -> ExportRound:
        outcome = pending.pop(0)
        if not pending:
            stop.set()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return one_round, stop


def test_says_only_what_changed_and_warns_once_per_distinct_failure() -> None:
    down = TransportError("connection refused")
    one_round, stop = rounds(NOTHING, down, down, TransportError("timed out"), ONE_NEW, NOTHING)
    said: list[str] = []
    warned: list[str] = []
    keep_exporting(one_round, 0, stop, say=said.append, warn=warned.append)
    assert len(warned) == 2 and "connection refused" in warned[0] and "timed out" in warned[1]
    assert "trying again every 0 s" in warned[0] and "the exported files stay as they are" in warned[0]
    assert said[0] == "the sync works again"
    assert said[1].endswith("blogsvc: 1 new, 0 updated, 0 deleted, 3 unchanged in 0.01 s: 1 file written, 0 removed")
    assert len(said) == 2, said


def test_a_rate_limit_counting_down_is_one_failure() -> None:
    """Found by review: "retry after N seconds" with N counting down warned at every round."""
    one_round, stop = rounds(
        *(RateLimited(f"Rate limit exceeded; retry after {n} seconds", status_code=429) for n in (580, 559, 538))
    )
    warned: list[str] = []
    keep_exporting(one_round, 0, stop, say=print, warn=warned.append)
    assert len(warned) == 1 and "retry after 580 seconds" in warned[0]


def test_credentials_to_renew_end_the_watch() -> None:
    one_round, stop = rounds(NOTHING, NotLoggedIn("not logged in: run `mkdocs-blogsvc login`"), NOTHING)
    with pytest.raises(NotLoggedIn):
        keep_exporting(one_round, 0, stop, say=print, warn=print)
    assert not stop.is_set(), "it stopped at the failure, not at the end of the rounds"


def test_waits_the_interval_counted_from_the_start_of_each_round() -> None:
    times = iter([0.0, 0.4, 10.0, 10.1])
    rounds = ExportWatch(lambda: NOTHING, 1.0, say=print, warn=print, clock=lambda: next(times))
    waits = [rounds.step(), rounds.step()]
    assert waits == pytest.approx([0.6, 0.9])
