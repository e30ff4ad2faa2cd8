"""`bench report --html`: one self-contained page (styles, plots and its one small script inline,
nothing fetched) with each run's provenance and tables, throughput against the swept parameters,
energy against throughput, and every metric's history with regressions marked. Every text that
comes from a benchmark's logs or files is escaped."""

from __future__ import annotations

import math
import time
from html import escape

from caramel.history.compare import judge
from caramel.history.metrics import Metric
from caramel.history.store import History, RunRecord
from caramel.report.svg import chart

STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td.text{text-align:left}.plots{display:flex;flex-wrap:wrap;gap:12px}
.prov td{text-align:left}.bad{color:#b00}.unstable{color:#a60}"""

# the page's only script: it marks the page ready (tests read it) and counts what was drawn
SCRIPT = """document.addEventListener('DOMContentLoaded',function(){var n=document.querySelectorAll('svg.plot').length;
document.getElementById('plot-count').textContent=n+' plots';document.documentElement.setAttribute('data-ready','1');});"""


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _provenance(run: RunRecord) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started)) if run.started else ""
    ended = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.ended)) if run.ended else ""
    items = [("benchmark", run.benchmark), ("file", run.file), ("tags", " ".join(run.tags)), ("system", run.system),
             ("host", run.host), ("nodes", run.nodes), ("jobs", " ".join(run.job_ids)),
             ("container", run.container), ("energy method", run.energy_method),
             ("caramel", run.caramel_version), ("git commit", run.git_commit), ("started", started),
             ("ended", ended)]
    return '<table class="prov">' + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
                                             for k, v in items if v) + "</table>"


def _table(name: str, headings: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f'<td{"" if _number(c) is not None else " class=text"}>{escape(c)}</td>'
                                   for c in row) + "</tr>" for row in rows)
    return f"<h3>{escape(name)}</h3><table><tr>{head}</tr>{body}</table>"


_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}


def _axis_value(text: str) -> float | None:
    """A number, or a size such as a model's `117M`, `13B` (so throughput plots against model size)."""
    number = _number(text)
    if number is None and len(text) > 1 and text[-1] in _SCALE:
        number = _number(text[:-1])
        return None if number is None else number * _SCALE[text[-1]]
    return number


def _sweeps(metrics: list[Metric]) -> list[str]:
    """Parameters of the rows that take several numeric values: the axes worth plotting against."""
    values: dict[str, set[float]] = {}
    for m in metrics:
        for k, v in m.row.items():
            number = _axis_value(v)
            if number is not None:
                values.setdefault(k, set()).add(number)
    return [k for k, v in values.items() if len(v) > 1]


def _sweep_plots(metrics: list[Metric]) -> list[str]:
    plots = []
    by_name: dict[tuple[str, str], list[Metric]] = {}
    for m in metrics:
        by_name.setdefault((m.table, m.name), []).append(m)
    for param in _sweeps(metrics):
        for (_table, name), group in by_name.items():
            series: dict[str, list] = {}
            for m in group:
                x = _axis_value(m.row.get(param, ""))
                if x is None:
                    continue
                rest = ", ".join(f"{k}={v}" for k, v in m.row.items() if k != param) or name
                series.setdefault(rest, []).append((x, m.mean, m.unstable))
            if series:
                unit = group[0].unit
                plots.append(chart(f"{name} against {param}", param, name + (f" [{unit}]" if unit else ""), series))
    energy = [m for m in metrics if "energy" in m.name.lower() and "/" not in m.name]
    speed = [m for m in metrics if m.direction == "higher" and "energy" not in m.name.lower()]
    if energy and speed:
        e, s = energy[0].name, speed[0].name
        pairs = {m.key: m.mean for m in metrics if m.name == e}
        pts = [(m.mean, pairs[m.key], False) for m in metrics if m.name == s and m.key in pairs]
        if pts:
            plots.append(chart(f"{e} against {s}", s, e, {"configurations": pts}))
    return plots


def _history_plots(history: History, run: RunRecord) -> list[str]:
    runs = [r for r in history.runs(run.benchmark)]
    if len(runs) < 2:
        return []
    per_run = [history.metrics(r.run_key) for r in runs]
    plots = []
    names = sorted({(m.table, m.name) for m in per_run[-1]})
    for table, name in names:
        series: dict[str, list] = {}
        previous: dict[str, Metric] = {}
        for index, metrics in enumerate(per_run):
            for m in metrics:
                if (m.table, m.name) != (table, name):
                    continue
                before = previous.get(m.key)
                marked = before is not None and judge(m, before.mean, before.sd, before.n, None).verdict == "regressed"
                series.setdefault(m.key or name, []).append((index + 1, m.mean, marked))
                previous[m.key] = m
        plots.append(chart(f"history of {name}", "run (oldest first)", name, series))
    return plots


def render(history: History, runs: list[tuple[RunRecord, list[tuple[str, list[str], list[list[str]]]]]]) -> str:
    """The page for `runs`: each with its record and its tables (name, headings, text rows)."""
    parts = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
             "<title>caramel report</title>", f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>",
             f"<h1>caramel report: {escape(', '.join(sorted({r.benchmark for r, _ in runs})))}</h1>",
             '<p id="plot-count"></p>']
    for run, tables in runs:
        metrics = history.metrics(run.run_key)
        parts.append(f"<h2>{escape(run.benchmark)} — {escape(run.run_dir)}</h2>")
        parts.append(_provenance(run))
        for name, headings, rows in tables:
            parts.append(_table(name, headings, rows))
        unstable = [m for m in metrics if m.unstable]
        if unstable:
            parts.append('<p class="unstable">unstable (spread above 5 % of the mean): ' + escape(
                ", ".join(f"{m.name} ({m.key}) ±{m.sd_pct:.1f}%" for m in unstable[:20])) + "</p>")
        plots = _sweep_plots(metrics) + _history_plots(history, run)
        parts.append('<div class="plots">' + "".join(plots) + "</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
