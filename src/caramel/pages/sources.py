"""History files gathered for a page: several at once (one per site), each read by history.reader
(read-only, checked: a missing, foreign or locked file is a user error naming it; a page is never
drawn from nothing)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from caramel.errors import RunError
from caramel.history.engine import safe_url
from caramel.history.reader import HistoryContents, read_history
from caramel.history.store import RunRecord, row_field
from caramel.vocabulary import COPY_AGGREGATES, COPY_SPREADS

COPY = "caramel_copy"  # the copy column of a copies table (engine.copies)


@dataclass
class Run:
    index: int
    record: RunRecord
    site: str
    source: str  # the history file it was read from
    label: str = ""  # what the page calls its system: "system", or "system @ site" with several sites


@dataclass
class Figure:
    """One metric of one configuration in one run (mean, sd, n of its repeats)."""

    run: int
    table: str
    config: str  # "k=v,k=v": the configuration's key
    row: dict[str, str]
    name: str
    unit: str
    direction: str
    n: int
    mean: float
    sd: float
    label: str = ""  # the configuration by the parameters that vary in its benchmark ("" when none do)

    @property
    def unstable(self) -> bool:
        return self.n > 1 and bool(self.mean) and self.sd / abs(self.mean) > 0.05

    @property
    def aggregate(self) -> str:
        """`sum` or `mean` on a copies table's aggregate row, else "" (one copy's figure, or no copies)."""
        copy = self.row.get(COPY, "")
        return copy if copy in COPY_AGGREGATES else ""

    @property
    def metric(self) -> tuple[str, str, str, str]:
        """What is one quantity on the page: table, name, unit (a `performance` table holds a unit per
        row) and the copy aggregate, never compared with one copy's figure. (Not cached on the figure:
        an attribute added after __init__ costs a million figures their shared-key dicts.)"""
        return _metric(self.table, self.name, self.unit, self.aggregate)

    @property
    def title(self) -> str:
        """The metric as the page names it: `performance [GFLOP/s] · sum of copies`."""
        unit = f" [{self.unit}]" if self.unit and f"[{self.unit}]" not in self.name else ""
        return self.name + unit + (f" · {self.aggregate} of copies" if self.aggregate else "")


@functools.lru_cache(maxsize=4096)
def _metric(table: str, name: str, unit: str, aggregate: str) -> tuple[str, str, str, str]:
    return table, name, unit, aggregate  # one tuple per metric, shared by its figures


@dataclass
class Collection:
    sources: list[str]
    runs: list[Run] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    baselines: dict[str, str] = field(default_factory=dict)  # name -> run key

    @property
    def sites(self) -> list[str]:
        return sorted({r.site for r in self.runs})


def _add(contents: HistoryContents, out: Collection, seen: set[str], default_site: str, path: str) -> None:
    by_key: dict[str, int] = {}
    for record in contents.runs:
        if record.run_key in seen:  # the same run imported into two histories: shown once
            continue
        seen.add(record.run_key)
        by_key[record.run_key] = len(out.runs)
        out.runs.append(Run(len(out.runs), record, record.site or default_site, path))
    configs: dict[str, tuple[str, dict]] = {}
    for key, tbl, config, name, unit, direction, n, mean, sd in contents.figures:
        index = by_key.get(key)
        if index is None or mean is None:
            continue
        parsed = configs.get(config)
        if parsed is None:
            row = row_field(path, config, f"run {key}: the configuration of {tbl}/{name}", dict)
            parsed = configs[config] = (",".join(f"{k}={v}" for k, v in row.items()), row)
        if parsed[1].get(COPY) in COPY_SPREADS:
            continue  # the spread over the copies (sd, sem): no figure of its own, never a headline
        out.figures.append(Figure(index, tbl, parsed[0], parsed[1], name, unit or "", direction or "unknown",
                                  n or 1, mean, sd or 0.0))
    for name, key in contents.baselines:
        out.baselines.setdefault(name, key)


def load(paths: list[str], benchmark: str | None = None, system: str | None = None) -> Collection:
    """Every run of the history files (a run in two of them once), optionally one benchmark/system."""
    out = Collection(list(paths))
    seen: set[str] = set()
    for path in paths:
        # a run without a recorded site (older histories) belongs to the file it was read from
        _add(read_history(path), out, seen, os.path.splitext(os.path.basename(path))[0], path)
    _filter(out, paths, benchmark, system)
    return out


def _filter(out: Collection, paths: list[str], benchmark: str | None, system: str | None) -> None:
    where = ", ".join(map(safe_url, paths))  # a PostgreSQL URL without its password
    if not out.runs:
        raise RunError(f"no runs in {where}: the history is empty",
                       hint="bench result adds a run to the history; bench import adds another site's export")
    for wanted, attr, what in ((benchmark, "benchmark", "benchmark"), (system, "system", "system")):
        if not wanted:
            continue
        present = sorted({getattr(r.record, attr) for r in out.runs})
        if wanted not in present:
            raise RunError(f"no runs of {what} '{wanted}' in {where}", hint=f"{what}s there: {', '.join(present)}")
    keep = [r for r in out.runs if (not benchmark or r.record.benchmark == benchmark)
            and (not system or r.record.system == system)]
    if not keep:
        raise RunError(f"no runs of benchmark '{benchmark}' on system '{system}' in {where}")
    keep_runs(out, keep)
    several = len(out.sites) > 1
    for run in out.runs:
        name = run.record.system or "no system"
        run.label = f"{name} @ {run.site}" if several else name
    _label_configs(out)


def _label_configs(out: Collection) -> None:
    """Name each configuration by what varies among one system's runs of its benchmark: CARAML's
    tables repeat a dozen columns that are constant (Version) or follow the system (System, Queue),
    which would bury the one that changes (GlobalBatchSize)."""
    values: dict[tuple[str, str], dict[str, set[str]]] = {}
    for f in out.figures:
        run = out.runs[f.run]
        per = values.setdefault((run.record.benchmark, run.label), {})
        for k, v in f.row.items():
            per.setdefault(k, set()).add(v)
    varying: dict[str, list[str]] = {}
    for (bench, _label), per in values.items():
        names = varying.setdefault(bench, [])
        names.extend(k for k, v in per.items() if len(v) > 1 and k not in names)
    labels: dict[tuple[str, str], str] = {}
    for f in out.figures:
        bench = out.runs[f.run].record.benchmark
        label = labels.get((bench, f.config))
        if label is None:
            label = labels[(bench, f.config)] = ",".join(f"{k}={f.row[k]}" for k in f.row if k in varying[bench])
        f.label = label


def keep_runs(collection, keep: list) -> None:
    """Only the runs in `keep` (and their figures), renumbered in order."""
    remap = {r.index: i for i, r in enumerate(keep)}
    for i, run in enumerate(keep):
        run.index = i
    collection.runs = keep
    collection.figures = [f for f in collection.figures if f.run in remap]
    for f in collection.figures:
        f.run = remap[f.run]
