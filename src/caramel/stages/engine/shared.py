"""Shared do's: run once per step, in the step's shared folder, when all its workpackages reached
it.

As JUBE does it: every workpackage of the step runs up to the shared do and waits; when all of
them are there (and every workpackage of the steps it depends on is done), the shared do runs
once, with the parameters of the last one to arrive minus its own `jube_wp_*` values, in
`<run dir>/<step>_<shared name>`; then each workpackage goes on with its next do. A shared do
that already ran (the step was partly removed and redone) is not run again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from caramel.errors import CaramelError
from caramel.stages.engine import materialise, recovery
from caramel.stages.engine.commands import command_for, shared_params
from caramel.stages.engine.script import Command, Outcome, Ran, Status, check_files, failure_reason
from caramel.stages.engine.workdir import shared_folder, wp_paths
from caramel.stages.expand import layout
from caramel.stages.state.rows import WpRow
from caramel.vocabulary import Role, WaitKind, WpState

if TYPE_CHECKING:
    from caramel.stages.engine.interface import EngineInterface
    from caramel.stages.expand.params import Params
    from caramel.stages.spec.model import Step


def depend_history(engine: EngineInterface, step_name: str) -> set[str]:
    seen: set[str] = set()
    todo = list(engine.bench.steps[step_name].depend)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += engine.bench.steps[name].depend
    return seen


def run_barriers(engine: EngineInterface, only: str | None = None) -> bool:
    """Run the shared do's whose workpackages all arrived (of step `only`, or of all steps);
    True when something moved."""
    moved = False
    for step_name, ids in engine.by_step.items():
        if only is not None and step_name != only:
            continue
        arrived = _arrived(engine, step_name, ids)
        if arrived is not None:
            _run(engine, step_name, *arrived)
            moved = True
    return moved


def _arrived(
    engine: EngineInterface, step_name: str, ids: list[int]
) -> tuple[list[WpRow], int, int] | None:
    """The workpackages of the step waiting at its first shared do, with that do's cycle and op,
    once every other workpackage of the step and of the steps it depends on is done (one failed:
    the shared do cannot run); else None."""
    at = engine.waiting_at(WaitKind.SHARED, step_name)
    if not at:
        return None
    cycle, op = min((wp.cycle, wp.wait_op) for wp in at)
    group = [wp for wp in at if (wp.cycle, wp.wait_op) == (cycle, op)]
    members = {wp.id for wp in group}
    upstream = (i for name in depend_history(engine, step_name) for i in engine.by_step[name])
    if not _all_done(engine, (i for i in ids if i not in members)):
        return None
    return (group, cycle, op) if _all_done(engine, upstream) else None


def _all_done(engine: EngineInterface, ids: Iterable[int]) -> bool:
    return all(engine.wps[i].state == WpState.DONE for i in ids)


def _run(engine: EngineInterface, step_name: str, group: list[WpRow], cycle: int, op: int) -> None:
    """The shared do `op` of `cycle` for the workpackages `group` that all arrived at it (unless it
    ran already, before a remove of some of them), then each of them moved on by its outcome."""
    step = engine.bench.steps[step_name]
    ran = None
    if engine.store.shared_state(step_name, cycle, op) != "done":
        ran = _run_shared_do(engine, step, group, cycle, op)
        if ran is None:
            return
    with engine.store.transaction():
        for wp in group:
            _move_on(engine, step, wp, ran, (cycle, op))
    engine.show_progress()


def _run_shared_do(
    engine: EngineInterface, step: Step, group: list[WpRow], cycle: int, op: int
) -> tuple[Command, Outcome] | None:
    """Run the shared do in its folder, in the environment of the workpackage that arrived last
    (or take its recorded end), and record it; None when it cannot be made (the group failed)."""
    store = engine.store
    trigger = max(group, key=lambda wp: (wp.wait_since or 0, wp.id))
    params = store.params(trigger.id)
    try:
        folder, command = _shared_command(engine, step, params, cycle, op)
    except CaramelError as exc:
        with store.transaction():
            for wp in group:
                engine.fail(wp, f"shared do {op + 1}: {exc}")
        return None
    env = store.env(trigger.id) or dict(engine.base_env)
    with store.transaction():
        store.set_shared_state(step.name, cycle, op, "running")
    outcome = _recorded(engine, step.name, command, folder) or engine.runner.run(
        [command],
        env,
        os.path.join(folder, layout.CARRY_FILE),
        dump_env=False,
        record=(recovery.record_file(folder), "shared"),
    )
    paths = wp_paths(engine.info.run_dir, trigger.dirname, step, params, engine.bench.home)
    materialise.write_do_log(
        step, paths, params, env, [command] if outcome.ran else [], shared=True
    )
    rows = engine.command_rows(trigger, [command], outcome)
    with store.transaction():
        store.add_commands(rows)
        if outcome.status in (Status.DONE, Status.BREAK, Status.WAITING):
            store.set_shared_state(step.name, cycle, op, "done")
    return command, outcome


def _shared_command(
    engine: EngineInterface, step: Step, params: Params, cycle: int, op: int
) -> tuple[str, Command]:
    """The step's shared folder (made) and its shared do there, substituted with `params`."""
    cycle_params = shared_params(params.at_cycle(cycle))
    located = shared_folder(engine.info.run_dir, step, params)
    assert located is not None
    folder = located[1]
    os.makedirs(folder, exist_ok=True)
    return folder, command_for(step.dos[op], op, cycle, cycle_params, folder, role=Role.SHARED)


def _move_on(
    engine: EngineInterface,
    step: Step,
    wp: WpRow,
    ran: tuple[Command, Outcome] | None,
    point: tuple[int, int],
) -> None:
    """`wp` after the shared do at `point` (cycle, op): on to its next do when the do succeeded or
    had run before (`ran` None), done at a break file, waiting for a done file, or failed."""
    if ran is None or ran[1].status == Status.DONE:
        engine.ready(wp, point[0], point[1] + 1)
        return
    command, outcome = ran
    if outcome.status == Status.BREAK:
        engine.mark_done(wp, [], engine.store.env(wp.id) if step.export else None)
    elif outcome.status == Status.WAITING:
        engine.move(
            wp,
            "wait",
            wait_kind=WaitKind.FILE,
            wait_since=time.time(),
            reason=f"waits for {command.done_file}",
            wait_files={
                "done": command.done_file,
                "error": command.error_file,
                "break": command.break_file,
            },
        )
    else:
        reason = (
            failure_reason(outcome, [command])
            if outcome.status == Status.FAILED
            else f"error file {command.error_file} found after the shared do"
        )
        engine.fail(wp, reason, outcome.exit_code)


def _recorded(
    engine: EngineInterface, step_name: str, command: Command, folder: str
) -> Outcome | None:
    """The outcome of a shared do that ended while bench was stopped (its shell recorded it), or
    None."""
    if not engine.was_running_shared(step_name, command.cycle, command.op):
        return None
    ended = recovery.last_ended(recovery.record_file(folder), "shared")
    if ended is None or (ended.cycle, ended.op) != (command.cycle, command.op):
        return None
    outcome = Outcome(
        Status.FAILED, 0, ended.status, [Ran(0, ended.when, ended.when, ended.status)]
    )
    return (
        outcome if ended.status else check_files(command, 0, Outcome(Status.DONE, ran=outcome.ran))
    )
