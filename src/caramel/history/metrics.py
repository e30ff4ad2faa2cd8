"""From a run's tables to metrics with their repeats: one sample per iteration of a workpackage.

A table row (with `reduce`, JUBE's default) merges the iterations of a workpackage; the history
wants each iteration's value to know the spread. So the caller gives the tables built with `reduce`
off when a step repeats (report.results.history_tables: the report stage makes tables, the history
only reads them), and the rows are grouped by the table's parameter columns: each group is one
configuration, each of its rows one repeat.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field

from caramel.analyse.inputs import AnalysisInput

# Names that say "less is better"; everything else (throughput, TFLOPs, tokens/s, images/s) is
# taken as "more is better". A pattern can say otherwise in its unit: `unit: s` is a time.
_LOWER = ("time", "elapsed", "latency", "runtime", "duration", "energy", "(s)", "_s", "seconds", "wh", "joule",
          "power", "memory", "loss")
_LOWER_UNITS = {"s", "ms", "us", "min", "h", "wh", "j", "kj", "w", "b", "kb", "mb", "gb"}
UNSTABLE_CV = 0.05  # a spread above 5 % of the mean marks a figure unstable


@functools.lru_cache(maxsize=1024)
def direction(name: str, unit: str = "") -> str:
    """'lower' or 'higher' (which way is better) for a metric."""
    lowered = name.lower()
    if unit.strip().lower() in _LOWER_UNITS:
        return "lower"
    if any(word in lowered for word in ("/s", "per_s", "persec", "per second", "throughput", "tflops", "/j")):
        return "higher"
    return "lower" if any(word in lowered for word in _LOWER) else "higher"


@dataclass
class Metric:
    table: str
    row: dict[str, str]  # the configuration: the table's parameter columns
    name: str
    unit: str = ""
    direction: str = "higher"
    samples: list[float] = field(default_factory=list)

    @property
    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.row.items())

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def mean(self) -> float:
        if len(self.samples) == 1:
            return self.samples[0]
        return statistics.fmean(self.samples) if self.samples else math.nan

    @property
    def sd(self) -> float:
        return statistics.stdev(self.samples) if len(self.samples) > 1 else 0.0

    @property
    def sd_pct(self) -> float:
        return 100.0 * self.sd / abs(self.mean) if self.samples and self.mean else 0.0

    @property
    def unstable(self) -> bool:
        return self.n > 1 and self.sd_pct > 100 * UNSTABLE_CV


def _number(value) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    return None


def _label(key) -> str:
    return key.title if key.title is not None else key.name


def collect(inp: AnalysisInput, made: list) -> list[Metric]:
    """Every numeric pattern column of every table, per configuration, with one sample per repeat.
    `made`: the run's tables, one row per repeat (report.results.history_tables)."""
    params = inp.param_names()
    out: dict[tuple, Metric] = {}
    shared: dict[tuple, dict[str, str]] = {}
    for item in made:
        if item.table.output != "table":
            continue
        keys = item.data.keys
        columns = item.table.columns
        labels = [_label(keys[i]) for i in range(len(columns))]
        units = [keys[i].unit or "" for i in range(len(columns))]
        config = params | set(item.data.config_columns)
        param_cols = [i for i, c in enumerate(columns) if c.name in config or c.name.startswith("jube_")]
        metric_cols = [i for i in range(len(columns)) if i not in param_cols]
        table = item.table.name
        for values, status in zip(item.data.values, item.data.statuses, strict=True):
            if not status.startswith("done"):
                continue
            config = tuple((labels[i], str(values[i])) for i in param_cols)
            row = shared.get(config)
            if row is None:
                row = shared[config] = dict(config)  # one dict per configuration, shared by its metrics
            for i in metric_cols:
                number = _number(values[i])
                if number is None:
                    continue
                entry = out.get((table, config, i))
                if entry is None:
                    entry = out[(table, config, i)] = Metric(table, row, labels[i], units[i],
                                                             direction(labels[i], units[i]))
                entry.samples.append(number)
    return list(out.values())

