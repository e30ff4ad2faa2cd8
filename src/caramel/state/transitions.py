"""The moves a workpackage's state may make: from which states, to which, what each resets, what it records.

The one owner of state changes: the engine, `bench remove` and `bench cancel` all name a move here
(`Store.move`), never write a state themselves. A move from a state it does not start from is a bug in
caramel, not in the user's file: it raises `TransitionError` and the change does not happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from caramel.vocabulary import STATES

# Where a workpackage is in its step's do's: cleared when it starts over from the first do.
POSITION: Mapping[str, object] = {"cycle": 0, "wait_op": -1, "wait_kind": "", "wait_files": {}, "env": None}
# Everything an attempt leaves behind: cleared for a new attempt (a start, a removal).
FRESH: Mapping[str, object] = {**POSITION, "reason": "", "exit_code": None, "job_id": "", "started": None,
                               "ended": None, "wait_since": None}
# A wait that is over.
NOT_WAITING: Mapping[str, object] = {"reason": "", "wait_kind": "", "wait_files": {}}


class TransitionError(RuntimeError):
    """A state change the state machine does not allow (a bug in caramel, never the user's input)."""


@dataclass(frozen=True)
class Move:
    """One allowed change: from any of `sources` to `target`, setting `resets` (the caller's fields win)
    and recording an event of kind `event` (the target state when empty) when the state changes or the
    move always records one."""

    name: str
    sources: frozenset[str]
    target: str
    resets: Mapping[str, object] = field(default_factory=dict)
    event: str = ""
    always_record: bool = False

    @property
    def event_kind(self) -> str:
        return self.event or self.target


# "open" among the sources of wait, finish and fail: a workpackage bench was stopped in is left open
# ("interrupt"), and recovery then finds where its shell got to.
MOVES: dict[str, Move] = {move.name: move for move in (
    Move("start", frozenset({"open"}), "running", FRESH),  # a new attempt from the first do
    Move("resume", frozenset({"open", "waiting"}), "running", NOT_WAITING),  # goes on after a wait or a stop
    Move("wait", frozenset({"open", "running", "waiting"}), "waiting"),  # for a done file, or the shared do
    Move("finish", frozenset({"open", "running", "waiting"}), "done", {**NOT_WAITING, "exit_code": 0}),
    Move("fail", frozenset({"open", "running", "waiting"}), "failed"),
    Move("cancel", frozenset({"open", "waiting"}), "cancelled"),  # a parent failed, or `bench cancel`
    Move("reopen", frozenset({"cancelled"}), "open", {"reason": ""}),  # the failed parent was removed
    Move("interrupt", frozenset({"running"}), "open"),  # bench is stopping: recovery finds where it got to
    Move("recover", frozenset({"running", "open"}), "open", POSITION),  # after do N (the caller's), or from do 1
    Move("remove", frozenset(STATES), "open", FRESH, event="removed", always_record=True),  # `bench remove`
)}
assert all(move.target in STATES and move.sources <= set(STATES) for move in MOVES.values())


def check(name: str, wp_id: int, state: str) -> Move:
    """The move `name` for a workpackage now in `state`; TransitionError when it may not make it."""
    move = MOVES.get(name)
    if move is None:
        raise TransitionError(f"no state move named {name!r} (moves: {', '.join(MOVES)})")
    if state not in move.sources:
        raise TransitionError(f"workpackage {wp_id} is {state}: the move {name!r} ({' or '.join(sorted(move.sources))}"
                              f" to {move.target}) does not start there")
    return move
