"""Tables for people and for programs (issue 37): a terminal gets rounded numbers, no empty columns
and a table folded to its width; a pipe, --style or -o keep the table's own style and precision."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.cli.common import BenchmarkOptions
from caramel.cli.result import ResultOptions, result
from caramel.cli.run import RunOptions, run_benchmarks
from caramel.stages.report.readable import cell, folded, for_people, number
from caramel.stages.report.table import Key, TableData


@pytest.mark.parametrize(
    "value, shown",
    [
        (0.025733333333333334, "0.02573"),  # a repeat mean the issue saw printed whole
        (19.200000000000003, "19.2"),
        (11499.87, "11500"),  # never 1.15e+04
        (123456.0, "123456"),
        (3.0, "3"),
        (0.0, "0"),
        (-0.5, "-0.5"),
        (1e-7, "1e-07"),  # outside the plain range the exponent is the readable form
    ],
)
def test_numbers_have_four_significant_digits(value: float, shown: str) -> None:
    assert number(value) == shown


def test_a_columns_format_stays_where_it_shows_enough_digits() -> None:
    assert cell(0.0412345, "0.04") == "0.04123"  # `.2f` cut time per iteration to 0.04
    assert cell(19419.69, "19419.69") == "19419.69"
    assert cell(60, "60") == "60" and cell("local", "local") == "local"


@given(st.floats(min_value=1e-4, max_value=1e14) | st.floats(min_value=-1e14, max_value=-1e-4))
def test_a_number_is_plain_and_close(value: float) -> None:
    shown = number(value)
    assert "e" not in shown
    assert math.isclose(float(shown), value, rel_tol=5e-4)


def _table(names: list[str], rows: list[list[object]]) -> TableData:
    keys = [Key(name, None, "", 0) for name in names]
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    return TableData("result", "csv", ",", False, keys, rows, cells)


def test_figures_are_rounded_to_their_spread_and_empty_columns_left_out() -> None:
    data = _table(
        ["jobid", "size", "t", "t_sd", "t_ci_low", "t_ci_high", "n"],
        [[None, 32, 0.025733333333333334, 0.0012345, 0.02411111, 0.0273555, 3]],
    )
    shown = for_people(data)
    assert [key.name for key in shown.keys] == ["size", "t", "t_sd", "t_ci_low", "t_ci_high", "n"]
    # the sd to 2 significant digits, the mean and its interval to the same decimal
    assert shown.cells == [["32", "0.0257", "0.0012", "0.0241", "0.0274", "3"]]


def test_a_wide_table_is_folded_to_the_width_with_its_first_column_in_each_part() -> None:
    names = ["system"] + [f"figure_number_{i}" for i in range(12)]
    data = _table(names, [["local"] + [1.5 * i for i in range(12)]])
    text = folded(for_people(data), 80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert text.count("| system |") >= 2 and text.count("result:") == 1
    assert all(name in text for name in names)


BENCH = """name: tiny
outpath: tiny_run
parameterset: {name: p, parameter: [{name: size, type: int, _: "1,2"}, {name: jobid, _: ""}]}
step: {name: s, use: p, do: "echo value 0.025733333333333334"}
patternset: {name: pat, pattern: {name: value, type: float, unit: s, _: "value $jube_pat_fp"}}
analyser: {name: a, use: pat, analyse: {step: s, file: stdout}}
result: {use: a, table: {name: result, style: csv, column: [jobid, size, value]}}
"""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_table_for_people_and_a_pipe_the_tables_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.yaml").write_text(BENCH)
    ran = RunOptions(source=BenchmarkOptions(file="tiny.yaml"), quiet=True)
    assert run_benchmarks(ran, io.StringIO()) == 0
    history = str(tmp_path / "history.db")
    piped, terminal = io.StringIO(), Terminal()
    assert result(ResultOptions(id="last", history=history), piped) == 0
    assert result(ResultOptions(id="last", history=history), terminal) == 0
    assert piped.getvalue().splitlines()[:2] == ["jobid,size,value[s]", ",1,0.025733333333333334"]
    shown = terminal.getvalue()
    assert "| size | value[s] |" in shown and "|  0.02573 |" in shown
    assert "jobid" not in shown  # empty in every row
    styled = Terminal()
    assert result(ResultOptions(id="last", history=history, style="csv"), styled) == 0
    assert styled.getvalue() == piped.getvalue()  # --style: the program's table, also on a terminal
    written = (tmp_path / "tiny_run" / "000000" / "result" / "result.dat").read_text()
    assert written == piped.getvalue().rstrip("\n") + "\n"  # the result file keeps full precision


def test_compare_and_predict_round_as_tables_do() -> None:
    from caramel.cli.compare import _fmt
    from caramel.cli.predict_text import number_text as _g

    assert _fmt(11499.87, 123.4, 3) == "11500 ± 123 (n=3)"  # not 1.15e+04 ± 1.2e+02
    assert _fmt(0.025733333333333334, 0.0012345, 3) == "0.0257 ± 0.0012 (n=3)"
    assert _fmt(100.0, float("nan"), 1) == "100 ± - (n=1)"
    assert _g(11499.87) == "11500"
