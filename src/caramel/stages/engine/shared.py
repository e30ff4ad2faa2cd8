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
        at = engine.waiting_at(WaitKind.SHARED, step_name)
        if not at:
            continue
        point = min((wp.cycle, wp.wait_op) for wp in at)
        group = [wp for wp in at if (wp.cycle, wp.wait_op) == point]
        members = {wp.id for wp in group}
        if any(engine.wps[i].state != WpState.DONE for i in ids if i not in members):
            continue  # not all there yet (or one failed: then the shared do cannot run)
        if any(
            engine.wps[i].state != WpState.DONE
            for name in depend_history(engine, step_name)
            for i in engine.by_step[name]
        ):
            continue
        _run(engine, step_name, group, *point)
        moved = True
    return moved


def _run(engine: EngineInterface, step_name: str, group: list[WpRow], cycle: int, op: int) -> None:
    step = engine.bench.steps[step_name]
    store = engine.store
    outcome = None
    command = None
    if store.shared_state(step_name, cycle, op) != "done":
        trigger = max(group, key=lambda wp: (wp.wait_since or 0, wp.id))
        params = store.params(trigger.id)
        try:
            cycle_params = shared_params(params.at_cycle(cycle))
            located = shared_folder(engine.info.run_dir, step, params)
            assert located is not None
            folder = located[1]
            os.makedirs(folder, exist_ok=True)
            command = command_for(step.dos[op], op, cycle, cycle_params, folder, role=Role.SHARED)
        except CaramelError as exc:
            with store.transaction():
                for wp in group:
                    engine.fail(wp, f"shared do {op + 1}: {exc}")
            return
        env = store.env(trigger.id) or dict(engine.base_env)
        with store.transaction():
            store.set_shared_state(step_name, cycle, op, "running")
        outcome = _recorded(engine, step_name, command, folder) or engine.runner.run(
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
                store.set_shared_state(step_name, cycle, op, "done")
    with store.transaction():
        for wp in group:
            if outcome is None or outcome.status == Status.DONE:
                engine.ready(wp, cycle, op + 1)
            elif outcome.status == Status.BREAK:
                engine.mark_done(wp, [], store.env(wp.id) if step.export else None)
            elif outcome.status == Status.WAITING:
                assert command is not None
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
                assert command is not None
                reason = (
                    failure_reason(outcome, [command])
                    if outcome.status == Status.FAILED
                    else f"error file {command.error_file} found after the shared do"
                )
                engine.fail(wp, reason, outcome.exit_code)
    engine.show_progress()


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
