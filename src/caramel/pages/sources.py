"""Reading history files for a page: read-only, checked, several at once (one per site).

A file that is missing, not SQLite, of another caramel's layout or locked is a user error naming
the file (exit 2): a page is never drawn from nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field

from caramel.errors import RunError
from caramel.history.store import SCHEMA_VERSION, RunRecord

_RUN_COLUMNS = {"run_key", "benchmark", "tags", "system", "started", "job_ids", "nodes", "container", "git_commit"}
_METRIC_COLUMNS = {"run_key", "tbl", "config", "name", "unit", "direction", "n", "mean", "sd"}
LOCK_WAIT_S = 3.0  # a `bench result` writing holds the lock for well under a second


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


@dataclass
class Collection:
    sources: list[str]
    runs: list[Run] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    baselines: dict[str, str] = field(default_factory=dict)  # name -> run key

    @property
    def sites(self) -> list[str]:
        return sorted({r.site for r in self.runs})


def _check_file(path: str) -> None:
    if not os.path.isfile(path):
        raise RunError(f"{path}: no such history file", hint="give --history FILE, or set $CARAMEL_HISTORY")
    with open(path, "rb") as handle:
        head = handle.read(16)
    if not head:
        raise RunError(f"{path}: an empty file, not a caramel history",
                       hint="a history is made by bench result (or bench import)")
    if head != b"SQLite format 3\x00":
        raise RunError(f"{path}: not a caramel history (not an SQLite database)",
                       hint="a history is made by bench result (or bench import); an export is read by bench import")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _check_layout(path: str, db: sqlite3.Connection) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"runs", "metrics"} <= tables:
        raise RunError(f"{path}: an SQLite database, but not a caramel history (no runs and metrics tables)")
    if "meta" in tables:
        found = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if found and str(found[0]).isdigit() and int(found[0]) > SCHEMA_VERSION:
            raise RunError(f"{path}: a history of a newer caramel (layout {found[0]}; this caramel reads up to "
                           f"{SCHEMA_VERSION})", hint="build the page with the caramel that wrote the history")
    missing = sorted(_RUN_COLUMNS - _columns(db, "runs")) + sorted(_METRIC_COLUMNS - _columns(db, "metrics"))
    if missing:
        raise RunError(f"{path}: a history of another caramel version (missing columns {', '.join(missing)})",
                       hint="export it with that caramel (bench export) and import it here")


def _read(path: str, db: sqlite3.Connection, out: Collection, seen: set[str], default_site: str) -> None:
    cursor = db.execute("SELECT * FROM runs ORDER BY started")
    names = [d[0] for d in cursor.description]
    known = set(RunRecord.__dataclass_fields__)
    by_key: dict[str, int] = {}
    for row in cursor:
        data = {k: v for k, v in zip(names, row, strict=True) if k in known}
        if data["run_key"] in seen:  # the same run imported into two histories: shown once
            continue
        data["tags"] = json.loads(data.get("tags") or "[]")
        data["job_ids"] = json.loads(data.get("job_ids") or "[]")
        data["fingerprint"] = json.loads(data.get("fingerprint") or "{}")
        data["site"] = data.get("site") or ""
        record = RunRecord(**data)
        seen.add(record.run_key)
        by_key[record.run_key] = len(out.runs)
        out.runs.append(Run(len(out.runs), record, record.site or default_site, path))
    configs: dict[str, tuple[str, dict]] = {}
    for key, tbl, config, name, unit, direction, n, mean, sd in db.execute(
            "SELECT run_key, tbl, config, name, unit, direction, n, mean, sd FROM metrics ORDER BY rowid"):
        index = by_key.get(key)
        if index is None or mean is None:
            continue
        parsed = configs.get(config)
        if parsed is None:
            row = json.loads(config)
            parsed = configs[config] = (",".join(f"{k}={v}" for k, v in row.items()), row)
        out.figures.append(Figure(index, tbl, parsed[0], parsed[1], name, unit or "", direction or "higher",
                                  n or 1, mean, sd or 0.0))
    for name, key in db.execute("SELECT name, run_key FROM baselines"):
        out.baselines.setdefault(name, key)


def load(paths: list[str], benchmark: str | None = None, system: str | None = None) -> Collection:
    """Every run of the history files (a run in two of them once), optionally one benchmark/system."""
    out = Collection(list(paths))
    seen: set[str] = set()
    for path in paths:
        _check_file(path)
        try:
            db = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True, timeout=LOCK_WAIT_S)
            try:
                _check_layout(path, db)
                # a run without a recorded site (older histories) belongs to the file it was read from
                _read(path, db, out, seen, os.path.splitext(os.path.basename(path))[0])
            finally:
                db.close()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise RunError(f"{path}: the history is locked by another process (a bench result or import "
                               f"writing to it) for more than {LOCK_WAIT_S:g} s", hint="try again when it is done") from None
            raise RunError(f"{path}: cannot read the history: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise RunError(f"{path}: not a caramel history ({exc})") from None
    _filter(out, paths, benchmark, system)
    return out


def _filter(out: Collection, paths: list[str], benchmark: str | None, system: str | None) -> None:
    where = ", ".join(paths)
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
