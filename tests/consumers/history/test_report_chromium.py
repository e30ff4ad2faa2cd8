"""`bench report` in a real headless Chromium: it loads without a console error or a network
request, plotly drew the plots, the slowed run is marked, a log line holding `<script>` is text."""

from __future__ import annotations

from tests.run_bench import bench

from .browser import Opened, non_white_share


def test_report_renders_plots_and_escapes_log_text(steady, env, tmp_path, browser):
    for slowdown in ("1", "1.3", "1"):
        done = bench("run", "steady.yaml", "--repeat", "3", "-q", cwd=steady, env=dict(env, SLOWDOWN=slowdown))
        assert done.returncode == 0
        assert bench("result", "-i", "last", cwd=steady, env=env).returncode == 0
    page = tmp_path / "report.html"
    made = bench("report", "-i", "0,1,2", "-o", str(page), cwd=steady, env=env)
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert "<script src" not in text and text.count("Plotly.register") <= 1  # self-contained, plotly once
    assert "&lt;script&gt;document.title=1&lt;/script&gt;" in text

    opened = Opened(browser, page.as_uri(), width=1200, height=1400)
    try:
        assert opened.errors == [] and opened.network() == []
        view = opened.page
        assert view.title() == "caramel report: steady"  # the log line's script did not run
        assert view.locator("section.run").count() == 3
        assert view.locator("text=<script>document.title=1</script>").count() >= 3  # shown as text
        history = view.locator("figure[data-kind=history] .plot").first
        history.scroll_into_view_if_needed()
        view.wait_for_function("el => el.data && el.data.length > 0", arg=history.element_handle())
        names = view.evaluate("el => el.data.map(t => t.name)", history.element_handle())
        assert "regressed" in names  # the slowed run is marked
        assert view.locator(".js-plotly-plot").count() >= 2
        assert non_white_share(history.screenshot()) > 0.03  # plotly drew on the canvas
    finally:
        opened.close()
