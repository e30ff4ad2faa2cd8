"""Plot axes as plotly layout dicts: units in titles, integer ticks for integers, log axes for sizes
that double (nodes 1, 2, 4, 8) or span decades (model sizes 117M … 175B)."""

from __future__ import annotations

import math
from typing import TypedDict

_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}
# parameters where more means more hardware: plots against them get an ideal-scaling line
_SCALING = ("node", "gpu", "device", "rank", "world", "ntask", "tasks", "procs", "accelerator")


class AxisTitle(TypedDict):
    text: str


class TickFormatStop(TypedDict):
    """A date format for ticks spaced within `dtickrange` (milliseconds; None: unbounded)."""

    dtickrange: list[int | None]
    value: str


class Axis(TypedDict, total=False):
    """A plotly layout axis: the keys the page's plots set (plotly.js reads them as given)."""

    title: AxisTitle
    type: str  # "log", "date", "category"; absent: linear
    zeroline: bool
    rangemode: str
    automargin: bool
    tickvals: list[float]
    ticktext: list[str]
    tickformat: str
    hoverformat: str
    tickformatstops: list[TickFormatStop]


def axis_value(text: str) -> float | None:
    """A number, or a size such as a model's `117M`, `13B` (so throughput plots against model
    size)."""
    try:
        value: float | None = float(text)
    except (TypeError, ValueError):
        value = _size(text)
    return value if value is not None and math.isfinite(value) else None


def _size(text: str) -> float | None:
    """A number with a scale suffix (`117M`, `13B`) as its value; None for any other text."""
    if not isinstance(text, str) or len(text) < 2 or text[-1] not in _SCALE:
        return None
    try:
        return float(text[:-1]) * _SCALE[text[-1]]
    except ValueError:
        return None


def is_scaling(param: str) -> bool:
    lowered = param.lower()
    return any(word in lowered for word in _SCALING)


def titled_metric(name: str, unit: str, aggregate: str = "") -> str:
    """A metric as a title: its unit once (`GEMM(GFLOP/s)`, `elapsed [s]`), a copies aggregate
    named (`performance [GFLOP/s] · sum of copies`)."""
    return titled(name, unit) + (f" · {aggregate} of copies" if aggregate else "")


def titled(name: str, unit: str) -> str:
    return (
        f"{name} [{unit}]" if unit and f"[{unit}]" not in name and f"({unit})" not in name else name
    )


def _doubling(values: list[float]) -> bool:
    if len(values) < 3 or values[0] <= 0:
        return False
    ratios = [b / a for a, b in zip(values, values[1:], strict=False)]
    return all(abs(math.log2(r) - round(math.log2(r))) < 1e-9 and r >= 2 for r in ratios)


def _logarithmic(values: list[float]) -> bool:
    """Whether sorted `values` are drawn on a log axis: positive sizes that double or span two
    decades."""
    if not values or values[0] <= 0:
        return False
    return _doubling(values) or values[-1] / values[0] >= 100


def x_axis(param: str, texts: dict[float, str], unit: str = "") -> Axis:
    """The axis of a swept parameter: `texts` maps each plotted value to how the table wrote it."""
    values = sorted(texts)
    axis: Axis = {"title": {"text": titled(param, unit)}, "zeroline": False}
    logarithmic = _logarithmic(values)
    if logarithmic:
        axis["type"] = "log"
    integers = all(v == int(v) for v in values)
    axis.update(_ticks(values, texts, integers, logarithmic))
    return axis


def _ticks(values: list[float], texts: dict[float, str], integers: bool, logarithmic: bool) -> Axis:
    """A few integer values, or any on a log axis: a tick at each, written as the table wrote it;
    more integers: integer tick labels; else plotly's own ticks."""
    if len(values) <= 16 and (integers or logarithmic):
        return {"tickvals": values, "ticktext": [texts[v] for v in values]}
    return {"tickformat": ",d"} if integers else {}


def y_axis(name: str, unit: str, integers: bool = False) -> Axis:
    axis: Axis = {"title": {"text": titled(name, unit)}, "rangemode": "tozero"}
    if integers:
        axis["tickformat"] = ",d"
    return axis


def date_axis() -> Axis:
    """Run dates in ISO 8601 (UTC: the script hands plotly UTC texts), never plotly's `Nov 24,
    2026`."""
    minute, day = 60_000, 86_400_000
    return {
        "title": {"text": "run started (UTC)"},
        "type": "date",
        "hoverformat": "%Y-%m-%d %H:%M:%S",
        "tickformatstops": [
            {"dtickrange": [None, minute], "value": "%H:%M:%S<br>%Y-%m-%d"},
            {"dtickrange": [minute, day], "value": "%H:%M<br>%Y-%m-%d"},
            {"dtickrange": [day, None], "value": "%Y-%m-%d"},
        ],
    }
