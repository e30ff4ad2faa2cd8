"""The summary at the top of the dashboard: per benchmark, system and metric the latest figure,
its change against the run before and against the named baseline, and a verdict.

The latest figure is the best configuration of the latest run (the headline a reader looks for);
the verdict covers every configuration: "regressed" when any regressed against the run before,
else "unstable" when the headline's spread is above 5 % of its mean, else "improved" when any
improved, else "within noise" ("first run" without a run before).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from caramel.history.compare import judge
from caramel.pages.figures import plotted
from caramel.pages.sources import Collection, Figure


@dataclass
class Row:
    benchmark: str
    label: str
    table: str
    metric: str
    unit: str
    run: int
    runs: int
    latest: Figure
    configs: int
    regressed: int
    previous_pct: float
    verdict: str
    baseline: str
    baseline_pct: float
    baseline_verdict: str


def _best(figures: list[Figure]) -> Figure:
    """The configuration the row shows: the best by the stored direction (the first when it is unknown)."""
    way = figures[0].direction
    if way not in ("higher", "lower"):
        return figures[0]
    return max(figures, key=lambda f: f.mean if way == "higher" else -f.mean)


def _verdict(latest: list[Figure], before: dict[str, Figure], headline: Figure) -> tuple[str, int, float]:
    verdicts = []
    for f in latest:
        b = before.get(f.config)
        if b is not None:
            verdicts.append(judge(f, b.mean, b.sd, b.n, None).verdict)
    b = before.get(headline.config)
    change = 100.0 * (headline.mean - b.mean) / abs(b.mean) if b is not None and b.mean else math.nan
    regressed = verdicts.count("regressed")
    if not verdicts:
        word = "first run"
    elif regressed:
        word = "regressed"
    elif headline.unstable:
        word = "unstable"
    elif "improved" in verdicts:
        word = "improved"
    elif "cannot judge" in verdicts:  # changed, but its direction is unknown (history.compare)
        word = "cannot judge"
    else:
        word = "within noise"
    return word, regressed, change


def _baseline(coll: Collection, label: str, bench: str, wanted: str | None) -> tuple[str, int] | None:
    keys = {r.record.run_key: r for r in coll.runs}
    for name in sorted(coll.baselines):
        if wanted and name != wanted:
            continue
        run = keys.get(coll.baselines[name])
        if run is not None and run.label == label and run.record.benchmark == bench:
            return name, run.index
    return None


def rows(coll: Collection, baseline: str | None = None) -> list[Row]:
    grouped: dict[tuple, dict[int, list[Figure]]] = defaultdict(lambda: defaultdict(list))
    for f in coll.figures:
        if not plotted(f.name):
            continue
        run = coll.runs[f.run]
        grouped[(run.record.benchmark, run.label, f.table, f.name)][f.run].append(f)
    out = []
    for (bench, label, table, name), per_run in sorted(grouped.items()):
        order = sorted(per_run, key=lambda i: coll.runs[i].record.started or 0)
        latest = per_run[order[-1]]
        headline = _best(latest)
        before = {f.config: f for f in per_run[order[-2]]} if len(order) > 1 else {}
        verdict, regressed, change = _verdict(latest, before, headline)
        base_name, base_pct, base_verdict = "", math.nan, "no baseline"
        found = _baseline(coll, label, bench, baseline)
        if found is not None:
            base_name = found[0]
            b = next((f for f in per_run.get(found[1], []) if f.config == headline.config), None)
            if b is not None:
                judged = judge(headline, b.mean, b.sd, b.n, None)
                base_pct, base_verdict = judged.diff_pct, judged.verdict
        out.append(Row(bench, label, table, name, headline.unit, headline.run, len(order), headline, len(latest),
                       regressed, change, verdict, base_name, base_pct, base_verdict))
    return out
