"""The dashboard's headline is the best of comparable configurations (issue 37): never the smallest
problem's short time; the unit named once; metrics of one configuration in one compact table."""

from __future__ import annotations

from caramel.consumers.pages.render import _compact
from caramel.consumers.pages.sources import Figure
from caramel.consumers.pages.summary import _best, comparable, metric_title


def _figure(row: dict[str, str], name: str, direction: str, mean: float, unit: str = "s") -> Figure:
    config = ",".join(f"{k}={v}" for k, v in row.items())
    return Figure(0, "result", config, row, name, unit, direction, 1, mean, 0.0)


def test_elapsed_time_is_best_among_the_largest_problem_not_the_smallest() -> None:
    # quickstart: size 32, 64, 96; the smallest size has the shortest time
    times = [
        _figure({"size": s}, "elapsed", "lower", t)
        for s, t in (("32", 0.004), ("64", 0.03), ("96", 0.08))
    ]
    assert _best(times).row == {"size": "96"}


def test_hardware_parameters_stay_comparable() -> None:
    # nodes name hardware: the same problem on 1, 2, 4 nodes; the best is the fastest
    times = [
        _figure({"model": "800M", "nodes": n}, "elapsed", "lower", t)
        for n, t in (("1", 8.0), ("2", 4.5), ("4", 2.6))
    ]
    assert _best(times).row["nodes"] == "4"
    sizes = [
        _figure({"model": m, "nodes": "1"}, "tokens", "higher", r)
        for m, r in (("117M", 900.0), ("13B", 40.0), ("800M", 300.0))
    ]
    assert comparable(sizes) == [sizes[1]]  # 13B is the largest model (sizes read as numbers)


def test_the_unit_is_named_once() -> None:
    gemm = _figure({}, "GEMM(GFLOP/s)", "higher", 106.3, unit="GFLOP/s")
    assert metric_title(gemm) == "GEMM(GFLOP/s)"
    assert metric_title(_figure({}, "elapsed", "lower", 1.0)) == "elapsed [s]"
    from caramel.consumers.pages.figures import latest_plots

    class Run:
        label = "local"

    class Collected:
        runs = [Run()]

    (plot,) = latest_plots(Collected(), [gemm], set())  # type: ignore[arg-type]
    assert plot["title"] == "latest GEMM(GFLOP/s)"


def test_metrics_of_one_configuration_share_one_table() -> None:
    def plot(kind: str, xs: list[str]) -> dict:
        series = {
            "group": "local",  # the series' system (page.js names it with its configuration)
            "x": xs,
            "y": [1.5] * len(xs),
            "sd": [0.0] * len(xs),
            "ci": [0.0] * len(xs),
        }
        return {
            "kind": kind,
            "bench": "llm",
            "yaxis": {"title": {"text": "MFU [%]"}},
            "series": [series],
        }

    one = plot("latest", ["(one configuration)"])
    several = plot("latest", ["size=32", "size=64"])
    sweep = plot("sweep", ["1"])
    drawn, compact = _compact([one, several, sweep])
    assert drawn == [several, sweep]
    assert [(r.metric, r.system, r.mean, r.sd) for r in compact["llm"]] == [
        ("MFU [%]", "local", 1.5, None)
    ]


def test_the_summary_shows_the_largest_problem_and_says_so(tmp_path) -> None:
    from tests.consumers.history.test_dashboard_fixes import STARTED, _add, _summary_cells

    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.pages.render import page
    from caramel.consumers.pages.sources import load

    times = [
        Metric("result", {"size": s}, "elapsed", "s", "lower", [t])
        for s, t in (("32", 0.004), ("64", 0.03), ("96", 0.08))
    ]
    _add(tmp_path / "h.db", [("r0", "quickstart", STARTED, times)])
    html = page(load([str(tmp_path / "h.db")]), "t")
    (row,) = _summary_cells(html)
    assert "0.08" in row and "size=96 (the largest problem of 3)" in row


def test_the_pages_round_as_the_terminal_does() -> None:
    from caramel.consumers.pages.render import _fmt
    from caramel.stages.report.readable import number

    for value in (0.025733333333333334, 19.200000000000003, 0.0412345, 3.0):
        assert _fmt(value) == number(value)
    assert _fmt(11499.87) == "11,500"  # the terminal's 11500, with separators; never 1.15e+04
    assert _fmt(float("nan")) == ""


def test_alternatives_in_words_compete_for_the_same_problem() -> None:
    # a layout or a precision is another way to the same problem, not another problem
    layouts = [
        _figure({"size": "64", "layout": lay}, "elapsed", "lower", t)
        for lay, t in (("1x2", 0.05), ("2x1", 0.04))
    ] + [_figure({"size": "32", "layout": "2x1"}, "elapsed", "lower", 0.01)]
    assert _best(layouts).row == {"size": "64", "layout": "2x1"}
