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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import jinja2
import orjson

from caramel import __version__, redact
from caramel.consumers.history.changes import MIN_RUNS
from caramel.consumers.history.compare import Verdict
from caramel.consumers.history.store import RunRecord
from caramel.consumers.pages import marks as change_marks
from caramel.consumers.pages import summary
from caramel.consumers.pages.figures import Plot, benchmark_plots, intervals
from caramel.consumers.pages.sources import Collection, Figure
from caramel.consumers.pages.thinning import points_per_series
from caramel.stages.analyse.intervals import LEVEL, RATIO_METHOD
from caramel.stages.report.readable import number

HERE = Path(__file__).parent / "templates"
# what the summary's changes show beneath them: the interval of the ratio the verdict is made on
CHANGE_TITLE = (
    f"change of the mean in %; beneath it the {100 * LEVEL:g} % confidence interval of"
    f" the change ({RATIO_METHOD}; none with one sample), the ratio on hover"
)
# a run's fingerprint items its details name by version: (the fingerprint's key, the name shown)
VERSIONS = (("driver", "driver"), ("cuda", "CUDA"), ("rocm", "ROCm"))
Table = tuple[str, list[str], list[list[str]]]  # bench report's table: name, headings, rows


class RunJson(TypedDict):
    """A run as the page's script reads it (short keys: a big history's page lists a thousand)."""

    b: str  # benchmark
    g: str  # the system label (pages.sources.Run.label)
    site: str
    sys: str
    tags: list[str]
    t: int  # start, ms since the epoch
    job: str
    nodes: str
    host: str
    ctr: str
    git: str
    ver: str
    fp: str  # the fingerprint as the run's details show it
    dir: str
    fail: str  # its failed rows (_failed_rows)


@functools.lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    script: str = get_plotlyjs()
    return script


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


def _fmt(value: float | None) -> str:
    """As a terminal's table rounds (report.readable: 4 significant digits, no exponent between
    1e-4 and 1e15), with thousands separators: `17,460`, `0.02573`."""
    if value is None or not math.isfinite(value):
        return ""
    text = number(value)
    whole = abs(value) >= 1e3 and "." not in text and "e" not in text
    return f"{float(text):,.0f}" if whole else text


def _ratio(verdict: Verdict[Figure] | None) -> str:
    """A change's ratio with its interval, as the summary's CI column writes an interval (`num`):
    `ratio 0.7 · 99 % CI 0.6851 … 0.7153 (delta method ...)`; '' with no interval (one sample)."""
    if verdict is None or not math.isfinite(verdict.ratio_low):
        return ""
    return (
        f"ratio {_fmt(verdict.ratio)} · {100 * verdict.level:g} % CI "
        f"{_fmt(verdict.ratio_low)} … {_fmt(verdict.ratio_high)} ({verdict.method})"
    )


def _change_ci(verdict: Verdict[Figure] | None) -> str:
    """The interval of a change in % (the ratio's, less 1), as the pct filter writes a change."""
    if verdict is None or not math.isfinite(verdict.ratio_low):
        return ""
    low, high = 100 * (verdict.ratio_low - 1), 100 * (verdict.ratio_high - 1)
    return f"{low:+.1f} % … {high:+.1f} %"


def _fingerprint(record: RunRecord) -> str:
    """A run's machine as its details name it: `128× EPYC 7763, 4× A100, driver 550, CUDA 12.4`."""
    fp: dict[str, object] = record.fingerprint or {}
    parts = [
        _devices(fp, "cpu"),
        _devices(fp, "gpu"),
        *(f"{name} {fp[key]}" for key, name in VERSIONS if fp.get(key)),
    ]
    return ", ".join(filter(None, parts))


def _devices(fp: dict[str, object], kind: str) -> str:
    """A fingerprint's `cpu` or `gpu` model with its count (`?` when not recorded); '' without a
    model."""
    model = fp.get(f"{kind}_model")
    return f"{fp.get(f'{kind}_count', '?')}× {model}" if model else ""


def _runs_json(coll: Collection) -> list[RunJson]:
    out: list[RunJson] = []
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


def _data_json(data: dict[str, object]) -> str:
    """JSON safe inside <script>: no `<` can close the element or open a comment. Written by orjson
    (a big history's plots hold tens of thousands of numbers: a fifth of json's time); a number
    that is not finite is null (json would have stopped the page)."""
    return orjson.dumps(data).decode("utf-8").replace("<", "\\u003c")


def _plots(
    coll: Collection, focus: set[int] | None, marks: change_marks.Marks | None = None
) -> tuple[list[Plot], list[str]]:
    by_bench: dict[str, list[Figure]] = defaultdict(list)
    for f in coll.figures:
        by_bench[coll.runs[f.run].record.benchmark].append(f)
    benchmarks = sorted({r.record.benchmark for r in coll.runs})
    plots: list[Plot] = []
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


def _compact(plots: list[Plot]) -> tuple[list[Plot], dict[str, list[CompactRow]]]:
    """The plots to draw, and per benchmark the rows of the `latest` plots that would draw a single
    point per system (a metric of one configuration): one compact table instead of a card each."""
    drawn: list[Plot] = []
    compact: dict[str, list[CompactRow]] = defaultdict(list)
    for plot in plots:
        if _one_point_each(plot):
            compact[plot["bench"]] += _compact_rows(plot)
        else:
            drawn.append(plot)
    return drawn, dict(compact)


def _one_point_each(plot: Plot) -> bool:
    """Whether `plot` is a `latest` plot whose every series is a single point."""
    return plot["kind"] == "latest" and all(len(s["x"]) == 1 for s in plot["series"])


def _compact_rows(plot: Plot) -> list[CompactRow]:
    """A one-point-each `latest` plot's rows of the compact table: a series each."""
    metric = plot["yaxis"]["title"]["text"]
    return [
        # no interval: fewer than 2 samples, no spread
        CompactRow(
            metric, s["group"], str(s["x"][0]), s["y"][0], s["sd"][0] if intervals(s)[0] else None
        )
        for s in plot["series"]
    ]


def _series_count(plots: list[Plot]) -> int:
    return sum(len(p["series"]) for p in plots if p["kind"] == "history")


def header_sources(coll: Collection) -> str:
    """The histories a page was built from, as its header names them: a PostgreSQL history by its
    server and database, never its user, password or parameters (caramel.redact.place)."""
    return ", ".join(redact.place(source) for source in coll.sources)


def _ideal_drawn(plots: list[Plot]) -> bool:
    """Whether a plot draws an ideal-scaling line (page.js: a series of at least two sizes on a
    scaling axis): the footer explains the dashed line only then."""
    return any(
        plot.get("ideal") and any(len(s.get("x", ())) > 1 for s in plot.get("series", ()))
        for plot in plots
    )


def _tags(coll: Collection) -> list[str]:
    """The runs' tags, `(none)` for a run without."""
    return sorted({t for r in coll.runs for t in (r.record.tags or ["(none)"])})


def _span(coll: Collection) -> tuple[float, float]:
    """The first and the last run's start (0: none recorded)."""
    started = [r.record.started for r in coll.runs if r.record.started]
    return min(started, default=0), max(started, default=0)


def page(
    coll: Collection,
    title: str,
    runs: list[tuple[int, list[Table]]] | None = None,
    baseline: str | None = None,
    all_points: str | None = None,
) -> str:
    """The page over `coll` as one text (page_parts)."""
    return "".join(page_parts(coll, title, runs, baseline, all_points))


def page_parts(
    coll: Collection,
    title: str,
    runs: list[tuple[int, list[Table]]] | None = None,
    baseline: str | None = None,
    all_points: str | None = None,
    marks: change_marks.Marks | None = None,
) -> Iterator[str]:
    """The page over `coll`, in the parts the template renders (written as they come, a big
    history's 8 MB page never stands whole in memory); `runs` (bench report): the chosen runs'
    indices with their tables (name, headings, rows), shown with their provenance, and the sweeps
    drawn from them alone. `all_points`: the CSV file beside the page holding every figure, named
    where a plot is thinned. `marks`: the change points, found on every figure (pages.marks.find)
    by a caller that then dropped the columns of every figure (Collection.drop_numbers); None:
    found here."""
    chosen = runs or []
    marks = change_marks.find(coll) if marks is None else marks
    plots, benchmarks = _plots(coll, {index for index, _ in chosen} if runs else None, marks)
    plots, compact = _compact(plots)
    first, last = _span(coll)
    data = {
        "runs": _runs_json(coll),
        "plots": plots,
        "level": round(100 * LEVEL, 6),
        "causes": change_marks.causes_json(marks),
    }
    return (
        _environment()
        .get_template("page.html.j2")
        .generate(
            title=title,
            coll=coll,
            sources=header_sources(coll),
            benchmarks=benchmarks,
            groups=sorted({r.label for r in coll.runs}),
            tags=_tags(coll),
            rows=summary.rows(coll, baseline),
            plots=plots,
            report_runs=[(coll.runs[i], tables) for i, tables in chosen],
            first=first,
            last=last,
            built=time.time(),
            version=__version__,
            fingerprint=_fingerprint,
            data_json=_data_json(data),
            plotly_js=_plotly_js(),
            change_title=CHANGE_TITLE,
            thinned=coll.thinned,
            all_points=all_points,
            per_series=points_per_series(_series_count(plots)),
            compact=compact,
            events=change_marks.event_rows(marks),
            judged=marks.judged,
            short=marks.short,
            min_runs=MIN_RUNS,
            ideal_drawn=_ideal_drawn(plots),
            page_js=(HERE / "page.js").read_text(),
            page_css=(HERE / "page.css").read_text(),
        )
    )
