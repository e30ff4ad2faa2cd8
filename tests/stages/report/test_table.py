"""Table mechanics: JUBE's sort with missing values, format fallbacks, styles, transpose, colw."""

from caramel.stages.analyse.inputs import WPRecord
from caramel.stages.expand.params import Params
from caramel.stages.report.dataset import Row
from caramel.stages.report.table import format_value, make_table, render
from caramel.stages.spec.model import Column, Table


def row(wp_id, values, params=None, status="done"):
    wp = WPRecord(wp_id, "s", 0, (), Params(params or {}, {"n": "int"}), f"/r/{wp_id}/work", status)
    return Row("a", [wp], values, status, "")


def table(**kw):
    cols = kw.pop("columns", [Column("n"), Column("v", "Value", ".1f")])
    return Table("t", columns=cols, **kw)


def test_sort_by_typed_values_missing_ones_stay_put():
    rows = [row(0, {"v": 2.0}, {"n": "10"}), row(1, {"v": 1.0}, {"n": "9"}), row(2, {}, {"n": "1"})]
    data = make_table(table(sort=["n"]), rows, {})
    assert [r[0] for r in data.cells] == ["1", "9", "10"]  # ints, not text order
    data = make_table(table(sort=["v"]), rows, {})  # a missing sort value is never "less"
    assert [r[1] for r in data.cells] == ["1.0", "2.0", ""]
    data = make_table(table(sort=["no_such_key"]), rows, {})
    assert [r[0] for r in data.cells] == ["10", "9", "1"]


def test_rows_without_any_column_are_left_out_and_units_go_into_headings():
    data = make_table(table(columns=[Column("v", format=".2f")]), [row(0, {"v": 1}), row(1, {})], {"v": "s"})
    assert data.headings == ["v[s]"] and data.cells == [["1.00"]]


def test_format_value_like_jube_without_its_crashes():
    assert format_value(".2f", 3) == "3.00"
    assert format_value("d", 3.9) == "3"
    assert format_value("05d", "7") == "00007"
    assert format_value(".2f", "n/a") == "n/a"
    assert format_value("d", float("nan")) == "nan"


def test_status_column_only_when_needed():
    done = make_table(table(), [row(0, {"v": 1.0}, {"n": "1"})], {})
    assert "status" not in done.headings
    mixed = make_table(table(), [row(0, {"v": 1.0}, {"n": "1"}), row(1, {}, {"n": "2"}, status="open")], {})
    assert mixed.headings[-1] == "status" and mixed.cells[1] == ["2", "", "open"]


def test_styles():
    data = make_table(table(), [row(0, {"v": 1.25}, {"n": "1"}), row(1, {"v": 10.0}, {"n": "22"})], {})
    assert render(data, "csv") == "n,Value\n1,1.2\n22,10.0\n"
    assert render(data, "pretty") == ("t:\n|  n | Value |\n|----|-------|\n|  1 |   1.2 |\n| 22 |  10.0 |\n")
    assert render(data, "aligned") == " n,Value\n 1,  1.2\n22, 10.0\n"
    assert render(data, "markdown") == "**t**\n\n| n | Value |\n|---:|---:|\n| 1 | 1.2 |\n| 22 | 10.0 |\n"
    data.transpose = True
    assert render(data, "pretty") == "t:\n|     n |   1 |   22 |\n| Value | 1.2 | 10.0 |\n"


def test_separator_and_colw():
    data = make_table(table(separator=";", columns=[Column("n", colw="5"), Column("v")]),
                      [row(0, {"v": "a|b"}, {"n": "1"})], {})
    assert render(data, "csv") == "n;v\n1;a|b\n"
    assert render(data, "aligned") == "    n;  v\n    1;a|b\n"
    assert "a\\|b" in render(data, "markdown")
