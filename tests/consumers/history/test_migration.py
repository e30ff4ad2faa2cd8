"""A history written by schema 3's caramel (tests/data/history_v3, made by main before schema 4)
migrates when opened, in one transaction, and reads the same figures: History.metrics per run and
the pages' figures (read_history) equal what that caramel read back (expected.json); its export
imports unchanged into a new history and reads the same. On the suite's PostgreSQL too, from a
history of schema 2's layout (tests/consumers/history/rawrows.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from caramel.cli.export import _records
from caramel.consumers.history.reader import read_history
from caramel.consumers.history.store import SCHEMA_VERSION, History

from . import rawrows

V3 = Path(__file__).resolve().parents[2] / "data" / "history_v3"
EXPECTED = json.loads((V3 / "expected.json").read_text())


def _read_metrics(history: History) -> dict[str, list]:
    return {run.run_key: [[m.table, m.row, m.name, m.unit, m.direction, m.samples]
                          for m in history.metrics(run.run_key)] for run in history.runs()}


def test_a_history_of_schema_3_migrates_and_reads_the_same_figures(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    shutil.copy(V3 / "history_v3.sqlite", path)
    with History(str(path)) as history:
        assert _read_metrics(history) == EXPECTED["metrics"]
        assert [(run.run_key, n) for run, n, _ in history.listing()] == [
            (key, len(figures)) for key, figures in EXPECTED["metrics"].items()]
    db = sqlite3.connect(path)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "series", "figures"} <= tables and "old_runs" not in tables
    assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (str(SCHEMA_VERSION),)
    assert db.execute("SELECT COUNT(*) FROM series").fetchone() == (4,)  # 2 configurations x 2 figures
    db.close()
    assert [list(figure) for figure in read_history(str(path)).figures] == EXPECTED["figures"]


def test_the_pages_migrate_a_history_of_schema_3_they_are_given(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    shutil.copy(V3 / "history_v3.sqlite", path)
    assert [list(figure) for figure in read_history(str(path)).figures] == EXPECTED["figures"]


def test_an_export_of_schema_3s_caramel_imports_unchanged(tmp_path: Path) -> None:
    with History(str(tmp_path / "new.db")) as history:
        assert history.import_records(_records(str(V3 / "export.jsonl"))) == (2, 8, 0)
        assert _read_metrics(history) == EXPECTED["metrics"]
        exported = list(history.export_lines())
    assert exported == (V3 / "export.jsonl").read_text().splitlines()


def test_a_failed_rows_reason_is_a_column_of_its_figure(tmp_path: Path) -> None:
    """figures.reason (issue 37) holds a failed row's status text; the metrics view shows it."""
    with History(str(tmp_path / "h.db")) as history:
        history.db.execute("INSERT INTO runs (run_key, benchmark) VALUES ('r', 'b')")
        rawrows.add_metric_rows(history.db, [("r", "t", "{}", "rate", "", "higher", 1, 1.0, None, 1.0, 1.0, "[1.0]")])
        history.db.execute("UPDATE figures SET reason = 'failed: exit 3'")
        assert history.db.execute("SELECT reason FROM metrics").fetchall() == [("failed: exit 3",)]


@pytest.mark.xdist_group("postgres")
def test_a_postgresql_history_of_schema_2_migrates_and_reads_the_same_figures(tmp_path: Path, pg_url: str) -> None:
    rows = [("r1", "t", '{"n": "1"}', "rate", "", "higher", 2, 1.5, 0.5, 1.0, 2.0, "[1.0,2.0]"),
            ("r1", "t", '{"n": "2"}', "rate", "", "higher", 1, 3.0, None, 3.0, 3.0, "[3.0]"),
            ("r2", "t", '{"n": "1"}', "rate", "", "higher", 1, 4.0, None, 4.0, 4.0, "[4.0]")]
    rawrows.schema_2(pg_url, [("r1", "b", 1.0), ("r2", "b", 2.0)], rows)
    rawrows.schema_2(str(tmp_path / "h.db"), [("r1", "b", 1.0), ("r2", "b", 2.0)], rows)
    with History(pg_url) as server, History(str(tmp_path / "h.db")) as local:
        assert _read_metrics(server) == _read_metrics(local)
        assert _read_metrics(server)["r1"][1] == ["t", {"n": "2"}, "rate", "", "higher", [3.0]]
        assert [n for _, n, _ in server.listing()] == [2, 1]
    # repr: an sd that is NaN (one sample) equals itself
    assert repr(read_history(pg_url).figures) == repr(read_history(str(tmp_path / "h.db")).figures)
