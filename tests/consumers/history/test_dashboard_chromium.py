"""`bench dashboard` of two sites' histories in a real headless Chromium: no console error and no
network request, a filter click changes the traces, hovering a point shows its parameters and
provenance, text from a history holding `<script>` stays text, and the pixels show the plots."""

from __future__ import annotations

import re

import pytest
from tests.run_bench import bench

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord

from .browser import Opened, share_near
from .conftest import bench_env


@pytest.fixture(scope="module")
def dashboard(two_sites):
    base, lab, cluster = two_sites
    page = base / "dashboard.html"
    made = bench("dashboard", "--history", str(lab), "--history", str(cluster), "-o", str(page), cwd=base,
                 env=bench_env(base, base / "none.db"))
    assert made.returncode == 0, made.stderr
    return page


def _traces(view, plot_id: str) -> list[str]:
    return view.evaluate("id => document.getElementById(id).data.map(t => t.name)", plot_id)


def test_loads_offline_without_errors_and_filters_traces(dashboard, browser):
    opened = Opened(browser, dashboard.as_uri())
    try:
        assert opened.errors == [] and opened.network() == []
        view = opened.page
        assert view.locator("#summary-table tbody tr").count() == 4  # 2 metrics × 2 sites
        assert view.locator("#summary-table .v-regressed").count() == 0  # the last lab run is back to normal
        first = view.locator(".plot").first.get_attribute("id")
        before = _traces(view, first)
        assert any("@ cluster" in name for name in before) and any("@ lab" in name for name in before)
        view.locator('fieldset[data-filter="group"] input[value="local @ cluster"]').click()
        after = _traces(view, first)
        assert after and not any("@ cluster" in name for name in after) and len(after) < len(before)
        assert view.locator("#summary-table tbody tr:not(.hidden)").count() == 2
        view.locator("#reset").click()
        assert _traces(view, first) == before
    finally:
        opened.close()


def test_hover_shows_parameters_and_provenance(dashboard, browser):
    opened = Opened(browser, dashboard.as_uri())
    try:
        view = opened.page
        card = view.locator("figure[data-kind=history]").first
        card.scroll_into_view_if_needed()
        point = card.locator(".scatterlayer .trace .points path").first
        point.wait_for()
        box = point.bounding_box()
        view.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        label = view.locator(".hoverlayer .hovertext")
        label.wait_for(timeout=5000)
        text = label.text_content()
        assert "items=" in text and "caramel:" in text and "at site" in text and "± " in text
        assert re.search(r"99 % CI: [\d.,]+ … [\d.,]+ \(Student's t of the mean\)", text), text
    finally:
        opened.close()


def test_text_from_the_history_stays_text(tmp_path, browser):
    evil = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"
    history = tmp_path / "h.db"
    with History.open(str(history)) as h:
        for i in range(2):
            run = RunRecord(f"k{i}", "bench" + evil, tags=[evil], system="sys" + evil, started=1000.0 + i,
                            site="site" + evil, job_ids=[evil])
            h.add(run, [Metric("t", {"n": str(n), "mode": evil}, "rate" + evil, "", "higher", [10.0 * n + i, 10.0 * n])
                        for n in (1, 2)])
    page = tmp_path / "d.html"
    assert bench("dashboard", "--history", str(history), "-o", str(page), cwd=tmp_path,
                 env=bench_env(tmp_path, history)).returncode == 0
    opened = Opened(browser, page.as_uri())
    try:
        view = opened.page
        assert opened.errors == [] and opened.dialogs == [] and opened.network() == []
        assert view.title() == "caramel dashboard"
        assert view.locator("img").count() == 0 and view.locator("body script").count() == 3  # data, plotly, caramel
        assert evil in view.locator("#summary-table").text_content()
        card = view.locator("figure[data-kind=sweep]").first
        point = card.locator(".scatterlayer .trace .points path").first
        point.wait_for()
        box = point.bounding_box()
        view.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        view.locator(".hoverlayer .hovertext").wait_for(timeout=5000)
        assert "<img src=x" in view.locator(".hoverlayer .hovertext").first.text_content() and opened.dialogs == []
    finally:
        opened.close()


def test_screenshot_shows_the_plots_in_colour(dashboard, browser):
    """Pixels, not the DOM: each site's line in its colour, the regression's red cross, the verdict pills."""
    opened = Opened(browser, dashboard.as_uri(), width=1400, height=1000)
    try:
        view = opened.page
        sweep = view.locator("figure[data-kind=sweep]").first.screenshot()
        assert share_near(sweep, (31, 119, 180)) > 0.001 and share_near(sweep, (255, 127, 14)) > 0.001
        card = view.locator("figure[data-kind=history]").first
        card.scroll_into_view_if_needed()
        card.locator(".scatterlayer .trace").first.wait_for()
        assert share_near(card.screenshot(), (196, 50, 10)) > 0.0004  # the regression's red cross
        assert share_near(view.locator("#summary-table").screenshot(), (220, 250, 230), 12) > 0.003  # "improved"
    finally:
        opened.close()


@pytest.mark.slow  # two_sites runs bench eight times
def test_bench_result_records_site_and_fingerprint(two_sites):
    _base, lab, _cluster = two_sites
    with History.open(str(lab)) as h:
        runs = h.runs()
    assert [r.site for r in runs] == ["lab"] * 3
    assert all(r.fingerprint["cpu_count"] >= 1 and r.fingerprint["detected_on"].endswith("(local run)") for r in runs)


def test_tables_sort_and_plots_download_their_data(dashboard, browser):
    opened = Opened(browser, dashboard.as_uri())
    try:
        view = opened.page
        column = "#summary-table tbody tr td:nth-child(4)"  # latest figure
        view.locator("#summary-table thead th").nth(3).click()
        values = [float(v.replace(",", "")) for v in view.locator(column).all_text_contents()]
        assert values == sorted(values) and values != values[::-1]
        view.locator("#summary-table thead th").nth(3).click()
        assert [float(v.replace(",", "")) for v in view.locator(column).all_text_contents()] == values[::-1]
        with view.expect_download() as download:
            view.locator("button.csv").first.click()
        lines = open(download.value.path()).read().splitlines()
        assert lines[0].startswith("series,system,configuration,items,elapsed [s],sd,99 % CI low,"
                                   "99 % CI high,run started,site,job ids")
        assert len(lines) == 1 + 4 and any(",lab," in line for line in lines) and opened.network() == []
        view.fill("#date-from", "2999-01-01")
        view.dispatch_event("#date-from", "change")
        assert view.locator("#summary-table tbody tr:not(.hidden)").count() == 0
        assert view.locator("figure.card:not(.hidden)").count() == 0
    finally:
        opened.close()


def test_ideal_scaling_line_against_nodes(tmp_path, browser):
    history = tmp_path / "h.db"
    with History.open(str(history)) as h:
        h.add(RunRecord("k", "llm", system="A100", started=1.0),
              [Metric("t", {"Nodes": str(n)}, "Tokens/second", "", "higher", [900.0 * n, 1000.0 * n])
               for n in (1, 2, 4, 8)])
    page = tmp_path / "d.html"
    assert bench("dashboard", "--history", str(history), "-o", str(page), cwd=tmp_path,
                 env=bench_env(tmp_path, history)).returncode == 0
    opened = Opened(browser, page.as_uri())
    try:
        data = opened.page.evaluate("document.querySelector('figure[data-kind=sweep] .plot').data")
        ideal = next(t for t in data if t["name"] == "ideal scaling")
        assert ideal["x"] == [1, 2, 4, 8] and ideal["y"] == [950.0, 1900.0, 3800.0, 7600.0]
        measured = next(t for t in data if t["name"] == "A100")
        # the sd (100·n/√2), to the five significant digits the page carries and shows
        assert measured["error_y"]["array"] == [float(f"{100 * n / 2 ** 0.5:.5g}") for n in (1, 2, 4, 8)]
        axis = opened.page.evaluate("document.querySelector('figure[data-kind=sweep] .plot').layout.xaxis")
        assert axis["type"] == "log" and axis["tickvals"] == [1, 2, 4, 8]
    finally:
        opened.close()
