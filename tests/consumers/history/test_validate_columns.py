"""An export line's metrics checked a column at a time (validate._plain_metrics, the fast path of a
million-figure import) accept what the figure-by-figure checks accept, with the same metrics, and
leave every other line to them: the same error, naming the same figure."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.consumers.history import validate
from caramel.errors import Location, RunError

TEXT = st.text(max_size=4)
NUMBER = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(-5, 5))
ODD = st.one_of(st.none(), st.booleans(), st.just([]), st.just({}), st.just(1e308), TEXT, NUMBER)


@st.composite
def metrics(draw) -> dict:
    """A metric as bench export writes it, or now and then with one key odd, missing or extra."""
    metric: dict = {"table": draw(TEXT), "row": draw(st.dictionaries(TEXT, TEXT, max_size=2)), "name": draw(TEXT),
                    "unit": draw(TEXT), "direction": draw(st.sampled_from(["higher", "lower", "unknown"])),
                    "samples": draw(st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=3))}
    change = draw(st.sampled_from(["none"] * 6 + ["odd", "missing", "extra", "sample", "row"]))
    key = draw(st.sampled_from(sorted(metric)))
    if change == "odd":
        metric[key] = draw(ODD)
    elif change == "missing":
        del metric[key]
    elif change == "extra":
        metric[draw(TEXT)] = draw(ODD)
    elif change == "sample":
        metric["samples"] = [*metric["samples"], draw(ODD)]
    elif change == "row":
        metric["row"] = {**metric["row"], "n": draw(ODD)}
    return metric


def _outcome(line: bytes):
    try:
        return validate.parse_line(line, Location("export.jsonl", 3))
    except RunError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(st.lists(metrics(), min_size=1, max_size=5))
@pytest.mark.slow
def test_the_column_checks_agree_with_the_figure_by_figure_checks(figures) -> None:
    line = json.dumps({"schema": 2, "run": {"run_key": "r", "benchmark": "b"}, "metrics": figures}).encode()
    fast = _outcome(line)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(validate, "_plain_metrics", lambda found: None)
        careful = _outcome(line)
    assert fast == careful


def test_plain_metrics_are_taken_a_column_at_a_time() -> None:
    figures = [{"table": "t", "row": {"n": str(k)}, "name": "rate", "unit": "", "direction": "higher",
                "samples": [1.0, 2.0]} for k in range(3)]
    made = validate._plain_metrics(figures)
    assert made is not None and [m.row for m in made] == [{"n": "0"}, {"n": "1"}, {"n": "2"}]
    assert validate._plain_metrics([*figures, {**figures[0], "samples": [1.0, 2]}]) is None  # an integer: careful path


@pytest.mark.parametrize("direction", [[1], {"a": 1}])
def test_a_direction_that_is_a_list_or_an_object_is_refused_with_its_place(direction) -> None:
    """Once a TypeError (an unhashable value looked up among the directions), now the line's error."""
    line = json.dumps({"run": {"run_key": "r", "benchmark": "b"}, "metrics": [
        {"table": "t", "row": {}, "name": "n", "direction": direction, "samples": [1.0]}]}).encode()
    with pytest.raises(RunError, match=r'export.jsonl:3: .*metrics\[0\]\.direction holds .*expected "higher"'):
        validate.parse_line(line, Location("export.jsonl", 3))
