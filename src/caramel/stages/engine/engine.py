"""The engine: runs a stored run's workpackages in dependency order until nothing more can run.

Order is JUBE's: the lowest workpackage id whose parents are done goes first (the plan numbers
workpackages in JUBE's queue order). One workpackage at a time, unless its step has `procs=N`:
then up to N of that step's workpackages run together. `max_async=N` holds back new workpackages
of a step while N of them are started and not done (running, or waiting for a done file).

The state changes of workpackages whose scripts end one after another are committed in batches
(engine.batches), other changes one transaction each; a workpackage found `running` when the
engine starts (bench was killed), or stopped by an interruption, or whose start a killed bench
had not committed, goes on after the last do its shell recorded as ended (engine.recovery), or
starts again from scratch when none had ended.

This module is the loop and the engine's bookkeeping (its counts, its queue, the state moves);
starting a workpackage is engine.starting, recording how it ended engine.ending.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

from caramel.adapters.backends import Backend
from caramel.stages.engine import (
    arrays,
    batches,
    ending,
    loadavg,
    materialise,
    recovery,
    restart,
    shared,
    starting,
    waiting,
)
from caramel.stages.engine.commands import check_step, final_text
from caramel.stages.engine.progress import Progress
from caramel.stages.engine.runner import Runner
from caramel.stages.engine.script import Command, Outcome
from caramel.stages.engine.settings import Settings, Summary
from caramel.stages.engine.starting import Started
from caramel.stages.spec.model import Benchmark, Step
from caramel.stages.state.rows import CommandRow, WpRow
from caramel.stages.state.store import Store
from caramel.vocabulary import ACTIVE_STATES, WaitKind, WpState


class Engine:
    def __init__(
        self,
        store: Store,
        backend: Backend,
        settings: Settings | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.store = store
        self.info = store.info()
        self.bench = store.model()
        self.backend = backend
        self._version = (
            0  # grows with every state change: a poll with nothing new since the last is skipped
        )
        self._checked_version = -1
        self.settings = settings or Settings()
        self.progress = progress or Progress()
        self.base_env = dict(os.environ)
        # the secrets an export: step's do's exported, by workpackage: the stored environment leaves
        # them out (caramel.redact), its children of this bench still get them (few: most are empty)
        self.exported_secrets: dict[int, dict[str, str]] = {}
        self.runner = Runner(backend.launcher, self.base_env)
        self.batches = batches.Batches(store)
        self.load = loadavg.Sampler()  # the node's load, recorded at each start and end
        self.wps: dict[int, WpRow] = {row.id: row for row in store.workpackages()}
        self.children, self.by_step = _graph(self.wps.values())
        self.counts: Counter[str] = Counter(wp.state for wp in self.wps.values())
        self.inflight = Counter(wp.step for wp in self.wps.values() if wp.state in ACTIVE_STATES)
        # per step: workpackages done or waiting at a shared do (all of them: the shared do may run)
        self.settled = Counter(wp.step for wp in self.wps.values() if _settled(wp))
        self._heap: list[int] = []
        self.resume_at: dict[
            int, tuple[int, int]
        ] = {}  # waiting workpackage -> (cycle, op) to go on from
        self.deferred: dict[str, list[int]] = defaultdict(list)  # held back by max_async
        self.started: dict[int, Started] = {}
        self.running_step: str | None = None
        self._shared_interrupted: set[tuple[str, int, int]] = set()
        self.prepared: dict[
            int, int
        ] = {}  # workpackage -> prepares its stopped attempt ended (engine.restart)
        self.record_file = recovery.record_file(
            self.info.run_dir
        )  # where the shells record each do's end
        self.job_resources: dict[
            int, tuple[str, ...]
        ] = {}  # engine.arrays: the scripts written, not queued
        self.has_prepares = _has_prepares(self.bench)
        # engine.rounds (`--repeat auto`): the open workpackages it holds back stay open for a
        # later run()
        self.hold: Callable[[WpRow], bool] | None = None
        self._failed_before = (
            0  # failed workpackages when run() began (settings.stop_after_failure)
        )

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> Summary:
        """Run what can run, then close the shells; a further call (engine.rounds: the next repeat)
        opens new ones."""
        self._begin()
        spare = recovery.reserve(self.info.run_dir)
        try:
            while self._advance():
                pass
        except BaseException:
            self.batches.abandon()
            restart.stop(self, spare)
            raise
        finally:
            self.progress.stop()
            self.runner.close()
            recovery.release(spare)
        return self.summary()

    def _begin(self) -> None:
        """Before the loop: shells, the steps checked, what a stopped bench left recovered, the
        open workpackages that may start queued, the waiting ones checked, the progress shown."""
        if self.runner.closed:
            self.runner = Runner(self.backend.launcher, self.base_env)
        for step in self.bench.steps.values():
            check_step(step)
        self._shared_interrupted = restart.recover(self)
        restart.settle_cancelled(self)
        self._heap = [
            wp.id
            for wp in self.wps.values()
            if wp.state == WpState.OPEN and arrays.may_start(self, wp)
        ]
        heapq.heapify(self._heap)
        self._failed_before = self.counts[WpState.FAILED]
        waiting.check(self)
        self.progress.start(
            f"{self.info.benchmark} {self.info.run_id:06d}", dict(self.counts), self.bench.meta
        )

    def _advance(self) -> bool:
        """One turn of the loop: start what may start, then record what ended; with nothing
        running, submit the queued jobs, run the shared do's, check the waiting workpackages.
        False when none of that moved anything: the run is as far as it can get."""
        self._fill()
        if self.runner:
            self._record_ended()
            return True
        self.batches.commit()
        self.running_step = None
        return arrays.submit_waiting(self) or shared.run_barriers(self) or waiting.check(self)

    def _record_ended(self) -> None:
        """Wait for scripts to end (no longer than the open batch may stay open) and record them."""
        ended = self.runner.wait(self.batches.left())
        if not ended:  # nothing ended for a while: what did is committed meanwhile
            self.batches.commit()
        else:
            self.batches.open()
        for active, outcome in ended:
            ending.finish(self, active.key, outcome, active.commands)
        self.batches.ended(len(ended))

    def _fill(self) -> None:
        """Start what may start now: one workpackage, or up to `procs` of one step. Workpackages
        that only write their job script (engine.arrays) start in one batch of the store, up to
        starting.BATCH_STARTS of them (a thousand workpackages' state changes in one commit of three
        statements, not five statements each: Store.batch)."""
        with contextlib.ExitStack() as stack:
            starts = starting.StartBatch(self.store, stack)
            while self._heap:
                wp = self.wps[self._heap[0]]
                if not self._may_start(wp):
                    heapq.heappop(self._heap)  # a stale entry, or held back
                    continue
                step = self.bench.steps[wp.step]
                if self._runner_busy(wp, step):
                    return
                heapq.heappop(self._heap)
                if wp.state == WpState.OPEN and not self._async_slot(wp, step):
                    self.deferred[wp.step].append(wp.id)
                    continue
                if self._only_writes(wp, step):
                    starts.add()
                else:
                    starts.close()  # commits what the batch changed
                    self.batches.open()
                starting.start(self, wp, step)

    def _may_start(self, wp: WpRow) -> bool:
        """Whether the heap's `wp` is one to start: open and not held back, or waiting with a
        place to go on from (any other entry is stale)."""
        if wp.state == WpState.WAITING:
            return wp.id in self.resume_at
        return wp.state == WpState.OPEN and not self._held(wp)

    def _runner_busy(self, wp: WpRow, step: Step) -> bool:
        """Whether scripts run that `wp` may not join: another step's, or `procs` of its own."""
        return bool(self.runner) and (
            wp.step != self.running_step or len(self.runner) >= step.procs
        )

    def _held(self, wp: WpRow) -> bool:
        """Whether the open `wp` stays open in this run(): one failed since it began and `-e` asks
        to stop after a failure (JUBE's exit on error), or engine.rounds holds it back."""
        if self.settings.stop_after_failure and self.counts[WpState.FAILED] > self._failed_before:
            return True
        return self.hold is not None and self.hold(wp)

    def _only_writes(self, wp: WpRow, step: Step) -> bool:
        """Whether starting `wp` runs nothing: it writes its job script, which engine.arrays queues
        (no prepare of a fileset runs a shell meanwhile; a stop before the commit starts it
        again)."""
        return (
            wp.state == WpState.OPEN
            and (step.submit or bool(step.call))
            and not self.has_prepares
            and arrays.queues_later(self, wp, step)
        )

    def _async_slot(self, wp: WpRow, step: Step) -> bool:
        limit = step.max_async.strip()
        if limit in ("", "0"):
            return True
        if "$" in limit:
            limit = final_text(limit, self.store.params(wp.id))
        try:
            n = int(limit)
        except ValueError:
            return True
        return n <= 0 or self.inflight[wp.step] < n

    def command_rows(
        self, wp: WpRow, commands: list[Command], outcome: Outcome
    ) -> list[CommandRow]:
        return ending.command_rows(wp, commands, outcome)

    def move(self, wp: WpRow, name: str, message: str | None = None, **fields: object) -> None:
        """Make the state move `name` (state.transitions) for `wp`, in the store (inside a
        transaction) and in memory, and keep the engine's counts."""
        before, was_settled = wp.state, _settled(wp)
        self.store.move(wp, name, message, **fields)
        self._count(wp, before, was_settled)

    def move_many(
        self, wps: Sequence[WpRow], name: str, fields_of: Callable[[WpRow], dict[str, object]]
    ) -> None:
        """The state move `name` for every workpackage of `wps` at once (Store.move_many: all
        checked first, one statement), and the engine's counts kept (inside a transaction)."""
        before = [(wp.state, _settled(wp)) for wp in wps]
        self.store.move_many(wps, name, fields_of)
        for wp, (state, was_settled) in zip(wps, before, strict=True):
            self._count(wp, state, was_settled)

    def _count(self, wp: WpRow, before: WpState, was_settled: bool) -> None:
        """The engine's counts after `wp` moved from `before`."""
        self._version += 1
        if wp.state != before:
            self.counts[before] -= 1
            self.counts[wp.state] += 1
            if (before in ACTIVE_STATES) != (wp.state in ACTIVE_STATES):
                self.inflight[wp.step] += 1 if wp.state in ACTIVE_STATES else -1
        self.settled[wp.step] += _settled(wp) - was_settled

    # --- what engine.shared and engine.waiting use ------------------------------------------------
    def waiting_at(self, wait_kind: WaitKind, step: str | None = None) -> list[WpRow]:
        """Workpackages waiting for a done file (WaitKind.FILE) or their step's shared do (SHARED),
        of `step` or of all steps, that are not already going on."""
        ids = self.by_step.get(step, []) if step is not None else self.wps
        return [
            self.wps[i]
            for i in ids
            if self.wps[i].state == WpState.WAITING
            and self.wps[i].wait_kind == wait_kind
            and i not in self.resume_at
        ]

    def ready(self, wp: WpRow, cycle: int, op: int) -> None:
        """`wp` goes on with do `op` of `cycle` when its turn comes (its wait is over)."""
        self.resume_at[wp.id] = (cycle, op)
        heapq.heappush(self._heap, wp.id)

    def after_prepares(self, wp: WpRow, count: int) -> None:
        """`wp`'s next start goes on after its first `count` prepares: they ended in an attempt
        bench was stopped in (their shells recorded it) and are not run again."""
        self.prepared[wp.id] = count

    def changed_since_last_poll(self) -> bool:
        """True once after every batch of state changes: a poll with nothing new since the last is
        skipped."""
        if self._checked_version == self._version:
            return False
        self._checked_version = self._version
        return True

    def keep_job_resources(self, wp: WpRow, resources: tuple[str, ...] | None) -> None:
        """engine.arrays: `wp`'s job script was written by this bench with these resource lines
        (None: it was queued, or failed)."""
        if resources is None:
            self.job_resources.pop(wp.id, None)
        else:
            self.job_resources[wp.id] = resources

    def note(self, wp: WpRow, reason: str) -> None:
        """What a waiting workpackage waits on, in words (not a state move; call inside a
        transaction)."""
        if reason != wp.reason:
            self.store.update(wp.id, reason=reason)
            wp.reason = reason

    def was_running_shared(self, step: str, cycle: int, op: int) -> bool:
        """Whether the shared do (cycle, op) of `step` was running when the last bench stopped."""
        return (step, cycle, op) in self._shared_interrupted

    def show_progress(self) -> None:
        self.progress.update(dict(self.counts))

    def mark_done(self, wp: WpRow, rows: list[CommandRow], env: dict[str, str] | None) -> None:
        self.move(wp, "finish", ended=time.time(), env=env)
        if env:
            secrets = materialise.secrets_of(env, self.base_env)
            if secrets:
                self.exported_secrets[wp.id] = secrets
        self.record_load(wp, "end")
        self.store.add_commands(rows)
        self.queue_children(wp)
        self._release(wp.step)

    def queue_children(self, wp: WpRow) -> None:
        """`wp` is done, or its job is queued: its children that may start now
        (engine.arrays.may_start) go into the queue."""
        for child in self.children[wp.id]:
            if self.wps[child].state == WpState.OPEN and arrays.may_start(self, self.wps[child]):
                heapq.heappush(self._heap, child)

    def record_load(self, wp: WpRow, when: str) -> None:
        """The node's load at `wp`'s start or end (engine.loadavg), where its do's run on this
        node."""
        step = self.bench.steps.get(wp.step)
        if step is not None and not step.submit:
            self.load.record(self.store, wp.id, when)

    def fail(
        self, wp: WpRow, reason: str, exit_code: int | None = None, rows: Sequence[CommandRow] = ()
    ) -> None:
        """Mark `wp` failed and cancel the workpackages that depend on it (call inside a
        transaction)."""
        self.move(wp, "fail", ended=time.time(), exit_code=exit_code, reason=reason)
        self.record_load(wp, "end")
        self.store.add_commands(rows)
        self._cancel_descendants(wp, "failed")
        self._release(wp.step)

    def cancel(self, wp: WpRow, reason: str) -> None:
        """Mark `wp` cancelled (its queued job will not run: SLURM cancelled it, or caramel did) and
        the workpackages that depend on it (call inside a transaction)."""
        self.move(wp, "cancel", ended=time.time(), reason=reason)
        self._cancel_descendants(wp, "was not run")
        self._release(wp.step)

    def _cancel_descendants(self, wp: WpRow, what: str) -> None:
        """Cancel every open workpackage below `wp`: it cannot run, since `wp` {what}."""
        todo = list(self.children[wp.id])
        while todo:
            child = self.wps[todo.pop()]
            if child.state == "open":
                self.move(
                    child, "cancel", reason=f"not run: workpackage {wp.id} ({wp.step}) {what}"
                )
                todo += self.children[child.id]

    def _release(self, step: str) -> None:
        """A workpackage of `step` ended: those held back by max_async may start."""
        for wp_id in self.deferred.pop(step, []):
            heapq.heappush(self._heap, wp_id)

    def summary(self) -> Summary:
        counts: dict[str, dict[str, int]] = {}
        for wp in self.wps.values():
            step = counts.setdefault(wp.step, {})
            step[wp.state] = step.get(wp.state, 0) + 1
        failed = [
            (wp.id, wp.step, wp.reason) for wp in self.wps.values() if wp.state == WpState.FAILED
        ]
        waits = [
            (wp.id, wp.step, wp.reason) for wp in self.wps.values() if wp.state == WpState.WAITING
        ]
        return Summary(
            self.info.run_dir, self.info.run_id, self.info.benchmark, counts, failed, waits
        )


def _graph(wps: Iterable[WpRow]) -> tuple[dict[int, list[int]], dict[str, list[int]]]:
    """Each workpackage's children, and each step's workpackages (in the order of `wps`)."""
    children: dict[int, list[int]] = defaultdict(list)
    by_step: dict[str, list[int]] = defaultdict(list)
    for wp in wps:
        by_step[wp.step].append(wp.id)
        for parent in wp.parents:
            children[parent].append(wp.id)
    return children, by_step


def _has_prepares(bench: Benchmark) -> bool:
    """Whether a fileset of the benchmark has a `prepare` (a command its workpackages run)."""
    return any(
        entry.action == "prepare"
        for fileset in bench.filesets.values()
        for entry in fileset.entries
    )


def _settled(wp: WpRow) -> bool:
    return wp.state == WpState.DONE or (
        wp.state == WpState.WAITING and wp.wait_kind == WaitKind.SHARED
    )
