"""The engine: runs a stored run's workpackages in dependency order until nothing more can run.

Order is JUBE's: the lowest workpackage id whose parents are done goes first (the plan numbers
workpackages in JUBE's queue order). One workpackage at a time, unless its step has `procs=N`:
then up to N of that step's workpackages run together. `max_async=N` holds back new workpackages
of a step while N of them are started and not done (running, or waiting for a done file).

Every state change is one transaction of the run's store; a workpackage found `running` when the
engine starts (bench was killed), or stopped by an interruption, goes on after the last do its
shell recorded as ended (engine.recovery), or starts again from scratch when none had ended.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from caramel.backends import Backend
from caramel.engine import copies, materialise, recovery, shared, waiting
from caramel.engine.commands import check_step, command_for, segment, sub
from caramel.engine.progress import Progress
from caramel.engine.runner import Runner
from caramel.engine.script import Command, Outcome, carry_path, failure_reason
from caramel.engine.workdir import WpPaths, wp_paths
from caramel.errors import CaramelError
from caramel.expand import layout
from caramel.spec.model import Step
from caramel.state.store import CommandRow, Store, WpRow
from caramel.vocabulary import ACTIVE_STATES


@dataclass
class Settings:
    """Per-run settings, stored with the run (`bench continue` may change them)."""

    timeout: float | None = None  # seconds a workpackage may wait for its done file
    time_limit: float | None = None  # `--time-limit`: seconds a step's do's may run, over the file's (0: none)

    @classmethod
    def from_dict(cls, data: dict) -> Settings:
        return cls(timeout=data.get("timeout"), time_limit=data.get("time_limit"))

    def to_dict(self) -> dict:
        return {"timeout": self.timeout, "time_limit": self.time_limit}

    def limit_for(self, bench, step: Step) -> float:
        """The time limit of `step`'s do's: --time-limit, else the step's, else the benchmark's metadata."""
        return time_limit(bench, step, self.time_limit)


def time_limit(bench, step: Step, override: float | None = None) -> float:
    """Seconds `step`'s do's may run (0: no limit): the override, the step's `timeout`, the metadata's."""
    for value in (override, step.timeout, getattr(getattr(bench, "meta", None), "time_limit", None)):
        if value is not None:
            return float(value)
    return 0.0


@dataclass
class Summary:
    run_dir: str
    run_id: int
    benchmark: str
    counts: dict[str, dict[str, int]]
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # id, step, reason
    waiting: list[tuple[int, str, str]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or any(c.get("cancelled") for c in self.counts.values()) else 0


@dataclass
class Started:
    """What the engine keeps about a workpackage whose script is running."""

    wp: WpRow
    step: Step
    texts: dict[str, str]
    paths: WpPaths
    env: dict[str, str]
    shared_stop: tuple[int, int] | None = None
    rows: list[CommandRow] = field(default_factory=list)  # prepare commands, recorded with the end state


class Engine:
    def __init__(self, store: Store, backend: Backend, settings: Settings | None = None,
                 progress: Progress | None = None) -> None:
        self.store = store
        self.info = store.info()
        self.bench = store.model()
        self.backend = backend
        self.version = 0  # grows with every state change: a poll with nothing new since the last is skipped
        self.checked_version = -1
        self.settings = settings or Settings()
        self.progress = progress or Progress()
        self.base_env = dict(os.environ)
        self.runner = Runner(backend.launcher, self.base_env)
        self.wps: dict[int, WpRow] = {row.id: row for row in store.workpackages()}
        self.children: dict[int, list[int]] = defaultdict(list)
        self.by_step: dict[str, list[int]] = defaultdict(list)
        for wp in self.wps.values():
            self.by_step[wp.step].append(wp.id)
            for parent in wp.parents:
                self.children[parent].append(wp.id)
        self.counts = Counter(wp.state for wp in self.wps.values())
        self.inflight = Counter(wp.step for wp in self.wps.values() if wp.state in ACTIVE_STATES)
        # per step: workpackages done or waiting at a shared do (all of them: the shared do may run)
        self.settled = Counter(wp.step for wp in self.wps.values() if _settled(wp))
        self.heap: list[int] = []
        self.resume: dict[int, tuple[int, int]] = {}  # waiting workpackage -> (cycle, op) to go on from
        self.deferred: dict[str, list[int]] = defaultdict(list)  # held back by max_async
        self.started: dict[int, Started] = {}
        self.running_step: str | None = None
        self.shared_interrupted: set[tuple[str, int, int]] = set()
        self.record_file = recovery.record_file(self.info.run_dir)  # where the shells record each do's end

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> Summary:
        for step in self.bench.steps.values():
            check_step(step)
        self._recover()
        self._settle_cancelled()
        self.heap = [wp.id for wp in self.wps.values() if wp.state == "open" and self._parents_done(wp)]
        heapq.heapify(self.heap)
        waiting.check(self)
        self.progress.start(f"{self.info.benchmark} {self.info.run_id:06d}", dict(self.counts))
        spare = recovery.reserve(self.info.run_dir)
        try:
            while True:
                self._fill()
                if self.runner:
                    for active, outcome in self.runner.wait():
                        self._finish(active.key, outcome, active.commands)
                    continue
                self.running_step = None
                if shared.run_barriers(self) or waiting.check(self):
                    continue
                break
        except BaseException:
            self._interrupted(spare)
            raise
        finally:
            self.progress.stop()
            self.runner.close()
            recovery.release(spare)
        return self.summary()

    def _fill(self) -> None:
        """Start what may start now: one workpackage, or up to `procs` of one step."""
        while self.heap:
            wp = self.wps[self.heap[0]]
            if wp.state not in ("open", "waiting") or (wp.state == "waiting" and wp.id not in self.resume):
                heapq.heappop(self.heap)  # stale entry
                continue
            step = self.bench.steps[wp.step]
            if self.runner and (wp.step != self.running_step or len(self.runner) >= step.procs):
                return
            heapq.heappop(self.heap)
            if wp.state == "open" and not self._async_slot(wp, step):
                self.deferred[wp.step].append(wp.id)
                continue
            self._start(wp, step)

    def _async_slot(self, wp: WpRow, step: Step) -> bool:
        limit = step.max_async.strip()
        if limit in ("", "0"):
            return True
        if "$" in limit:
            limit = sub(limit, self.store.params(wp.id))
        try:
            n = int(limit)
        except ValueError:
            return True
        return n <= 0 or self.inflight[wp.step] < n

    def _parents_done(self, wp: WpRow) -> bool:
        return all(self.wps[p].state == "done" for p in wp.parents)

    # --- starting ----------------------------------------------------------------------------
    def _start(self, wp: WpRow, step: Step) -> None:
        texts = self.store.params(wp.id)
        texts.setdefault("jube_wp_status", "RUNNING")  # JUBE's value while the workpackage runs
        try:
            paths = wp_paths(self.info.run_dir, wp.dirname, step, texts, self.bench.home)
        except CaramelError as exc:
            with self.store.transaction():
                self.fail(wp, str(exc))
            return
        if wp.id in self.resume:
            cycle, op = self.resume.pop(wp.id)
            with self.store.transaction():
                self.set_state(wp, "running", reason="", wait_kind="", wait_files={})
            env = self.store.env(wp.id) or materialise.initial_env(self.base_env, [], texts)
            started = Started(wp, step, texts, paths, env)
        else:
            cycle, op = 0, 0
            with self.store.transaction():
                self.set_state(wp, "running", attempt=wp.attempt + 1, started=time.time(), ended=None, exit_code=None,
                          reason="", cycle=0, wait_op=-1, wait_kind="", wait_files={}, wait_since=None, env=None)
            parent_envs = [self.store.env(p) or {} for p in wp.parents
                           if self.bench.steps[self.wps[p].step].export]
            env = materialise.initial_env(self.base_env, parent_envs, texts)
            started = Started(wp, step, texts, paths, env)
            links = [(self.wps[p].step, layout.work_folder(self.info.run_dir, self.wps[p].dirname))
                     for p in wp.parents]
            try:
                started.env = materialise.materialise(self.bench, step, texts, paths, self.info.run_dir, links,
                                                      env, lambda cmd, e: self._prepare(started, cmd, e))
            except (CaramelError, OSError) as exc:
                with self.store.transaction():
                    self.fail(wp, f"cannot prepare the work folder: {exc}", rows=started.rows)
                return
        self._launch(started, cycle, op)

    def _prepare(self, started: Started, command: Command, env: dict[str, str]) -> Outcome:
        outcome = self.runner.run([command], env, started.paths.carry_file, dump_env=True)
        started.rows += self.command_rows(started.wp, [command], outcome)
        return outcome

    def _launch(self, started: Started, cycle: int, op: int) -> None:
        wp, step = started.wp, started.step
        try:
            limit = self.settings.limit_for(self.bench, step)
            seg = segment(self.bench, step, started.texts, started.paths.base, cycle, op, limit)
        except CaramelError as exc:
            with self.store.transaction():
                self.fail(wp, str(exc), rows=started.rows)
            return
        started.shared_stop = seg.shared_stop
        self.started[wp.id] = started
        if not seg.commands:
            self._finish(wp.id, Outcome("done"), [])
            return
        place = copies.placement(step, started.texts, copies.device_count(self.bench))
        env = dict(started.env, **place.env) if place else started.env
        self.runner.start(wp.id, seg.commands, env, started.paths.carry_file,
                          dump_env=step.export or seg.shared_stop is not None,
                          limit=0.0 if step.submit else limit, cpus=place.cpus if place else None,
                          record=(self.record_file, recovery.wp_tag(wp.id, wp.attempt)))
        self.running_step = wp.step
        self.progress.update(dict(self.counts), current=f"{wp.dirname}")

    # --- ending ------------------------------------------------------------------------------
    def _finish(self, wp_id: int, outcome: Outcome, commands: list[Command]) -> None:
        barrier = False
        started = self.started.pop(wp_id)
        wp, step = started.wp, started.step
        rows = started.rows + self.command_rows(wp, commands, outcome)
        for command in commands[:-1]:  # the environment does not stay on disk
            with contextlib.suppress(OSError):
                os.unlink(carry_path(started.paths.carry_file, command))
        materialise.write_do_log(step, started.paths, started.texts, started.env,
                                 [commands[r.index] for r in outcome.ran])
        env = outcome.env if outcome.env is not None else started.env
        with self.store.transaction():
            if outcome.status in ("done", "break"):
                if outcome.status == "done" and started.shared_stop is not None:
                    cycle, op = started.shared_stop
                    self.set_state(wp, "waiting", cycle=cycle, wait_op=op, wait_kind="shared", wait_files={},
                              wait_since=time.time(), env=env,
                              reason=f"waits for the other workpackages of step '{step.name}' (shared do {op + 1})")
                    self.store.add_commands(rows)
                    # The last one to arrive runs the shared do at once, as in JUBE (not after
                    # whatever else could start meanwhile).
                    barrier = self.settled[step.name] == len(self.by_step[step.name])
                else:
                    self.mark_done(wp, rows, env if step.export else None)
            elif outcome.status == "waiting":
                cmd = commands[outcome.index]
                job = self.backend.scheduler.job_id_in(cmd.stdout)  # the job it submitted: followed through the scheduler
                self.set_state(wp, "waiting", cycle=cmd.cycle, wait_op=cmd.op, wait_kind="file", wait_since=time.time(),
                          wait_files={"done": cmd.done_file, "error": cmd.error_file, "break": cmd.break_file},
                          env=env, job_id=job, reason=f"waits for {os.path.relpath(cmd.done_file, started.paths.base)}"
                          + (f" (job {job})" if job else ""))
                self.store.add_commands(rows)
            elif outcome.status == "error_file":
                cmd = commands[outcome.index]
                self.fail(wp, f"error file {os.path.relpath(cmd.error_file, started.paths.base)} found after "
                               f"do {cmd.op + 1}: {cmd.text}", rows=rows)
            else:
                self.fail(wp, failure_reason(outcome, commands), outcome.exit_code, rows)
        self.progress.update(dict(self.counts))
        if barrier:
            shared.run_barriers(self, only=step.name)

    def command_rows(self, wp: WpRow, commands: list[Command], outcome: Outcome) -> list[CommandRow]:
        return [CommandRow(wp.id, wp.attempt, commands[r.index].cycle, commands[r.index].op,
                           commands[r.index].kind, commands[r.index].text, commands[r.index].cwd, r.exit_code,
                           r.started, r.ended) for r in outcome.ran]

    def set_state(self, wp: WpRow, state: str, **fields) -> None:
        """Change a workpackage's state, in the store (inside a transaction) and in memory."""
        self.store.update(wp.id, state=state, **fields)
        self.version += 1
        if wp.state != state:
            self.counts[wp.state] -= 1
            self.counts[state] += 1
            if (wp.state in ACTIVE_STATES) != (state in ACTIVE_STATES):
                self.inflight[wp.step] += 1 if state in ACTIVE_STATES else -1
            self.store.event(wp.id, state, fields.get("reason", ""))
        was_settled = _settled(wp)
        wp.state = state
        for name, value in fields.items():
            if hasattr(wp, name):
                setattr(wp, name, value)
        self.settled[wp.step] += _settled(wp) - was_settled

    def mark_done(self, wp: WpRow, rows: list[CommandRow], env: dict[str, str] | None) -> None:
        self.set_state(wp, "done", ended=time.time(), exit_code=0, reason="", wait_kind="", wait_files={}, env=env)
        self.store.add_commands(rows)
        for child in self.children[wp.id]:
            if self.wps[child].state == "open" and self._parents_done(self.wps[child]):
                heapq.heappush(self.heap, child)
        self._release(wp.step)

    def fail(self, wp: WpRow, reason: str, exit_code: int | None = None, rows: list[CommandRow] = ()) -> None:
        """Mark `wp` failed and cancel the workpackages that depend on it (call inside a transaction)."""
        self.set_state(wp, "failed", ended=time.time(), exit_code=exit_code, reason=reason)
        self.store.add_commands(rows)
        todo = list(self.children[wp.id])
        while todo:
            child = self.wps[todo.pop()]
            if child.state == "open":
                self.set_state(child, "cancelled", reason=f"not run: workpackage {wp.id} ({wp.step}) failed")
                todo += self.children[child.id]
        self._release(wp.step)

    def _release(self, step: str) -> None:
        """A workpackage of `step` ended: those held back by max_async may start."""
        for wp_id in self.deferred.pop(step, []):
            heapq.heappush(self.heap, wp_id)

    # --- recovery ----------------------------------------------------------------------------
    def _recover(self) -> None:
        """Workpackages left `running` by a bench that died, or stopped by an interruption, go on after
        the last do their shell recorded as ended; from scratch when none had ended."""
        stale = [wp for wp in self.wps.values() if wp.state == "running" or (
            wp.state == "open" and wp.attempt > 0 and wp.reason.startswith(recovery.INTERRUPTED))]
        ended = recovery.read_ended(self.record_file) if stale else {}
        with self.store.transaction():
            for wp in stale:
                self._recover_one(wp, ended.get(recovery.wp_tag(wp.id, wp.attempt)))
            # a shared do bench was running: shared._run reads whether its shell recorded its end
            self.shared_interrupted = {(step, cycle, op) for step, cycle, op in self.store.db.execute(
                "SELECT step, cycle, op FROM shared_ops WHERE state='running'")}
            self.store.db.execute("DELETE FROM shared_ops WHERE state='running'")

    def _recover_one(self, wp: WpRow, ended: recovery.Ended | None) -> None:
        step = self.bench.steps[wp.step]
        texts = self.store.params(wp.id)
        texts.setdefault("jube_wp_status", "RUNNING")
        try:
            paths = wp_paths(self.info.run_dir, wp.dirname, step, texts, self.bench.home)
        except CaramelError:
            ended = None
        if ended is None:
            self.set_state(wp, "open", reason=f"{recovery.INTERRUPTED}: bench ended while it ran; it starts again",
                           cycle=0, wait_op=-1, wait_kind="", wait_files={}, env=None)
            return
        cmd = self._recorded_command(step, texts, paths, ended)
        outcome = recovery.outcome_of(cmd, paths, ended)
        rows = [CommandRow(wp.id, wp.attempt, cmd.cycle, cmd.op, cmd.kind, cmd.text, cmd.cwd, ended.status, None,
                           ended.when)]
        env = outcome.env or self.store.env(wp.id)
        note = "(its end was recorded by its shell while bench stopped)"
        if outcome.status == "failed":
            self.fail(wp, f"do {cmd.op + 1} exited with {ended.status}: {cmd.text} {note}", ended.status, rows)
        elif outcome.status == "error_file":
            self.fail(wp, f"error file {cmd.error_file} found after do {cmd.op + 1} {note}", rows=rows)
        elif outcome.status == "waiting":
            self.set_state(wp, "waiting", cycle=cmd.cycle, wait_op=cmd.op, wait_kind="file", wait_since=ended.when,
                           wait_files={"done": cmd.done_file, "error": cmd.error_file, "break": cmd.break_file},
                           env=env, reason=f"waits for {os.path.relpath(cmd.done_file, paths.base)}")
            self.store.add_commands(rows)
        elif outcome.status == "break":
            self.mark_done(wp, rows, env if step.export else None)
        else:
            self.set_state(wp, "open", reason=f"{recovery.INTERRUPTED}: goes on after do {cmd.op + 1}, which ended",
                           cycle=cmd.cycle, wait_op=cmd.op, wait_kind="", wait_files={}, env=env)
            self.store.add_commands(rows)
            self.resume[wp.id] = (cmd.cycle, cmd.op + 1)

    def _recorded_command(self, step: Step, texts: dict[str, str], paths: WpPaths,
                          ended: recovery.Ended) -> Command:
        """The do whose end was recorded, as its script ran it (a submit step's is its job's submission)."""
        if step.submit:
            return segment(self.bench, step, texts, paths.base, 0, 0).commands[0]
        ctexts = texts.at_cycle(ended.cycle)
        return command_for(step.dos[ended.op], ended.op, ended.cycle, ctexts, paths.base)

    def _settle_cancelled(self) -> None:
        """Cancel what depends on a failure; reopen what was cancelled for a failure since removed."""
        with self.store.transaction():
            for wp_id in sorted(self.wps):
                wp = self.wps[wp_id]
                if wp.state not in ("open", "cancelled"):
                    continue
                bad = [p for p in wp.parents if self.wps[p].state in ("failed", "cancelled")]
                if bad and wp.state == "open":
                    self.set_state(wp, "cancelled", reason=f"not run: workpackage {bad[0]} failed or was not run")
                elif not bad and wp.state == "cancelled" and wp.reason.startswith("not run"):
                    # cancelled for a parent's failure that was since removed; not one cancelled by the user
                    self.set_state(wp, "open", reason="")

    def _interrupted(self, spare: str = "") -> None:
        """bench is stopping (Ctrl-C, SIGTERM): end running scripts (their shells record the do's that
        finished), and leave no workpackage `running`: the next continue goes on from the records."""
        try:
            stopped = self.runner.kill_all()
        except Exception:  # whatever the interruption left half done: the shells' watchers end the rest
            stopped = []
        reason = f"{recovery.INTERRUPTED}: bench was stopped while it ran"
        for _attempt in range(2):
            try:
                if self.store.db.in_transaction:  # the interruption came inside a change: it did not happen
                    self.store.db.execute("ROLLBACK")
                    self.store.reset_transaction()
                with self.store.transaction():
                    for entry, _outcome in stopped:
                        self.store.event(entry.key, "open", reason)
                    self.store.db.execute("UPDATE workpackages SET state='open', reason=? WHERE state='running'",
                                          (reason,))
                return
            except Exception:  # a full disk: the space kept for this moment (else the records still tell)
                recovery.release(spare)
                with contextlib.suppress(Exception):
                    self.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def summary(self) -> Summary:
        counts: dict[str, dict[str, int]] = {}
        for wp in self.wps.values():
            step = counts.setdefault(wp.step, {})
            step[wp.state] = step.get(wp.state, 0) + 1
        failed = [(wp.id, wp.step, wp.reason) for wp in self.wps.values() if wp.state == "failed"]
        waits = [(wp.id, wp.step, wp.reason) for wp in self.wps.values() if wp.state == "waiting"]
        return Summary(self.info.run_dir, self.info.run_id, self.info.benchmark, counts, failed, waits)


def _settled(wp: WpRow) -> bool:
    return wp.state == "done" or (wp.state == "waiting" and wp.wait_kind == "shared")
