"""Change points on the dashboard (issue 39): a history with a known step in one series gets its
marker at the first run after the step, the driver update that came with it named on hover and in
the events panel; a history without a step says none was found. The detection itself is
consumers/history/changes.py's (tests/consumers/history/test_changes.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from caramel.consumers.history.changes import MIN_RUNS
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import marks as change_marks
from caramel.consumers.pages import render, sources

from .browser import Opened

RUNS, STEP = 24, 12  # the step: the first run after is run 12, where the driver went 550 -> 560


def _history(path, step: float = 0.85) -> str:
    """24 runs of one benchmark, two sizes; size 64's rate drops to `step` of itself at run 12,
    when the driver changes; size 32 stays level. 1 % noise, seeded."""
    rng = np.random.default_rng(3)
    with History.open(str(path)) as h:
        for i in range(RUNS):
            driver = "560.28" if i >= STEP else "550.54"
            run = RunRecord(
                f"run{i:02d}", "gemm", system="lab", started=1.75e9 + 3600.0 * i,
                caramel_version="0.1.0", host=f"node{i % 5}",  # the host: volatile, no cause
                fingerprint={"gpu_model": "H100", "driver": driver, "cuda": "12.4"},
            )  # fmt: skip
            metrics = []
            for size, level in (("32", 100.0), ("64", 200.0)):
                scale = step if size == "64" and i >= STEP else 1.0
                samples = (level * scale * (1 + 0.01 * rng.standard_normal(3))).tolist()
                metrics.append(Metric("t", {"size": size}, "rate", "GFLOP/s", "higher", samples))
            h.add(run, metrics)
    return str(path)


def _data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="caramel-data">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def test_the_step_is_marked_on_its_series_with_its_cause(tmp_path):
    coll = sources.load([_history(tmp_path / "h.db")])
    html = render.page(coll, "caramel dashboard")
    (plot,) = [p for p in _data(html)["plots"] if p["kind"] == "history"]
    by_config = {s["config"]: s["changes"] for s in plot["series"]}
    assert by_config["size=32"] == []
    (change,) = by_config["size=64"]
    runs = _data(html)["runs"]
    assert change["kind"] == "regression" and abs(change["ratio"] - 0.85) < 0.02
    assert change["low"] < change["ratio"] < change["high"] < 1 and change["p"] < 0.001
    assert runs[change["run"]]["t"] == round((1.75e9 + 3600.0 * STEP) * 1000)  # the first after
    assert runs[change["before"]]["t"] == round((1.75e9 + 3600.0 * (STEP - 1)) * 1000)
    # the host changes every run: no cause; the lists of causes are in the page once each
    assert _data(html)["causes"][change["causes"]] == ["driver: 550.54 -> 560.28"]
    panel = re.search(r'<section id="events">.*?</section>', html, re.S).group(0)
    assert "driver: 550.54 -&gt; 560.28" in panel and "1 series of 1 benchmark" in panel
    assert '<tr data-bench="gemm" data-group="lab">' in panel  # the filters hide it with gemm
    assert "regression" in panel and re.search(r"-1[45]\.\d %", panel) and "no-events" not in panel


def test_a_history_without_a_step_says_none_was_found(tmp_path):
    coll = sources.load([_history(tmp_path / "h.db", step=1.0)])
    html = render.page(coll, "caramel dashboard")
    (plot,) = [p for p in _data(html)["plots"] if p["kind"] == "history"]
    assert all(s["changes"] == [] for s in plot["series"])
    panel = re.search(r'<section id="events">.*?</section>', html, re.S).group(0)
    assert "No change point found in 2" in panel and f"at least {MIN_RUNS} runs" in panel


def test_marks_are_found_on_every_figure_not_the_thinned_points(tmp_path):
    coll = sources.load([_history(tmp_path / "h.db")])
    coll.figures = [f for f in coll.figures if f.run in (0, RUNS - 1)]  # as a thinned page draws
    found = change_marks.find(coll)
    assert [c.index for cs in found.by_series.values() for c in cs] == [STEP]
    assert found.judged == 2 and found.short == 0 and len(found.events) == 1


@pytest.mark.slow  # headless chromium
def test_the_marker_shows_its_cause_on_hover(tmp_path, browser):
    page = tmp_path / "d.html"
    page.write_text(render.page(sources.load([_history(tmp_path / "h.db")]), "caramel dashboard"))
    opened = Opened(browser, page.as_uri(), width=1440, height=1000)
    try:
        view = opened.page
        assert opened.errors == []
        card = view.locator("figure[data-kind=history]").first
        card.scroll_into_view_if_needed()
        names = view.evaluate(
            "() => document.querySelector('figure[data-kind=history] .plot').data.map(t => t.name)"
        )
        assert "change point" in names
        marker = card.locator(".scatterlayer .trace").last.locator(".points path").first
        marker.wait_for()
        box = marker.bounding_box()
        view.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        label = view.locator(".hoverlayer .hovertext")
        label.wait_for(timeout=5000)
        text = label.text_content()
        assert "change point: regression" in text and "driver: 550.54 -> 560.28" in text, text
        assert view.locator("#events-table tbody tr").count() == 1
    finally:
        opened.close()
