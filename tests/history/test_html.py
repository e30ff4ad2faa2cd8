"""The report's page without a browser: sweeps over numbers and sizes, escaping, self-containment."""

from __future__ import annotations

from caramel.history.metrics import Metric
from caramel.history.store import History, RunRecord
from caramel.report.html import _axis_value, render


def test_sizes_are_axis_values():
    assert _axis_value("117M") == 117e6 and _axis_value("13B") == 13e9 and _axis_value("4") == 4.0
    assert _axis_value("A100") is None and _axis_value("M") is None


def test_throughput_is_plotted_against_model_size_and_nodes(tmp_path):
    with History.open(str(tmp_path / "h.db")) as history:
        run = RunRecord("k", "llm", host="<b>host</b>")
        rows = [{"ModelSize": size, "Nodes": nodes} for size in ("117M", "800M") for nodes in ("1", "2")]
        history.add(run, [Metric("t", row, "Tokens/second", "", "higher", [100.0 * i + 1]) for i, row in
                          enumerate(rows)])
        page = render(history, [(history.run("k"), [("t", ["ModelSize", "note"], [["117M", "<i>x</i>"]])])])
    assert "Tokens/second against ModelSize" in page and "Tokens/second against Nodes" in page
    assert "&lt;b&gt;host&lt;/b&gt;" in page and "&lt;i&gt;x&lt;/i&gt;" in page and "<i>x</i>" not in page
