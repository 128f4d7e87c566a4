"""Deadline arithmetic on a fake clock (no sleeping, no durations asserted)."""

from __future__ import annotations

import pytest

from mkdocs_blogsvc.deadline import Deadline
from mkdocs_blogsvc.errors import DeadlineExceeded, TransportError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_remaining_and_expiry() -> None:
    clock = Clock()
    deadline = Deadline(30, clock=clock)
    assert deadline.remaining() == 30
    assert deadline.timeout(10) == 10
    clock.now += 25
    assert deadline.timeout(10) == 5
    clock.now += 5
    assert deadline.expired
    with pytest.raises(DeadlineExceeded, match="the sync did not finish within its 30 s"):
        deadline.timeout(10)


def test_child_never_outlives_its_parent() -> None:
    clock = Clock()
    sync = Deadline(30, clock=clock)
    image = sync.within(10, what="image a.png", limit="each image's limit")
    assert image.remaining() == 10
    clock.now += 10
    # found by review: the image's own limit was called "the `timeout` setting" (20 s of a 30 s timeout)
    with pytest.raises(DeadlineExceeded, match=r"^image a.png did not finish within its 10 s \(each image's limit\)$"):
        image.check()
    clock.now += 15
    late = sync.within(10, what="image b.png", limit="each image's limit")
    assert late.remaining() == 5
    clock.now += 5
    with pytest.raises(DeadlineExceeded, match=r"^the sync did not finish within its 30 s \(the `timeout` setting\)$"):
        late.check()


def test_running_out_is_a_transport_failure() -> None:
    """So `on_error: warn` builds from the cache, as for any unreachable service."""
    assert issubclass(DeadlineExceeded, TransportError)
