"""`bench run --repeat auto`: after each repeat, whether the run's figures are known closely enough.

The figures judged are the run's declared figures, those the history keeps (a pattern with a unit or
a direction, history.metrics), one per table, configuration and name; all must converge: the
half-width of the 95 % Student's t interval of each one's mean over the repeats so far
(analyse.convergence) within the target % of that mean. A figure whose repeats do not spread has
converged. The rule is judged from the minimum number of repeats on; the maximum count and time
stop it in any case, and a failed workpackage stops it at once (docs/cli.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from caramel.stages.analyse.convergence import half_width_pct
from caramel.stages.engine.rounds import AutoRepeat
from caramel.stages.engine.settings import Summary
from caramel.vocabulary import Word


class Stop(Word):
    """Why `--repeat auto` made no more repeats."""

    CONVERGED = "converged"
    MAX_COUNT = "max count"
    MAX_TIME = "max time"
    FAILED = "failed"
    NO_FIGURES = "no figures"


@dataclass(frozen=True)
class Widest:
    """The figure whose interval is widest (relative to its mean), and how wide."""

    figure: str
    half_width_pct: float


def widest_figure(run_dir: str) -> Widest | None:
    """The declared figure of the run at `run_dir` with the widest 95 % interval so far (None:
    the run declares none)."""
    from caramel.consumers.history.metrics import collect
    from caramel.stages.analyse import from_run
    from caramel.stages.report.results import history_tables

    inp = from_run(run_dir)
    metrics = collect(inp, history_tables(inp))
    judged = [
        (half_width_pct(m.samples), f"{m.table}/{m.name}" + (f" ({m.key})" if m.key else ""))
        for m in metrics
    ]
    if not judged:
        return None
    width, figure = max(judged, key=lambda pair: pair[0])
    return Widest(figure, width)


def verdict(
    rule: AutoRepeat, done: int, elapsed: float, summary: Summary, widest: Widest | None
) -> str | None:
    """After `done` repeats, `elapsed` seconds: None to run one more, else why the run stops
    (a `Stop` and its detail): a failure, enough repeats judged, the count, the time."""
    if summary.failed:
        wp_id, step, reason = summary.failed[0]
        return f"{Stop.FAILED}: workpackage {wp_id} ({step}) failed in repeat {done}: {reason}"
    width = "" if widest is None else f"{widest.half_width_pct:.2f} % ({widest.figure})"
    judged = _judged(rule, widest, width) if done >= rule.minimum else None
    return judged or _limit_reached(rule, done, elapsed, width)


def _judged(rule: AutoRepeat, widest: Widest | None, width: str) -> str | None:
    """Once the minimum count ran: stop when no figure can be judged or the widest converged."""
    if widest is None:
        return (
            f"{Stop.NO_FIGURES}: the run declares no figure (a pattern with a unit or "
            "direction) to judge"
        )
    if widest.half_width_pct <= rule.target_pct:
        return f"{Stop.CONVERGED}: widest 95 % half-width {width} <= {rule.target_pct:g} %"
    return None


def _limit_reached(rule: AutoRepeat, done: int, elapsed: float, width: str) -> str | None:
    """Stop at the most repeats, or past the time the rule allows."""
    if done >= rule.maximum:
        return f"{Stop.MAX_COUNT}: {done} repeats" + (
            f", widest 95 % half-width {width}" if width else ""
        )
    if rule.seconds is not None and elapsed >= rule.seconds:
        return f"{Stop.MAX_TIME}: {elapsed:.1f} s >= {rule.seconds:g} s" + (
            f", widest half-width {width}" if width else ""
        )
    return None


@dataclass
class Judge:
    """The `go_on` of engine.rounds for one run: judges each repeat and says so on `out`."""

    rule: AutoRepeat
    out: TextIO | None = None
    started: float = field(default_factory=time.monotonic)
    widest: Callable[[str], Widest | None] = widest_figure

    def __call__(self, summary: Summary, done: int) -> str | None:
        widest = None if summary.failed else self.widest(summary.run_dir)
        why = verdict(self.rule, done, time.monotonic() - self.started, summary, widest)
        if self.out is not None and why is None:
            width = (
                "" if widest is None else f"; widest 95 % half-width {widest.half_width_pct:.2f} %"
            )
            self.out.write(
                f"repeat {done} done{width}: one more (target {self.rule.target_pct:g} %)\n"
            )
            self.out.flush()
        return why
