"""How the history store reads: every run's figures in one query, rows compared by column name."""

from __future__ import annotations

from pathlib import Path

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord


def _history(tmp_path: Path) -> History:
    history = History(str(tmp_path / "history.db"))
    for i in range(3):
        history.add(RunRecord(f"b{i}", "b"), [Metric("t", {"n": str(i)}, "rate", "1/s", "higher", [1.0 + i, 2.0]),
                                              Metric("t", {"n": str(i)}, "time", "s", "lower", [3.0])])
    history.add(RunRecord("c0", "c"), [Metric("t", {}, "rate", "", "higher", [9.0])])
    return history


def test_the_figures_of_many_runs_are_one_query(tmp_path: Path) -> None:
    with _history(tmp_path) as history:
        asked: list[str] = []
        history.db.db.connection.set_trace_callback(asked.append)
        found = history.metrics_by_run("b")
        history.db.db.connection.set_trace_callback(None)
        assert [sql for sql in asked if "FROM figures" in sql] == [asked[0]]  # one, not one per run
        assert found == {key: history.metrics(key) for key in ("b0", "b1", "b2")}
        assert [m.name for m in found["b1"]] == ["rate", "time"]  # in the order they were stored
        assert set(history.metrics_by_run()) == {"b0", "b1", "b2", "c0"}


def test_a_replaced_run_writes_only_the_figures_that_changed(tmp_path: Path) -> None:
    with _history(tmp_path) as history:
        same = [Metric("t", {"n": "0"}, "rate", "1/s", "higher", [1.0, 2.0]), Metric("t", {"n": "0"}, "time", "s",
                                                                                   "lower", [3.0])]
        assert history.add(RunRecord("b0", "b"), same, replace=True) == 0
        same[1] = Metric("t", {"n": "0"}, "time", "s", "lower", [4.0])
        assert history.add(RunRecord("b0", "b"), same, replace=True) == 1
        assert history.metrics("b0")[1].samples == [4.0]
