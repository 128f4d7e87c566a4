"""A per-process bulkhead for SQLite write transactions: a held write lock cannot take every thread.

SQLite has one write lock per database. A write transaction takes it at BEGIN (`BEGIN
IMMEDIATE`) and waits for it up to the busy timeout (`REQUEST_LOCK_TIMEOUT`, 5 s). When another
process holds it for long (an admin command, a `sqlite3` shell, a backup), writers pile up, each
holding a request thread for its whole wait. Under gunicorn (`--threads 4`) four waiting syncs
took every thread of a worker, and a status read, which needs no lock, waited for a thread: up to
two lock timeouts (10 s measured).

So at most `slots` write transactions of one process are under way at once (`threads - 1` under
gunicorn: one thread stays free for reads). A writer that finds every slot taken waits for one
only while the writers move: until `PATIENCE` seconds after a writer of this process last took a
slot or got the lock. A burst of short writes (16 refreshes at once) therefore queues as before
and nobody is refused; a lock held elsewhere stops every movement, and past the patience the
writers beyond the slots are refused at once with `WritersQueued`, which `faults.py` answers like
a lock timeout (503 with `Retry-After`), freeing their threads within milliseconds. Once a writer
has waited out the whole lock timeout, the lock is known to be stuck: until a writer gets it
again, a writer finding the slots full is refused without any patience.

PostgreSQL needs none of this: it has row locks (writers of different rows do not queue) and a
pool wait of its own (`pool_timeout`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mkdocs_blogsvc.server.errors import WritersQueued

#: Seconds a writer beyond the slots waits for one while nothing moves. It bounds how long such a
#: writer holds a thread another request (a read) may be queued for; a burst of short writes moves
#: far more often than this, even with four processes contending on a loaded machine.
PATIENCE = 1.0
#: Slots of a server that starts a thread per request (Werkzeug's, `server run` with one process):
#: reads never wait for a thread there, so this only caps the threads and SQLite connections (each
#: waiting writer holds one, three file descriptors) that pile up behind a lock held elsewhere.
THREAD_PER_REQUEST_SLOTS = 32


def slots_for(threads: int | None) -> int:
    """The slots of a process serving requests on `threads` threads (None: one per request):
    all but one, so a read always finds a thread; at least one, so a single thread still writes."""
    if threads is None:
        return THREAD_PER_REQUEST_SLOTS
    return max(1, threads - 1)


class WriterBulkhead:
    """Counts the write transactions under way in this process and refuses those beyond `slots`
    once the writers stop moving (see the module docstring)."""

    def __init__(self, slots: int, patience: float = PATIENCE) -> None:
        if slots < 1:
            raise ValueError(f"a bulkhead needs at least one slot, not {slots}")
        self.slots = slots
        self.patience = patience
        self._taken = 0
        self._moved = time.monotonic()
        self._stuck = False  # a writer waited out the lock timeout; cleared when one gets the lock
        self._changed = threading.Condition()

    @property
    def taken(self) -> int:
        """Write transactions under way in this process now."""
        return self._taken

    @contextmanager
    def slot(self) -> Iterator[Callable[[], None]]:
        """Hold a slot for one write transaction. Call the function it yields once the write lock
        is held; a slot given back without that call means the lock wait failed (the lock is stuck)."""
        self._enter()
        locked = False

        def got_lock() -> None:
            nonlocal locked
            locked = True
            with self._changed:
                self._moved = time.monotonic()
                self._stuck = False

        try:
            yield got_lock
        finally:
            with self._changed:
                self._taken -= 1
                if not locked:
                    self._stuck = True
                self._changed.notify()

    def _enter(self) -> None:
        with self._changed:
            while self._taken >= self.slots:
                remaining = 0.0 if self._stuck else self._moved + self.patience - time.monotonic()
                if remaining <= 0:
                    raise WritersQueued(
                        f"{self._taken} write transactions of this process already wait for the database's write lock"
                    )
                self._changed.wait(remaining)
            self._taken += 1
            if not self._stuck:
                self._moved = time.monotonic()
