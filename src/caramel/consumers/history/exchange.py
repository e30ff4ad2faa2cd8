"""`bench export` and `bench import` on a history: one JSON line per run, written and read one run
at a time, so a history of a million figures moves in the memory of one run (History.export_lines
and History.import_records call these).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict
from typing import Protocol

from caramel.consumers.history import query
from caramel.consumers.history.engine import Connection
from caramel.consumers.history.layout import EXPORT_SCHEMA, REASONLESS_SCHEMA, RunRecord
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.rows import PLAIN_SAMPLES, as_text, finite_samples, row_field
from caramel.errors import Location, RunError


class Store(Protocol):
    """What of a History (history.store) the export and the import use."""

    db: Connection
    path: str
    skipped: list[str]
    written: list

    def run(self, run_key: str) -> RunRecord | None: ...

    def runs(self, benchmark: str | None = None) -> list[RunRecord]: ...

    def metrics(self, run_key: str) -> list[Metric]: ...

    def writing(self) -> AbstractContextManager[None]: ...

    def _insert(
        self, run: RunRecord, metrics: Iterable[Metric], replace: bool, compare: bool = True
    ) -> int: ...

    def mark_imported(self, run_key: str) -> None: ...


def export_lines(
    history: Store, benchmark: str | None = None, site_of: Callable[[RunRecord], str] | None = None
) -> Iterator[str]:
    """One JSON line per run (of `benchmark`, or all) with its metrics: the portable form. A
    generator reading one run at a time, so a history of a million figures is written in the
    memory of one run. `site_of(run)` names the site to write (default: the run's own).

    Each figure is written from its stored texts: the samples as stored when they are what
    caramel writes (a JSON list of finite floats, checked by one regular expression), else read
    with care (`finite_samples`: values that are not finite numbers are left out and noted in
    `history.skipped`); the configuration and the names parsed and written once per distinct text.
    The line is JSON as `json.dumps` writes it, but for the samples' separators. A line is of schema
    2 unless a figure of it holds a reason (schema 3), so that older caramels read what they can."""
    # a table, name, unit or direction, and a configuration's stored text: its JSON
    texts: dict = {}
    for run in history.runs(benchmark):
        record = asdict(run)
        site, fingerprint = record.pop("site"), record.pop("fingerprint")
        if site_of is not None:
            site = site_of(run)
        reasons: list[str] = []  # the line's figures that hold a reason
        figures = ", ".join(_figure_texts(history, run.run_key, texts, reasons))
        schema = EXPORT_SCHEMA if reasons else REASONLESS_SCHEMA
        # site and fingerprint are optional keys beside "run", so older caramels read the export
        yield (
            f'{{"schema": {schema}, "run": {json.dumps(record)}, "metrics": [{figures}], '
            f'"site": {json.dumps(site)}, "fingerprint": {json.dumps(fingerprint)}}}'
        )


def _figure_texts(history: Store, run_key: str, texts: dict, reasons: list[str]) -> Iterator[str]:
    """The run's figures as the JSON objects of an export line (see export_lines); each reason
    written is added to `reasons`."""
    dumps = json.dumps
    for figure in query.run_figures(history.db, history.db.dialect.order, run_key):
        tbl, config, name, unit, direction = figure[1:6]
        samples, reason = figure[query.SAMPLES], figure[query.REASON]
        # a failed row's reason: its figure has no samples; a reason is an optional key (schema 3)
        ending = "" if reason is None else ', "reason": ' + dumps(as_text(reason))
        if reason is not None:
            reasons.append(as_text(reason))
        if figure[query.MEAN] is None and reason is not None:
            samples = "[]"
        elif not (
            isinstance(samples, str) and len(samples) < 4096 and PLAIN_SAMPLES.fullmatch(samples)
        ):
            values = finite_samples(samples, f"{history.path}: run {run_key}: {tbl}/{name}")
            if values is None or len(values) < samples.count(",") + 1:
                history.skipped.append(
                    f"run {run_key}: {tbl}/{name} holds a value that is not a finite number"
                    + ("; left out" if not values else "; that sample is left out")
                )
            if not values:
                continue
            samples = dumps(values)
        row = texts.get(("config", config))
        if row is None:
            parsed = row_field(
                history.path, config, f"run {run_key}: the configuration of {tbl}/{name}", dict
            )
            row = dumps(parsed)
            if isinstance(config, str):
                texts[("config", config)] = row
        words = texts.get((tbl, name, unit, direction))
        if (
            words is None
        ):  # a damaged row's value that is no text (a number, a blob) written as text
            words = texts[(tbl, name, unit, direction)] = tuple(
                dumps(as_text(v)) for v in (tbl, name, unit, direction)
            )
        yield (
            f'{{"table": {words[0]}, "row": {row}, "name": {words[1]}, "unit": {words[2]}, '
            f'"direction": {words[3]}, "samples": {samples}{ending}}}'
        )


def import_records(
    history: Store, records: Iterable[tuple[RunRecord, Sequence[Metric], Location]]
) -> tuple[int, int]:
    """Add validated (run, metrics, where) records, read one at a time (a file of a million
    figures in the memory of one run), all in one transaction: a run already here with the same
    figures adds nothing; one with other figures is refused (CaramelError naming `where`, the
    file and line) and nothing of the file is added (an error raised by `records` itself, a bad
    line further on, rolls the transaction back too). A run met twice in the file is checked
    against what its first line added, read back from the transaction. Returns (new runs, new
    figures)."""
    runs = added = 0
    first_line: dict[str, int] = {}  # runs new to the history: the line that brought them
    with history.writing():
        for run, metrics, where in records:
            if history.run(run.run_key) is not None:
                known = _figures(history.metrics(run.run_key))
                line = first_line.get(run.run_key)
                _same_figures(
                    run.run_key,
                    known,
                    _figures(metrics),
                    where,
                    "the history" if line is None else f"line {line} of this file",
                )
                if line is not None:
                    continue  # the file's first line of this run holds: a repeat adds nothing
            else:
                runs += 1
                first_line[run.run_key] = where.line or 0
                history.mark_imported(run.run_key)
            added += history._insert(run, metrics, replace=False)
            history.written.clear()  # an import goes to no sink: keep no copy of its rows
    return runs, added


def _figures(metrics: Iterable[Metric]) -> dict:
    return {(m.table, json.dumps(m.row, sort_keys=True), m.name): m.samples for m in metrics}


def _same_figures(run_key: str, known: dict, new: dict, where: Location, first: str) -> None:
    for key, samples in new.items():
        if key in known and known[key] != samples:
            raise RunError(
                f"run {run_key} is already in {first} with other figures: {key[0]}/{key[2]} "
                f"({key[1]}) is {known[key]} there, {samples} here; nothing was imported",
                where,
                hint=f"if this file is right, remove the run first: bench history remove {run_key}",
            )
