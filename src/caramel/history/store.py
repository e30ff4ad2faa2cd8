"""The history database: runs with their provenance, and each run's metrics with their repeats.

One SQLite file shared by every run of a user (or a site, when they merge exports). A run is
keyed by its folder and start time, a metric by table, configuration and name, so importing the
same run twice adds nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

from caramel.history.metrics import Metric
from caramel.state import dbfile

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_key TEXT PRIMARY KEY, benchmark TEXT, file TEXT, run_dir TEXT, tags TEXT, system TEXT,
    caramel_version TEXT, git_commit TEXT, host TEXT, nodes TEXT, job_ids TEXT, container TEXT,
    energy_method TEXT, started REAL, ended REAL);
CREATE TABLE IF NOT EXISTS metrics (
    run_key TEXT, tbl TEXT, config TEXT, name TEXT, unit TEXT, direction TEXT, n INTEGER,
    mean REAL, sd REAL, min REAL, max REAL, samples TEXT,
    PRIMARY KEY (run_key, tbl, config, name));
CREATE TABLE IF NOT EXISTS baselines (name TEXT PRIMARY KEY, run_key TEXT);
"""


def _samples(values: list[float]) -> str:
    """A JSON list of finite floats (repr is JSON for them, and much faster than json.dumps)."""
    return "[" + ",".join(map(repr, values)) + "]"


def default_path() -> str:
    """$CARAMEL_HISTORY, else history.db in the user's data folder (where the run registry is)."""
    from caramel.state.registry import data_dir

    return os.environ.get("CARAMEL_HISTORY") or os.path.join(data_dir(), "history.db")


@dataclass
class RunRecord:
    run_key: str
    benchmark: str
    file: str = ""
    run_dir: str = ""
    tags: list[str] = field(default_factory=list)
    system: str = ""
    caramel_version: str = ""
    git_commit: str = ""
    host: str = ""
    nodes: str = ""
    job_ids: list[str] = field(default_factory=list)
    container: str = ""
    energy_method: str = ""
    started: float | None = None
    ended: float | None = None


class History:
    def __init__(self, path: str) -> None:
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self.db = dbfile.connect(path, "history", timeout=30)  # its errors name the file (state.dbfile)
        self.db.executescript(SCHEMA)

    @classmethod
    def open(cls, path: str | None = None) -> History:
        return cls(path or default_path())

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def add(self, run: RunRecord, metrics: Iterable[Metric], replace: bool = False) -> int:
        """Add a run and its metrics (returns the metrics added). An import keeps what is there
        (`replace` false: the same run twice adds nothing); `bench result` on a run that changed
        since (more workpackages finished) replaces the run's figures."""
        verb = "REPLACE" if replace else "IGNORE"
        row = asdict(run)
        row["tags"] = json.dumps(run.tags)
        row["job_ids"] = json.dumps(run.job_ids)
        added = 0
        with self.db:
            if replace:
                self.db.execute("DELETE FROM metrics WHERE run_key = ?", (run.run_key,))
            self.db.execute(f"INSERT OR {verb} INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                            list(row.values()))
            configs: dict[int, str] = {}  # metrics of one row share their configuration: dump it once
            rows = []
            for m in metrics:
                config = configs.get(id(m.row))
                if config is None:
                    config = configs[id(m.row)] = json.dumps(m.row)
                rows.append((run.run_key, m.table, config, m.name, m.unit, m.direction, m.n, m.mean, m.sd,
                             min(m.samples), max(m.samples), _samples(m.samples)))
            before = self.db.total_changes
            self.db.executemany(f"INSERT OR {verb} INTO metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            added = self.db.total_changes - before
        return added

    def run(self, run_key: str) -> RunRecord | None:
        cur = self.db.execute("SELECT * FROM runs WHERE run_key = ?", (run_key,))
        found = cur.fetchone()
        if found is None:
            return None
        data = dict(zip([d[0] for d in cur.description], found, strict=True))
        data["tags"] = json.loads(data["tags"] or "[]")
        data["job_ids"] = json.loads(data["job_ids"] or "[]")
        return RunRecord(**data)

    def runs(self, benchmark: str | None = None) -> list[RunRecord]:
        keys = [r[0] for r in self.db.execute(
            "SELECT run_key FROM runs" + (" WHERE benchmark = ?" if benchmark else "") + " ORDER BY started",
            (benchmark,) if benchmark else ())]
        return [r for r in (self.run(k) for k in keys) if r is not None]

    def metrics(self, run_key: str) -> list[Metric]:
        out = []
        for tbl, config, name, unit, direction, samples in self.db.execute(
                "SELECT tbl, config, name, unit, direction, samples FROM metrics WHERE run_key = ? "
                "ORDER BY rowid", (run_key,)):
            out.append(Metric(tbl, json.loads(config), name, unit, direction, json.loads(samples)))
        return out

    def set_baseline(self, name: str, run_key: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO baselines VALUES (?, ?)", (name, run_key))

    def baseline(self, name: str) -> str | None:
        found = self.db.execute("SELECT run_key FROM baselines WHERE name = ?", (name,)).fetchone()
        return found[0] if found else None

    def export(self, run_keys: list[str] | None = None) -> Iterator[dict]:
        """One JSON-ready record per run, with its metrics: the portable form (JSON lines)."""
        for run in self.runs():
            if run_keys is not None and run.run_key not in run_keys:
                continue
            yield {"run": asdict(run), "metrics": [asdict(m) for m in self.metrics(run.run_key)]}

    def import_records(self, records: Iterable[dict]) -> tuple[int, int]:
        runs = added = 0
        for record in records:
            run = RunRecord(**record["run"])
            known = self.run(run.run_key) is not None
            added += self.add(run, [Metric(**m) for m in record["metrics"]])
            runs += not known
        return runs, added
