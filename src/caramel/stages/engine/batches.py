"""The run state written in batches: one transaction for many workpackages' starts and ends.

While scripts end one after another, their state changes (start, end, command rows, load events)
gather in one `Store.batch` and are committed together: when BATCH_ENDS workpackages ended in it,
when it is BATCH_SECONDS old, before the engine blocks on something else (a prepare, a shared do,
a wait for a job) and before the engine returns. So a batch never holds the run state's write lock
while nothing ends, and `bench status` sees a change at most BATCH_SECONDS late.

Crash safety does not rest on the batch: each do's end is recorded by its shell before bench hears
of it (engine.recovery), and the files recovery reads (each do's carry file: what it exported) are
removed only once the batch that records the end is committed. A bench killed before a commit
leaves the batch's workpackages as the last commit did (`open`, or `running`), and the next run
goes on from those records: a workpackage whose start was not committed has records under its next
attempt (engine.restart.recover).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable

from caramel.stages.state.store import Store

BATCH_ENDS = 500  # workpackages that ended in one batch: then it is committed
BATCH_SECONDS = 0.5  # the oldest a batch gets before it is committed


class Batches:
    """The open batch of the run's store, if any (`open`, `commit`, `ended`)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._stack: contextlib.ExitStack | None = None
        self._since = 0.0
        self._ends = 0
        self._leftovers: list[str] = []  # files to remove once the open batch is committed

    def open(self) -> None:
        """Gather the writes that follow in a batch (one already open goes on)."""
        if self._stack is not None:
            return
        stack = contextlib.ExitStack()
        stack.enter_context(self.store.batch())
        self._stack, self._since, self._ends = stack, time.monotonic(), 0

    def commit(self) -> None:
        """Write and commit what was gathered (nothing open: nothing to do)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        self._remove(self._leftovers)
        self._leftovers = []

    def remove_after_commit(self, paths: Iterable[str]) -> None:
        """Remove these files once what the open batch gathered is committed (at once without one):
        a bench that dies before recovers from them (engine.recovery)."""
        if self._stack is None:
            self._remove(paths)
        else:
            self._leftovers.extend(paths)

    @staticmethod
    def _remove(paths: Iterable[str]) -> None:
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def abandon(self) -> None:
        """Forget the open batch without writing it: an interruption came inside a change (the
        records tell what ended, engine.recovery); the store's transaction is rolled back apart."""
        stack, self._stack = self._stack, None
        self._leftovers = []  # kept: the next run recovers from them
        if stack is not None:
            with contextlib.suppress(BaseException):
                stack.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)

    def ended(self, count: int) -> None:
        """`count` workpackages ended in the open batch: commit it when it is full or old."""
        self._ends += count
        if self._ends >= BATCH_ENDS or time.monotonic() - self._since >= BATCH_SECONDS:
            self.commit()

    def left(self) -> float | None:
        """Seconds the open batch may still wait for a script to end (None: none is open)."""
        if self._stack is None:
            return None
        return max(0.0, BATCH_SECONDS - (time.monotonic() - self._since))
