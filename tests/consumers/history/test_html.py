"""The pages without a browser: axes (sizes, integers, log for doubling), plots of sweeps with
ideal scaling, energy against throughput, history with regressions, the summary's verdicts,
escaping, self-containment with plotly inlined once."""

from __future__ import annotations

import json
import re

import pytest

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import axes, summary
from caramel.consumers.pages.figures import benchmark_plots, ci_half, interval_fields, intervals
from caramel.consumers.pages.render import page
from caramel.consumers.pages.sources import load


def test_sizes_are_axis_values():
    assert axes.axis_value("117M") == 117e6 and axes.axis_value("13B") == 13e9 and axes.axis_value("4") == 4.0
    assert axes.axis_value("A100") is None and axes.axis_value("M") is None and axes.axis_value("nan") is None


def test_axes_log_for_doubling_and_decades_integer_ticks():
    nodes = axes.x_axis("nodes", {1.0: "1", 2.0: "2", 4.0: "4", 8.0: "8"})
    assert nodes["type"] == "log" and nodes["tickvals"] == [1, 2, 4, 8] and nodes["ticktext"] == ["1", "2", "4", "8"]
    sizes = axes.x_axis("ModelSize", {117e6: "117M", 800e6: "800M", 13e9: "13B"})
    assert sizes["type"] == "log" and sizes["ticktext"] == ["117M", "800M", "13B"]
    batch = axes.x_axis("batch", {3.0: "3", 5.0: "5", 7.0: "7"})
    assert "type" not in batch and batch["tickvals"] == [3, 5, 7]  # integers: ticks at the values, never 1.5
    lr = axes.x_axis("lr", {0.1: "0.1", 0.2: "0.2", 0.3: "0.3"})
    assert "tickvals" not in lr and "type" not in lr
    assert axes.titled("elapsed", "s") == "elapsed [s]" and axes.titled("Energy(Wh)", "Wh") == "Energy(Wh)"


def _history(path, runs=3, slow_run=1, sites=("a",)) -> str:
    with History.open(str(path)) as h:
        for site in sites:
            for i in range(runs):
                run = RunRecord(f"{site}{i}", "llm", system="A100", started=1000.0 * (i + 1), site=site,
                                job_ids=[str(100 + i)], git_commit="abc", nodes="n1", tags=["800M"])
                factor = 0.7 if i == slow_run else 1.0
                metrics = []
                for nodes in (1, 2, 4):
                    row = {"Nodes": str(nodes)}
                    rate = [factor * 1000 * nodes * 0.9 + d for d in (-5, 0, 5)]
                    metrics.append(Metric("t", row, "Tokens/second", "", "higher", rate))
                    metrics.append(Metric("t", row, "Tokens/J", "", "higher", [r / 300 for r in rate]))
                h.add(run, metrics)
    return str(path)


def test_plots_of_a_benchmark(tmp_path):
    coll = load([_history(tmp_path / "h.db")])
    plots = benchmark_plots(coll, coll.figures)
    kinds = [(p["kind"], p["title"]) for p in plots]
    assert ("sweep", "Tokens/second against Nodes") in kinds and ("energy", "Tokens/J against Tokens/second") in kinds
    sweep = next(p for p in plots if p["title"] == "Tokens/second against Nodes")
    assert sweep["ideal"] and sweep["higher"] and sweep["xaxis"]["type"] == "log"
    (series,) = sweep["series"]
    assert series["x"] == [1, 2, 4] and series["run"] == [2, 2, 2] and all(sd > 4 for sd in series["sd"])
    history = next(p for p in plots if p["title"] == "history of Tokens/second")
    assert [s["bad"] for s in history["series"]] == [[1], [1], [1]]  # the slow run, in each configuration


def test_summary_verdicts(tmp_path):
    coll = load([_history(tmp_path / "h.db", slow_run=2)])
    rows = {r.metric: r for r in summary.rows(coll)}
    rate = rows["Tokens/second"]
    assert rate.verdict == "regressed" and rate.regressed == 3 and round(rate.previous_pct) == -30
    assert rate.latest.config == "Nodes=4" and rate.baseline_verdict == "no baseline"
    coll = load([_history(tmp_path / "g.db", slow_run=1)])
    assert {r.verdict for r in summary.rows(coll)} == {"improved"}


def test_summary_against_a_named_baseline(tmp_path):
    path = _history(tmp_path / "h.db", slow_run=2)
    with History.open(path) as h:
        h.set_baseline("good", "a0")
    row = next(r for r in summary.rows(load([path])) if r.metric == "Tokens/second")
    assert row.baseline == "good" and row.baseline_verdict == "regressed" and round(row.baseline_pct) == -30


def test_several_sites_say_where_each_result_came_from(tmp_path):
    coll = load([_history(tmp_path / "a.db", sites=("lab",)), _history(tmp_path / "b.db", sites=("hpc",))])
    assert sorted({r.label for r in coll.runs}) == ["A100 @ hpc", "A100 @ lab"]
    text = page(coll, "t")
    assert "A100 @ hpc" in text and "at 2 sites (hpc, lab)" in text


def test_page_is_self_contained_and_escaped(tmp_path):
    path = tmp_path / "h.db"
    with History.open(str(path)) as h:
        for i in range(2):
            h.add(RunRecord(f"k{i}", "b</script><b>", system="<i>s</i>", started=float(i)),
                  [Metric("t", {"n": str(n)}, "rate<script>", "", "higher", [1.0 * n]) for n in (1, 2)])
    text = page(load([str(path)]), "t")
    assert text.count("<script") == 3 and "<script src" not in text and "<link" not in text
    assert "<i>s</i>" not in text and "&lt;i&gt;s&lt;/i&gt;" in text
    data = re.search(r'<script type="application/json" id="caramel-data">(.*?)</script>', text, re.S).group(1)
    assert "<" not in data and json.loads(data)["runs"][0]["g"] == "<i>s</i>"


def test_every_point_of_n_2_or_more_carries_its_interval(tmp_path):
    """Issue 34: each plotted figure of repeats has its mean's 99 % interval (Student's t, as
    scipy.stats.t.interval gives it for the samples -5, 0, +5 about the mean), shown on hover and in
    the plot's CSV; a figure of one sample has none (0). The page says the level."""
    import numpy as np
    import scipy.stats

    path = _history(tmp_path / "h.db")
    with History.open(path) as h:  # one more run of one sample each
        h.add(RunRecord("single", "llm", system="A100", started=9000.0, site="a", tags=["800M"]),
              [Metric("t", {"Nodes": str(n)}, "Tokens/second", "", "higher", [900.0 * n])
               for n in (1, 2, 4)])
    coll = load([path])
    plots = benchmark_plots(coll, coll.figures)
    history = next(p for p in plots if p["title"] == "history of Tokens/second")
    low, high = scipy.stats.t.interval(0.99, 2, loc=0.0, scale=scipy.stats.sem([-5.0, 0.0, 5.0]))
    for series in history["series"]:
        assert series["ci"][:-1] == [float(f"{high:.5g}")] * 3 and series["ci"][-1] == 0
    sweep = next(p for p in plots if p["title"] == "Tokens/second against Nodes")
    assert intervals(sweep["series"][0]) == [0, 0, 0]  # the latest run: one sample each
    assert np.isclose(high, -low)
    text = page(coll, "t")
    data = re.search(r'id="caramel-data">(.*?)</script>', text, re.S).group(1)
    assert json.loads(data)["level"] == 99
    assert '" % CI"' in text and "Student's t of the mean" in text  # the hover's, the CSV's words


def test_the_summarys_changes_show_their_ratios_interval(tmp_path):
    """Issue 34: a change of figures of repeats shows the 99 % interval of its ratio (the delta
    method on log(ratio) at Welch's df, docs/history.md; scipy's t quantile), as a change in %, with
    the ratio, the level and the method on hover; the same beside the baseline's change."""
    import math

    import numpy as np
    import scipy.stats

    path = _history(tmp_path / "h.db", slow_run=2)
    with History.open(path) as h:
        h.set_baseline("good", "a0")
    coll = load([path])
    row = next(r for r in summary.rows(coll) if r.metric == "Tokens/second")
    current = np.array([0.7 * 3600 + d for d in (-5, 0, 5)])  # Nodes=4, the slowed run
    before = np.array([3600.0 + d for d in (-5, 0, 5)])
    terms = [np.var(x, ddof=1) / np.mean(x) ** 2 / 3 for x in (current, before)]
    df = sum(terms) ** 2 / sum(t ** 2 / 2 for t in terms)
    half = scipy.stats.t.ppf(0.995, df) * math.sqrt(sum(terms))
    ratio = current.mean() / before.mean()
    for judged in (row.previous, row.against_baseline):
        assert judged.ratio == ratio
        assert judged.ratio_low == pytest.approx(ratio * math.exp(-half), rel=1e-9)
        assert judged.ratio_high == pytest.approx(ratio * math.exp(half), rel=1e-9)
    text = page(coll, "t")
    low, high = 100 * (ratio * math.exp(-half) - 1), 100 * (ratio * math.exp(half) - 1)
    shown = f"{low:+.1f} % … {high:+.1f} %"
    assert text.count(shown) >= 2  # vs previous and vs baseline
    assert "99 % CI" in text and "delta method on log(ratio of means), Welch df" in text


def test_a_series_of_equal_repeats_carries_one_interval_factor_not_each_half_width():
    """Where every figure of a series has n samples (n >= 2), the page carries one factor
    t(0.99, n - 1)/sqrt(n) instead of each half-width (a third of a big history's page), and the
    half-widths page.js computes from it are ci_half's; mixed counts keep each half-width."""
    sds = [5.0, 2.5, 0.0, 1.25]
    same = interval_fields(sds, [3, 3, 3, 3])
    assert set(same) == {"cf"}
    want = ci_half(sds, [3, 3, 3, 3])
    got = intervals({"sd": sds, **same})
    assert all(abs(g - w) <= 1e-4 * max(w, 1e-9) for g, w in zip(got, want, strict=True))
    mixed = interval_fields(sds, [3, 3, 1, 3])
    assert mixed == {"ci": ci_half(sds, [3, 3, 1, 3])}
    assert intervals({"sd": sds, **interval_fields(sds, [1, 1, 1, 1])}) == ci_half(sds, [1] * 4)
