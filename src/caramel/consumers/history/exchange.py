"""`bench export` and `bench import` on a history: one JSON line per run, written and read one run
at a time, so a history of a million figures moves in the memory of one run (History.export_lines
and History.import_records call these).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import NamedTuple, Protocol

from caramel.consumers.history import query
from caramel.consumers.history.engine import Connection, Row
from caramel.consumers.history.layout import (
    EXPORT_SCHEMA,
    FAILED,
    REASONLESS_SCHEMA,
    MetricRow,
    RunRecord,
)
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.rows import (
    PLAIN_SAMPLES,
    as_text,
    finite_samples,
    left_out,
    row_field,
)
from caramel.errors import Location, RunError


class Store(Protocol):
    """What of a History (history.store) the export and the import use."""

    db: Connection
    path: str
    skipped: list[str]
    written: list[tuple[RunRecord, list[MetricRow]]]

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
    texts = _ExportTexts()
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


def _figure_texts(
    history: Store, run_key: str, texts: _ExportTexts, reasons: list[str]
) -> Iterator[str]:
    """The run's figures as the JSON objects of an export line (see export_lines); each reason
    written is added to `reasons`."""
    for figure in query.run_figures(history.db, history.db.dialect.order, run_key):
        reason = figure[query.REASON]
        if reason is not None:  # an optional key (schema 3)
            reasons.append(as_text(reason))
        samples = _samples_text(history, run_key, figure)
        if samples is None:
            continue
        row = texts.config(history.path, run_key, figure)
        table, name, unit, direction = texts.words(figure)
        ending = "" if reason is None else ', "reason": ' + json.dumps(as_text(reason))
        yield (
            f'{{"table": {table}, "row": {row}, "name": {name}, "unit": {unit}, '
            f'"direction": {direction}, "samples": {samples}{ending}}}'
        )


def _samples_text(history: Store, run_key: str, figure: Row) -> str | None:
    """A figure's samples as an export writes them: as stored when caramel wrote them (a JSON list
    of finite floats, checked by one regular expression), else read with care (`finite_samples`:
    values that are no finite numbers left out and noted in `history.skipped`; None when none is
    left). A failed row's reason has none: `[]`."""
    tbl, name, samples = figure[1], figure[3], figure[query.SAMPLES]
    if figure[query.MEAN] is None and figure[query.REASON] is not None:
        return "[]"
    if isinstance(samples, str) and len(samples) < 4096 and PLAIN_SAMPLES.fullmatch(samples):
        return samples
    values = finite_samples(samples, f"{history.path}: run {run_key}: {tbl}/{name}")
    note = left_out(samples, values, f"run {run_key}: {tbl}/{name}")
    if note is not None:
        history.skipped.append(note)
    return json.dumps(values) if values else None


@dataclass
class _ExportTexts:
    """The JSON texts of an export's stored texts, each made once per distinct text: the
    configurations (by their stored text) and a figure's table, name, unit and direction."""

    configs: dict[str, str] = field(default_factory=dict)
    names: dict[tuple[object, ...], tuple[str, str, str, str]] = field(default_factory=dict)

    def config(self, path: str, run_key: str, figure: Row) -> str:
        """The figure's configuration, parsed with care (`row_field`) and written as JSON."""
        tbl, config, name = figure[1:4]
        text = self.configs.get(config)
        if text is None:
            where = f"run {run_key}: the configuration of {tbl}/{name}"
            text = json.dumps(row_field(path, config, where, dict))
            if isinstance(config, str):
                self.configs[config] = text
        return text

    def words(self, figure: Row) -> tuple[str, str, str, str]:
        """The figure's table, name, unit and direction as JSON texts (a damaged row's value that
        is no text, a number or a blob, written as text)."""
        key = figure[1], figure[3], figure[4], figure[5]
        found = self.names.get(key)
        if found is None:
            table, name, unit, direction = (json.dumps(as_text(value)) for value in key)
            found = self.names[key] = (table, name, unit, direction)
        return found


def import_records(
    history: Store, records: Iterable[tuple[RunRecord, Sequence[Metric], Location]]
) -> Imported:
    """Add validated (run, metrics, where) records, read one at a time (a file of a million
    figures in the memory of one run), all in one transaction: a run already here with the same
    figures adds nothing; one with other figures is refused (CaramelError naming `where`, the
    file and line) and nothing of the file is added (an error raised by `records` itself, a bad
    line further on, rolls the transaction back too). A run met twice in the file is checked
    against what its first line added, read back from the transaction. Returns the new runs,
    figures and failed rows."""
    runs = added = 0
    first_line: dict[str, int] = {}  # runs new to the history: the line that brought them
    with history.writing():
        failed_before = _failed_rows(history.db)
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
        failed = _failed_rows(history.db) - failed_before  # an import adds rows, removes none
    return Imported(runs, added - failed, failed)


class Imported(NamedTuple):
    """What an import added: runs new to the history, figures, and failed rows' reasons (rows of
    no figure: history.layout.A_FIGURE)."""

    runs: int
    figures: int
    failed: int


def _failed_rows(db: Connection) -> int:
    """How many failed rows' reasons the history holds (its partial index counts them)."""
    count: int = db.execute(f"SELECT COUNT(*) FROM figures WHERE {FAILED}").fetchall()[0][0]
    return count


# a run's figures by (table, configuration text, name): their samples
_Figures = dict[tuple[str, str, str], list[float]]


def _figures(metrics: Iterable[Metric]) -> _Figures:
    return {(m.table, json.dumps(m.row, sort_keys=True), m.name): m.samples for m in metrics}


def _same_figures(
    run_key: str, known: _Figures, new: _Figures, where: Location, first: str
) -> None:
    for key, samples in new.items():
        if key in known and known[key] != samples:
            raise RunError(
                f"run {run_key} is already in {first} with other figures: {key[0]}/{key[2]} "
                f"({key[1]}) is {known[key]} there, {samples} here; nothing was imported",
                where,
                hint=f"if this file is right, remove the run first: bench history remove {run_key}",
            )
