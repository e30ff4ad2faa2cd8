"""The import's fast paths (issue 24) read and store what the careful paths do, to the byte: a line
parsed by orjson (validate._fast_line) gives the run and metrics json gives, or json reads it; the
samples' texts made by one orjson.dumps (rows.samples_texts) are the repr texts `samples_text` writes;
and a file imported through both holds the same rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from caramel.consumers.history import rows, validate
from caramel.consumers.history.store import History
from caramel.errors import Location, RunError

# number texts as a hand-made or foreign export may hold them: long mantissas, big exponents,
# whole numbers beyond 64 bits (orjson reads those as floats, json keeps them whole)
NUMBER_TEXT = st.one_of(
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?\Z"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["NaN", "Infinity", "1e999", "-0.0", "9223372036854775808", "18446744073709551616"]))
TEXT = st.text(max_size=3)


def _outcome(line: bytes) -> str:
    try:
        return repr(validate.parse_line(line, Location("export.jsonl", 7)))
    except RunError as exc:
        return str(exc)


@st.composite
def lines(draw) -> bytes:
    """An export line with number texts put where numbers may stand: samples, started, the
    fingerprint, a configuration's value, the schema."""
    numbers: list[str] = []

    def number() -> str:
        numbers.append(draw(NUMBER_TEXT))
        return f"@{len(numbers) - 1}@"

    metrics = [{"table": draw(TEXT), "row": {"n": draw(st.one_of(TEXT, st.builds(number)))}, "name": draw(TEXT),
                "unit": "", "direction": "higher",
                "samples": [number() for _ in range(draw(st.integers(1, 3)))]} for _ in range(draw(st.integers(1, 3)))]
    doc: dict = {"run": {"run_key": "r", "benchmark": "b", "started": number()}, "metrics": metrics,
                 "fingerprint": {"gpus": number()}}
    if draw(st.booleans()):
        doc = {"schema": number(), **doc}
    text = json.dumps(doc)
    for i, value in enumerate(numbers):
        text = text.replace(f'"@{i}@"', value)
    return text.encode()


@settings(max_examples=400, deadline=None)
@given(lines())
@example(b'{"run": {"run_key": "r", "benchmark": "b", "started": 123456789012345678901234567890}, '
         b'"metrics": [{"table": "t", "row": {}, "name": "x", "samples": [1.5]}]}')
@example(b'{"run": {"run_key": "r", "benchmark": "b"}, "fingerprint": {"gpus": 100000000000000000000}, '
         b'"metrics": [{"table": "t", "row": {}, "name": "x", "samples": [0.1000000000000000055511151231257827]}]}')
@pytest.mark.slow
def test_a_line_reads_the_same_through_orjson_and_json(line: bytes) -> None:
    fast = _outcome(line)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(validate, "_fast_line", lambda data: None)  # every line read by json, as before
        careful = _outcome(line)
    assert fast == careful


def test_a_line_as_bench_export_writes_it_goes_the_orjson_way() -> None:
    line = (b'{"schema": 2, "run": {"run_key": "r", "benchmark": "b", "started": 1.5}, "metrics": '
            b'[{"table": "t", "row": {"n": "1"}, "name": "x", "unit": "s", "direction": "lower", "samples": [1.5, 2.0]}]}')
    assert validate._fast_line(line) is not None
    # a whole number beyond 64 bits outside the samples: json keeps it whole, so json reads the line
    assert validate._fast_line(line.replace(b'"started": 1.5', b'"started": 123456789012345678901')) is None


FLOATS = st.one_of(st.floats(), st.floats(-1e-3, 1e-3), st.integers(-(2**70), 2**70).map(float))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(FLOATS, max_size=4), max_size=6))
@example([[5e-05, 1e16, 1e-07, 0.0001, 123456789012345680.0, -0.0, 1e22, 9.999999999999999e-05]])
@example([[1.0, 2.5], [0.00012345678901234567], [1e-5]])
def test_samples_texts_are_the_repr_texts(columns: list[list[float]]) -> None:
    assert rows.samples_texts(columns) == [rows.samples_text(values) for values in columns]


def test_samples_texts_of_values_that_are_no_floats_fall_back_to_repr() -> None:
    odd = [[True], ["a"], [[1.0], [2.0]], [2**80], [None]]
    assert rows.samples_texts(odd) == [rows.samples_text(values) for values in odd]


def _stored(path: Path) -> list:
    with sqlite3.connect(path) as db:
        figures = [tuple(v.hex() if isinstance(v, float) else v for v in row)
                   for row in db.execute("SELECT rowid, * FROM figures ORDER BY rowid")]
        return [figures, db.execute("SELECT * FROM runs ORDER BY rowid").fetchall()]


def _odd_export(path: Path) -> Path:
    """Runs with samples of every form: exponents both ways, values under 1e-4, whole numbers,
    negative zero, one sample; the last run's only odd value is under 1e-4."""
    values = [[5e-05, 1.5, -0.0], [1e16, 2.0], [1e-07], [0.000123, 1234.5678, 3.0], [7.0, 8.0, 9.0]]
    path.write_text("".join(json.dumps({"schema": 2, "run": {"run_key": f"run{r}", "benchmark": "b", "started": r},
                                        "metrics": [{"table": "t", "row": {"n": str(k)}, "name": "x", "unit": "s",
                                                     "direction": "lower", "samples": v}
                                                    for k, v in enumerate(values[r:] + values[:r])]}) + "\n"
                            for r in range(3))
                    # a run whose only odd value is under 1e-4 (orjson writes 0.00005, repr 5e-05)
                    + json.dumps({"run": {"run_key": "small", "benchmark": "b"}, "metrics": [
                        {"table": "t", "row": {}, "name": "x", "samples": [5e-05, 1.5]}]}) + "\n")
    return path


def test_an_import_stores_what_the_careful_paths_store(tmp_path: Path, monkeypatch) -> None:
    """The odd export imported by the fast paths and by json and repr alone: the same rows."""
    from caramel.cli.export import _records

    export = _odd_export(tmp_path / "export.jsonl")
    with History(str(tmp_path / "fast.db")) as history:
        assert history.import_records(_records(str(export))) == (4, 16, 0)
    monkeypatch.setattr(validate, "_fast_line", lambda data: None)
    monkeypatch.setattr(rows, "samples_texts", lambda columns: [rows.samples_text(v) for v in columns])
    with History(str(tmp_path / "careful.db")) as history:
        assert history.import_records(_records(str(export))) == (4, 16, 0)
    assert _stored(tmp_path / "fast.db") == _stored(tmp_path / "careful.db")
    assert {row[-2] for row in _stored(tmp_path / "fast.db")[0]} >= {"[5e-05,1.5,-0.0]", "[5e-05,1.5]"}


def test_an_import_into_postgresql_stores_the_texts_sqlite_stores(tmp_path: Path, pg_url: str) -> None:
    from caramel.cli.export import _records

    export = _odd_export(tmp_path / "export.jsonl")
    texts = "SELECT run_key, tbl, config, name, unit, direction, n, samples FROM metrics ORDER BY run_key, config"
    found = []
    for target in (pg_url, str(tmp_path / "local.db")):
        with History(target) as history:
            assert history.import_records(_records(str(export))) == (4, 16, 0)
            assert history.import_records(_records(str(export))) == (0, 0, 0)  # again: nothing new
            found.append([tuple(row) for row in history.db.execute(texts)])
    assert found[0] == found[1] and len(found[0]) == 16
