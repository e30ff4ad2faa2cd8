"""The history reader's grouped read (names per run from the key's index, numbers by rowid) gives the
columns the plain scan gives, damaged rows included, and hands the cases it does not take to the scan."""

from __future__ import annotations

import sqlite3
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caramel.consumers.history import columns, reader
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.errors import RunError

NAMES = st.text(string.ascii_letters + "=,{}\" ", max_size=6)
STORED = st.one_of(st.none(), st.integers(-3, 5), st.floats(allow_nan=False), st.sampled_from(["x", "3.5", "inf", ""]))
ROW = st.tuples(st.integers(0, 4), st.sampled_from(["t", "u"]), NAMES, NAMES, st.one_of(st.none(), NAMES),
                st.one_of(st.none(), st.sampled_from(["higher", "lower"])), STORED, STORED, STORED)


def _write(path: Path, runs: list[tuple[str, float]], rows: list[tuple]) -> None:
    with History(str(path)) as history:  # the layout, then rows as a damaged or foreign file may hold them
        history.add(RunRecord("seed", "b"), [Metric("t", {}, "rate", "", "higher", [1.0])])
    db = sqlite3.connect(path)
    db.execute("DELETE FROM runs")
    db.execute("DELETE FROM metrics")
    db.executemany("INSERT INTO runs (run_key, benchmark, started) VALUES (?, 'b', ?)", runs)
    db.executemany("INSERT OR IGNORE INTO metrics (run_key, tbl, config, name, unit, direction, n, mean, sd) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


def _scanned(path: Path) -> columns.FigureColumns:
    db = sqlite3.connect(path)
    try:
        return reader._columns(reader._runs(str(path), db), columns.chunks(db.execute(reader._SCAN["sqlite"])))
    finally:
        db.close()


def _same(a: columns.FigureColumns, b: columns.FigureColumns) -> None:
    assert a.keys == b.keys
    for name in ("run", "key", "n", "mean", "sd"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, max_size=40), starts=st.permutations([3.0, 1.0, 2.0, 5.0]))
@pytest.mark.slow
def test_the_grouped_read_gives_the_columns_of_the_scan(tmp_path_factory, rows, starts) -> None:
    path = tmp_path_factory.mktemp("grouped") / "h.db"
    runs = [(f"r{i}", start) for i, start in enumerate(starts)]  # r4: rows of no run
    _write(path, runs, [(f"r{run}", *rest) for run, *rest in rows])
    _same(reader.read_history(str(path)).columns, _scanned(path))


def test_a_history_of_runs_with_the_same_names_reads_each_figure_in_its_place(tmp_path: Path) -> None:
    rows = [(f"r{run}", "t", f'{{"n": "{c}"}}', name, "s", "lower", 3, run * 100.0 + c + 0.1 * k, 0.5)
            for run in range(5) for c in range(4) for k, name in enumerate(("time", "rate"))]
    _write(tmp_path / "h.db", [(f"r{run}", float(run)) for run in range(5)], rows[::-1])  # written backwards
    columns = reader.read_history(str(tmp_path / "h.db")).columns
    _same(columns, _scanned(tmp_path / "h.db"))
    assert columns.run.tolist() == sorted(columns.run.tolist())
    assert columns.mean.tolist()[:2] == [3.1, 3.0]  # the first run's rows, as written (backwards)


def test_a_null_name_is_read_by_the_scan_and_a_separator_in_one_named(tmp_path: Path) -> None:
    _write(tmp_path / "h.db", [("r0", 1.0)], [("r0", "t", None, "rate", "", "higher", 1, 2.0, 0.0),
                                              ("r0", "t", "{}", "rate", "", "higher", 1, 3.0, 0.0)])
    assert reader.read_history(str(tmp_path / "h.db")).columns.keys == [("t", "", "rate", "", "higher"),
                                                                         ("t", "{}", "rate", "", "higher")]
    _write(tmp_path / "s.db", [("r0", 1.0)], [("r0", "t", "{}", "ra\x1fte", "", "higher", 1, 2.0, 0.0)])
    with pytest.raises(RunError, match="run r0: .*control character"):
        reader.read_history(str(tmp_path / "s.db"))


def _many(path: Path) -> None:
    rows = [(f"r{run}", "t", f'{{"n": "{c}"}}', name, unit, "lower", 3, run * 100.0 + c + 0.1 * k, 0.5)
            for run in range(6) for c in range(50) for k, (name, unit) in enumerate((("time", "s"), ("rate", "")))]
    _write(path, [(f"r{run}", float(run)) for run in range(6)], rows)


def test_a_wal_history_gives_the_columns_of_the_scan(tmp_path: Path) -> None:
    _many(tmp_path / "h.db")
    sqlite3.connect(tmp_path / "h.db").execute("PRAGMA journal_mode=WAL").fetchall()
    _same(reader.read_history(str(tmp_path / "h.db")).columns, _scanned(tmp_path / "h.db"))
