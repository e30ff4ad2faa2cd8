"""The history database: runs with their provenance, and each run's metrics with their repeats.

One SQLite file shared by every run of a user, or one PostgreSQL database shared by a team
(history.engine; the same SQL on both). A run is keyed by its folder and start time, a metric by
table, configuration and name, and every write is an upsert on those keys, so importing the same
run twice, or many writers at once, add each figure once.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

from caramel.consumers.history import engine
from caramel.consumers.history.engine import Dialect
from caramel.consumers.history.metrics import Metric
from caramel.errors import CaramelError, Location, RunError
from caramel.stages.state import bounded

# the history's layout; 2 added runs.site, runs.fingerprint and the meta table (additive: a history
# of schema 1 gains the columns on open, and older caramels ignore them); 3 added runs.figures and
# runs.nonfinite, each run's figure counts kept by every write (`_recount`), so `bench history list`
# reads a thousand rows instead of counting a million: a history of schema 2 or 1 is counted once
# when it is opened (`_migrate`), and a caramel of schema 2, which would write without counting, refuses it
SCHEMA_VERSION = 3
# the layout of a `bench export` line (history.validate reads every one up to it; 1: no "schema" key)
EXPORT_SCHEMA = 2
# a samples text as caramel writes it (history.store._samples: the reprs of finite floats, JSON),
# exponents short enough that no value overflows a float: copied into an export as it is
_NUMBER = r"-?\d+(?:\.\d+)?(?:e-\d{1,3}|e\+?\d{1,2})?"
_PLAIN_SAMPLES = re.compile(rf"\[{_NUMBER}(?:, ?{_NUMBER})*\]")
# columns added after schema 1: added to an older history when it is opened
ADDED_COLUMNS = {"site": "TEXT", "fingerprint": "TEXT", "figures": "INTEGER", "nonfinite": "INTEGER"}
RUN_COLUMNS = ("run_key", "benchmark", "file", "run_dir", "tags", "system", "caramel_version", "git_commit", "host",
               "nodes", "job_ids", "container", "energy_method", "started", "ended", "site", "fingerprint")
METRIC_COLUMNS = ("run_key", "tbl", "config", "name", "unit", "direction", "n", "mean", "sd", "min", "max", "samples")
METRIC_KEY = ("run_key", "tbl", "config", "name")
SCHEMA_LOCK = 7_261_001  # PostgreSQL: writers creating the tables at once take turns (an advisory lock)


# a figure whose stored mean, min and max are finite numbers (not NULL: NaN, not infinite, not a text
# where a number belongs: SQLite orders texts after numbers)
_FINITE = "coalesce(mean >= -1.7e308 AND mean <= 1.7e308 AND min >= -1.7e308 AND max <= 1.7e308, FALSE)"
# a run's figure counts, from its rows (an UPDATE of runs: `runs.run_key` is the run's)
_COUNTS = ("figures = (SELECT COUNT(*) FROM metrics WHERE metrics.run_key = runs.run_key), "
           "nonfinite = (SELECT COUNT(*) FROM metrics WHERE metrics.run_key = runs.run_key AND NOT " + _FINITE + ")")


def schema(dialect: Dialect) -> list[str]:
    """The history's tables, in the words of `dialect` (the same layout on both engines)."""
    real = dialect.real
    return [
        "CREATE TABLE IF NOT EXISTS runs (run_key TEXT PRIMARY KEY, benchmark TEXT, file TEXT, run_dir TEXT, "
        "tags TEXT, system TEXT, caramel_version TEXT, git_commit TEXT, host TEXT, nodes TEXT, job_ids TEXT, "
        f"container TEXT, energy_method TEXT, started {real}, ended {real}, site TEXT, fingerprint TEXT, "
        "figures INTEGER, nonfinite INTEGER)",
        "CREATE TABLE IF NOT EXISTS metrics (run_key TEXT, tbl TEXT, config TEXT, name TEXT, unit TEXT, "
        f"direction TEXT, n INTEGER, mean {real}, sd {real}, min {real}, max {real}, samples TEXT"
        f"{dialect.order_column}, PRIMARY KEY (run_key, tbl, config, name))",
        "CREATE TABLE IF NOT EXISTS baselines (name TEXT PRIMARY KEY, run_key TEXT)",
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
        f"INSERT INTO meta VALUES ('schema', '{SCHEMA_VERSION}') ON CONFLICT (key) DO NOTHING",
    ]


def upsert(table: str, columns: tuple[str, ...], key: tuple[str, ...], replace: bool) -> str:
    """INSERT that keeps (`replace` false) or updates (true) a row whose key is there: both engines' SQL."""
    action = ("DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)) if replace \
        else "DO NOTHING"
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(key)}) {action}")


def _mean_sd(values: list[float]) -> tuple[float, float | None]:
    """The mean (statistics.fmean's) and sample standard deviation (ddof 1; None with one sample: no
    spread known, not 0) of a figure's repeats, by math.fsum: the same to the last digit or so as
    statistics.stdev, which takes ten times as long (its exact fractions), a million times per import."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(math.fsum([(v - mean) ** 2 for v in values]) / (n - 1))


def _samples(values: list[float]) -> str:
    """A JSON list of finite floats (repr is JSON for them, and much faster than json.dumps)."""
    return "[" + ",".join(map(repr, values)) + "]"


def default_path() -> str:
    """$CARAMEL_HISTORY, else the settings file's `history:` (a file or a postgresql:// URL), else
    history.db in the user's data folder (where the run registry is)."""
    from caramel.settings import current

    return current().history


@dataclass
class RunRecord:
    run_key: str
    benchmark: str
    file: str = ""
    run_dir: str = ""
    tags: list[str] = field(default_factory=list)
    system: str = ""
    caramel_version: str = ""
    git_commit: str = ""
    host: str = ""
    nodes: str = ""
    job_ids: list[str] = field(default_factory=list)
    container: str = ""
    energy_method: str = ""
    started: float | None = None
    ended: float | None = None
    site: str = ""  # where the run ran (docs/dashboard.md): $CARAMEL_SITE, the SLURM cluster or the host
    fingerprint: dict = field(default_factory=dict)  # CPU/GPU models and counts, driver, CUDA/ROCm


class History:
    """A history on either engine (history.engine): an SQLite file or a PostgreSQL URL."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.db = engine.connect(target)  # its errors name the file, or the URL without its password
        self.path = self.db.shown
        self.skipped: list[str] = []  # figures left out while reading (not finite numbers)
        self.written: list[tuple[RunRecord, list[tuple]]] = []  # metric rows added or changed (the sinks')
        try:
            self._prepare()
        except BaseException:
            self.db.close()
            raise

    def _prepare(self) -> None:
        """Make the tables (a new history), refuse another layout, bring an older one to this (`_migrate`).
        A history of this layout is only read here: a user who may only read it can."""
        dialect = self.db.dialect
        if not {"runs", "metrics", "baselines", "meta"} <= {row[0] for row in self.db.execute(dialect.tables)}:
            with self.db:
                if dialect is engine.POSTGRESQL:
                    self.db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
                for statement in schema(dialect):
                    self.db.execute(statement)
        found = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if found and not (str(found[0]).isdigit() and int(found[0]) <= SCHEMA_VERSION):
            raise engine.HistoryUnavailable(
                f"{self.path}: a history of another caramel (schema {found[0]}; this caramel reads and writes "
                f"schema {SCHEMA_VERSION})", hint="use the caramel that made it, or another history "
                "(--history, $CARAMEL_HISTORY); bench result keeps runs locally meanwhile")
        # a history of schema 1 is marked as of this layout when its meta table is made: its columns
        # tell (SQLite only: a PostgreSQL history was made at schema 2 or later)
        if not found or int(found[0]) < SCHEMA_VERSION or (dialect is engine.SQLITE and self._missing_columns()):
            self._migrate()

    def _missing_columns(self) -> list[str]:
        """The columns added since schema 1 that the runs table lacks."""
        if self.db.dialect is engine.POSTGRESQL:
            have = {row[0] for row in self.db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'runs'")}
        else:
            have = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
        return [name for name in ADDED_COLUMNS if name not in have]

    def _migrate(self) -> None:
        """Bring a history of an older layout to this one: the columns added since, and each run's
        figure counts, in one transaction (writers of PostgreSQL take turns by the schema lock). A
        history this user may only read is read as it is: the counts missing, `listing` counts."""
        dialect = self.db.dialect
        try:
            with self.db:
                if dialect is engine.POSTGRESQL:
                    self.db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
                else:
                    self.db.execute("BEGIN IMMEDIATE")
                missing = self._missing_columns()  # read under the lock: another process may have migrated it
                for name in missing:
                    self.db.execute(f"ALTER TABLE runs ADD COLUMN {name} {ADDED_COLUMNS[name]}")
                found = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if missing or not found or int(found[0]) < SCHEMA_VERSION:
                    self.db.execute(f"UPDATE runs SET {_COUNTS}")
                self.db.execute(upsert("meta", ("key", "value"), ("key",), True), ("schema", str(SCHEMA_VERSION)))
        except CaramelError as exc:
            if "readonly" not in str(exc).replace(" ", "").replace("-", "") and "permission denied" not in str(exc):
                raise

    @classmethod
    def open(cls, path: str | None = None) -> History:
        return cls(path or default_path())

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()

    def add(self, run: RunRecord, metrics: Iterable[Metric], replace: bool = False) -> int:
        """Add a run and its metrics (returns the metrics added or changed). An import keeps what is
        there (`replace` false: the same run twice adds nothing); `bench result` on a run that changed
        since (more workpackages finished) replaces the run's figures that changed, and only those."""
        with self.writing():
            return self._insert(run, metrics, replace)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction that holds the history's write lock from its first statement (BEGIN
        IMMEDIATE): what it reads to decide (is the run there, with which figures?) cannot change
        before its own insert, so two benches adding one run key never both pass the check and one
        set of figures is never dropped silently. A second writer waits (timeout 30 s). On PostgreSQL the
        same by a lock on the runs table that only one writer holds at a time (readers go on)."""
        with self.db:  # commits, or rolls back on an error
            if self.db.dialect.name == "postgresql":
                self.db.execute("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")
            elif not self.db.in_transaction:
                self.db.execute("BEGIN IMMEDIATE")
            yield

    def _insert(self, run: RunRecord, metrics: Iterable[Metric], replace: bool, compare: bool = True) -> int:
        """`add` inside the caller's transaction."""
        row = asdict(run)
        row["tags"] = json.dumps(run.tags)
        row["job_ids"] = json.dumps(run.job_ids)
        row["fingerprint"] = json.dumps(run.fingerprint, sort_keys=True)
        # a new run starts with no figures counted (a run already there keeps its counts, or has them
        # counted again below when replaced)
        self.db.execute(upsert("runs", (*RUN_COLUMNS, "figures", "nonfinite"), ("run_key",), replace),
                        [*(row[c] for c in RUN_COLUMNS), 0, 0])
        rows = self._metric_rows(run.run_key, metrics)
        removed = 0
        if replace and compare:
            rows, removed = self._changed(run.run_key, rows)
        added = self.db.executemany(upsert("metrics", METRIC_COLUMNS, METRIC_KEY, replace), rows)
        if added:
            self.written.append((run, rows))
        if not replace and added == len(rows):  # every row new (an import): counted as written
            self.db.execute("UPDATE runs SET figures = figures + ?, nonfinite = nonfinite + ? WHERE run_key = ?",
                            (added, sum(not _finite_row(r) for r in rows), run.run_key))
        elif replace or added:  # rows replaced or removed, or some already there: counted by the database
            self._recount(run.run_key)
        return removed + added

    @staticmethod
    def _metric_rows(run_key: str, metrics: Iterable[Metric]) -> list[tuple]:
        """The metrics table's rows of a run's metrics: the direction as its plain text, the mean and sd
        of the samples (`_mean_sd`), their extremes and their text (`_samples`)."""
        configs: dict = {}  # metrics of one row share their configuration: dump it once
        directions: dict = {}
        dumps = json.dumps
        rows = []
        for m in metrics:
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
            mean, sd = _mean_sd(samples)
            rows.append((run_key, m.table, config, m.name, m.unit, direction, len(samples), mean, sd, min(samples),
                         max(samples), _samples(samples)))
        return rows

    def _recount(self, run_key: str) -> None:
        """Store the run's figure counts (runs.figures, runs.nonfinite), inside the writer's transaction:
        counted by the database from the rows as they now stand, whatever this write added, replaced or
        removed (a few milliseconds for a thousand figures: their stored mean, min and max are read,
        so an import, whose rows are all new, adds what it wrote instead)."""
        self.db.execute(f"UPDATE runs SET {_COUNTS} WHERE run_key = ?", (run_key,))

    def recount(self) -> None:
        """Count the figures of every run again (what `_migrate` does; for a writer of raw rows)."""
        with self.writing():
            self.db.execute(f"UPDATE runs SET {_COUNTS}")

    def _changed(self, run_key: str, rows: list[tuple]) -> tuple[list[tuple], int]:
        """The rows that differ from the run's figures stored now, and how many figures no longer
        made were removed."""
        stored = {(tbl, config, name): (unit, direction, samples) for tbl, config, name, unit, direction, samples in
                  self.db.execute("SELECT tbl, config, name, unit, direction, samples FROM metrics WHERE run_key = ?",
                                  (run_key,))}
        changed = []
        for row in rows:
            named = dict(zip(METRIC_COLUMNS, row, strict=True))
            key = (named["tbl"], named["config"], named["name"])
            if stored.pop(key, None) != (named["unit"], named["direction"], named["samples"]):
                changed.append(row)
        removed = self.db.executemany("DELETE FROM metrics WHERE run_key = ? AND tbl = ? AND config = ? AND name = ?",
                                      [(run_key, *key) for key in stored])
        return changed, removed

    def replace_configurations(self, run: RunRecord, configs: Iterable[tuple[str, str]],
                               metrics: Iterable[Metric]) -> int:
        """Replace the figures of some configurations of a run: (table, configuration JSON) pairs, and
        the metrics they have now; the run's other figures stay as they are."""
        with self.writing():
            self.db.executemany("DELETE FROM metrics WHERE run_key = ? AND tbl = ? AND config = ?",
                                ((run.run_key, tbl, config) for tbl, config in configs))
            return self._insert(run, metrics, replace=True, compare=False)

    def made_from(self, run_key: str) -> str | None:
        """The key of the tables the run's figures were last made from (report.results), if known."""
        found = self.db.execute("SELECT value FROM meta WHERE key = ?", ("tables:" + run_key,)).fetchone()
        return found[0] if found else None

    def set_made_from(self, run_key: str, key: str | None) -> None:
        with self.db:
            if key is None:
                self.db.execute("DELETE FROM meta WHERE key = ?", ("tables:" + run_key,))
            else:
                self.db.execute(upsert("meta", ("key", "value"), ("key",), True), ("tables:" + run_key, key))

    def run(self, run_key: str) -> RunRecord | None:
        found = self._records("SELECT * FROM runs WHERE run_key = ?", (run_key,))
        return found[0] if found else None

    def runs(self, benchmark: str | None = None) -> list[RunRecord]:
        return self._records("SELECT * FROM runs" + (" WHERE benchmark = ?" if benchmark else "") + " ORDER BY started",
                             (benchmark,) if benchmark else ())

    def listing(self, benchmark: str | None = None) -> list[tuple[RunRecord, int, bool]]:
        """Each run (by start time) with its number of figures and whether any of them holds a value
        that is not a finite number, from the counts stored with the run (`_recount`): `bench history
        list` of a thousand runs and a million figures reads a thousand rows. A run whose stored mean,
        min or max is not a finite number (an older caramel wrote infinity there) is read figure by
        figure, so its count leaves out what `metrics` leaves out; a run without stored counts (a
        history of an older layout that this user may only read) is counted."""
        out = []
        for run, figures, nonfinite in self._counted(benchmark):
            flagged = False
            if figures is None:
                figures, nonfinite = self.db.execute(
                    f"SELECT COUNT(*), SUM(CASE WHEN {_FINITE} THEN 0 ELSE 1 END) FROM metrics WHERE run_key = ?",
                    (run.run_key,)).fetchone()
            if nonfinite:
                before = len(self.skipped)
                figures = len(self.metrics(run.run_key))
                flagged = len(self.skipped) > before
            out.append((run, figures, flagged))
        return out

    def _counted(self, benchmark: str | None) -> Iterator[tuple[RunRecord, int | None, int | None]]:
        """The runs (of `benchmark`) by start time, each with its stored counts (None: not stored)."""
        cur = self.db.execute("SELECT * FROM runs" + (" WHERE benchmark = ?" if benchmark else "") + " ORDER BY started",
                              (benchmark,) if benchmark else ())
        names = [d[0] for d in cur.description]
        for found in cur.fetchall():
            data = dict(zip(names, found, strict=True))
            yield decode_run(self.path, data), data.get("figures"), data.get("nonfinite")

    def _records(self, sql: str, params: tuple) -> list[RunRecord]:
        cur = self.db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [decode_run(self.path, dict(zip(names, found, strict=True))) for found in cur.fetchall()]

    def metrics(self, run_key: str) -> list[Metric]:
        """The run's metrics; a sample that is not a finite number (written by an older caramel's
        import) is left out and noted in `self.skipped`, so one bad figure never hides the history."""
        configs: dict[str, dict] = {}
        return [Metric(tbl, config, name, unit, direction, values)
                for tbl, config, name, unit, direction, values in self._figure_rows(run_key, configs)]

    def _figure_rows(self, run_key: str, configs: dict[str, dict]) -> Iterator[tuple]:
        """The run's figures as (table, configuration dict, name, unit, direction, finite samples), in
        the order they were recorded (`_rows` of one run)."""
        for _, *figure in self._rows("WHERE run_key = ?", (run_key,), configs):
            yield tuple(figure)

    def metrics_by_run(self, benchmark: str | None = None) -> dict[str, list[Metric]]:
        """The metrics of every run (of `benchmark`), by run key, in ONE query however many runs:
        what reading the figures of many runs (`bench predict`) asks instead of `metrics` per run."""
        where, params = ("", ()) if benchmark is None else (
            "WHERE run_key IN (SELECT run_key FROM runs WHERE benchmark = ?)", (benchmark,))
        out: dict[str, list[Metric]] = {}
        for run_key, *figure in self._rows(where, params, {}):
            out.setdefault(run_key, []).append(Metric(*figure))
        return out

    def _rows(self, where: str, params: tuple, configs: dict[str, dict]) -> Iterator[tuple]:
        """Figures as (run key, table, configuration dict, name, unit, direction, finite samples), in the
        order they were recorded. `configs` caches the parsed configurations (the same few hundred texts
        recur in every run of a benchmark); the samples, as caramel writes them (a JSON list of finite
        floats), are read by json.loads alone, anything else by the careful `_finite_samples`."""
        for run_key, tbl, config, name, unit, direction, samples in self.db.execute(
                f"SELECT run_key, tbl, config, name, unit, direction, samples FROM metrics {where} "
                f"ORDER BY {self.db.dialect.order}", params):
            values = _plain_samples(samples)
            if values is None:
                values = _finite_samples(samples, f"{self.path}: run {run_key}: {tbl}/{name}")
                if values is None or len(values) < samples.count(",") + 1:
                    self.skipped.append(f"run {run_key}: {tbl}/{name} holds a value that is not a finite number"
                                        + ("; left out" if not values else "; that sample is left out"))
            if values:
                row = configs.get(config) if isinstance(config, str) else None
                if row is None:
                    row = row_field(self.path, config, f"run {run_key}: the configuration of {tbl}/{name}", dict)
                    if isinstance(config, str):
                        configs[config] = row
                yield run_key, tbl, row, name, unit, direction, values

    def remove(self, run_key: str) -> int:
        """Remove a run, its metrics and the baselines that name it; returns the metrics removed."""
        with self.db:
            removed = self.db.execute("DELETE FROM metrics WHERE run_key = ?", (run_key,)).rowcount
            self.db.execute("DELETE FROM baselines WHERE run_key = ?", (run_key,))
            self.db.execute("DELETE FROM runs WHERE run_key = ?", (run_key,))
            self.db.execute("DELETE FROM meta WHERE key = ?", ("tables:" + run_key,))
        return removed

    def set_baseline(self, name: str, run_key: str) -> None:
        with self.db:
            self.db.execute(upsert("baselines", ("name", "run_key"), ("name",), True), (name, run_key))

    def baseline(self, name: str) -> str | None:
        found = self.db.execute("SELECT run_key FROM baselines WHERE name = ?", (name,)).fetchone()
        return found[0] if found else None

    def export(self, benchmark: str | None = None) -> Iterator[dict]:
        """The records of `export_lines`, parsed (one run at a time)."""
        for line in self.export_lines(benchmark):
            yield json.loads(line)

    def export_lines(self, benchmark: str | None = None,
                     site_of: Callable[[RunRecord], str] | None = None) -> Iterator[str]:
        """One JSON line per run (of `benchmark`, or all) with its metrics: the portable form. A
        generator reading one run at a time, so a history of a million figures is written in the
        memory of one run. `site_of(run)` names the site to write (default: the run's own).

        Each figure is written from its stored texts: the samples as stored when they are what
        caramel writes (a JSON list of finite floats, checked by one regular expression), else read
        with care (`_finite_samples`: values that are not finite numbers are left out and noted in
        `self.skipped`); the configuration and the names parsed and written once per distinct text.
        The line is JSON as `json.dumps` writes it, but for the samples' separators."""
        texts: dict = {}  # a table, name, unit or direction, and a configuration's stored text: its JSON
        for run in self.runs(benchmark):
            record = asdict(run)
            site, fingerprint = record.pop("site"), record.pop("fingerprint")
            if site_of is not None:
                site = site_of(run)
            figures = ", ".join(self._figure_texts(run.run_key, texts))
            # site and fingerprint are optional keys beside "run", so older caramels read the export
            yield (f'{{"schema": {EXPORT_SCHEMA}, "run": {json.dumps(record)}, "metrics": [{figures}], '
                   f'"site": {json.dumps(site)}, "fingerprint": {json.dumps(fingerprint)}}}')

    def _figure_texts(self, run_key: str, texts: dict) -> Iterator[str]:
        """The run's figures as the JSON objects of an export line (see export_lines)."""
        dumps = json.dumps
        for tbl, config, name, unit, direction, samples in self.db.execute(
                "SELECT tbl, config, name, unit, direction, samples FROM metrics WHERE run_key = ? "
                f"ORDER BY {self.db.dialect.order}", (run_key,)):
            if not (isinstance(samples, str) and len(samples) < 4096 and _PLAIN_SAMPLES.fullmatch(samples)):
                values = _finite_samples(samples, f"{self.path}: run {run_key}: {tbl}/{name}")
                if values is None or len(values) < samples.count(",") + 1:
                    self.skipped.append(f"run {run_key}: {tbl}/{name} holds a value that is not a finite number"
                                        + ("; left out" if not values else "; that sample is left out"))
                if not values:
                    continue
                samples = dumps(values)
            row = texts.get(("config", config))
            if row is None:
                parsed = row_field(self.path, config, f"run {run_key}: the configuration of {tbl}/{name}", dict)
                row = dumps(parsed)
                if isinstance(config, str):
                    texts[("config", config)] = row
            words = texts.get((tbl, name, unit, direction))
            if words is None:  # a damaged row's value that is no text (a number, a blob) written as text
                words = texts[(tbl, name, unit, direction)] = tuple(dumps(_as_text(v)) for v in (tbl, name, unit, direction))
            yield (f'{{"table": {words[0]}, "row": {row}, "name": {words[1]}, "unit": {words[2]}, '
                   f'"direction": {words[3]}, "samples": {samples}}}')

    def import_records(self, records: Iterable[tuple[RunRecord, list[Metric], Location]]) -> tuple[int, int]:
        """Add validated (run, metrics, where) records, read one at a time (a file of a million
        figures in the memory of one run), all in one transaction: a run already here with the same
        figures adds nothing; one with other figures is refused (CaramelError naming `where`, the
        file and line) and nothing of the file is added (an error raised by `records` itself, a bad
        line further on, rolls the transaction back too). A run met twice in the file is checked
        against what its first line added, read back from the transaction. Returns (new runs, new figures)."""
        runs = added = 0
        first_line: dict[str, int] = {}  # runs new to the history: the line that brought them
        with self.writing():
            for run, metrics, where in records:
                if self.run(run.run_key) is not None:
                    known = _figures(self.metrics(run.run_key))
                    line = first_line.get(run.run_key)
                    _same_figures(run.run_key, known, _figures(metrics), where,
                                  "the history" if line is None else f"line {line} of this file")
                    if line is not None:
                        continue  # the file's first line of this run holds: a repeat adds nothing
                else:
                    runs += 1
                    first_line[run.run_key] = where.line or 0
                added += self._insert(run, metrics, replace=False)
                self.written.clear()  # an import goes to no sink: keep no copy of its rows
        return runs, added


_MEAN, _MIN, _MAX = (METRIC_COLUMNS.index(name) for name in ("mean", "min", "max"))


def _finite_row(row: tuple) -> bool:
    """Whether a metrics row's mean, min and max are finite numbers: `_FINITE` in Python (NaN fails)."""
    mean, low, high = row[_MEAN], row[_MIN], row[_MAX]
    return -1.7e308 <= mean <= 1.7e308 and -1.7e308 <= low and high <= 1.7e308


def _figures(metrics: Iterable[Metric]) -> dict:
    return {(m.table, json.dumps(m.row, sort_keys=True), m.name): m.samples for m in metrics}


def _same_figures(run_key: str, known: dict, new: dict, where: Location, first: str) -> None:
    for key, samples in new.items():
        if key in known and known[key] != samples:
            raise RunError(f"run {run_key} is already in {first} with other figures: {key[0]}/{key[2]} "
                           f"({key[1]}) is {known[key]} there, {samples} here; nothing was imported", where,
                           hint=f"if this file is right, remove the run first: bench history remove {run_key}")


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


def _as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _plain_samples(text) -> list[float] | None:
    """The samples as caramel writes them, a short JSON list of finite floats, read fast; None for
    anything else (a long, damaged or non-finite text: `_finite_samples` reads it with care)."""
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


def _finite_samples(text: str, where: str = "samples") -> list[float] | None:
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
