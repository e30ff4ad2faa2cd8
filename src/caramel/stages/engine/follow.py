"""`bench continue --wait`: follow a run to its end, polling the scheduler at an adaptive pace.

Each poll is one ordinary `continue` (one scheduler query for all jobs the run waits on, then
whatever became ready runs). The pace starts quick, because the first jobs often end within
seconds, and slows down by half again each time a poll changes nothing, up to a cap, so a
long queue wait costs the scheduler a query a minute rather than a query a second. Anything
changing brings the pace back to the start. `--interval S` fixes it instead.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from caramel.stages.engine.logprogress import LogProgress
from caramel.stages.engine.settings import Summary
from caramel.stages.expand import layout
from caramel.vocabulary import STATES


@dataclass
class Pace:
    first: float = 1.0
    cap: float = 60.0
    factor: float = 1.5
    fixed: float | None = None

    def __post_init__(self) -> None:
        self.current = self.fixed if self.fixed is not None else self.first

    def next(self, changed: bool) -> float:
        """The wait before the next poll, given whether the last poll changed anything."""
        if self.fixed is not None:
            return self.fixed
        self.current = self.first if changed else min(self.cap, self.current * self.factor)
        return self.current


def totals(summary: Summary) -> dict[str, int]:
    return {s: sum(c.get(s, 0) for c in summary.counts.values()) for s in STATES}


def progress_line(summary: Summary, polls: int, wait: float) -> str:
    parts = " · ".join(f"{n} {s}" for s, n in totals(summary).items() if n)
    jobs = [r for _, _, r in summary.waiting]
    running = sum(" RUNNING" in r for r in jobs)
    pending = sum(" PENDING" in r for r in jobs)
    queue = f" (jobs: {running} running, {pending} pending)" if running or pending else ""
    return f"{time.strftime('%H:%M:%S')} poll {polls}: {parts}{queue}; next in {wait:.0f} s"


def job_logs(run_dir: str) -> Callable[[Summary], list[str]]:
    """For each poll, the progress the waiting workpackages' logs show (a SLURM job writing its
    iteration lines into its work folder), where the benchmark declares a progress pattern
    (engine.logprogress); read in the workpackage's work folder (not a step's own work_dir)."""
    from caramel.stages.state.store import Store, db_path

    store = Store(db_path(run_dir), readonly=True)
    try:
        meta = store.model().meta
        names = {wp.id: wp.dirname for wp in store.workpackages()}
    finally:
        store.close()
    logs = LogProgress(meta)

    def lines(summary: Summary) -> list[str]:
        if not meta.progress:
            return []
        waiting = [names[wp_id] for wp_id, _step, _reason in summary.waiting if wp_id in names]
        return logs.follow({name: layout.work_folder(run_dir, name) for name in waiting})

    return lines


def follow(
    poll: Callable[[], Summary],
    pace: Pace,
    quiet: bool = False,
    limit: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    logs: Callable[[Summary], list[str]] | None = None,
) -> Summary:
    """Poll until nothing waits (or `limit` seconds have passed); returns the last summary.
    `logs`: the waiting workpackages' progress, a line each under each poll's line (job_logs)."""
    start = time.monotonic()
    summary = poll()
    polls = 1
    seen = (totals(summary), [r for _, _, r in summary.waiting])
    while summary.waiting:
        if limit is not None and time.monotonic() - start > limit:
            break
        now = (totals(summary), [r for _, _, r in summary.waiting])
        wait = pace.next(now != seen or polls == 1)
        seen = now
        if not quiet:
            shown = [progress_line(summary, polls, wait)]
            shown += [f"  {line}" for line in (logs(summary) if logs else [])]
            print("\n".join(shown), file=sys.stderr, flush=True)
        sleep(wait)
        summary = poll()
        polls += 1
    return summary
