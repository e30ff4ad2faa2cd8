"""Workpackages waiting for a done file: check their files, their job, their time limit.

JUBE keeps a workpackage pending for ever when its job dies before writing the done file. caramel
fails it when the run's time limit (`--timeout`) has passed, or when the backend reports its job
failed or gone (`Scheduler.job_states`, one query for all waiting jobs).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from caramel.settings import current
from caramel.vocabulary import JobStatus, WaitKind, WpState

if TYPE_CHECKING:
    from caramel.adapters.backends import JobState
    from caramel.stages.engine.interface import EngineInterface
    from caramel.stages.engine.script import Command
    from caramel.stages.state.rows import WpRow


# Two graces (caramel.settings): a job that ended without its done file fails only once it has been
# over `done_file_grace` (the file may reach a login node's view of a shared file system a little
# after the job's end); a job queued after a parent that failed is cancelled by SLURM (or shown
# DependencyNeverSatisfied), and caramel cancels it itself only when SLURM said nothing
# `dependency_grace` after the parent's failure.


def wait_for_done_file(
    engine: EngineInterface,
    wp: WpRow,
    cmd: Command,
    base: str,
    since: float,
    env: dict[str, str] | None,
    job: str | None = None,
) -> None:
    """`wp` waits for the done file of do `cmd` (and for `job`, the job its do submitted, where
    one is named: None leaves the workpackage's job as it was), its files checked from here on
    (`base`: its folder, for the reason's relative path)."""
    reason = f"waits for {os.path.relpath(cmd.done_file, base)}" + (f" (job {job})" if job else "")
    files = {"done": cmd.done_file, "error": cmd.error_file, "break": cmd.break_file}
    engine.move(
        wp,
        "wait",
        cycle=cmd.cycle,
        wait_op=cmd.op,
        wait_kind=WaitKind.FILE,
        wait_since=since,
        wait_files=files,
        env=env,
        reason=reason,
        **({} if job is None else {"job_id": job}),
    )


def check(engine: EngineInterface) -> bool:
    """Move on what can move; True when some workpackage changed (or may start now)."""
    now = time.time()
    waits = engine.waiting_at(WaitKind.FILE)
    if not waits or not engine.changed_since_last_poll():
        # nothing changed since the last poll of this continue: one scheduler query is enough
        return False
    with engine.store.transaction():
        moved = {wp.id: _look(engine, wp, now) for wp in waits}
    pending_jobs = [wp for wp in waits if not moved[wp.id] and wp.job_id]
    changed = any(moved.values())
    if pending_jobs:
        changed |= _follow_jobs(engine, pending_jobs, now)
    return changed


def _exists(files: dict[str, str], kind: str) -> bool:
    """Whether the wait's `kind` file (done, error, break) is named and there."""
    path = files.get(kind)
    return bool(path) and os.path.exists(path or "")


def _look(engine: EngineInterface, wp: WpRow, now: float) -> bool:
    """Move `wp` on by its files: failed at its error file, done at its done and break files, on
    to its next do at its done file, failed past the run's wait limit. True when it moved."""
    files = wp.wait_files
    if _exists(files, "error"):
        why = f"error file {files['error']} appeared" + _job_note(wp) + _said(files["error"])
        engine.fail(wp, why)
    elif _exists(files, "done"):
        if _exists(files, "break"):
            step = engine.bench.steps[wp.step]
            engine.mark_done(wp, [], engine.store.env(wp.id) if step.export else None)
        else:
            engine.ready(wp, wp.cycle, wp.wait_op + 1)
    elif _waited_too_long(engine, wp, now):
        engine.fail(wp, _wait_limit_reason(engine, wp))
    else:
        return False
    return True


def _waited_too_long(engine: EngineInterface, wp: WpRow, now: float) -> bool:
    limit = engine.settings.timeout
    return limit is not None and wp.wait_since is not None and now - wp.wait_since > limit


def _wait_limit_reason(engine: EngineInterface, wp: WpRow) -> str:
    assert wp.wait_since is not None and engine.settings.timeout is not None
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(wp.wait_since))
    return (
        f"timed out: no done file {wp.wait_files.get('done')} after "
        f"{engine.settings.timeout:g} s (waiting since {since})" + _job_note(wp)
    )


def _said(path: str) -> str:
    """The last line an error file holds (a call: step's payload writes the exception there), if
    any."""
    try:
        with open(path, errors="replace") as handle:
            lines = [line.strip() for line in handle.read(65536).splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1]}" if lines else ""


def _orphans(
    engine: EngineInterface, waits: list[WpRow], states: dict[str, JobState]
) -> dict[int, str]:
    """The waiting workpackages whose job waits for a parent job that failed (queued after it,
    engine.arrays), each with its reason: SLURM's where it gave one (DependencyNeverSatisfied), else
    the parent's failure."""
    return {wp.id: why for wp in waits if (why := _orphaned(engine, wp, states))}


def _orphaned(engine: EngineInterface, wp: WpRow, states: dict[str, JobState]) -> str:
    """Why the job of waiting `wp` will never run for a parent that failed ("": it may run)."""
    job = states.get(wp.job_id)
    said = job.reason if job is not None and _dependency_failed(job.reason) else ""
    job_failed = [
        p for p in wp.parents if _job_state(states, engine.wps[p].job_id) == JobStatus.FAILED
    ]
    bad = _failed_parents(engine, wp) or job_failed
    if not (said or _never_ran(job, job_failed, bad) or _overdue(engine, bad, job)):
        return ""
    parent = _parent_failure(engine, bad)
    return f"not run: job {wp.job_id} " + (f"{said} ({parent})" if said else f"cancelled: {parent}")


def _failed_parents(engine: EngineInterface, wp: WpRow) -> list[int]:
    """The parents of `wp` that caramel failed or cancelled."""
    return [p for p in wp.parents if engine.wps[p].state in (WpState.FAILED, WpState.CANCELLED)]


def _parent_failure(engine: EngineInterface, named: list[int]) -> str:
    """`workpackage 3 (train) failed`, the first of `named`; none named: the parent job failed."""
    if not named:
        return "its parent job failed"
    return f"workpackage {named[0]} ({engine.wps[named[0]].step}) failed"


def _never_ran(job: JobState | None, job_failed: list[int], bad: list[int]) -> bool:
    """A job queued afterok a parent whose job failed never ran: ended (or cancelled, once its
    parent failed), it was cancelled for its parent, whatever words a busy slurmctld put in its
    reason."""
    if job is None or job.state not in (JobStatus.FAILED, JobStatus.GONE):
        return False
    return bool(job_failed or (bad and "CANCELLED" in job.reason))


def _overdue(engine: EngineInterface, bad: list[int], job: JobState | None) -> bool:
    """SLURM's verdict first; caramel cancels on its own once SLURM had time to give one (a parent
    caramel failed whose job did not fail: a timeout, an error file), a job not yet running."""
    if job is None or job.state not in (JobStatus.PENDING, JobStatus.FAILED, JobStatus.GONE):
        return False
    since = time.time() - current().dependency_grace
    return any((engine.wps[p].ended or 0) < since for p in bad)


def _dependency_failed(reason: str) -> bool:
    """Whether SLURM's words say a job waited for a job that failed: pending with
    DependencyNeverSatisfied, or cancelled for it (SLURM 22's kill_invalid_depend: "CANCELLED",
    reason "Dependency")."""
    return "DependencyNeverSatisfied" in reason or reason.startswith("CANCELLED: Dependency")


def _job_state(states: dict[str, JobState], job_id: str) -> str:
    """The scheduler's state of a job ("" when it does not know the job)."""
    job = states.get(job_id)
    return job.state if job is not None else ""


def _job_note(wp: WpRow) -> str:
    return f" (job {wp.job_id})" if wp.job_id else ""


def _follow_jobs(engine: EngineInterface, waits: list[WpRow], now: float) -> bool:
    """One scheduler query for every job still without its done file: fail the ones whose job ended,
    cancel the ones queued after a parent that failed, and show the others' scheduler state in their
    reason."""
    scheduler = engine.backend.scheduler
    states = scheduler.job_states([wp.job_id for wp in waits])
    orphans = _orphans(engine, waits, states)
    left = [
        wp.job_id
        for wp in waits
        if wp.id in orphans and wp.job_id in states and states[wp.job_id].state == JobStatus.PENDING
    ]
    if left:
        scheduler.cancel(left)  # what SLURM left pending: no job of a failed chain runs later
    with engine.store.transaction():
        moved = [
            _follow(engine, wp, states.get(wp.job_id), orphans.get(wp.id, ""), now) for wp in waits
        ]
    return any(moved)


def _follow(
    engine: EngineInterface, wp: WpRow, job: JobState | None, orphaned: str, now: float
) -> bool:
    """Move waiting `wp` on by its job's state: cancelled (`orphaned`: why), failed once its job
    ended without the done file, or its reason showing the job queued or running. True when it
    moved."""
    if orphaned:
        engine.cancel(wp, orphaned)
        return True
    if job is None:
        return False
    done = wp.wait_files.get("done") or ""
    if job.state in (JobStatus.DONE, JobStatus.FAILED, JobStatus.GONE) and os.path.exists(done):
        # written between this poll's look at the files and the scheduler's answer: the next poll
        # moves it on
        return False
    if _ended_without_done_file(job, now):
        ended = "ended" if job.state != JobStatus.GONE else "left the queue"
        engine.fail(
            wp,
            f"job {wp.job_id} {ended} without writing {os.path.basename(done)}: "
            f"{job.reason or job.state}",
            job.exit_code,
        )
        return True
    if job.state in (JobStatus.PENDING, JobStatus.RUNNING):
        engine.note(wp, _queued_reason(wp, job, done))
    return False


def _queued_reason(wp: WpRow, job: JobState, done: str) -> str:
    """`waits for caramel.done (job 12 Priority)`; a running job's nodes too."""
    on = f" on {job.nodes}" if job.nodes and job.state == JobStatus.RUNNING else ""
    return f"waits for {os.path.basename(done)} (job {wp.job_id} {job.reason}{on})"


def _ended_without_done_file(job: JobState, now: float) -> bool:
    """The job failed or left the queue, or ended well enough and longer ago than a shared file
    system takes to show its done file."""
    if job.state in (JobStatus.FAILED, JobStatus.GONE):
        return True
    grace = current().done_file_grace
    return job.state == JobStatus.DONE and (job.ended is None or now - job.ended > grace)
