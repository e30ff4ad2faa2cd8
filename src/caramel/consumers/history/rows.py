"""The history's rows as Python values and back: a run's metrics as rows of the metrics table (made a
million at a time by an import, so made in one loop with as little work per figure as may be), and
the stored texts read back with care (a row written by an older caramel, damaged, or hostile).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

from caramel.consumers.history.layout import METRIC_COLUMNS, RunRecord
from caramel.consumers.history.metrics import Metric
from caramel.errors import RunError
from caramel.stages.state import bounded

# a samples text as caramel writes it (`samples_text`: the reprs of finite floats, JSON), exponents
# short enough that no value overflows a float: copied into an export as it is
_NUMBER = r"-?\d+(?:\.\d+)?(?:e-\d{1,3}|e\+?\d{1,2})?"
PLAIN_SAMPLES = re.compile(rf"\[{_NUMBER}(?:, ?{_NUMBER})*\]")
_MEAN, _MIN, _MAX = (METRIC_COLUMNS.index(name) for name in ("mean", "min", "max"))


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """The mean (statistics.fmean's) and sample standard deviation (ddof 1; None with one sample: no
    spread known, not 0) of a figure's repeats, by math.fsum: the same to the last digit or so as
    statistics.stdev, which takes ten times as long (its exact fractions), a million times per import."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(math.fsum([(v - mean) ** 2 for v in values]) / (n - 1))


def samples_text(values: list[float]) -> str:
    """A JSON list of finite floats (repr is JSON for them, and much faster than json.dumps)."""
    return "[" + ",".join(map(repr, values)) + "]"


def samples_texts(columns: list[list[float]]) -> list[str]:
    """`samples_text` of each list, made by one orjson.dumps of them all and cut apart (a tenth of the
    time of a repr per float). orjson writes a float as repr does but for its exponents (`1e16`, `1e-7`
    where repr writes `1e+16`, `1e-07`) and the values under 1e-4 (`0.00005`, repr `5e-05`), and a
    NaN or infinity as `null`: when the text holds an `e`, an `n` or `0.0000` (or a quote: a sample
    that is a text), when orjson refuses a value (a subclass of float, an integer beyond 64 bits), or
    when the lists do not cut apart as given (one holding lists), each is written by `samples_text`."""
    import orjson  # here: 20 ms to import, which the history's readers (bench history list) never need

    try:
        text = orjson.dumps(columns)
    except TypeError:  # orjson.JSONEncodeError
        text = b"e"
    if columns and not (b"e" in text or b"n" in text or b"0.0000" in text or b'"' in text):
        texts = text[1:-1].replace(b"],[", b"]\n[").decode().split("\n")
        if len(texts) == len(columns):
            return texts
    return [samples_text(values) for values in columns]


def metric_rows(run_key: str, metrics: Iterable[Metric]) -> list[tuple]:
    """The metrics table's rows of a run's metrics: the direction as its plain text, the mean and sd
    of the samples (`mean_sd`), their extremes and their text (`samples_texts`)."""
    configs: dict = {}  # metrics of one row share their configuration: dump it once
    directions: dict = {}
    dumps = json.dumps
    rows = []
    metrics = metrics if isinstance(metrics, list) else list(metrics)
    texts = samples_texts([m.samples for m in metrics])
    for m, text in zip(metrics, texts, strict=True):
        try:  # equal rows (an import's metrics each have their own dict) share one text too
            key: object = tuple(m.row.items())
            config = configs.get(key)
        except TypeError:  # a value that is no text or number: dump it each time
            key, config = None, None
        if config is None:
            config = dumps(m.row)
            if key is not None:
                configs[key] = config
        direction = directions.get(m.direction)
        if direction is None:
            direction = directions[m.direction] = str(m.direction)
        samples = m.samples
        mean, sd = mean_sd(samples)
        rows.append((run_key, m.table, config, m.name, m.unit, direction, len(samples), mean, sd, min(samples),
                     max(samples), text))
    return rows


def finite_row(row: tuple) -> bool:
    """Whether a metrics row's mean, min and max are finite numbers: layout.FINITE in Python (NaN fails)."""
    mean, low, high = row[_MEAN], row[_MIN], row[_MAX]
    return -1.7e308 <= mean <= 1.7e308 and -1.7e308 <= low and high <= 1.7e308


def decode_run(path: str, data: dict) -> RunRecord:
    """A `runs` row (column: value; columns this caramel does not know left out) as a RunRecord, each JSON
    field bounded and typed (state.bounded): a damaged or hostile row is a RunError naming the file."""
    data = {k: v for k, v in data.items() if k in RunRecord.__dataclass_fields__}
    what = f"run {data.get('run_key')}"
    for name, kind, empty in (("tags", list, "[]"), ("job_ids", list, "[]"), ("fingerprint", dict, "{}")):
        data[name] = row_field(path, data.get(name) or empty, f"{what}: {name}", kind)
    for name in ("run_key", "benchmark", "file", "run_dir", "system", "caramel_version", "git_commit", "host",
                 "nodes", "container", "energy_method", "site"):
        data[name] = "" if data.get(name) is None else str(data[name])
    for name in ("started", "ended"):
        if not isinstance(data.get(name), (int, float)) or isinstance(data.get(name), bool):
            data[name] = None
    return RunRecord(**data)


def row_field(path: str, text, what: str, kind: type):
    """One JSON field of a history row, bounded, of the type `kind` (list or dict)."""
    try:
        value = bounded.loads(text, f"{path}: {what}") if isinstance(text, (str, bytes)) else None
    except bounded.OverLimit:
        raise
    except ValueError as exc:
        raise RunError(f"{path}: {what} is damaged (not JSON: {exc})",
                       hint="bench history remove RUN drops that run") from None
    if not isinstance(value, kind):
        raise RunError(f"{path}: {what} is damaged (not a JSON {'list' if kind is list else 'object'})",
                       hint="bench history remove RUN drops that run")
    return value


def as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def plain_samples(text) -> list[float] | None:
    """The samples as caramel writes them, a short JSON list of finite floats, read fast; None for
    anything else (a long, damaged or non-finite text: `finite_samples` reads it with care)."""
    if not isinstance(text, str) or len(text) > 4096:
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if type(values) is not list or not values or not all(type(v) is float for v in values):
        return None
    try:
        return values if math.isfinite(math.fsum(values)) else None
    except (OverflowError, ValueError):  # inf - inf, or finite values whose sum overflows: read with care
        return None


def finite_samples(text: str, where: str = "samples") -> list[float] | None:
    """The finite numbers of a stored samples list (`[1.0,inf]` is not JSON: read it by hand then)."""
    if not isinstance(text, str):
        return None
    try:
        values = bounded.loads(text, where)
        if not isinstance(values, list):
            return None
    except bounded.OverLimit:
        return None  # left out, noted by the caller, as any other value that is not a number
    except ValueError:
        try:
            values = [float(v) for v in text.strip("[]").split(",") if v.strip()]
        except ValueError:
            return None
    return [float(v) for v in values if _finite_number(v)]


def _finite_number(value) -> bool:
    """A number that is a finite float (an integer of 400 digits is none: float() overflows)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
