"""Which columns are figures (history.metrics.collect): declared, not guessed (issue 21)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from caramel.consumers.history.metrics import _figure_pattern, _patterns, collect
from caramel.stages.report.table import Key, TableData
from caramel.stages.spec.model import Column, Pattern, Patternset, Table
from caramel.vocabulary import COPY_AGGREGATES, COPY_SPREADS

ROOT = Path(__file__).resolve().parents[3]


def _inp(patterns: list[Pattern], params: set[str]):
    bench = SimpleNamespace(patternsets={"p": Patternset("p", patterns)} if patterns else {})
    return SimpleNamespace(benchmark=bench, param_names=lambda: set(params))


def _made(name: str, columns: list[tuple[str, str, str]], rows: list[list], config_columns=()):
    """A table as report.results makes it: (column name, title, unit) per column, rows of typed values."""
    table = Table(name, columns=[Column(n, title) for n, title, _unit in columns])
    keys = [Key(n, title or None, "", 0, unit) for n, title, unit in columns]
    data = TableData(name, "csv", ",", False, keys, rows, [[str(v) for v in r] for r in rows],
                     ["done"] * len(rows), list(range(len(rows))))
    data.config_columns = list(config_columns)
    return SimpleNamespace(table=table, data=data)


def test_identifiers_and_undeclared_patterns_are_no_figures():
    """JobID and Iterations were compared: `bench compare` exited 1 on 'JobID -55.9 % regressed'."""
    patterns = [Pattern("jobid", "", "int"), Pattern("iterations", "", "int"), Pattern("elp", "", "float"),
                Pattern("tokens", "", "float", direction="higher"), Pattern("t", "", "float", unit="s"),
                Pattern("note", "")]
    inp = _inp(patterns, {"nodes"})
    made = _made("result", [("nodes", "", ""), ("jobid", "JobID", ""), ("iterations", "Iterations", ""),
                            ("elp_avg", "Time/iteration(s)", ""), ("tokens", "Tokens/second", ""),
                            ("t_avg", "", "s"), ("t_min", "", "s"), ("t_std", "", "s"), ("t_cnt", "", ""),
                            ("note", "", "")],
                 [[1, 4711, 10, 0.5, 900.0, 0.4, 0.3, 0.1, 3, "x"], [2, 4712, 10, 0.3, 1800.0, 0.2, 0.1, 0.1, 3, "y"]])
    metrics = collect(inp, [made])
    found = {(m.name, m.unit, m.direction) for m in metrics}
    assert found == {("Tokens/second", "", "higher"), ("t_avg", "s", "lower"), ("t_min", "s", "lower")}
    assert {m.key for m in metrics} == {"nodes=1", "nodes=2"}


def test_the_performance_lines_unit_is_the_figures_unit_not_its_configuration():
    inp = _inp([], set())
    made = _made("performance", [("model", "", ""), ("performance", "", ""), ("metric", "", ""), ("status", "", "")],
                 [["serve", 120.0, "ms", "done"], ["train", 900.0, "samples/s", "done"], ["odd", 5.0, "", "done"],
                  ["both", 1.0, "s", "done"], ["both", 2.0, "items/s", "done"]],
                 config_columns=["model", "metric"])
    metrics = {(m.row["model"], m.name): m for m in collect(inp, [made])}
    assert metrics[("serve", "performance")].row == {"model": "serve"}  # the unit is no configuration
    assert (metrics[("serve", "performance")].unit, metrics[("serve", "performance")].direction) == ("ms", "lower")
    assert (metrics[("train", "performance")].unit, metrics[("train", "performance")].direction) == \
        ("samples/s", "higher")
    assert metrics[("odd", "performance")].direction == "unknown"  # no unit, nothing decides
    assert {"performance[s]", "performance[items/s]"} <= {name for model, name in metrics if model == "both"}


def test_spread_rows_of_copies_are_never_figures():
    """A copies table's sd/sem rows were judged as benchmarks (an sd row 'failed' at 28.9 vs 200)."""
    inp = _inp([], set())
    rows = [["gpt", 0, 100.0, "tokens/s", "done"], ["gpt", 1, 110.0, "tokens/s", "done"]]
    rows += [["gpt", agg, 210.0 if agg == "sum" else 105.0, "tokens/s", "done"] for agg in COPY_AGGREGATES]
    rows += [["gpt", spread, 7.07, "tokens/s", "done"] for spread in COPY_SPREADS]
    made = _made("performance", [("model", "", ""), ("caramel_copy", "", ""), ("performance", "", ""),
                                 ("metric", "", ""), ("status", "", "")], rows,
                 config_columns=["model", "metric", "caramel_copy"])
    copies = sorted(m.row["caramel_copy"] for m in collect(inp, [made]))
    assert copies == sorted(["0", "1", *COPY_AGGREGATES])


def _column_figures(path: Path) -> dict[str, bool]:
    from caramel.stages.spec.loader import load

    bench = load(str(path), {"117M", "localgpu"})[0]
    patterns = _patterns(SimpleNamespace(benchmark=bench))
    return {column.title or column.name: _figure_pattern(column.name, patterns) is not None
            for result in bench.results for table in result.tables for column in table.columns}


@pytest.mark.parametrize("path, figures", [
    ("benchmarks/llm.yaml", {"Time/iteration(s)", "Tokens/second", "Avg_TFLOPs/GPU", "Energy(Wh)",
                             "Energy/device(Wh)", "Tokens/J", "AvgPower(W)", "GEMM(GFLOP/s)", "MFU(%)"}),
    ("benchmarks/resnet50.xml", {"Images/second", "Energy(Wh)", "Energy/device(Wh)", "Images/J", "AvgPower(W)",
                                 "GEMM(GFLOP/s)", "MFU(%)"}),
])
def test_the_shipped_benchmarks_declare_their_figures_and_no_identifier(path, figures):
    found = _column_figures(ROOT / path)
    assert {title for title, figure in found.items() if figure} == figures
    assert not found["JobID"] and not found.get("Iterations", False)
    assert not any(found.get(title, False) for title in ("Parameters", "Processes", "Threads/Process"))
