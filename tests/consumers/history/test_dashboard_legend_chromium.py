"""In a real headless Chromium at desktop (1440) and laptop (1280 × 800, 1366) widths: a plot with
12 long legend entries shows every entry whole, inside its card, clear of plotly's toolbar."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages.render import page
from caramel.consumers.pages.sources import load

from .browser import Opened

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


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 1 and inner["y"] >= outer["y"] - 1 and
            inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1 and
            inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1)


def _overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (1366, 768), (1280, 800)])
def test_twelve_long_legend_entries_are_whole_and_clear_of_the_toolbar(legend_page, browser, width, height):
    opened = Opened(browser, legend_page.as_uri(), width=width, height=height)
    try:
        assert opened.errors == []
        view = opened.page
        card = view.locator("figure[data-kind=history]").first
        card.scroll_into_view_if_needed()
        view.wait_for_selector("figure[data-kind=history] .legend .traces")
        entries = card.locator(".legend .traces")
        assert entries.count() == 12
        svg = card.locator(".main-svg").first.bounding_box()
        for i in range(12):
            assert _inside(entries.nth(i).bounding_box(), svg), f"legend entry {i} cut off at {width} px"
        card.hover()  # the toolbar shows on hover
        toolbar = card.locator(".modebar").bounding_box()
        legend = card.locator(".legend").bounding_box()
        plot_area = card.locator(".cartesianlayer .bg, .draglayer .xy .nsewdrag").first.bounding_box()
        assert not _overlap(toolbar, legend) and not _overlap(legend, plot_area)
        view.screenshot(path=str(legend_page.parent / f"legend-{width}.png"), full_page=True)
    finally:
        opened.close()
