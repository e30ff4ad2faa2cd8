"""The Mila methodology table: each benchmark against its target, then three pass criteria.

Per target: result (mean over repeats), sd, sd% (sd / result), diff (result / target - 1, sign
turned for figures where less is better) and pass (diff not below -threshold). Then: every
target passes; the 80 % quantile of sd% is at most `max_sd` (the figures are stable); the mean
diff is not below -threshold. numpy computes the statistics (mean, sd with ddof=1, quantile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from caramel.history.metrics import Metric

DEFAULT_THRESHOLD = 5.0  # percent a result may fall short of its target
DEFAULT_MAX_SD = 5.0  # percent: the 80 % quantile of sd% must stay below this


@dataclass
class Line:
    name: str
    target: float
    result: float
    sd: float
    sd_pct: float
    diff_pct: float
    threshold: float
    n: int

    @property
    def passed(self) -> bool:
        return not math.isnan(self.diff_pct) and self.diff_pct >= -self.threshold


@dataclass
class Methodology:
    lines: list[Line]
    missing: list[str] = field(default_factory=list)  # targets no figure of the runs matches
    quantile_sd_pct: float = math.nan
    mean_diff_pct: float = math.nan
    max_sd: float = DEFAULT_MAX_SD
    threshold: float = DEFAULT_THRESHOLD

    @property
    def criteria(self) -> list[tuple[str, float | None, bool]]:
        return [("all benchmarks pass", None, bool(self.lines) and not self.missing and all(x.passed for x in self.lines)),
                ("deviation quantile (80%)", self.quantile_sd_pct,
                 not math.isnan(self.quantile_sd_pct) and self.quantile_sd_pct <= self.max_sd),
                ("mean performance diff", self.mean_diff_pct,
                 not math.isnan(self.mean_diff_pct) and self.mean_diff_pct >= -self.threshold)]

    @property
    def passed(self) -> bool:
        return all(ok for _name, _value, ok in self.criteria)


def _matches(key: str, benchmark: str, metric: Metric) -> bool:
    model = metric.row.get("model", "")
    names = {metric.name, f"{metric.table}/{metric.name}", f"{benchmark}/{metric.name}", model, benchmark}
    return key in names


def judge(figures: list[tuple[str, Metric]], targets: dict, threshold: float | None = None,
          max_sd: float | None = None) -> Methodology:
    """`figures`: (benchmark, metric) of the runs; `targets`: {name: value or {"value", "threshold"}}."""
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    out = Methodology([], max_sd=DEFAULT_MAX_SD if max_sd is None else max_sd, threshold=threshold)
    for key, spec in targets.items():
        value = spec.get("value") if isinstance(spec, dict) else spec
        own = spec.get("threshold", threshold) if isinstance(spec, dict) else threshold
        found = [m for bench, m in figures if _matches(key, bench, m) and m.samples]
        if not found:
            out.missing.append(key)
            continue
        for metric in found:
            samples = np.asarray(metric.samples, dtype=float)
            mean = float(samples.mean())
            sd = float(samples.std(ddof=1)) if samples.size > 1 else 0.0
            diff = (mean / float(value) - 1.0) * 100.0 if value else math.nan
            if metric.direction == "lower":
                diff = -diff
            label = key + (f" [{metric.key}]" if len(found) > 1 else "")
            out.lines.append(Line(label, float(value), mean, sd, 100.0 * sd / abs(mean) if mean else 0.0,
                                  diff, float(own), int(samples.size)))
    if out.lines:
        out.quantile_sd_pct = float(np.quantile([x.sd_pct for x in out.lines], 0.8))
        out.mean_diff_pct = float(np.mean([x.diff_pct for x in out.lines]))
    return out
