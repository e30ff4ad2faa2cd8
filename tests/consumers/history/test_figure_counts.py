"""Each run's figure counts are stored with the run (runs.figures, runs.nonfinite: schema 3), kept by
every writer and filled once for a history of an older layout, on SQLite and on the suite's
PostgreSQL, so `bench history list` reads them instead of counting a million rows. Whatever was
written, added, replaced, imported, copied or removed, the stored count is the rows' COUNT(*)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest
from tests.run_bench import bench

from caramel.consumers.history.engine import HistoryUnavailable
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import SCHEMA_VERSION, History, RunRecord
from caramel.consumers.history.transfer import copy_runs

from . import rawrows
from .conftest import bench_env


def _metrics(configs: int, value: float = 1.0) -> list[Metric]:
    return [Metric("t", {"n": str(n)}, name, "s", "lower", [value * n, value * n + 0.5])
            for n in range(configs) for name in ("a", "b")]


def _stored_equals_counted(history: History) -> dict[str, int]:
    stored = {key: figures for key, figures in history.db.execute("SELECT run_key, figures FROM runs")}
    counted = dict(history.db.execute("SELECT run_key, COUNT(*) FROM metrics GROUP BY run_key").fetchall())
    assert stored == {key: counted.get(key, 0) for key in stored}
    return stored


def _every_writer(history: History, other: History) -> None:
    history.add(RunRecord("r1", "b", started=1.0), _metrics(3))
    history.add(RunRecord("r2", "b", started=2.0), _metrics(2))
    assert _stored_equals_counted(history) == {"r1": 6, "r2": 4}
    history.add(RunRecord("r1", "b", started=1.0), _metrics(5, 2.0), replace=True)  # bench result, run grew
    history.add(RunRecord("r2", "b", started=2.0), _metrics(1), replace=True)  # figures no longer made: removed
    assert _stored_equals_counted(history) == {"r1": 10, "r2": 2}
    history.replace_configurations(RunRecord("r1", "b", started=1.0), [("t", '{"n": "0"}'), ("t", '{"n": "1"}')],
                                   _metrics(1))
    assert _stored_equals_counted(history) == {"r1": 8, "r2": 2}
    history.remove("r2")
    assert _stored_equals_counted(history) == {"r1": 8}
    copy_runs(history, other)
    assert _stored_equals_counted(other) == {"r1": 8}
    assert [(run.run_key, figures) for run, figures, _ in other.listing()] == [("r1", 8)]


def test_every_writer_keeps_the_stored_counts_on_sqlite(tmp_path):
    with History(str(tmp_path / "h.db")) as history, History(str(tmp_path / "copy.db")) as other:
        _every_writer(history, other)


def test_every_writer_keeps_the_stored_counts_on_postgresql(tmp_path, pg_url):
    with History(pg_url) as history, History(str(tmp_path / "copy.db")) as other:
        _every_writer(history, other)


def test_an_import_stores_the_counts_and_list_reads_them(tmp_path):
    source = tmp_path / "a.db"
    with History(str(source)) as history:
        history.add(RunRecord("r1", "b", started=1.0), _metrics(4))
        history.add(RunRecord("r2", "b", started=2.0), _metrics(1))
    env = bench_env(tmp_path, str(source))
    assert bench("export", "-o", str(tmp_path / "a.jsonl"), cwd=tmp_path, env=env).returncode == 0
    target = tmp_path / "b.db"
    assert bench("import", str(tmp_path / "a.jsonl"), "--history", str(target), cwd=tmp_path, env=env).returncode == 0
    with History(str(target)) as history:
        assert _stored_equals_counted(history) == {"r1": 8, "r2": 2}
    listed = bench("history", "list", "--history", str(target), cwd=tmp_path, env=env)
    assert "8 figure(s)" in listed.stdout and "2 figure(s)" in listed.stdout


def _schema_2_history(target: str) -> None:
    """A history as a caramel of schema 2 left it (tests/consumers/history/rawrows.py): no count
    columns, the meta saying 2, and a run holding an older caramel's infinity."""
    inf = float("inf")
    rows = [("r1", "t", json.dumps(m.row), m.name, m.unit, m.direction, m.n, m.mean, m.sd, min(m.samples),
             max(m.samples), json.dumps(m.samples)) for m in _metrics(3)]
    rows += [("r2", *row[1:]) for row in rows[:2]]
    rows += [("r2", "t", row[2], row[3] + "-inf", "s", "lower", 1, inf, None, inf, inf, "[inf]") for row in rows[-2:]]
    rawrows.schema_2(target, [("r1", "b", 1.0), ("r2", "b", 2.0)], rows)


# pg_url is asked for at run time: the PostgreSQL case runs on the server's worker (conftest.py)
@pytest.mark.parametrize("engine", [
    "sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def test_a_history_of_schema_2_is_counted_once_when_opened(tmp_path, engine, request):
    target = request.getfixturevalue("pg_url") if engine == "postgresql" else str(tmp_path / "h.db")
    _schema_2_history(target)
    with History(target) as history:
        assert history.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)
        assert _stored_equals_counted(history) == {"r1": 6, "r2": 4}
        assert dict(history.db.execute("SELECT run_key, nonfinite FROM runs").fetchall()) == {"r1": 0, "r2": 2}
        assert [(run.run_key, n, flagged) for run, n, flagged in history.listing()] == [("r1", 6, False),
                                                                                       ("r2", 2, True)]


def test_a_history_of_schema_2_that_may_only_be_read_says_it_must_be_migrated(tmp_path):
    """Schema 4 normalised the figures: an older history is read once migrated, which a user who
    may only read it cannot do (it was counted by list before; history/layout.py, migrate)."""
    if os.geteuid() == 0:
        pytest.skip("root writes a read-only file")
    path = tmp_path / "h.db"
    _schema_2_history(str(path))
    path.chmod(stat.S_IRUSR)
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(HistoryUnavailable, match="may only read: it is migrated to schema 4"):
            History(str(path))
    finally:
        tmp_path.chmod(stat.S_IRWXU)


def test_a_caramel_of_schema_2_refuses_this_history_rather_than_write_it_uncounted(tmp_path):
    """What an older caramel checks (`int(schema) <= 2`): this layout is not one it may write."""
    path = tmp_path / "h.db"
    History(str(path)).db.close()
    with sqlite3.connect(path) as db:
        assert int(db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]) > 2
    db.close()


def test_a_history_of_schema_1_gains_the_columns_and_the_counts(tmp_path):
    """Schema 1 had no meta table (made, marked 3, when opened) nor site, fingerprint and the counts."""
    path = tmp_path / "h.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (run_key TEXT PRIMARY KEY, benchmark TEXT, file TEXT, run_dir TEXT, tags TEXT, "
                   "system TEXT, caramel_version TEXT, git_commit TEXT, host TEXT, nodes TEXT, job_ids TEXT, "
                   "container TEXT, energy_method TEXT, started REAL, ended REAL)")
        db.execute("CREATE TABLE metrics (run_key TEXT, tbl TEXT, config TEXT, name TEXT, unit TEXT, direction TEXT, "
                   "n INTEGER, mean REAL, sd REAL, min REAL, max REAL, samples TEXT, PRIMARY KEY (run_key, tbl, config, name))")
        db.execute("CREATE TABLE baselines (name TEXT PRIMARY KEY, run_key TEXT)")
        db.execute("INSERT INTO runs (run_key, benchmark, tags, job_ids, started) VALUES ('old', 'b', '[]', '[]', 1.0)")
        db.executemany("INSERT INTO metrics VALUES ('old', 't', ?, 'rate', '', 'higher', 1, 1.0, NULL, 1.0, 1.0, '[1.0]')",
                       [('{"n": "1"}',), ('{"n": "2"}',)])
    db.close()
    with History(str(path)) as history:
        assert _stored_equals_counted(history) == {"old": 2}
        assert [(run.run_key, n, flagged) for run, n, flagged in history.listing()] == [("old", 2, False)]
        assert history.run("old").site == ""


def test_counts_added_as_written_match_the_databases_count(tmp_path):
    """A run whose rows are all new is counted in Python as written (store._finite_row); the same as
    the database counts them (store._COUNTS), values that are not finite numbers included."""
    with History(str(tmp_path / "h.db")) as history:
        odd = [Metric("t", {"n": str(k)}, "rate", "", "higher", samples)
               for k, samples in enumerate([[1.0], [float("inf")], [1.0, float("nan")], [-1.75e308], [2.0, 3.0]])]
        history.add(RunRecord("r", "b", started=1.0), odd)
        stored = history.db.execute("SELECT figures, nonfinite FROM runs").fetchone()
        history.recount()
        assert history.db.execute("SELECT figures, nonfinite FROM runs").fetchone() == tuple(stored) == (5, 3)
