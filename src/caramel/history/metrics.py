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


def collect(inp: AnalysisInput, made: list, configs: dict[int, set[tuple]] | None = None) -> list[Metric]:
    """Every numeric pattern column of every table, per configuration, with one sample per repeat.
    `made`: the run's tables, one row per repeat (report.results.history_tables). `configs`: only
    these tables (by index) and configurations (`configuration`)."""
    params = inp.param_names()
    out: dict[tuple, Metric] = {}
    shared: dict[tuple, dict[str, str]] = {}
    for index, item in enumerate(made):
        if item.table.output != "table" or (configs is not None and index not in configs):
            continue
        wanted = None if configs is None else configs[index]
        labels, units, param_cols, metric_cols = _layout(item, params)
        table = item.table.name
        for values, status in zip(item.data.values, item.data.statuses, strict=True):
            if not status.startswith("done"):
                continue
            config = tuple((labels[i], str(values[i])) for i in param_cols)
            if wanted is not None and tuple(dict(config).items()) not in wanted:
                continue
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


def _layout(item, params: set[str]) -> tuple[list[str], list[str], list[int], list[int]]:
    """A table's labels and units, and which columns name its configuration and which are figures."""
    keys = item.data.keys
    columns = item.table.columns
    labels = [_label(keys[i]) for i in range(len(columns))]
    units = [keys[i].unit or "" for i in range(len(columns))]
    config = params | set(item.data.config_columns)
    param_cols = [i for i, c in enumerate(columns) if c.name in config or c.name.startswith("jube_")]
    metric_cols = [i for i in range(len(columns)) if i not in param_cols]
    return labels, units, param_cols, metric_cols


def changed_configurations(inp: AnalysisInput, made: list, deltas: list) -> dict[int, set[tuple]] | None:
    """The configurations (as `collect` names them, per table index) of the rows made again, before
    and after (report.incremental.Delta); None when a table's change is not known row by row."""
    params = inp.param_names()
    out: dict[int, set[tuple]] = {}
    names = [item.table.name for item in made if item.table.output == "table"]
    if len(set(names)) != len(names) or len(deltas) != len(made):
        return None
    for index, (item, delta) in enumerate(zip(made, deltas, strict=True)):
        if item.table.output != "table":
            continue
        if delta is None:
            return None
        labels, _units, param_cols, _metrics = _layout(item, params)
        rows = [values for values, _status in delta.before] + [item.data.values[k] for k in delta.after]
        found = {tuple(dict((labels[i], str(values[i])) for i in param_cols).items()) for values in rows}
        if found:
            out[index] = found
    return out
