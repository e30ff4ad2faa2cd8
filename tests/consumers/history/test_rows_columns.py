"""The metrics table's rows made a column at a time (rows.metric_rows, issue 24's million-figure import)
are, to the bit, the rows made one figure at a time as caramel made them before: the same mean and sd
(`mean_sd`: math.fsum, libm's pow), the same min and max (of 0.0 and -0.0 the first), the same texts;
or the same error. Whether the figures come as Metric objects (bench result) or as the columns an
export line is checked into (history.validate)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from caramel.consumers.history import rows, validate
from caramel.consumers.history.metrics import Metric, MetricColumns
from caramel.errors import Location, RunError
from caramel.vocabulary import Direction


def _rows_one_by_one(run_key: str, metrics: list[Metric]) -> list[tuple]:
    """The rows as metric_rows made them figure by figure before it made them a column at a time."""
    configs: dict = {}
    made = []
    for m in metrics:
        try:
            key: object = tuple(m.row.items())
            config = configs.get(key)
        except TypeError:
            key, config = None, None
        if config is None:
            config = json.dumps(m.row)
            if key is not None:
                configs[key] = config
        mean, sd = rows.mean_sd(m.samples)
        made.append((run_key, m.table, config, m.name, m.unit, str(m.direction), len(m.samples), mean, sd,
                     min(m.samples), max(m.samples), rows.samples_text(m.samples),
                     m.reason or None))  # the reason: a failed row's (issue 37), else NULL
    return made


def _bits(value: object) -> object:
    """A value told apart to the bit (0.0 from -0.0; a float from an int)."""
    return (float, value.hex()) if isinstance(value, float) else (type(value), value)


def _outcome(make, metrics) -> object:
    try:
        return [tuple(map(_bits, row)) for row in make("run", metrics)]
    except (ArithmeticError, ValueError) as exc:  # pow's overflow, fsum's: the same error either way
        return type(exc).__name__


# every float but NaN and the infinities: tiny, huge (whose squares overflow), both zeros
FINITE = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.floats(-1e3, 1e3),
                   st.sampled_from([0.0, -0.0, 923.2681140745275, -923.2681140745275, 5e-324, 1.7e308, -1.75e308]))
# texts that take the fast way (plain) and those that do not (a brace, a quote, a backslash, a colon)
# no NUL: an import refuses it, naming the line (test_hostile_values.py)
TEXT = st.one_of(st.sampled_from(["1", "256", "a100", "", "é"]),
                 st.text(alphabet=st.characters(blacklist_characters="\x00"), max_size=4),
                 st.sampled_from(["{x}", 'a"b', "a\\b", "12:00", "},{"]))
VALUE = st.one_of(TEXT, TEXT, st.sampled_from([1, 1.0, True, None]))


@st.composite
def figures(draw) -> list[Metric]:
    """A run's figures: samples of one length (an import's usual line) or of several (1 to 6)."""
    count = draw(st.integers(1, 12))
    lengths = [draw(st.integers(1, 6))] * count if draw(st.booleans()) else \
        draw(st.lists(st.integers(1, 6), min_size=count, max_size=count))
    configs = draw(st.lists(st.dictionaries(TEXT, draw(st.sampled_from([TEXT, VALUE])), max_size=3),
                            min_size=1, max_size=3))
    return [Metric(draw(st.sampled_from(["t", "u"])), dict(draw(st.sampled_from(configs))),
                   draw(st.sampled_from(["rate", "time"])), draw(st.sampled_from(["", "s"])),
                   draw(st.sampled_from(["higher", "lower", "unknown", Direction.HIGHER])),
                   draw(st.lists(FINITE, min_size=n, max_size=n)))
            for n in lengths]


def _columns_checked(run_key: str, metrics: list[Metric]) -> list[tuple]:
    """As an export line's columns come from history.validate (MetricColumns.checked)."""
    columns = MetricColumns.of(metrics)
    return rows.metric_rows(run_key, MetricColumns(columns.tables, columns.rows, columns.names, columns.units,
                                                   columns.directions, columns.samples, checked=True))


@settings(max_examples=500, deadline=None)
@given(figures())
# the deviations ±923.27…: libm's pow(x, 2) is one bit above x*x there, so numpy's square would change the sd
@example([Metric("t", {"n": "1"}, "rate", "", "higher", [923.2681140745275, -923.2681140745275])] * 2)
@example([Metric("t", {}, "rate", "", "higher", [0.0, -0.0]), Metric("t", {}, "time", "", "lower", [-0.0, 0.0])])
@example([Metric("t", {"n": 1}, "rate", "", "higher", [1.0]), Metric("t", {"n": 1.0}, "time", "", "lower", [2.0]),
          Metric("t", {"n": [1]}, "x", "", "lower", [3.0, 4.0])])
@example([Metric("t", {}, "rate", "", "higher", [1e300, -1e300])])  # a square overflows: an infinite sd both ways
@example([Metric("t", {}, "rate", "", "higher", [1e300, -1e300, 2.0]), Metric("t", {}, "x", "", "lower", [1.0, 2.0])])
# not finite (bench result's figures may be): counted as the store counts them, the NaN first or last
@example([Metric("t", {}, "rate", "", "higher", [math.inf, math.inf]), Metric("t", {}, "x", "", "lower", [1.0, 2.0]),
          Metric("t", {}, "y", "", "lower", [math.nan, 1.0]), Metric("t", {}, "z", "", "lower", [1.0, math.nan])])
@pytest.mark.slow
def test_rows_made_a_column_at_a_time_are_the_rows_made_one_by_one(metrics: list[Metric]) -> None:
    expected = _outcome(_rows_one_by_one, metrics)
    assert _outcome(rows.metric_rows, metrics) == expected
    assert _outcome(rows.metric_rows, iter(metrics)) == expected
    # as history.validate hands a line on: floats, texts, the directions' plain texts
    checked = all(type(v) is float for m in metrics for v in m.samples) \
        and all(type(m.direction) is str and set(map(type, m.row.values())) <= {str} for m in metrics)
    if checked:
        assert _outcome(_columns_checked, metrics) == expected
    if not isinstance(expected, str):  # the run's count of rows that are no finite_row, as stored
        nonfinite = sum(not rows.finite_row(row) for row in _rows_one_by_one("run", metrics))
        assert rows.counted_rows("run", metrics)[1] == nonfinite
        if checked:
            columns = MetricColumns.of(metrics)
            columns.checked = True
            assert rows.counted_rows("run", columns)[1] == nonfinite


def test_the_pow_example_tells_numpys_square_apart() -> None:
    """The example above is one where a square by numpy (x*x) would store another sd (on glibc's libm)."""
    x = 923.2681140745275
    if pow(x, 2.0) == x * x:
        pytest.skip("this libm's pow squares exactly here")
    assert math.sqrt(math.fsum([x * x, x * x]) / 1) != rows.mean_sd([x, -x])[1]


@settings(max_examples=200, deadline=None)
@given(figures())
@pytest.mark.slow
def test_an_export_lines_columns_give_the_rows_of_its_figures(metrics: list[Metric]) -> None:
    """A line as bench export writes it, checked into columns by history.validate: the rows of the
    same figures made one by one (configurations of texts only, as an export holds)."""
    metrics = [Metric(m.table, {k: str(v) for k, v in m.row.items()}, m.name, m.unit, str(m.direction), m.samples)
               for m in metrics]
    line = json.dumps({"schema": 2, "run": {"run_key": "run", "benchmark": "b"},
                       "metrics": [{"table": m.table, "row": m.row, "name": m.name, "unit": m.unit,
                                    "direction": m.direction, "samples": m.samples} for m in metrics]})
    parsed = validate.parse_line(line.encode(), Location("export.jsonl", 1))
    assert parsed is not None
    try:
        plain = math.isfinite(math.fsum(v for m in metrics for v in m.samples))
    except OverflowError:  # the line's sum overflows: its figures are looked at one by one
        plain = False
    if plain:
        assert isinstance(parsed[1], MetricColumns) and parsed[1].checked  # the columns' way
    assert parsed[1] == metrics
    assert _outcome(rows.metric_rows, parsed[1]) == _outcome(_rows_one_by_one, metrics)


def test_metric_columns_read_as_the_metrics_they_hold() -> None:
    made = [Metric("t", {"n": str(k)}, "rate", "", "higher", [1.0, float(k)]) for k in range(3)]
    columns = MetricColumns.of(made)
    assert list(columns) == made and columns == made and len(columns) == 3
    assert columns[1] == made[1] and columns[1:] == made[1:] and repr(columns) == repr(made)
    assert columns != (made[0],) and MetricColumns.of([]) == []
    assert rows.metric_rows("r", MetricColumns.of([])) == []


@pytest.mark.parametrize("depth", [3, 9, 20, 63, 64, 70, 1100])
def test_a_line_read_by_orjson_before_its_depth_is_counted_reads_as_before(depth: int) -> None:
    """orjson reads a line before its depth is counted (validate._fast_line): one nested past what
    an export's run holds goes the careful way, so the answer (a run, or the error naming the line
    and what is wrong) is the one the depth count first gave."""
    deep = "[" * depth + "]" * depth
    line = ('{"schema": 2, "run": {"run_key": "r", "benchmark": "b", "tags": ' + deep + '}, "metrics": '
            '[{"table": "t", "row": {"n": "1"}, "name": "x", "unit": "", "direction": "higher", "samples": [1.5]}]}')

    def outcome() -> str:
        try:
            return repr(validate.parse_line(line.encode(), Location("export.jsonl", 4)))
        except RunError as exc:
            return str(exc)

    fast = outcome()
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(validate, "_fast_line", lambda data: None)  # every line counted, then read by json
        assert fast == outcome()
    assert "export.jsonl:4" in fast and ("64 deep" in fast) == (depth + 2 > 64)


@pytest.mark.parametrize("samples", [[1e300, -1e300], [1e300, -1e300, 1.0], [1.7e308, -1.7e308]])
def test_a_spread_whose_square_is_beyond_a_double_is_an_infinite_sd_not_an_error(samples: list[float]) -> None:
    """Samples 1e300 apart (finite, their sum finite): `**` raised OverflowError, a traceback at
    `bench import` and `bench result`; the sd is stored infinite (a spread beyond any verdict)."""
    figures = [Metric("t", {}, "rate", "", "higher", samples), Metric("t", {}, "time", "s", "lower", [1.0, 3.0])]
    made = rows.metric_rows("run", figures)
    assert made[0][8] == math.inf and made[1][8] == math.sqrt(2.0)  # the other figure as ever
    assert made[0][7] == rows.mean_sd(samples)[0] and rows.mean_sd(samples)[1] == math.inf
