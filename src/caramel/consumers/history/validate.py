"""The schema of `bench export` lines, checked line by line before `bench import` adds anything.

One line is one run: `{"schema": 2, "run": {...}, "metrics": [{...}, ...]}`. Every key, type and
number is checked (numbers finite and representable as a float; `true` is not a number), and the
line is size- and depth-bounded before it is parsed (state.bounded), so a hostile or damaged file is
refused with its file and line and nothing of it is imported.

`schema` is the export's layout: 1 (no key: exports of caramels before it was written), 2 (the
key itself; otherwise as 1) and 3 (a figure may hold a `reason`: a failed row's, whose samples are
then empty) are read; a larger one is refused before anything else is checked, since a newer
caramel may have added keys this one does not know.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from itertools import chain
from typing import Any

import orjson

from caramel.consumers.history.metrics import Metric, MetricColumns
from caramel.consumers.history.rows import texts_json
from caramel.consumers.history.store import EXPORT_SCHEMA, RunRecord
from caramel.errors import Location, RunError, did_you_mean
from caramel.stages.state import bounded

_TEXT = "text"
_TEXTS = "list of texts"
_TIME = "number or null"
_DIRECTION = "higher, lower or unknown"
_NUMBERS = "non-empty list of numbers"
_TEXTS_AND_NUMBERS = "object of texts and numbers"
# The run's keys and what each holds; run_key and benchmark are required.
RUN_KEYS: dict[str, str] = {
    "run_key": _TEXT,
    "benchmark": _TEXT,
    "file": _TEXT,
    "run_dir": _TEXT,
    "tags": _TEXTS,
    "system": _TEXT,
    "caramel_version": _TEXT,
    "git_commit": _TEXT,
    "host": _TEXT,
    "nodes": _TEXT,
    "job_ids": _TEXTS,
    "container": _TEXT,
    "energy_method": _TEXT,
    "started": _TIME,
    "ended": _TIME,
    "site": _TEXT,
    "fingerprint": _TEXTS_AND_NUMBERS,  # optional, written by newer exports
}
RUN_REQUIRED = ("run_key", "benchmark")
METRIC_KEYS = {
    "table": _TEXT,
    "row": _TEXTS_AND_NUMBERS,
    "name": _TEXT,
    "unit": _TEXT,
    "direction": _DIRECTION,
    "samples": _NUMBERS,
    "reason": _TEXT,  # optional (schema 3): a failed row's reason, its samples then empty
}
METRIC_REQUIRED = ("table", "row", "name", "samples")


# a value json or orjson read from a line, before it is checked: any JSON type
_Json = Any


class _Bad(Exception):
    """What is wrong with a value, and where in the line (a JSON path)."""


def parse_line(raw: bytes, where: Location) -> tuple[RunRecord, Sequence[Metric]] | None:
    """One line of an export as a run and its metrics; None for a blank line; RunError when
    malformed."""
    # a line as bench export writes it, read by orjson (which takes only UTF-8, as the decoding
    # below): never deeper than `bounded.check` lets through, so that check's count of the depth (a
    # fifth of a millisecond a line) is left out for it
    fast = _fast_line(raw) if len(raw) <= bounded.MAX_BYTES else None
    if fast is not None:
        return _parsed(*fast, where)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunError(
            f"not a bench export: byte 0x{raw[exc.start]:02x} at column {exc.start + 1} "
            "is not UTF-8 text",
            where,
            hint="bench export writes UTF-8 JSON, one run per line",
        ) from None
    if not text.strip():
        return None
    return _parsed(_careful_json(raw, where), None, where)


def _parsed(
    doc: object, plain: MetricColumns | None, where: Location
) -> tuple[RunRecord, Sequence[Metric]]:
    """The run and metrics of a line's JSON (`plain`: its metrics, told by `_plain_metrics`)."""
    _check_schema(doc, where)
    try:
        if plain is None:  # orjson refuses lone surrogates, and a NUL sends the line here
            _storable_texts(doc, "")
        return _record(doc, plain)
    except _Bad as exc:
        raise RunError(
            f"not a bench export: {exc}", where, hint="make the file with bench export"
        ) from None


def _careful_json(raw: bytes, where: Location) -> object:
    """A line json reads, once bounded (size and depth): any other line's error names what is
    wrong."""
    # bounded.loads of the line's own bytes (what the text, valid UTF-8, encodes back to: one
    # copy fewer)
    try:
        data = bounded.check(raw, "the line")
        try:
            return json.loads(data)
        except (
            RecursionError
        ):  # brackets that do not pair up, so the depth check could not count them
            raise bounded.OverLimit("the line: JSON nested too deeply") from None
    except bounded.OverLimit as exc:
        raise RunError(f"not a bench export: {exc.message}", where, hint=exc.hint) from None
    except (
        ValueError,
        RecursionError,
    ) as exc:  # JSONDecodeError, a number of over 4300 digits, deep nesting
        problem = (
            f"{exc.msg} (column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else "nested too deeply"
            if isinstance(exc, RecursionError)
            else str(exc).split(";")[0]
        )
        raise RunError(
            f"not a bench export: not JSON: {problem}",
            where,
            hint="bench export writes one JSON object per line; was the file cut short?",
        ) from None


def _check_schema(doc: object, where: Location) -> None:
    """Refuse a line of a newer export (or a schema that is no whole number) before its keys are
    read."""
    if not isinstance(doc, dict) or "schema" not in doc:
        return
    schema = doc["schema"]
    if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
        raise RunError(
            f"not a bench export: schema holds {_kind(schema)}, expected a whole number from 1",
            where,
            hint="make the file with bench export",
        )
    if schema > EXPORT_SCHEMA:
        raise RunError(
            f"made by a newer caramel (schema {schema}): upgrade",
            where,
            hint=f"this caramel reads exports of schema 1 to {EXPORT_SCHEMA}; "
            "upgrade caramel to import it, or export again with an older caramel",
        )


def _fast_line(data: bytes) -> tuple[_Json, MetricColumns] | None:
    """A line as bench export writes it, parsed by orjson (half of json's time) and its metrics
    told a column at a time (`_plain_metrics`); None for anything else, which json then reads as
    before (its errors, and what orjson refuses or reads otherwise: NaN, `1e999`, a lone surrogate,
    a byte order mark). orjson reads a whole number beyond 64 bits as a float where json keeps it
    whole: a line with a float of that size outside the samples is read by json too (a sample is
    stored as a float either way), and a configuration value that is a number is never a plain
    metric's. The line is at most `_SHALLOW` + 1 deep (plain metrics: 4), so far within the depth
    json is allowed."""
    if b"\\u0000" in data:  # a NUL (or the text `\u0000`): json's reading checks each text
        return None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if (
        type(doc) is not dict
        or type(doc.get("metrics")) is not list
        or not all(
            _small_numbers(value, _SHALLOW) for key, value in doc.items() if key != "metrics"
        )
    ):
        return None
    metrics = _plain_metrics(doc["metrics"])
    return None if metrics is None else (doc, metrics)


def _small_numbers(value: object, depth: int) -> bool:
    """No float of 2**63 or more in `value` (orjson's reading of a whole number json keeps whole),
    nor a list or object nested more than `depth` deep."""
    if type(value) is float:
        return -_WHOLE_LIMIT < value < _WHOLE_LIMIT
    if type(value) is dict or type(value) is list:
        return depth > 0 and all(
            _small_numbers(item, depth - 1)
            for item in (value.values() if type(value) is dict else value)
        )
    return True


_WHOLE_LIMIT = float(2**63)
_SHALLOW = 8  # an export's run nests 2 deep (run, tags); bounded.MAX_DEPTH (64) is far above


def _record(doc: _Json, plain: MetricColumns | None = None) -> tuple[RunRecord, Sequence[Metric]]:
    """A line's run and metrics, checked (`plain`: its metrics, told by `_plain_metrics`)."""
    _check_line(doc)
    record = _run_record(doc)
    if not isinstance(doc["metrics"], list):
        raise _Bad(f"metrics holds {_kind(doc['metrics'])}, expected a list")
    columns = plain if plain is not None else _plain_metrics(doc["metrics"])
    if columns is not None:
        return record, columns
    return record, [_metric(metric, i) for i, metric in enumerate(doc["metrics"])]


def _check_line(doc: _Json) -> None:
    """The line's keys: site and fingerprint stand beside "run" (bench export writes them there)
    or inside it."""
    _object(
        doc,
        "the line",
        {
            "schema": "whole number",
            "run": "object",
            "metrics": "list",
            "site": _TEXT,
            "fingerprint": RUN_KEYS["fingerprint"],
        },
        ("run", "metrics"),
    )
    for key in ("site", "fingerprint"):
        if doc.get(key) is not None:
            _check(doc[key], RUN_KEYS[key], key)


def _run_record(doc: _Json) -> RunRecord:
    """The line's run, each key checked, with the site and fingerprint beside it."""
    run = _checked_run(doc["run"])
    known = {f.name for f in fields(RunRecord)}
    record = RunRecord(**{k: v for k, v in run.items() if k in known})
    record.site = str(doc.get("site") or record.site or "")
    record.fingerprint = dict(doc.get("fingerprint") or record.fingerprint or {})
    return record


def _checked_run(value: _Json) -> dict[str, Any]:
    """The line's "run": an object of RUN_KEYS, each holding what it should, a run key not empty."""
    run = dict(value) if isinstance(value, dict) else value
    _object(run, "run", RUN_KEYS, RUN_REQUIRED)
    for key, item in run.items():
        _check(item, RUN_KEYS[key], f"run.{key}")
    if not run["run_key"].strip():
        raise _Bad("run.run_key is empty")
    return run


def _metric(metric: _Json, i: int) -> Metric:
    """Figure `i` of the line: told plain in a few type tests, else checked key by key (naming what
    is wrong where)."""
    if _plain_metric(metric):
        samples: list[float] = metric["samples"]
    else:
        samples = _checked_samples(metric, i)
    return Metric(
        metric["table"],
        metric["row"],
        metric["name"],
        metric.get("unit", ""),
        metric.get("direction", "unknown"),
        samples,
        metric.get("reason", ""),
    )


def _checked_samples(metric: _Json, i: int) -> list[float]:
    """The careful check of figure `i`, each key against what it holds; its samples as floats (a
    failed row's: none)."""
    _object(metric, f"metrics[{i}]", METRIC_KEYS, METRIC_REQUIRED)
    for key, value in metric.items():
        if not (key == "samples" and value == [] and _failed(metric, i)):
            _check(value, METRIC_KEYS[key], f"metrics[{i}].{key}")
    return [float(v) for v in metric["samples"]]


def _failed(metric: _Json, i: int) -> bool:
    """Whether a figure of no samples is a failed row's: it holds a reason (a text, not empty)."""
    if "reason" not in metric:
        return False
    reason = metric["reason"]
    _check(reason, _TEXT, f"metrics[{i}].reason")
    if not reason.strip():
        raise _Bad(
            f"metrics[{i}].samples is empty and its reason too, expected at least one number"
        )
    return True


_PLAIN_KEYS = ("table", "row", "name", "unit", "direction", "samples")  # no reason: a figure's
_METRIC_KEY_SET = frozenset(_PLAIN_KEYS)
_EXPORTED = tuple(
    map(operator.itemgetter, _PLAIN_KEYS)
)  # a metric's six values, in the order export writes them
_METRIC_KEY_COUNT = {len(_PLAIN_KEYS)}
_DICT = {dict}
_DIRECTIONS = frozenset(("higher", "lower", "unknown"))
_FLOAT, _TEXT_TYPE = {float}, {str}


def _plain_metrics(metrics: list[_Json]) -> MetricColumns | None:
    """A line's metrics as bench export writes them (every key there, every sample a float, every
    value of a row a text) told a column at a time: a few passes in C over the line's figures
    instead of a dozen type tests per figure in Python (a million figures an import). None when any
    figure is not so: `_plain_metric` and the careful checks then look at each one."""
    try:  # what is not so raises a KeyError (a key missing or another in its place) or a TypeError
        columns = _plain_columns(metrics)
    except (KeyError, TypeError):
        return None
    # the finite floats of the whole line sum to a finite number (else each figure is looked at)
    if columns is None or not _finite_sum(chain.from_iterable(columns.samples)):
        return None
    return columns


def _plain_columns(metrics: list[_Json]) -> MetricColumns | None:
    """`_plain_metrics`' columns, their types told; None, a KeyError or a TypeError for metrics
    that are not plain. Metrics when read (history.rows never reads them so)."""
    if not metrics or set(map(len, metrics)) != _METRIC_KEY_COUNT:
        return None
    tables, rows, names, units, directions, samples = (
        tuple(map(value, metrics)) for value in _EXPORTED
    )
    # texts: str.join takes nothing else (and neither json nor orjson makes a subclass of str)
    "".join(chain(tables, names, units, directions))
    if set(map(type, rows)) != _DICT:
        return None
    configs_json = _rows_json(rows)
    # every sample list non-empty and holding floats alone (a text or an object holds no float)
    if (
        not all(samples)
        or not _DIRECTIONS.issuperset(directions)
        or set(map(type, chain.from_iterable(samples))) != _FLOAT
    ):
        return None
    return MetricColumns(
        tables, rows, names, units, directions, samples, checked=True, configs_json=configs_json
    )


def _rows_json(rows: Sequence[dict[str, str]]) -> bytes | None:
    """The rows' text (history.rows.texts_json) where every value is a text with no escape; None
    where not, every value then told a text (TypeError for one that is not)."""
    configs_json = texts_json(rows)
    if configs_json is None:
        "".join(chain.from_iterable(map(dict.values, rows)))
    return configs_json


def _finite_sum(samples: Iterable[float]) -> bool:
    """Whether the samples' sum (math.fsum) is a finite number."""
    try:
        return math.isfinite(math.fsum(samples))
    except (OverflowError, ValueError):
        return False


def _plain_metric(metric: _Json) -> bool:
    """A metric as bench export writes it, told in a few type tests (a million figures are imported
    in seconds); False for anything else, which `_object` and `_check` then examine one by one and
    refuse with the key and what it should hold, or accept (an integer sample, a number in a
    row)."""
    if type(metric) is not dict or not _METRIC_KEY_SET.issuperset(metric):
        return False
    return _plain_names(metric) and _plain_values(metric.get("row"), metric.get("samples"))


def _plain_names(metric: dict[str, object]) -> bool:
    """A figure's table, name and unit are texts, its direction one of the three."""
    direction = metric.get("direction", "unknown")
    texts = (metric.get("table"), metric.get("name"), metric.get("unit", ""), direction)
    return all(type(text) is str for text in texts) and direction in _DIRECTIONS


def _plain_values(row: object, samples: object) -> bool:
    """A figure's row holds texts alone, its samples floats alone of a finite sum."""
    if type(row) is not dict or type(samples) is not list:
        return False
    if set(map(type, samples)) != _FLOAT or (row and set(map(type, row.values())) != _TEXT_TYPE):
        return False
    return _finite_sum(samples)


def _object(value: object, what: str, keys: dict[str, str], required: tuple[str, ...]) -> None:
    """`value` is an object of `keys` alone, with every `required` one."""
    if not isinstance(value, dict):
        raise _Bad(f"{what} holds {_kind(value)}, expected an object with {_names(required)}")
    _no_unknown_key(value, what, keys)
    missing = [k for k in required if k not in value]
    if missing:
        raise _Bad(f"{what} lacks the key{'s' if len(missing) > 1 else ''} {_names(missing)}")


def _no_unknown_key(value: dict[str, object], what: str, keys: dict[str, str]) -> None:
    """The first key of `value` not among `keys` named, with did-you-mean."""
    unknown = next((key for key in value if key not in keys), None)
    if unknown is not None:
        hint = did_you_mean(unknown, keys)
        raise _Bad(f"{what} has the unknown key {unknown!r}" + (f" ({hint})" if hint else ""))


def _names(keys: Sequence[str]) -> str:
    """Keys as an error names them: `'run', 'metrics'`."""
    return ", ".join(repr(k) for k in keys)


def _check(value: object, expected: str, path: str) -> None:
    """Raise _Bad naming the innermost wrong value (`metrics[0].samples[1]`) and what was
    expected (an expectation with no check of its own, such as an object's: none here)."""
    check = _CHECKS.get(expected)
    if check is not None:
        check(value, path)


def _check_text(value: object, path: str) -> None:
    if not isinstance(value, str):
        raise _Bad(f"{path} holds {_kind(value)}, expected a text")


def _check_time(value: object, path: str) -> None:
    """A number or null; a whole number within 64 bits (seconds since 1970)."""
    if value is not None and not _finite(value, path):
        raise _Bad(f"{path} holds {_kind(value)}, expected a number or null")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise _Bad(
            f"{path} holds the number {str(value)[:20]}..., beyond a 64-bit integer "
            "(seconds since 1970)"
        )


def _check_direction(value: object, path: str) -> None:
    if value not in ("higher", "lower", "unknown"):
        raise _Bad(f'{path} holds {_kind(value)}, expected "higher", "lower" or "unknown"')


def _check_texts(value: object, path: str) -> None:
    if not isinstance(value, list):
        raise _Bad(f"{path} holds {_kind(value)}, expected a {_TEXTS}")
    for n, item in enumerate(value):
        if not isinstance(item, str):
            raise _Bad(f"{path}[{n}] holds {_kind(item)}, expected a text")


def _check_numbers(value: object, path: str) -> None:
    if not isinstance(value, list):
        raise _Bad(f"{path} holds {_kind(value)}, expected a {_NUMBERS}")
    if not value:
        raise _Bad(f"{path} is empty, expected at least one number")
    for n, item in enumerate(value):
        if not _finite(item, f"{path}[{n}]"):
            raise _Bad(f"{path}[{n}] holds {_kind(item)}, expected a finite number")


def _check_texts_and_numbers(value: object, path: str) -> None:
    if not isinstance(value, dict):
        raise _Bad(f"{path} holds {_kind(value)}, expected an {_TEXTS_AND_NUMBERS}")
    for key, item in value.items():
        if not isinstance(item, str) and not _finite(item, f"{path}.{key}"):
            raise _Bad(f"{path}.{key} holds {_kind(item)}, expected a text or a number")


# each expectation of RUN_KEYS and METRIC_KEYS with a check of its own
_CHECKS: dict[str, Callable[[object, str], None]] = {
    _TEXT: _check_text,
    _TIME: _check_time,
    _DIRECTION: _check_direction,
    _TEXTS: _check_texts,
    _NUMBERS: _check_numbers,
    _TEXTS_AND_NUMBERS: _check_texts_and_numbers,
}


def _storable_texts(value: object, path: str) -> None:
    """Refuse a text (key or value) that some history engine cannot store: a lone surrogate (no
    UTF-8 encodes it) or a NUL (PostgreSQL's text refuses it), naming its JSON path."""
    if isinstance(value, dict):
        for key, item in value.items():
            _storable_texts(key, f"{path} key")
            _storable_texts(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _storable_texts(item, f"{path}[{n}]")
    elif isinstance(value, str):
        _storable_text(value, path)


def _storable_text(value: str, path: str) -> None:
    """`_storable_texts` of one text."""
    if "\0" in value:
        raise _Bad(f"{path} holds a NUL character (U+0000), which a history cannot store")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Bad(
            f"{path} holds a lone surrogate (U+{ord(value[exc.start]):04X}), "
            "which is no character and cannot be stored"
        ) from None


def _finite(value: object, path: str) -> bool:
    """A JSON number that is a finite float; NaN, Infinity, 1e999 and 10**400 are errors here."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        number = float(value)
    except OverflowError:
        raise _Bad(f"{path} holds a number too large for a float ({str(value)[:20]}...)") from None
    if not math.isfinite(number):
        raise _Bad(f"{path} holds {value!r}, expected a finite number")
    return True


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    text = json.dumps(value) if isinstance(value, str) else repr(value)
    return f"{'the text' if isinstance(value, str) else 'the number'} {text[:40]}"
