"""In a real headless Chromium at desktop (1440) and laptop (1280 × 800, 1366) widths: a history plot
with 12 long legend entries, and a sweep with 20 (and its ideal-scaling line: 21), shows every entry
whole, inside its card (no scroll box cut off at the card's bottom), clear of plotly's toolbar."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages.render import page
from caramel.consumers.pages.sources import load

from .browser import Opened, share_near

LONG = "model=llama-3.1-70b-instruct-fp8,tensor_parallel={tp},pipeline_parallel=2,micro_batch={mb}"


@pytest.fixture(scope="module")
def legend_page(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("legend")
    configs = [{"model": LONG.format(tp=tp, mb=mb)} for tp in (1, 2, 4) for mb in (1, 2, 4, 8)]  # 12
    with History.open(str(base / "h.db")) as h:
        for run in range(3):
            record = RunRecord(f"r{run}", "serving", system="local", started=time.time() - 3600 * (3 - run),
                               tags=["local"])
            h.add(record, [Metric("t", row, "throughput", "tokens/s", "higher", [100.0 + run * 3 + i, 101.0 + i])
                           for i, row in enumerate(configs)])
    out = base / "page.html"
    out.write_text(page(load([str(base / "h.db")]), "legend"))
    return out


@pytest.fixture(scope="module")
def sweep_page(tmp_path_factory) -> Path:
    """Two sweeps of 20 long configurations: over nodes (20 series and the ideal-scaling line) and over
    the sequence length (20 series: what plotly had made a scroll box cut off at the card's bottom)."""
    base = tmp_path_factory.mktemp("sweep")
    with History.open(str(base / "h.db")) as h:
        for benchmark, swept in (("serving", "nodes"), ("prefill", "seq_len")):
            configs = [{swept: str(size), "model": LONG.format(tp=tp, mb=mb)}
                       for tp in (1, 2, 4, 8, 16) for mb in (1, 2, 4, 8) for size in (1, 2, 4)]
            record = RunRecord(benchmark, benchmark, system="local", started=time.time() - 3600, tags=["local"])
            h.add(record, [Metric("t", row, "throughput", "tokens/s", "higher",
                                  [100.0 * int(row[swept]) + i, 101.0 * int(row[swept]) + i])
                           for i, row in enumerate(configs)])
    out = base / "page.html"
    out.write_text(page(load([str(base / "h.db")]), "sweep"))
    return out


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 1 and inner["y"] >= outer["y"] - 1 and
            inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1 and
            inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1)


def _overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def _legend_whole_and_clear(opened: Opened, card, kind: str, entries_expected: int, shot: Path) -> None:
    view = opened.page
    card.scroll_into_view_if_needed()
    card.locator(".legend .traces").first.wait_for(timeout=10_000)
    entries = card.locator(".legend .traces")
    assert entries.count() == entries_expected
    svg, box = card.locator(".main-svg").first.bounding_box(), card.bounding_box()
    for i in range(entries_expected):
        entry = entries.nth(i).bounding_box()
        assert _inside(entry, svg) and _inside(entry, box), f"{kind} legend entry {i} cut off"
    card.hover()  # the toolbar shows on hover
    toolbar = card.locator(".modebar").bounding_box()
    legend = card.locator(".legend").bounding_box()
    plot_area = card.locator(".cartesianlayer .bg, .draglayer .xy .nsewdrag").first.bounding_box()
    assert not _overlap(toolbar, legend) and not _overlap(legend, plot_area)
    assert all(not _overlap(toolbar, entries.nth(i).bounding_box()) for i in range(entries_expected))
    view.screenshot(path=str(shot), full_page=True)


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1366, 768), (1280, 800)])
def test_twelve_long_legend_entries_are_whole_and_clear_of_the_toolbar(legend_page, browser, width, height):
    opened = Opened(browser, legend_page.as_uri(), width=width, height=height)
    try:
        assert opened.errors == []
        card = opened.page.locator("figure[data-kind=history]").first
        _legend_whole_and_clear(opened, card, "history", 12, legend_page.parent / f"legend-{width}.png")
    finally:
        opened.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1280, 800)])
def test_a_sweep_of_twenty_long_entries_shows_its_whole_legend_in_its_card(sweep_page, browser, width, height):
    opened = Opened(browser, sweep_page.as_uri(), width=width, height=height)
    try:
        assert opened.errors == []
        for swept, entries in (("nodes", 21), ("seq_len", 20)):
            card = opened.page.locator("figure[data-kind=sweep]", has_text=f"against {swept}").first
            _legend_whole_and_clear(opened, card, "sweep", entries, sweep_page.parent / f"sweep-{swept}-{width}.png")
    finally:
        opened.close()


def test_a_sweep_of_one_systems_configurations_draws_each_in_its_own_colour(sweep_page, browser):
    """One system, twenty configurations: drawn in the palette's colours, not twenty lines of the
    system's one blue told apart by marker and dash only (pixels of the card's screenshot)."""
    opened = Opened(browser, sweep_page.as_uri(), width=1440, height=900)
    try:
        card = opened.page.locator("figure[data-kind=sweep]", has_text="against seq_len").first
        card.scroll_into_view_if_needed()
        card.locator(".scatterlayer .trace").first.wait_for()
        shot = card.screenshot()
        for colour in ((31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189)):  # blue, orange, green, purple
            assert share_near(shot, colour, 30) > 0.0005, colour
    finally:
        opened.close()
