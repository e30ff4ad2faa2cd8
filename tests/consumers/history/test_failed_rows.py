"""A failed row's reason in the history (issue 37): one row of the figures table per table and
configuration, with no numbers and the reason. It is written, replaced when the reason changes,
exported and imported, copied, counted apart from the figures, and no reader of figures takes it
for a number (the run's metrics, a benchmark's, the pages, `bench history changes`, the sinks)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from caramel.consumers.history import changes_read, query, validate
from caramel.consumers.history.metrics import FAILED_ROW, Metric
from caramel.consumers.history.reader import read_history
from caramel.consumers.history.sinks import documents
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.history.transfer import copy_runs
from caramel.errors import Location, RunError

REASON = "do 1 exited with 3: python3 train.py\n    stdout: disk full on node7"


def figures(reason: str = REASON) -> list[Metric]:
    return [
        Metric("t", {"n": "1"}, "rate", "items/s", "higher", [1.0, 3.0]),
        Metric("t", {"n": "2"}, FAILED_ROW, "", "unknown", [], reason),
    ]


def run(key: str = "r1", started: float = 1.0) -> RunRecord:
    return RunRecord(key, "b", system="s", started=started)


@pytest.fixture
def history(tmp_path: Path):
    with History(str(tmp_path / "h.db")) as opened:
        opened.add(run(), figures(), replace=True)
        yield opened


def test_a_failed_row_is_stored_with_its_reason_and_no_numbers(history):
    stored = history.db.execute(
        "SELECT config, name, n, mean, sd, min, max, samples, reason FROM metrics ORDER BY config"
    ).fetchall()
    assert stored[1] == ('{"n": "2"}', "", 0, None, None, None, None, None, REASON)
    assert stored[0][-1] is None  # a figure of a done row has no reason


def test_the_runs_metrics_leave_a_failed_row_out_unless_asked(history):
    assert [m.name for m in history.metrics("r1")] == ["rate"]
    assert [m.name for m in history.metrics_by_run("b")["r1"]] == ["rate"]  # predict's read
    assert history.skipped == []  # no figure "holds a value that is not a finite number"
    assert history.metrics("r1", failed=True)[1] == figures()[1]


def test_the_counts_leave_a_failed_row_out_and_list_counts_it_apart(history):
    assert [(figures, flagged) for _, figures, flagged in history.listing()] == [(1, False)]
    assert history.failures() == {"r1": [("t", '{"n": "2"}', REASON)]}


def test_a_reason_that_changed_is_replaced_and_one_gone_is_removed(history):
    assert history.add(run(), figures("exited with 4"), replace=True) == 1
    assert history.failures() == {"r1": [("t", '{"n": "2"}', "exited with 4")]}
    assert history.add(run(), figures()[:1], replace=True) == 1  # the row is done now
    assert history.failures() == {}


def test_the_pages_read_no_number_of_a_failed_row(history):
    contents = read_history(history.path)
    assert [key[2] for key in contents.keys] == ["rate"]
    assert [figure[2:] for figure in contents.figures] == [
        ('{"n": "1"}', "rate", "items/s", "higher", 2, 2.0, pytest.approx(2**0.5))
    ]
    assert contents.failures == {"r1": [("t", '{"n": "2"}', REASON)]}


def test_history_changes_reads_no_estimate_of_a_failed_row(history):
    found = query.frame(history.db, changes_read.NUMBERS_SQL)
    assert found["mean"].tolist() == [2.0]  # the failed row's reason is not read as a figure


def test_the_sinks_get_no_document_of_a_failed_row(history):
    assert [doc["figure"] for doc in documents(history.written)] == ["rate"]


def test_export_import_and_copy_carry_the_reason(history, tmp_path):
    lines = list(history.export_lines())
    line = json.loads(lines[0])
    assert line["schema"] == 3 and line["metrics"][1] == {
        "table": "t",
        "row": {"n": "2"},
        "name": "",
        "unit": "",
        "direction": "unknown",
        "samples": [],
        "reason": REASON,
    }
    parsed = validate.parse_line(lines[0].encode(), Location("e.jsonl", 1))
    assert parsed is not None and list(parsed[1]) == figures()
    with History(str(tmp_path / "imported.db")) as other:
        # one run, one figure and one failed row's reason, counted apart (no figure)
        assert other.import_records([(*parsed, Location("e.jsonl", 1))]) == (1, 1, 1)
        assert list(other.export_lines()) == lines
    with History(str(tmp_path / "copy.db")) as other:
        copy_runs(history, other)
        assert other.failures() == history.failures()
        assert [n for _, n, _ in other.listing()] == [1]


def test_bench_import_counts_failed_rows_apart_from_figures(history, tmp_path):
    """`bench import` says how many figures it added and, apart, how many failed rows' reasons:
    a failed row is no figure (it was counted as one)."""
    from caramel.cli.export import ImportOptions, import_command

    export = tmp_path / "e.jsonl"
    export.write_text("".join(line + "\n" for line in history.export_lines()))
    target = str(tmp_path / "imported.db")
    said = io.StringIO()
    assert import_command(ImportOptions(file=str(export), history=target), said) == 0
    assert said.getvalue() == f"1 new run(s), 1 new figure(s) and 1 failed row(s) from {export}\n"
    again = io.StringIO()  # nothing new: no failed row named
    assert import_command(ImportOptions(file=str(export), history=target), again) == 0
    assert again.getvalue() == f"0 new run(s), 0 new figure(s) from {export}\n"


def test_an_import_adding_figures_to_a_run_there_counts_only_its_new_failed_rows(tmp_path):
    """A run already in the history gains what the file adds; the failed rows counted are those
    added, not those it had."""
    with History(str(tmp_path / "h.db")) as source:
        source.add(run(), figures(), replace=True)
        line = next(source.export_lines())
    parsed = validate.parse_line(line.encode(), Location("e.jsonl", 1))
    assert parsed is not None
    with History(str(tmp_path / "other.db")) as other:
        other.add(run(), figures()[:1], replace=True)  # the figure, not the failed row
        assert other.import_records([(*parsed, Location("e.jsonl", 1))]) == (0, 0, 1)
        other.add(run("r2"), figures(), replace=True)
        assert other.import_records([(*parsed, Location("e.jsonl", 1))]) == (0, 0, 0)


@pytest.mark.parametrize(
    ("figure", "message"),
    [
        ({"samples": []}, "metrics[0].samples is empty, expected at least one number"),
        ({"samples": [], "reason": " "}, "metrics[0].samples is empty and its reason too"),
        ({"samples": [], "reason": 3}, "metrics[0].reason holds the number 3, expected a text"),
        ({"samples": [1.0], "reason": None}, "metrics[0].reason holds null, expected a text"),
    ],
)
def test_an_import_refuses_a_figure_of_no_samples_without_a_reason(figure, message):
    metric = {"table": "t", "row": {}, "name": "x", "unit": "", "direction": "unknown", **figure}
    line = json.dumps({"schema": 3, "run": {"run_key": "r", "benchmark": "b"}, "metrics": [metric]})
    with pytest.raises(RunError, match="not a bench export") as raised:
        validate.parse_line(line.encode(), Location("e.jsonl", 4))
    assert message in str(raised.value)


@pytest.mark.xdist_group("postgres")
def test_a_failed_row_on_postgresql_reads_as_on_sqlite(tmp_path: Path, pg_url: str) -> None:
    """The same rows, counts, partial index and readers on the team's engine."""
    with History(pg_url) as server:
        server.add(run(), figures(), replace=True)
        assert [m.name for m in server.metrics_by_run("b")["r1"]] == ["rate"]
        assert server.failures() == {"r1": [("t", '{"n": "2"}', REASON)]}
        assert [n for _, n, _ in server.listing()] == [1]
        assert json.loads(next(server.export_lines()))["metrics"][1]["reason"] == REASON
    contents = read_history(pg_url)
    assert [key[2] for key in contents.keys] == ["rate"] and contents.failures == {
        "r1": [("t", '{"n": "2"}', REASON)]
    }
