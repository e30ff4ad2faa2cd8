"""The history database: runs with their provenance, and each run's metrics with their repeats.

One SQLite file shared by every run of a user, or one PostgreSQL database shared by a team
(history.engine; the same SQL on both). A run is keyed by its folder and start time, a metric by
table, configuration and name, and every write is an upsert on those keys, so importing the same
run twice, or many writers at once, add each figure once.

The layout and its migration are history.layout's, the rows history.rows's, export and import
history.exchange's; their names used elsewhere are importable from here too.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from typing import Any

from caramel.consumers.history import engine, exchange, layout, query
from caramel.consumers.history.engine import Row
from caramel.consumers.history.layout import (
    ADDED_COLUMNS,
    COUNTS,
    EXPORT_SCHEMA,
    FIGURE_COLUMNS,
    METRIC_COLUMNS,
    RUN_COLUMNS,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    SERIES_COLUMNS,
    MetricRow,
    RunRecord,
    schema,
    upsert,
)
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.rows import (
    counted_rows,
    decode_run,
    failed_row,
    finite_samples,
    left_out,
    plain_samples,
    row_field,
)
from caramel.errors import Location

__all__ = [
    "ADDED_COLUMNS",
    "EXPORT_SCHEMA",
    "FIGURE_COLUMNS",
    "METRIC_COLUMNS",
    "RUN_COLUMNS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "History",
    "RunRecord",
    "decode_run",
    "default_path",
    "row_field",
    "schema",
    "upsert",
]


# a series by its table, configuration text, figure name, unit and direction (of one benchmark
# and system)
SeriesNames = tuple[str, str, str, str, str]
# a row of the figures table (FIGURE_COLUMNS): run id, series id, n, mean, sd, min, max, samples
# text, reason
FigureRow = tuple[
    int, int, int, float | None, float | None, float | None, float | None, str | None, str | None
]
# a figure read back (`History._rows`): run key, table, configuration, name, unit, direction, its
# finite samples (none: a failed row's) and its reason ("": none)
ReadFigure = tuple[str, str, dict[str, str], str, str, str, list[float], str]


def _a_failed_row(figure: Row) -> bool:
    """Whether a row of query.FIGURE_FIELDS is a failed row's reason: a reason and no mean (None,
    or NaN in a DataFrame's column of floats)."""
    mean = figure[query.MEAN]
    return figure[query.REASON] is not None and (mean is None or mean != mean)


def default_path() -> str:
    """$CARAMEL_HISTORY, else the settings file's `history:` (a file or a postgresql:// URL), else
    history.db in the user's data folder (where the run registry is)."""
    from caramel.settings import current

    return current().history


# up to this many series are looked up one by one (History._series_ids)
FEW_SERIES = 64
_ONE_SERIES = (
    "SELECT id FROM series WHERE benchmark = ? AND system = ? AND tbl = ? AND config = ? AND "
    "name = ? AND unit = ? AND direction = ?"
)


class History:
    """A history on either engine (history.engine): an SQLite file or a PostgreSQL URL."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.db = engine.connect(
            target
        )  # its errors name the file, or the URL without its password
        self.path = self.db.shown
        self.skipped: list[str] = []  # figures left out while reading (not finite numbers)
        # metric rows added or changed (the sinks')
        self.written: list[tuple[RunRecord, list[MetricRow]]] = []
        try:
            self._prepare()
        except BaseException:
            self.db.close()
            raise

    def _prepare(self) -> None:
        """Make the tables of a new history, refuse another layout, bring an older one to this
        one."""
        layout.prepare(self.db)

    @classmethod
    def open(cls, path: str | None = None) -> History:
        return cls(path or default_path())

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    def add(self, run: RunRecord, metrics: Iterable[Metric], replace: bool = False) -> int:
        """Add a run and its metrics (returns the metrics added or changed). An import keeps what is
        there (`replace` false: the same run twice adds nothing); `bench result` on a run that
        changed since (more workpackages finished) replaces the run's figures that changed, and only
        those."""
        with self.writing():
            return self._insert(run, metrics, replace)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction that holds the history's write lock from its first statement (BEGIN
        IMMEDIATE): what it reads to decide (is the run there, with which figures?) cannot change
        before its own insert, so two benches adding one run key never both pass the check and one
        set of figures is never dropped silently. A second writer waits (timeout 30 s). On
        PostgreSQL the same by a lock on the runs table that only one writer holds at a time
        (readers go on)."""
        with self.db:  # commits, or rolls back on an error
            if self.db.dialect.name == "postgresql":
                self.db.execute("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")
            elif not self.db.in_transaction:
                self.db.execute("BEGIN IMMEDIATE")
            yield

    def _insert(
        self, run: RunRecord, metrics: Iterable[Metric], replace: bool, compare: bool = True
    ) -> int:
        """`add` inside the caller's transaction."""
        run_id = self._upsert_run(run, replace)
        rows, nonfinite = counted_rows(run.run_key, metrics)
        removed = 0
        if replace and compare:
            rows, removed = self._changed(run_id, rows)
        added = self.db.executemany(
            upsert("figures", FIGURE_COLUMNS, FIGURE_COLUMNS[:2], replace),
            self.figure_rows(run, run_id, rows),
        )
        if added:
            self.written.append((run, rows))
        self._count(run_id, rows, added, nonfinite, replace)
        return removed + added

    def _upsert_run(self, run: RunRecord, replace: bool) -> int:
        """The run's row written (`replace`: over the one there), its id. A new run starts with no
        figures counted (a run already there keeps its counts, or has them counted again when
        replaced)."""
        row = asdict(run)
        row["tags"] = json.dumps(run.tags)
        row["job_ids"] = json.dumps(run.job_ids)
        row["fingerprint"] = json.dumps(run.fingerprint, sort_keys=True)
        self.db.execute(
            upsert("runs", (*RUN_COLUMNS, "figures", "nonfinite"), ("run_key",), replace),
            [*(row[c] for c in RUN_COLUMNS), 0, 0],
        )
        # upserted just above, in this transaction: there
        found = self.db.execute("SELECT id FROM runs WHERE run_key = ?", (run.run_key,))
        run_id: int = found.fetchall()[0][0]
        return run_id

    def _count(
        self, run_id: int, rows: list[MetricRow], added: int, nonfinite: int, replace: bool
    ) -> None:
        """The run's figure counts once `added` of its `rows` were written."""
        if not replace and added == len(rows):  # every row new (an import): counted as written
            failed = sum(map(failed_row, rows))  # a failed row's reason is no figure (layout)
            self.db.execute(
                "UPDATE runs SET figures = figures + ?, nonfinite = nonfinite + ? WHERE id = ?",
                (added - failed, nonfinite, run_id),
            )
        elif replace or added:  # rows replaced or removed, or some there: counted by the database
            self.db.execute(f"UPDATE runs SET {COUNTS} WHERE id = ?", (run_id,))

    def figure_rows(self, run: RunRecord, run_id: int, rows: list[MetricRow]) -> list[FigureRow]:
        """The figures table's rows of metrics rows (history.rows): each row's series numbered, a
        series not stored yet added (the run's benchmark and system, the figure's table,
        configuration, name, unit and direction: `series` is unique on them). The runs of one
        benchmark and system share their series: most runs add none."""
        if not rows:
            return []
        ids = self._with_series(run, rows)
        return [(run_id, ids[row[1:6]], *row[6:]) for row in rows]

    def _with_series(self, run: RunRecord, rows: list[MetricRow]) -> dict[SeriesNames, int]:
        """The ids of the series of the run's benchmark and system, those of `rows` not stored yet
        added."""
        owner = (run.benchmark or "", run.system or "")
        wanted: list[SeriesNames] = list(dict.fromkeys(row[1:6] for row in rows))
        ids = self._series_ids(owner, wanted)
        missing = [names for names in wanted if names not in ids]
        if not missing:
            return ids
        self.db.executemany(
            upsert("series", SERIES_COLUMNS, SERIES_COLUMNS, False),
            [(*owner, *names) for names in missing],
        )
        return self._series_ids(owner, wanted)

    def _series_ids(
        self, owner: tuple[str, str], wanted: list[SeriesNames]
    ) -> dict[SeriesNames, int]:
        """The ids of the `wanted` series of a (benchmark, system) that are stored, by their other
        five columns (more of them may come): a few looked up one by one in the unique index (a
        run's figures of a changed row), many by reading all the owner's at once."""
        if len(wanted) <= FEW_SERIES:
            found = (
                (names, self.db.execute(_ONE_SERIES, (*owner, *names)).fetchone())
                for names in wanted
            )
            return {names: row[0] for names, row in found if row}
        return {
            tuple(names): series_id
            for series_id, *names in self.db.execute(
                "SELECT id, tbl, config, name, unit, direction FROM series "
                "WHERE benchmark = ? AND system = ?",
                owner,
            )
        }

    def recount(self) -> None:
        """Count the figures of every run again (what layout.migrate does; for a writer of raw
        rows)."""
        with self.writing():
            self.db.execute(f"UPDATE runs SET {COUNTS}")

    def _changed(self, run_id: int, rows: list[MetricRow]) -> tuple[list[MetricRow], int]:
        """The rows that differ from the run's figures stored now (a figure is its table,
        configuration and name), and how many figures no longer made were removed. A figure whose
        unit or direction changed is another series: its old row goes. A failed row's reason that
        changed is a changed row too."""
        stored = self._stored_figures(run_id)
        changed, gone = [], []
        for row in rows:
            before = stored.pop(row[1:4], None)
            if before is None or before[:4] != (row[4], row[5], row[11], row[12]):
                changed.append(row)
                if before is not None and before[:2] != (row[4], row[5]):
                    gone.append(before[4])
        removed = len(stored)
        self.db.executemany(
            "DELETE FROM figures WHERE run = ? AND series = ?",
            [(run_id, series) for series in gone + [v[4] for v in stored.values()]],
        )
        return changed, removed

    def _stored_figures(self, run_id: int) -> dict[tuple[str, str, str], Row]:
        """The run's figures stored now, by (table, configuration, name): their unit, direction,
        samples, reason and series."""
        return {
            (tbl, config, name): (unit, direction, samples, reason, series)
            for series, tbl, config, name, unit, direction, samples, reason in self.db.execute(
                "SELECT figures.series, tbl, config, name, unit, direction, samples, reason "
                "FROM figures JOIN series ON series.id = figures.series WHERE figures.run = ?",
                (run_id,),
            )
        }

    def replace_configurations(
        self, run: RunRecord, configs: Iterable[tuple[str, str]], metrics: Iterable[Metric]
    ) -> int:
        """Replace the figures of some configurations of a run: (table, configuration JSON) pairs,
        and the metrics they have now; the run's other figures stay as they are."""
        with self.writing():
            self.db.executemany(
                "DELETE FROM figures WHERE run = (SELECT id FROM runs WHERE run_key = ?) AND "
                "series IN (SELECT id FROM series WHERE tbl = ? AND config = ?)",
                ((run.run_key, tbl, config) for tbl, config in configs),
            )
            return self._insert(run, metrics, replace=True, compare=False)

    def made_from(self, run_key: str) -> str | None:
        """The key of the tables the run's figures were last made from (report.results), if
        known."""
        found = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", ("tables:" + run_key,)
        ).fetchone()
        return found[0] if found else None

    def set_made_from(self, run_key: str, key: str | None) -> None:
        with self.db:
            if key is None:
                self.db.execute("DELETE FROM meta WHERE key = ?", ("tables:" + run_key,))
            else:
                self.db.execute(
                    upsert("meta", ("key", "value"), ("key",), True), ("tables:" + run_key, key)
                )

    def mark_imported(self, run_key: str) -> None:
        """Note, inside the caller's transaction, that the run came from another history (`bench
        import`, or a copy of an imported run): `bench export --site` leaves its site alone."""
        self.db.execute(
            upsert("meta", ("key", "value"), ("key",), True), ("imported:" + run_key, "1")
        )

    def imported(self) -> set[str]:
        """The keys of the runs that came from another history (`mark_imported`)."""
        rows = self.db.execute("SELECT key FROM meta WHERE key LIKE 'imported:%'").fetchall()
        return {key[len("imported:") :] for (key,) in rows}

    def run(self, run_key: str) -> RunRecord | None:
        found = self._records(query.run(self.db, run_key))
        return found[0] if found else None

    def runs(self, benchmark: str | None = None) -> list[RunRecord]:
        return self._records(query.runs(self.db, benchmark))

    def listing(self, benchmark: str | None = None) -> list[tuple[RunRecord, int, bool]]:
        """Each run (by start time) with its number of figures and whether any of them holds a value
        that is not a finite number, from the counts stored with the run (kept by every write):
        `bench history list` of a thousand runs and a million figures reads a thousand rows. A run
        whose stored mean, min or max is not a finite number (an older caramel wrote infinity there)
        is read figure by figure, so its count leaves out what `metrics` leaves out."""
        found = query.runs(self.db, benchmark)
        out = []
        for run, data in zip(self._records(found), found, strict=True):
            figures, nonfinite, flagged = data["figures"], data["nonfinite"], False
            if nonfinite:
                before = len(self.skipped)
                figures = len(self.metrics(run.run_key))
                flagged = len(self.skipped) > before
            out.append((run, int(figures or 0), flagged))
        return out

    def _records(self, found: list[dict[str, Any]]) -> list[RunRecord]:
        return [decode_run(self.path, data) for data in found]

    def metrics(self, run_key: str, failed: bool = False) -> list[Metric]:
        """The run's metrics; a sample that is not a finite number (written by an older caramel's
        import) is left out and noted in `self.skipped`, so one bad figure never hides the history.
        `failed`: with its failed rows' reasons too (Metric of no samples: a copy of the run's
        rows), which no reader of figures wants."""
        figures = query.run_figures(self.db, self.db.dialect.order, run_key)
        return [Metric(*figure[1:]) for figure in self._rows(figures, failed)]

    def failures(self) -> dict[str, list[tuple[str, str, str]]]:
        """The failed rows of every run, by run key: (table, configuration text, reason), as
        recorded (what `bench history list` counts and the dashboard's run details show)."""
        return query.failures_by_run(self.db, self.db.dialect.order)

    def metrics_by_run(self, benchmark: str | None = None) -> dict[str, list[Metric]]:
        """The metrics of every run (of `benchmark`), by run key, in ONE query however many runs:
        what reading the figures of many runs (`bench predict`) asks instead of `metrics` per
        run."""
        found = query.benchmark_figures(self.db, self.db.dialect.order, benchmark)
        figures = zip(*(found[c].tolist() for c in found.columns), strict=True)
        out: dict[str, list[Metric]] = {}
        for figure in self._rows(figures):
            out.setdefault(figure[0], []).append(Metric(*figure[1:]))
        return out

    def _rows(self, figures: Iterable[Row], failed: bool = False) -> Iterator[ReadFigure]:
        """Figures (rows of query.FIGURE_FIELDS) as (run key, table, configuration dict, name, unit,
        direction, finite samples, reason), in the order they were recorded; `failed`: with the
        failed rows' reasons (no samples). A configuration text is parsed once (the same few hundred
        recur in every run of a benchmark)."""
        configs: dict[str, dict[str, str]] = {}
        for figure in figures:
            if not _a_failed_row(figure):
                values = self._finite_samples(figure)
                if values:
                    yield self._read_figure(figure, values, configs)
            elif failed:
                yield self._read_failed_row(figure)

    def _finite_samples(self, figure: Row) -> list[float] | None:
        """A figure's samples: as caramel writes them (a JSON list of finite floats) read by
        json.loads alone, anything else by the careful `rows.finite_samples`, each value that is no
        finite number left out and noted in `self.skipped`."""
        run_key, tbl, name, samples = figure[0], figure[1], figure[3], figure[query.SAMPLES]
        values = plain_samples(samples)
        if values is not None:
            return values
        values = finite_samples(samples, f"{self.path}: run {run_key}: {tbl}/{name}")
        note = left_out(samples, values, f"run {run_key}: {tbl}/{name}")
        if note is not None:
            self.skipped.append(note)
        return values

    def _read_figure(
        self, figure: Row, values: list[float], configs: dict[str, dict[str, str]]
    ) -> ReadFigure:
        """A figure with its samples, its configuration parsed once per text (`configs`)."""
        run_key, tbl, config, name, unit, direction = figure[:6]
        row = configs.get(config)
        if row is None:
            row = configs[config] = row_field(
                self.path, config, f"run {run_key}: the configuration of {tbl}/{name}", dict
            )
        return run_key, tbl, row, name, unit, direction, values, figure[query.REASON] or ""

    def _read_failed_row(self, figure: Row) -> ReadFigure:
        """A failed row's reason, as a figure of no samples."""
        run_key, tbl, config, name, unit, direction = figure[:6]
        row = row_field(self.path, config, f"run {run_key}: a failed row of {tbl}", dict)
        return run_key, tbl, row, name, unit, direction, [], figure[query.REASON]

    def remove(self, run_key: str) -> int:
        """Remove a run, its figures and the baselines that name it; returns the figures removed."""
        with self.db:
            removed = self.db.execute(
                "DELETE FROM figures WHERE run = (SELECT id FROM runs WHERE run_key = ?)",
                (run_key,),
            ).rowcount
            self.db.execute("DELETE FROM baselines WHERE run_key = ?", (run_key,))
            self.db.execute("DELETE FROM runs WHERE run_key = ?", (run_key,))
            self.db.execute(
                "DELETE FROM meta WHERE key IN (?, ?)", ("tables:" + run_key, "imported:" + run_key)
            )
        return removed

    def set_baseline(self, name: str, run_key: str) -> None:
        with self.db:
            self.db.execute(
                upsert("baselines", ("name", "run_key"), ("name",), True), (name, run_key)
            )

    def baseline(self, name: str) -> str | None:
        found = self.db.execute("SELECT run_key FROM baselines WHERE name = ?", (name,)).fetchone()
        return found[0] if found else None

    def export(self, benchmark: str | None = None) -> Iterator[dict[str, Any]]:
        """The records of `export_lines`, parsed (one run at a time)."""
        for line in self.export_lines(benchmark):
            yield json.loads(line)

    def export_lines(
        self, benchmark: str | None = None, site_of: Callable[[RunRecord], str] | None = None
    ) -> Iterator[str]:
        """One JSON line per run (of `benchmark`, or all) with its metrics, a run at a time
        (history.exchange.export_lines; `site_of(run)` names the site to write)."""
        return exchange.export_lines(self, benchmark, site_of)

    def import_records(
        self, records: Iterable[tuple[RunRecord, Sequence[Metric], Location]]
    ) -> exchange.Imported:
        """Add validated (run, metrics, where) records in one transaction: the new runs, figures
        and failed rows (history.exchange.import_records: a run here with other figures refuses the
        whole file)."""
        return exchange.import_records(self, records)
