"""Rows written into a history by hand, as a damaged or older history holds them: figures of the
normalised layout (schema 4) from the columns the metrics view shows, and a history of schema 2
(runs keyed by their text, one metrics table) made from scratch, on either engine."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from caramel.consumers.history import engine

NAMES = ("tbl", "config", "name", "unit", "direction")


def add_metric_rows(db: Any, rows: Iterable[Sequence]) -> None:
    """Write metrics-view rows (run_key, tbl, config, name, unit, direction, n, mean, sd, min, max,
    samples) as figures, their series added: `db` an sqlite3 connection or a history's."""
    for run_key, *names_and_numbers in rows:
        names, numbers = names_and_numbers[:5], names_and_numbers[5:]
        db.execute("INSERT INTO series (benchmark, system, tbl, config, name, unit, direction) "
                   "SELECT coalesce(benchmark, ''), coalesce(system, ''), ?, ?, ?, ?, ? FROM runs "
                   "WHERE run_key = ? ON CONFLICT DO NOTHING", (*names, run_key))
        same = " AND ".join(f"s.{c} = ?" for c in NAMES)
        db.execute("INSERT INTO figures (run, series, n, mean, sd, min, max, samples) "
                   "SELECT r.id, s.id, ?, ?, ?, ?, ?, ? FROM runs r JOIN series s "
                   "ON s.benchmark = coalesce(r.benchmark, '') AND s.system = coalesce(r.system, '') "
                   f"AND {same} WHERE r.run_key = ?", (*numbers, *names, run_key))


def schema_2(target: str, runs: Iterable[Sequence], metrics: Iterable[Sequence]) -> None:
    """A history of schema 2 at `target` (a file or a PostgreSQL URL), as caramel's schema 2 made
    it (history/layout.py at schema 2: no figure counts): `runs` as (run_key, benchmark, started),
    `metrics` as rows of its metrics table."""
    db = engine.connect(target)
    real, order = db.dialect.real, db.dialect.order_column
    with db:
        for statement in (
            "CREATE TABLE runs (run_key TEXT PRIMARY KEY, benchmark TEXT, file TEXT, run_dir TEXT, "
            "tags TEXT, system TEXT, caramel_version TEXT, git_commit TEXT, host TEXT, nodes TEXT, "
            f"job_ids TEXT, container TEXT, energy_method TEXT, started {real}, ended {real}, "
            "site TEXT, fingerprint TEXT)",
            "CREATE TABLE metrics (run_key TEXT, tbl TEXT, config TEXT, name TEXT, unit TEXT, "
            f"direction TEXT, n INTEGER, mean {real}, sd {real}, min {real}, max {real}, "
            f"samples TEXT{order}, PRIMARY KEY (run_key, tbl, config, name))",
            "CREATE TABLE baselines (name TEXT PRIMARY KEY, run_key TEXT)",
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
            "INSERT INTO meta VALUES ('schema', '2')",
        ):
            db.execute(statement)
        db.executemany("INSERT INTO runs (run_key, benchmark, started, tags, job_ids) "
                       "VALUES (?, ?, ?, '[]', '[]')", runs)
        db.executemany("INSERT INTO metrics (run_key, tbl, config, name, unit, direction, n, mean, "
                       "sd, min, max, samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", metrics)
    db.close()
