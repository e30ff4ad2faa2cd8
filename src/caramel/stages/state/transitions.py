"""The moves a workpackage's state may make: from which states, to which, what each resets, what it
records.

The one owner of state changes: the engine, `bench remove` and `bench cancel` all name a move here
(`Store.move`), never write a state themselves. A move from a state it does not start from is a bug
in caramel, not in the user's file: it raises `TransitionError` and the change does not happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from caramel.vocabulary import WaitKind, WpState

OPEN, RUNNING, WAITING = WpState.OPEN, WpState.RUNNING, WpState.WAITING

# Where a workpackage is in its step's do's: cleared when it starts over from the first do.
POSITION: Mapping[str, object] = {
    "cycle": 0,
    "wait_op": -1,
    "wait_kind": WaitKind.NONE,
    "wait_files": {},
    "env": None,
}
# Everything an attempt leaves behind: cleared for a new attempt (a start, a removal).
FRESH: Mapping[str, object] = {
    **POSITION,
    "reason": "",
    "exit_code": None,
    "job_id": "",
    "started": None,
    "ended": None,
    "wait_since": None,
}
# A wait that is over.
NOT_WAITING: Mapping[str, object] = {"reason": "", "wait_kind": WaitKind.NONE, "wait_files": {}}


class TransitionError(RuntimeError):
    """A state change the state machine does not allow (a bug in caramel, never the user's
    input)."""


@dataclass(frozen=True)
class Move:
    """One allowed change: from any of `sources` to `target`, setting `resets` (the caller's fields
    win) and recording an event of kind `event` (the target state when empty) when the state changes
    or the move always records one."""

    name: str
    sources: frozenset[WpState]
    target: WpState
    resets: Mapping[str, object] = field(default_factory=dict)
    event: str = ""
    always_record: bool = False

    @property
    def event_kind(self) -> str:
        return self.event or self.target


# "open" among the sources of wait, finish and fail: a workpackage bench was stopped in is left open
# ("interrupt"), and recovery then finds where its shell got to.
MOVES: dict[str, Move] = {
    move.name: move
    for move in (
        Move("start", frozenset({OPEN}), RUNNING, FRESH),  # a new attempt from the first do
        Move(
            "resume", frozenset({OPEN, WAITING}), RUNNING, NOT_WAITING
        ),  # goes on after a wait or a stop
        Move(
            "wait", frozenset({OPEN, RUNNING, WAITING}), WAITING
        ),  # for a done file, or the shared do
        Move(
            "finish",
            frozenset({OPEN, RUNNING, WAITING}),
            WpState.DONE,
            {**NOT_WAITING, "exit_code": 0},
        ),
        Move("fail", frozenset({OPEN, RUNNING, WAITING}), WpState.FAILED),
        Move(
            "cancel", frozenset({OPEN, WAITING}), WpState.CANCELLED
        ),  # a parent failed, or `bench cancel`
        Move(
            "reopen", frozenset({WpState.CANCELLED}), OPEN, {"reason": ""}
        ),  # the failed parent was removed
        Move(
            "interrupt", frozenset({RUNNING}), OPEN
        ),  # bench is stopping: recovery finds where it got to
        Move(
            "recover", frozenset({RUNNING, OPEN}), OPEN, POSITION
        ),  # after do N (the caller's), or from do 1
        Move(
            "remove", frozenset(WpState), OPEN, FRESH, event="removed", always_record=True
        ),  # `bench remove`
    )
}


def check(name: str, wp_id: int, state: str) -> Move:
    """The move `name` for a workpackage now in `state`; TransitionError when it may not make it."""
    move = MOVES.get(name)
    if move is None:
        raise TransitionError(f"no state move named {name!r} (moves: {', '.join(MOVES)})")
    if state not in move.sources:
        raise TransitionError(
            f"workpackage {wp_id} is {state}: the move {name!r} "
            f"({' or '.join(sorted(move.sources))} to {move.target}) does not start there"
        )
    return move
