"""What a bench that stopped left behind: workpackages it was running go on from their shells'
records (engine.recovery), dependants of failures are cancelled, and a bench being stopped leaves
none running.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

from caramel.errors import CaramelError
from caramel.stages.engine import recovery, waiting
from caramel.stages.engine.commands import command_for, segment
from caramel.stages.engine.script import Command, Status
from caramel.stages.engine.workdir import WpPaths, wp_paths
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Step
from caramel.stages.state.rows import CommandRow, WpRow
from caramel.vocabulary import WpState

if TYPE_CHECKING:
    from caramel.stages.engine.interface import EngineInterface


def recover(engine: EngineInterface) -> set[tuple[str, int, int]]:
    """Workpackages left `running` by a bench that died, or stopped by an interruption, go on after
    the last do their shell recorded as ended; from scratch when none had ended. So does an `open`
    one whose shell recorded do's of its next attempt: a bench that died before committing the
    batch that started it (engine.batches). Returns the shared do's (step, cycle, op) a bench was
    running: their shells' records tell whether they ended."""
    ended = recovery.read_ended(engine.record_file) if _may_have_records(engine) else {}
    with engine.store.transaction():
        for wp in list(engine.wps.values()):
            following = ended.get(recovery.wp_tag(wp.id, wp.attempt + 1))
            if wp.state == WpState.OPEN and following is not None:
                # a start in a batch a dead bench never committed (engine.batches): nothing else
                # runs an attempt the store has not counted; it is the attempt the records name
                engine.move(wp, "start", attempt=wp.attempt + 1, started=following.when)
            elif not _stale(wp):
                continue
            tag = recovery.wp_tag(wp.id, wp.attempt)
            if tag not in ended and recovery.prepare_tag(wp.id, wp.attempt) in ended:
                _after_prepares(engine, wp, ended[recovery.prepare_tag(wp.id, wp.attempt)])
                continue
            _recover_one(engine, wp, ended.get(tag))
        # a shared do bench was running: shared._run reads whether its shell recorded its end
        return engine.store.take_running_shared()


def _stale(wp: WpRow) -> bool:
    """`running` (bench died), or stopped by an interruption."""
    return wp.state == WpState.RUNNING or (
        wp.state == WpState.OPEN and wp.attempt > 0 and wp.reason.startswith(recovery.INTERRUPTED)
    )


def _may_have_records(engine: EngineInterface) -> bool:
    """Whether the run's record file may tell anything (it is read only then): a workpackage is
    `running`, or `open` after a start of its own or of a parent that a bench may not have
    committed."""
    return engine.counts[WpState.RUNNING] + engine.counts[WpState.OPEN] > 0 and os.path.exists(
        engine.record_file
    )


def _recover_one(engine: EngineInterface, wp: WpRow, ended: recovery.Ended | None) -> None:
    step = engine.bench.steps[wp.step]
    params = engine.store.params(wp.id)
    params.setdefault("jube_wp_status", "RUNNING")
    try:
        paths = wp_paths(engine.info.run_dir, wp.dirname, step, params, engine.bench.home)
    except CaramelError:
        ended = None
    if ended is None:
        engine.move(
            wp,
            "recover",
            reason=f"{recovery.INTERRUPTED}: bench ended while it ran; it starts again",
        )
        return
    cmd = _recorded_command(engine, step, params, paths, ended)
    outcome = recovery.outcome_of(cmd, paths, ended)
    rows = [
        CommandRow(
            wp.id,
            wp.attempt,
            cmd.cycle,
            cmd.op,
            cmd.role,
            cmd.text,
            cmd.cwd,
            ended.status,
            None,
            ended.when,
        )
    ]
    env = outcome.env or engine.store.env(wp.id)
    note = "(its end was recorded by its shell while bench stopped)"
    if outcome.status == Status.FAILED:
        engine.fail(
            wp, f"do {cmd.op + 1} exited with {ended.status}: {cmd.text} {note}", ended.status, rows
        )
    elif outcome.status == Status.ERROR_FILE:
        engine.fail(
            wp, f"error file {cmd.error_file} found after do {cmd.op + 1} {note}", rows=rows
        )
    elif outcome.status == Status.WAITING:
        waiting.wait_for_done_file(engine, wp, cmd, paths.base, ended.when, env)
        engine.store.add_commands(rows)
    elif outcome.status == Status.BREAK:
        engine.mark_done(wp, rows, env if step.export else None)
    else:
        engine.move(
            wp,
            "recover",
            reason=f"{recovery.INTERRUPTED}: goes on after do {cmd.op + 1}, which ended",
            cycle=cmd.cycle,
            wait_op=cmd.op,
            env=env,
        )
        engine.store.add_commands(rows)
        engine.ready(wp, cmd.cycle, cmd.op + 1)


def _after_prepares(engine: EngineInterface, wp: WpRow, ended: recovery.Ended) -> None:
    """No do of the attempt ended, but prepares did (their shells recorded it): they are not run
    again. A failed one fails the workpackage; else it goes on after the last that ended, in its
    folder."""
    if ended.status != 0:
        engine.fail(
            wp,
            f"prepare {ended.op + 1} exited with {ended.status} (its end was recorded by its shell "
            "while bench stopped)",
            ended.status,
        )
        return
    engine.move(
        wp,
        "recover",
        reason=f"{recovery.INTERRUPTED}: goes on after prepare {ended.op + 1}, which ended",
    )
    engine.after_prepares(wp, ended.op + 1)


def _recorded_command(
    engine: EngineInterface, step: Step, params: Params, paths: WpPaths, ended: recovery.Ended
) -> Command:
    """The do whose end was recorded, as its script ran it (a submit step's is its job's
    submission)."""
    if step.submit:
        return segment(engine.bench, step, params, paths.base, 0, 0).commands[0]
    cycle_params = params.at_cycle(ended.cycle)
    return command_for(step.dos[ended.op], ended.op, ended.cycle, cycle_params, paths.base)


def settle_cancelled(engine: EngineInterface) -> None:
    """Cancel what depends on a failure; reopen what was cancelled for a failure since removed."""
    with engine.store.transaction():
        for wp_id in sorted(engine.wps):
            wp = engine.wps[wp_id]
            if wp.state not in (WpState.OPEN, WpState.CANCELLED):
                continue
            bad = [
                p for p in wp.parents if engine.wps[p].state in (WpState.FAILED, WpState.CANCELLED)
            ]
            if bad and wp.state == WpState.OPEN:
                engine.move(
                    wp, "cancel", reason=f"not run: workpackage {bad[0]} failed or was not run"
                )
            elif not bad and wp.state == WpState.CANCELLED and wp.reason.startswith("not run"):
                # cancelled for a parent's failure that was since removed; not one cancelled by the
                # user
                engine.move(wp, "reopen")


def stop(engine: EngineInterface, spare: str = "") -> None:
    """bench is stopping (Ctrl-C, SIGTERM): end running scripts (their shells record the do's that
    finished), and leave no workpackage `running`: the next continue goes on from the records."""
    try:
        stopped = engine.runner.kill_all()
    except Exception:  # whatever the interruption left half done: the shells' watchers end the rest
        stopped = []
    reason = f"{recovery.INTERRUPTED}: bench was stopped while it ran"
    problem: Exception | None = None
    for _attempt in range(2):
        try:
            # the interruption came inside a change: it did not happen
            engine.store.abandon_transaction()
            with engine.store.transaction():
                engine.store.interrupt_running(reason, [entry.key for entry, _outcome in stopped])
            return
        except (
            Exception
        ) as exc:  # a full disk: the space kept for this moment (else the records still tell)
            problem = exc
            recovery.release(spare)
            with contextlib.suppress(Exception):
                engine.store.checkpoint()
    # Said, not hidden: the run state still shows `running`, and the next continue recovers those
    # workpackages from their shells' records as after a bench that died.
    print(
        f"warning: bench could not record that it stopped ({problem}); `bench continue` recovers "
        "the "
        "workpackages it was running from their shells' records",
        file=sys.stderr,
    )
