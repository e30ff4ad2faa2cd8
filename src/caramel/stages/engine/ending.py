"""Ending a workpackage: what its script's outcome records (done, waiting for a done file or for
its step's shared do, failed, an error file found), its commands' records and its do log, in one
transaction of the run state; its carried environment files removed once that is committed
(engine.batches). The last workpackage of a step to reach its shared do runs it at once.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from caramel.stages.engine import materialise, shared, waiting
from caramel.stages.engine.call import call_failure
from caramel.stages.engine.script import Command, Outcome, Status, carry_path, failure_reason
from caramel.stages.state.rows import CommandRow, WpRow
from caramel.vocabulary import WaitKind

if TYPE_CHECKING:
    from caramel.stages.engine.engine import Engine
    from caramel.stages.engine.starting import Started


@dataclass
class Ended:
    """A workpackage whose script ended, as Engine._finish records it."""

    started: Started
    outcome: Outcome
    commands: list[Command]
    rows: list[CommandRow]  # its commands' records (its prepares' too)
    env: dict[str, str]  # the environment it ended with
    shell: bool  # its commands ran in a shell (not a job script written for engine.arrays)

    def named_command(self) -> Command:
        """The command the outcome names (the do whose done file is missing, or whose error file
        was found)."""
        assert self.outcome.index is not None  # the script names it
        return self.commands[self.outcome.index]


def finish(
    engine: Engine, wp_id: int, outcome: Outcome, commands: list[Command], shell: bool = True
) -> None:
    """`shell`: the commands ran in a shell (False: engine.arrays wrote the job script here, and
    no job id nor carried environment can be in its files)."""
    started = engine.started.pop(wp_id)
    engine.progress.forget(started.wp.dirname)
    rows = started.rows + command_rows(started.wp, commands, outcome)
    materialise.write_do_log(
        started.step,
        started.paths,
        started.params,
        started.env,
        [commands[r.index] for r in outcome.ran],
    )
    env = outcome.env if outcome.env is not None else started.env
    ended = Ended(started, outcome, commands, rows, env, shell)
    with engine.store.transaction():
        barrier = ENDINGS.get(outcome.status, _failed)(engine, ended)
    # The environment does not stay on disk; only once the end is committed (engine.batches): a
    # stop before that recovers from the shells' records, which need these files.
    carried = [carry_path(started.paths.carry_file, c) for c in commands] if shell else []
    if engine.has_prepares:
        carried += glob.glob(glob.escape(started.paths.carry_file) + ".prepare.*")
    engine.batches.remove_after_commit(carried)
    engine.progress.update(dict(engine.counts))
    if barrier:
        engine.batches.commit()  # the shared do runs now, and may take long
        shared.run_barriers(engine, only=started.step.name)


# Each `ENDINGS` entry records how a script ended (inside the store's transaction) and says
# whether the step's shared do may run now.
def _done(engine: Engine, ended: Ended) -> bool:
    """Every do ran, or a break file ended the workpackage: done, unless it stopped before
    its step's shared do."""
    wp, step = ended.started.wp, ended.started.step
    if ended.outcome.status == Status.DONE and ended.started.shared_stop is not None:
        return _at_shared_do(engine, ended, ended.started.shared_stop)
    engine.mark_done(wp, ended.rows, ended.env if step.export else None)
    return False


def _at_shared_do(engine: Engine, ended: Ended, shared_stop: tuple[int, int]) -> bool:
    """`ended` waits for the other workpackages of its step at the shared do `shared_stop`."""
    wp, step = ended.started.wp, ended.started.step
    cycle, op = shared_stop
    engine.move(
        wp,
        "wait",
        cycle=cycle,
        wait_op=op,
        wait_kind=WaitKind.SHARED,
        wait_files={},
        wait_since=time.time(),
        env=ended.env,
        reason=(f"waits for the other workpackages of step '{step.name}' (shared do {op + 1})"),
    )
    engine.store.add_commands(ended.rows)
    # The last one to arrive runs the shared do at once, as in JUBE (not after whatever else
    # could start meanwhile).
    return engine.settled[step.name] == len(engine.by_step[step.name])


def _waits(engine: Engine, ended: Ended) -> bool:
    """A done file is missing: the workpackage waits for it (and for the job its do submitted,
    followed through the scheduler)."""
    wp, step, cmd = ended.started.wp, ended.started.step, ended.named_command()
    job = engine.backend.scheduler.job_id_in(cmd.stdout) if ended.shell else ""
    waiting.wait_for_done_file(
        engine, wp, cmd, ended.started.paths.base, time.time(), ended.env, job
    )
    engine.store.add_commands(ended.rows)
    if job and step.submit:
        engine.queue_children(wp)  # a submit step after this one queues its job at once
    return False


def _error_file(engine: Engine, ended: Ended) -> bool:
    cmd = ended.named_command()
    where = os.path.relpath(cmd.error_file, ended.started.paths.base)
    engine.fail(
        ended.started.wp,
        f"error file {where} found after do {cmd.op + 1}: {cmd.text}",
        rows=ended.rows,
    )
    return False


def _failed(engine: Engine, ended: Ended) -> bool:
    outcome, commands = ended.outcome, ended.commands
    reason = call_failure(outcome, commands) or failure_reason(outcome, commands)
    engine.fail(ended.started.wp, reason, outcome.exit_code, ended.rows)
    return False


ENDINGS: dict[Status, Callable[[Engine, Ended], bool]] = {
    Status.DONE: _done,
    Status.BREAK: _done,
    Status.WAITING: _waits,
    Status.ERROR_FILE: _error_file,
}


def command_rows(wp: WpRow, commands: list[Command], outcome: Outcome) -> list[CommandRow]:
    return [
        CommandRow(
            wp.id,
            wp.attempt,
            commands[r.index].cycle,
            commands[r.index].op,
            commands[r.index].role,
            commands[r.index].text,
            commands[r.index].cwd,
            r.exit_code,
            r.started,
            r.ended,
        )
        for r in outcome.ran
    ]
