"""Starting a workpackage: its parameters, work folder and environment (from its parents' or from
where it waited), its filesets' prepares, then its commands from the do it goes on from: handed to
a shell (engine.runner), or written for the step's queued jobs or batch of calls (engine.arrays,
engine.call_batch). The start is recorded (state move, the node's load) before anything runs.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caramel.errors import CaramelError
from caramel.stages.engine import arrays, call_batch, copies, ending, materialise, recovery
from caramel.stages.engine.commands import segment
from caramel.stages.engine.script import Command, Outcome, Status
from caramel.stages.engine.workdir import WpPaths, wp_paths
from caramel.stages.expand import layout
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Step
from caramel.stages.state.rows import CommandRow, WpRow
from caramel.stages.state.store import Store

if TYPE_CHECKING:
    from caramel.stages.engine.engine import Engine

BATCH_STARTS = 1000  # workpackages that only write their job script, started in one transaction


@dataclass
class Started:
    """What the engine keeps about a workpackage whose script is running."""

    wp: WpRow
    step: Step
    params: Params
    paths: WpPaths
    env: dict[str, str]
    shared_stop: tuple[int, int] | None = None
    rows: list[CommandRow] = field(
        default_factory=list
    )  # prepare commands, recorded with the end state


@dataclass
class StartBatch:
    """Workpackages that only write their job script, started in one batch of the store (up to
    BATCH_STARTS of them, then the next batch)."""

    store: Store
    stack: contextlib.ExitStack  # holds the open batch
    count: int = 0

    def add(self) -> None:
        if self.count >= BATCH_STARTS:
            self.close()
        if not self.count:
            self.stack.enter_context(self.store.batch())
        self.count += 1

    def close(self) -> None:
        """Commit the batch's changes (nothing when none is open)."""
        self.stack.close()
        self.count = 0


def start(engine: Engine, wp: WpRow, step: Step) -> None:
    """Start `wp`: where it waited, with the environment stored then; else as a new attempt (its
    parents' exports, its work folder made, its prepares run). What cannot start fails."""
    params = engine.store.params(wp.id)
    params.setdefault("jube_wp_status", "RUNNING")  # JUBE's value while the workpackage runs
    try:
        paths = wp_paths(engine.info.run_dir, wp.dirname, step, params, engine.bench.home)
    except CaramelError as exc:
        with engine.store.transaction():
            engine.fail(wp, str(exc))
        return
    if wp.id in engine.resume_at:
        cycle, op = engine.resume_at.pop(wp.id)
        with engine.store.transaction():
            engine.move(wp, "resume")
        stored = engine.store.env(wp.id)
        env = (
            materialise.with_secrets(stored, engine.base_env)
            if stored
            else materialise.initial_env(engine.base_env, [], params)
        )
        started = Started(wp, step, params, paths, env)
    else:
        cycle, op = 0, 0
        prepared = engine.prepared.pop(
            wp.id, 0
        )  # prepares that ended in the attempt bench was stopped in
        with engine.store.transaction():
            # going on after recorded prepares is the same attempt: their records stay its own
            engine.move(
                wp, "start", attempt=wp.attempt + (0 if prepared else 1), started=time.time()
            )
            engine.record_load(wp, "start")
        parent_envs = [
            {**(engine.store.env(p) or {}), **engine.exported_secrets.get(p, {})}
            for p in wp.parents
            if engine.bench.steps[engine.wps[p].step].export
        ]
        env = materialise.initial_env(engine.base_env, parent_envs, params)
        started = Started(wp, step, params, paths, env)
        links = [
            (engine.wps[p].step, layout.work_folder(engine.info.run_dir, engine.wps[p].dirname))
            for p in wp.parents
        ]
        try:
            started.env = materialise.materialise(
                engine.bench,
                step,
                params,
                paths,
                engine.info.run_dir,
                links,
                env,
                lambda cmd, e: _prepare(engine, started, cmd, e),
                prepared,
            )
        except (CaramelError, OSError) as exc:
            with engine.store.transaction():
                engine.fail(wp, f"cannot prepare the work folder: {exc}", rows=started.rows)
            return
    _launch(engine, started, cycle, op)


def _prepare(engine: Engine, started: Started, command: Command, env: dict[str, str]) -> Outcome:
    """Run one prepare; its shell records its end (exactly once, as a do: engine.recovery), and
    so does the run's store, at once."""
    wp = started.wp
    engine.batches.commit()  # its start is in the run state before it runs (engine.restart)
    outcome = engine.runner.run(
        [command],
        env,
        started.paths.carry_file,
        dump_env=True,
        record=(engine.record_file, recovery.prepare_tag(wp.id, wp.attempt)),
    )
    with engine.store.transaction():
        engine.store.add_commands(ending.command_rows(wp, [command], outcome))
    return outcome


def _launch(engine: Engine, started: Started, cycle: int, op: int) -> None:
    """Run `started`'s commands from do `op` of `cycle` on: in a shell, or written for the
    step's queued jobs or batch of calls (engine.arrays, engine.call_batch)."""
    wp, step = started.wp, started.step
    try:
        limit = engine.settings.limit_for(engine.bench, step)
        queue_later = arrays.queues_later(engine, wp, step)
        seg = segment(
            engine.bench, step, started.params, started.paths.base, cycle, op, limit, queue_later
        )
    except CaramelError as exc:
        with engine.store.transaction():
            engine.fail(wp, str(exc), rows=started.rows)
        return
    started.shared_stop = seg.shared_stop
    engine.started[wp.id] = started
    if not seg.commands:
        ending.finish(engine, wp.id, Outcome(Status.DONE), [])
    elif queue_later and (step.submit or step.call):
        ending.finish(
            engine, wp.id, _write_for_later(engine, started, seg.commands[0]), seg.commands, False
        )
    else:
        _run_in_shell(engine, started, seg.commands, limit)


def _write_for_later(engine: Engine, started: Started, first: Command) -> Outcome:
    """A submit step's job script (engine.arrays queues it) or a call step's call (engine.
    call_batch submits the step's batch), written here."""
    if started.step.submit:
        return arrays.write_job(engine, started.wp, first)
    return call_batch.write_call(first)


def _run_in_shell(engine: Engine, started: Started, commands: list[Command], limit: float) -> None:
    """Hand `commands` to a shell (placed on its cores and devices where the step asks)."""
    wp, step = started.wp, started.step
    place = copies.placement(step, started.params, copies.device_count(engine.bench))
    env = dict(started.env, **place.env) if place else started.env
    engine.runner.start(
        wp.id,
        commands,
        env,
        started.paths.carry_file,
        dump_env=step.export or started.shared_stop is not None,
        limit=0.0 if step.submit else limit,
        cpus=place.cpus if place else None,
        record=(engine.record_file, recovery.wp_tag(wp.id, wp.attempt)),
    )
    engine.running_step = wp.step
    engine.progress.watch(wp.dirname, started.paths.base)
    engine.progress.update(dict(engine.counts))
