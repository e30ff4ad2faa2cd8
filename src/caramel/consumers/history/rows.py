"""The history's rows as Python values and back: a run's metrics as rows of the metrics view (its
run key, series and numbers, which History.add splits into series and figures; made a million at a
time by an import, so made in one loop with as little work per figure as may be), and
the stored texts read back with care (a row written by an older caramel, damaged, or hostile).
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice, repeat
from operator import sub
from typing import Any, Final, TypeGuard, TypeVar

from caramel.consumers.history.layout import MetricRow, RunRecord
from caramel.consumers.history.metrics import Metric, MetricColumns, fmean, fsum_or_inf
from caramel.errors import RunError
from caramel.stages.state import bounded

# a samples text as caramel writes it (`samples_text`: the reprs of finite floats, JSON), exponents
# short enough that no value overflows a float: copied into an export as it is
_NUMBER = r"-?\d+(?:\.\d+)?(?:e-\d{1,3}|e\+?\d{1,2})?"
PLAIN_SAMPLES = re.compile(rf"\[{_NUMBER}(?:, ?{_NUMBER})*\]")
# places of METRIC_COLUMNS' mean, min, max and reason in a MetricRow (literals, not looked up: the
# checker reads the type of a literal place; tests/consumers/history/test_rows_typed.py checks them)
_MEAN: Final = 7
_MIN: Final = 9
_MAX: Final = 10
_REASON: Final = 12
# a history row's JSON field: a list (tags, job ids) or an object (a fingerprint, a configuration)
_JsonKind = TypeVar("_JsonKind", list[Any], dict[str, Any])
# a run's figures' statistics (`_statistics`): means, sds, minimums, maximums, and how many are no
# `finite_row` where that is told on the way (else None)
_Statistics = tuple[list[float], list[float | None], list[float], list[float], int | None]
_DICT, _FLOAT = {dict}, {float}
_BOUND = 1.7e308  # layout.FINITE's: a value beyond it is stored as no finite number


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """The mean (statistics.fmean's) and sample standard deviation (ddof 1; None with one sample: no
    spread known, not 0) of a figure's repeats, by math.fsum: the same to the last digit or so as
    statistics.stdev, which takes ten times as long (its exact fractions), a million times per
    import."""
    n = len(values)
    mean = fmean(values)
    if n < 2:
        return mean, None
    try:
        return mean, math.sqrt(fsum_or_inf([(v - mean) ** 2 for v in values]) / (n - 1))
    except (
        OverflowError
    ):  # a deviation's square beyond a double (samples 1e300 apart): the sd is infinite
        return mean, math.sqrt(fsum_or_inf([square(v - mean) for v in values]) / (n - 1))


def square(value: float, power: float = 2.0) -> float:
    """`value ** 2` (libm's pow), infinite where the square is beyond a double (where `**` raises
    OverflowError: a figure's spread of 1e300 is stored as an infinite sd, never a traceback)."""
    try:
        squared: float = pow(value, power)  # a float's pow: no complex for a power of 2
        return squared
    except OverflowError:
        return math.inf


def samples_text(values: list[float]) -> str:
    """A JSON list of finite floats (repr is JSON for them, and much faster than json.dumps)."""
    return "[" + ",".join(map(repr, values)) + "]"


def samples_texts(columns: Sequence[list[float]]) -> list[str]:
    """`samples_text` of each list, made by one orjson.dumps of them all and cut apart (a tenth of
    the time of a repr per float). orjson writes a float as repr does but for its exponents (`1e16`,
    `1e-7` where repr writes `1e+16`, `1e-07`) and the values under 1e-4 (`0.00005`, repr `5e-05`),
    and a NaN or infinity as `null`: when the text holds an `e`, an `n` or `0.0000` (or a quote: a
    sample that is a text), when orjson refuses a value (a subclass of float, an integer beyond 64
    bits), or when the lists do not cut apart as given (one holding lists), each is written by
    `samples_text`."""
    # here: 20 ms to import, which the history's readers (bench history list) never need
    import orjson

    try:
        text = orjson.dumps(columns)
    except TypeError:  # orjson.JSONEncodeError
        text = b"e"
    if columns and not (b"e" in text or b"n" in text or b"0.0000" in text or b'"' in text):
        texts = text[1:-1].replace(b"],[", b"]\n[").decode().split("\n")
        if len(texts) == len(columns):
            return texts
    return [samples_text(values) for values in columns]


def metric_rows(run_key: str, metrics: Iterable[Metric]) -> list[MetricRow]:
    """The metrics view's rows of a run's metrics: the direction as its plain text, the mean and sd
    of the samples (`mean_sd`'s, to the bit), their extremes (`min`, `max`) and their text
    (`samples_texts`). Made a column at a time (an import's line comes as MetricColumns; bench
    result's Metric objects are taken apart once), each value by the very operation `mean_sd`, min
    or max applies to that figure, mapped over the figures in C (`_statistics`)."""
    return counted_rows(run_key, metrics)[0]


def counted_rows(run_key: str, metrics: Iterable[Metric]) -> tuple[list[MetricRow], int]:
    """`metric_rows`, and how many of them are no `finite_row` (the run's stored `nonfinite` count).
    A figure with no samples is a failed row's reason (`failed_row`); with no reason either,
    none."""
    columns = MetricColumns.of(metrics)
    if not len(columns):
        return [], 0
    lengths = list(map(len, columns.samples))
    if 0 in lengths:
        return _with_failed_rows(run_key, columns, lengths)
    means, sds, lows, highs, nonfinite = _figure_statistics(columns, lengths)
    directions = (
        columns.directions if columns.checked else _direction_texts(columns.directions)
    )  # plain texts
    configs = _config_texts(columns.rows, columns.configs_json, columns.checked)
    rows = list(
        zip(
            repeat(run_key),
            columns.tables,
            configs,
            columns.names,
            columns.units,
            directions,
            lengths,
            means,
            sds,
            lows,
            highs,
            samples_texts(columns.samples),
            _reason_column(columns),
            strict=False,
        )
    )  # repeat(run_key) never ends
    return rows, sum(not finite_row(row) for row in rows) if nonfinite is None else nonfinite


def _figure_statistics(columns: MetricColumns, lengths: list[int]) -> _Statistics:
    """`_statistics` of figures with samples; where a square is beyond a double, the run's figures
    again, such sds infinite (`square`)."""
    try:
        return _statistics(columns.samples, lengths, columns.checked)
    except OverflowError:
        return _statistics(columns.samples, lengths, columns.checked, square)


def _reason_column(columns: MetricColumns) -> Iterable[str | None]:
    """Each figure's reason as stored: None for none."""
    if not columns.reasons:
        return repeat(None)
    return [reason or None for reason in columns.reasons]


def _with_failed_rows(
    run_key: str, columns: MetricColumns, lengths: list[int]
) -> tuple[list[MetricRow], int]:
    """`counted_rows` of figures some of which have no samples: those with a reason are failed rows
    (n 0, no numbers, the reason), in their place among the others; those without are left out."""
    reasons = columns.reasons or [""] * len(lengths)
    kept = [i for i, n in enumerate(lengths) if n]
    figures, nonfinite = counted_rows(run_key, _figures_of(columns, kept, reasons))
    made = iter(figures)
    rows: list[MetricRow] = []
    for i, n in enumerate(lengths):
        if n:
            rows.append(next(made))
        elif reasons[i]:
            rows.append(_failed_row_of(run_key, columns, i, reasons[i]))
    return rows, nonfinite


def _figures_of(columns: MetricColumns, kept: list[int], reasons: Sequence[str]) -> MetricColumns:
    """The figures `kept` (by place) of the columns."""
    tables, configs, names, units, directions, samples = (
        [part[i] for i in kept] for part in _PARTS(columns)
    )
    return MetricColumns(
        tables,
        configs,
        names,
        units,
        directions,
        samples,
        checked=columns.checked,
        reasons=[reasons[i] for i in kept],
    )


def _failed_row_of(run_key: str, columns: MetricColumns, i: int, reason: str) -> MetricRow:
    """Figure `i`'s failed row: n 0, no numbers, no samples, its reason."""
    table, row, name, unit, direction = (part[i] for part in _PARTS(columns)[:5])
    numbers = (0, None, None, None, None, None)  # n, mean, sd, min, max, samples
    return (run_key, table, json.dumps(row), name, unit, str(direction), *numbers, reason)


_PARTS = operator.attrgetter("tables", "rows", "names", "units", "directions", "samples")


def failed_row(row: MetricRow) -> bool:
    """Whether a metrics row is a failed row's reason (no mean, a reason): no figure."""
    return row[_MEAN] is None and row[_REASON] is not None


def _config_texts(
    rows: Sequence[dict[str, str]], text: bytes | None = None, dicts: bool = False
) -> list[str]:
    """Each configuration's JSON text (json.dumps's), dumped once per distinct configuration (an
    import's figures each have their own dict, a hundred of them equal, and so do its runs). Where
    every value is a text and no text holds an escape or a brace (the usual case), the
    configurations are told apart by their texts in one orjson.dumps of them all (`texts_json`;
    `text`, when the caller has it), cut apart at the braces: for dicts of texts, the same text
    exactly when the same items in the same order, as `tuple(items)` keys tell them. `dicts`: every
    row is known to be a dict."""
    if text is None:
        try:
            if not dicts and set(map(type, rows)) != _DICT:
                raise TypeError("a configuration that is no dict")
            text = texts_json(rows)
        except TypeError:  # orjson.JSONEncodeError: a value orjson refuses
            text = None
    # one brace each way a configuration: none inside a text, so they cut apart at `},{`
    if text is None or not text.count(b"{") == text.count(b"}") == len(rows):
        return _config_texts_one_by_one(rows)
    pieces = text[2:-2].split(b"},{")
    if (
        len(_CONFIG_TEXTS) > 4096
    ):  # kept across runs (an import's runs share their configurations), bounded
        _CONFIG_TEXTS.clear()
    for items in set(pieces).difference(_CONFIG_TEXTS):  # read back as it was: texts only
        _CONFIG_TEXTS[items] = json.dumps(json.loads(b"{" + items + b"}"))
    return list(map(_CONFIG_TEXTS.__getitem__, pieces))


_CONFIG_TEXTS: dict[bytes, str] = {}  # json.dumps of the configuration whose orjson text is {key}


def texts_json(rows: Sequence[dict[str, str]]) -> bytes | None:
    """orjson's text of dicts whose every value is a text, none holding an escape (a quote, a
    backslash, a control character); None for any other dicts. With no escape, a quote before a
    colon ends a key: each followed by a quote, every value is a text (no number, list or object).
    TypeError (orjson.JSONEncodeError) for what orjson does not write (an integer beyond 64
    bits)."""
    import orjson  # here: see samples_texts

    text = orjson.dumps(rows)
    return None if b"\\" in text or text.count(b'":') != text.count(b'":"') else text


def _config_texts_one_by_one(rows: Sequence[dict[str, str]]) -> list[str]:
    """`_config_texts` of any configurations: each told apart by its items in order, and one whose
    items cannot be (a list among the values) dumped each time."""
    configs: dict[object, str] = {}
    texts = []
    for row in rows:
        try:
            key: object = tuple(row.items())
            text = configs.get(key)
        except TypeError:
            key, text = None, None
        if text is None:
            text = json.dumps(row)
            if key is not None:
                configs[key] = text
        texts.append(text)
    return texts


def _direction_texts(directions: Sequence[str]) -> list[str]:
    """Each direction as its plain text (a Direction's value)."""
    texts = dict.fromkeys(directions, "")
    for direction in texts:
        texts[direction] = str(direction)
    return list(map(texts.__getitem__, directions))


def _statistics(
    samples: Sequence[list[float]],
    lengths: list[int],
    floats: bool,
    squared: Callable[[float, float], float] = pow,
) -> _Statistics:
    """The means, sds (`mean_sd`), minimums and maximums of the figures' samples, to the bit what
    `mean_sd`, `min` and `max` give for each: the same sums (math.fsum), the same divisions, the
    same squares (`pow`, the `**` of `mean_sd`: libm's pow, which is not always x*x to the last bit,
    so never numpy's square), and `min`'s first smallest value (of 0.0 and -0.0, the first); and how
    many figures are no `finite_row` where that is told on the way (else None). `floats`: every
    sample is known to be a float."""
    n = lengths[0]
    if (
        n > 1
        and lengths.count(n) == len(lengths)
        and (floats or set(map(type, chain.from_iterable(samples))) == _FLOAT)
    ):
        return _uniform_statistics(samples, n, squared)
    means = list(map(fmean, samples))
    deviations = map(
        sub, chain.from_iterable(samples), chain.from_iterable(map(repeat, means, lengths))
    )
    squares = map(squared, deviations, repeat(2.0))
    # each figure's squares in turn, made before they are summed: pow's OverflowError reaches the
    # caller (which starts again with `square`), fsum's own (finite squares whose sum is beyond a
    # double) is an infinite sum
    sums = map(fsum_or_inf, map(list, map(islice, repeat(squares), lengths)))
    sds = [
        math.sqrt(total / (count - 1)) if count > 1 else None
        for total, count in zip(sums, lengths, strict=True)
    ]
    return means, sds, list(map(min, samples)), list(map(max, samples)), None


def _uniform_statistics(
    samples: Sequence[list[float]], n: int, squared: Callable[[float, float], float] = pow
) -> _Statistics:
    """`_statistics` of figures of n float samples each (an import's usual line), the deviations and
    extremes by numpy: a difference, a division, a square root and a comparison are IEEE's, the same
    in numpy as in Python; the minimum is the first smallest value, as `min`'s (`<`, as min
    compares)."""
    import numpy as np  # here: `bench history list` never needs it

    count = len(samples)
    values = np.fromiter(chain.from_iterable(samples), float, count * n).reshape(count, n)
    with np.errstate(all="ignore"):  # an infinity or NaN: the value Python gives, without a warning
        means = np.fromiter(map(fmean, samples), float, count)
        squares = map(squared, (values - means[:, None]).ravel().tolist(), repeat(2.0))
        sums = np.fromiter(map(fsum_or_inf, zip(*[squares] * n, strict=True)), float, count)
        sds = np.sqrt(sums / (n - 1))
        lows = highs = values[:, 0]
        for column in values.T[1:]:
            lows = np.where(column < lows, column, lows)
            highs = np.where(column > highs, column, highs)
        # finite_row's test (NaN fails it), a column at a time
        finite = (means >= -_BOUND) & (means <= _BOUND) & (lows >= -_BOUND) & (highs <= _BOUND)
    return (
        means.tolist(),
        sds.tolist(),
        lows.tolist(),
        highs.tolist(),
        count - int(np.count_nonzero(finite)),
    )


def finite_row(row: MetricRow) -> bool:
    """Whether a metrics row's mean, min and max are finite numbers: layout.FINITE in Python (NaN
    fails)."""
    mean, low, high = row[_MEAN], row[_MIN], row[_MAX]
    if mean is None or low is None or high is None:  # a failed row's: no number
        return False
    return -_BOUND <= mean <= _BOUND and -_BOUND <= low and high <= _BOUND


# a run's columns of text (NULL: ""), and of times (no number: None)
_RUN_TEXTS = (
    "run_key",
    "benchmark",
    "file",
    "run_dir",
    "system",
    "caramel_version",
    "git_commit",
    "host",
    "nodes",
    "container",
    "energy_method",
    "site",
)
_RUN_TIMES = ("started", "ended")


def decode_run(path: str, data: dict[str, Any]) -> RunRecord:
    """A `runs` row (column: value; columns this caramel does not know left out) as a RunRecord,
    each JSON field bounded and typed (state.bounded): a damaged or hostile row is a RunError naming
    the file."""
    data = {k: v for k, v in data.items() if k in RunRecord.__dataclass_fields__}
    data.update(_run_json_fields(path, data))
    data.update((name, _text(data.get(name))) for name in _RUN_TEXTS)
    data.update((name, _time(data.get(name))) for name in _RUN_TIMES)
    return RunRecord(**data)


def _run_json_fields(path: str, data: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row's JSON fields read (`row_field`): its tags and job ids, its fingerprint."""
    what = f"run {data.get('run_key')}"
    fields = {
        name: row_field(path, data.get(name) or "[]", f"{what}: {name}", list)
        for name in ("tags", "job_ids")
    }
    fingerprint = data.get("fingerprint") or "{}"
    return {**fields, "fingerprint": row_field(path, fingerprint, f"{what}: fingerprint", dict)}


def _text(value: object) -> str:
    """A stored text as text; NULL as ""."""
    return "" if value is None else str(value)


def _time(value: object) -> float | None:
    """A stored time as it is; None for no number, or NaN (how a DataFrame of runs holds a missing
    time)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        return None
    return value


def row_field(path: str, text: object, what: str, kind: type[_JsonKind]) -> _JsonKind:
    """One JSON field of a history row, bounded, of the type `kind` (list or dict)."""
    try:
        value = bounded.loads(text, f"{path}: {what}") if isinstance(text, (str, bytes)) else None
    except bounded.OverLimit:
        raise
    except ValueError as exc:
        raise RunError(
            f"{path}: {what} is damaged (not JSON: {exc})",
            hint="bench history remove RUN drops that run",
        ) from None
    if not isinstance(value, kind):
        raise RunError(
            f"{path}: {what} is damaged (not a JSON {'list' if kind is list else 'object'})",
            hint="bench history remove RUN drops that run",
        )
    return value


def as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def plain_samples(text: object) -> list[float] | None:
    """The samples as caramel writes them, a short JSON list of finite floats, read fast; None for
    anything else (a long, damaged or non-finite text: `finite_samples` reads it with care)."""
    if not isinstance(text, str) or len(text) > 4096:
        return None
    values = _json_or_none(text)
    return values if _finite_floats(values) else None


def _json_or_none(text: str) -> object:
    """The value of a JSON text; None where it is no JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _finite_floats(values: object) -> TypeGuard[list[float]]:
    """A list of floats alone, not empty, whose sum is finite (not inf - inf, nor finite values
    whose sum overflows: those are read with care)."""
    if type(values) is not list or not values or not all(type(v) is float for v in values):
        return False
    try:
        return math.isfinite(math.fsum(values))
    except (OverflowError, ValueError):
        return False


def finite_samples(text: str, where: str = "samples") -> list[float] | None:
    """The finite numbers of a stored samples list (`[1.0,inf]` is not JSON: read it by hand
    then)."""
    if not isinstance(text, str):
        return None
    values = _stored_values(text, where)
    return None if values is None else [float(v) for v in values if _finite_number(v)]


def left_out(samples: object, values: list[float] | None, what: str) -> str | None:
    """The note on a stored samples text (`finite_samples` read `values` of it) some of whose values
    are no finite number, naming `what` (`run KEY: TABLE/NAME`); None where none was left out."""
    if values is not None and len(values) >= str(samples).count(",") + 1:
        return None
    left = "; left out" if not values else "; that sample is left out"
    return f"{what} holds a value that is not a finite number{left}"


def _stored_values(text: str, where: str) -> list[object] | None:
    """The values of a stored samples list: JSON's (bounded), else split by hand; None for a text
    that is no list, or over the bounds (left out, noted by the caller, as any other value that is
    not a number)."""
    try:
        values = bounded.loads(text, where)
    except bounded.OverLimit:
        return None
    except ValueError:
        return _split_values(text)
    return values if isinstance(values, list) else None


def _split_values(text: str) -> list[object] | None:
    """The numbers of `[1.0,inf,nan]` (no JSON) by hand; None where one is no number."""
    try:
        return [float(v) for v in text.strip("[]").split(",") if v.strip()]
    except ValueError:
        return None


def _finite_number(value: object) -> TypeGuard[int | float]:
    """A number that is a finite float (an integer of 400 digits is none: float() overflows)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
