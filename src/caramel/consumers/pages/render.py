"""The page: Jinja2 template, the data as JSON, plotly.js inlined once, and caramel's small script
(filters, hover text with provenance, sortable tables, CSV of each plot). Every text from a log,
a file or a history is escaped: Jinja2's autoescape for HTML, `<` as `\\u003c` inside the JSON,
and the script escapes what it hands to plotly."""

from __future__ import annotations

import functools
import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import jinja2
import orjson

from caramel import __version__, redact
from caramel.consumers.history.changes import MIN_RUNS
from caramel.consumers.history.store import RunRecord
from caramel.consumers.pages import marks as change_marks
from caramel.consumers.pages import summary
from caramel.consumers.pages.figures import benchmark_plots, intervals
from caramel.consumers.pages.sources import Collection
from caramel.consumers.pages.thinning import points_per_series
from caramel.stages.analyse.intervals import LEVEL, RATIO_METHOD
from caramel.stages.report.readable import number

HERE = Path(__file__).parent / "templates"
# what the summary's changes show beneath them: the interval of the ratio the verdict is made on
CHANGE_TITLE = (
    f"change of the mean in %; beneath it the {100 * LEVEL:g} % confidence interval of"
    f" the change ({RATIO_METHOD}; none with one sample), the ratio on hover"
)


@functools.lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["num"] = _fmt
    env.filters["ratio"] = _ratio
    env.filters["change_ci"] = _change_ci
    env.filters["pct"] = lambda v: "" if v is None or not math.isfinite(v) else f"{v:+.1f} %"
    # ISO 8601 in UTC, as the page's script writes dates (a reader elsewhere sees the same text)
    env.filters["day"] = lambda t: time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else ""
    env.filters["date"] = lambda t: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else ""
    return env


def _fmt(value: float) -> str:
    """As a terminal's table rounds (report.readable: 4 significant digits, no exponent between
    1e-4 and 1e15), with thousands separators: `17,460`, `0.02573`."""
    if value is None or not math.isfinite(value):
        return ""
    text = number(value)
    whole = abs(value) >= 1e3 and "." not in text and "e" not in text
    return f"{float(text):,.0f}" if whole else text


def _ratio(verdict) -> str:
    """A change's ratio with its interval, as the summary's CI column writes an interval (`num`):
    `ratio 0.7 · 99 % CI 0.6851 … 0.7153 (delta method ...)`; '' with no interval (one sample)."""
    if verdict is None or not math.isfinite(verdict.ratio_low):
        return ""
    return (
        f"ratio {_fmt(verdict.ratio)} · {100 * verdict.level:g} % CI "
        f"{_fmt(verdict.ratio_low)} … {_fmt(verdict.ratio_high)} ({verdict.method})"
    )


def _change_ci(verdict) -> str:
    """The interval of a change in % (the ratio's, less 1), as the pct filter writes a change."""
    if verdict is None or not math.isfinite(verdict.ratio_low):
        return ""
    low, high = 100 * (verdict.ratio_low - 1), 100 * (verdict.ratio_high - 1)
    return f"{low:+.1f} % … {high:+.1f} %"


def _fingerprint(record: RunRecord) -> str:
    fp = record.fingerprint or {}
    parts = [
        f"{fp.get('cpu_count', '?')}× {fp['cpu_model']}" if fp.get("cpu_model") else "",
        f"{fp.get('gpu_count', '?')}× {fp['gpu_model']}" if fp.get("gpu_model") else "",
        f"driver {fp['driver']}" if fp.get("driver") else "",
        f"CUDA {fp['cuda']}" if fp.get("cuda") else "",
        f"ROCm {fp['rocm']}" if fp.get("rocm") else "",
    ]
    return ", ".join(p for p in parts if p)


def _runs_json(coll: Collection) -> list[dict]:
    out = []
    for run in coll.runs:
        r = run.record
        out.append(
            {
                "b": r.benchmark,
                "g": run.label,
                "site": run.site,
                "sys": r.system,
                "tags": r.tags or ["(none)"],
                "t": round((r.started or 0) * 1000),
                "job": " ".join(r.job_ids),
                "nodes": r.nodes,
                "host": r.host,
                "ctr": r.container,
                "git": r.git_commit,
                "ver": r.caramel_version,
                "fp": _fingerprint(r),
                "dir": r.run_dir,
                "fail": _failed_rows(run.failed),
            }
        )
    return out


def _failed_rows(failed: list[tuple[str, str, str]]) -> str:
    """A run's failed rows as its details show them: how many, and the first one's reason's first
    line (with its table and configuration); the rest is in `bench result` and the history."""
    if not failed:
        return ""
    tbl, config, reason = failed[0]
    try:
        where = ",".join(f"{k}={v}" for k, v in json.loads(config).items())
    except (ValueError, AttributeError):  # a damaged configuration: shown as stored
        where = str(config)
    first = (str(reason).strip().splitlines() or [""])[0]
    return f"{len(failed)} ({tbl} {where}: {first}{' ...' if len(failed) > 1 else ''})"


def _data_json(data: dict) -> str:
    """JSON safe inside <script>: no `<` can close the element or open a comment. Written by orjson
    (a big history's plots hold tens of thousands of numbers: a fifth of json's time); a number
    that is not finite is null (json would have stopped the page)."""
    return orjson.dumps(data).decode("utf-8").replace("<", "\\u003c")


def _plots(
    coll: Collection, focus: set[int] | None, marks: change_marks.Marks | None = None
) -> tuple[list[dict], list[str]]:
    by_bench = defaultdict(list)
    for f in coll.figures:
        by_bench[coll.runs[f.run].record.benchmark].append(f)
    benchmarks = sorted({r.record.benchmark for r in coll.runs})
    plots: list[dict] = []
    for bench in benchmarks:
        for plot in benchmark_plots(coll, by_bench.get(bench, []), focus, marks):
            plot["id"], plot["bench"] = f"plot-{len(plots)}", bench
            plots.append(plot)
    return plots, benchmarks


@dataclass(frozen=True)
class CompactRow:
    """A metric of one configuration per system: a row of its benchmark's compact table, not a
    card with one point."""

    metric: str  # with its unit once (pages.axes.titled)
    system: str
    config: str
    mean: float
    sd: float | None  # None: one sample, no spread


def _compact(plots: list[dict]) -> tuple[list[dict], dict[str, list[CompactRow]]]:
    """The plots to draw, and per benchmark the rows of the `latest` plots that would draw a single
    point per system (a metric of one configuration): one compact table instead of a card each."""
    drawn: list[dict] = []
    compact: dict[str, list[CompactRow]] = defaultdict(list)
    for plot in plots:
        series = plot["series"]
        if plot["kind"] != "latest" or any(len(s["x"]) != 1 for s in series):
            drawn.append(plot)
            continue
        metric = plot["yaxis"]["title"]["text"]
        for s in series:
            spread = s["sd"][0] if intervals(s)[0] else None  # 0: fewer than 2 samples
            compact[plot["bench"]].append(
                CompactRow(metric, s["group"], str(s["x"][0]), s["y"][0], spread)
            )
    return drawn, dict(compact)


def _series_count(plots: list[dict]) -> int:
    return sum(len(p["series"]) for p in plots if p["kind"] == "history")


def header_sources(coll: Collection) -> str:
    """The histories a page was built from, as its header names them: a PostgreSQL history by its
    server and database, never its user, password or parameters (caramel.redact.place)."""
    return ", ".join(redact.place(source) for source in coll.sources)


def page(
    coll: Collection,
    title: str,
    runs: list[tuple[int, list]] | None = None,
    baseline: str | None = None,
    all_points: str | None = None,
) -> str:
    """The page over `coll`; `runs` (bench report): the chosen runs' indices with their tables
    (name, headings, rows), shown with their provenance, and the sweeps drawn from them alone.
    `all_points`: the CSV file beside the page holding every figure, named where a plot is
    thinned."""
    focus = {index for index, _ in runs} if runs else None
    marks = change_marks.find(coll)
    plots, benchmarks = _plots(coll, focus, marks)
    plots, compact = _compact(plots)
    rows = summary.rows(coll, baseline)
    tags = sorted({t for r in coll.runs for t in (r.record.tags or ["(none)"])})
    started = [r.record.started for r in coll.runs if r.record.started]
    data = {
        "runs": _runs_json(coll),
        "plots": plots,
        "level": round(100 * LEVEL, 6),
        "causes": change_marks.causes_json(marks),
    }
    return (
        _environment()
        .get_template("page.html.j2")
        .render(
            title=title,
            coll=coll,
            sources=header_sources(coll),
            benchmarks=benchmarks,
            groups=sorted({r.label for r in coll.runs}),
            tags=tags,
            rows=rows,
            plots=plots,
            report_runs=[(coll.runs[i], tables) for i, tables in runs or []],
            first=min(started, default=0),
            last=max(started, default=0),
            built=time.time(),
            version=__version__,
            fingerprint=_fingerprint,
            data_json=_data_json(data),
            plotly_js=_plotly_js(),
            change_title=CHANGE_TITLE,
            thinned=coll.thinned,
            all_points=all_points,
            per_series=points_per_series(_series_count(plots)),
            # the footer explains the dashed line only where one is drawn (page.js: a series of
            # at least two sizes on a scaling axis)
            compact=compact,
            events=change_marks.event_rows(marks),
            judged=marks.judged,
            short=marks.short,
            min_runs=MIN_RUNS,
            ideal_drawn=any(
                plot.get("ideal") and any(len(s.get("x", ())) > 1 for s in plot.get("series", ()))
                for plot in plots
            ),
            page_js=(HERE / "page.js").read_text(),
            page_css=(HERE / "page.css").read_text(),
        )
    )
