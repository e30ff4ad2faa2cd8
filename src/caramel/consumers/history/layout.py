"""The history's layout: its tables and columns, the SQL every writer shares (`upsert`, the stored
figure counts), and how a history of an older layout is brought to this one when it is opened.

Both engines (history.engine) take the same SQL; the few words that differ are the Dialect's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from caramel.consumers.history import engine
from caramel.consumers.history.engine import Connection, Dialect
from caramel.errors import CaramelError

# the history's layout; 2 added runs.site, runs.fingerprint and the meta table; 3 added runs.figures
# and runs.nonfinite (each run's figure counts, kept by every write, so `bench history list` reads a
# thousand rows instead of counting a million); 4 normalised the figures: a run's id, each series
# (benchmark, system, table, configuration, figure, unit, direction) stored once, and per run and
# series one row of numbers (`figures`), with the reason of a failed row. An older history is
# brought to this layout in one transaction when it is opened (`migrate`); `metrics` is now a view
# of the figures with their run key and series, the columns the metrics table had.
SCHEMA_VERSION = 4
# the layout of a `bench export` line (history.validate reads every one up to it; 1: no "schema"
# key; 3: a figure may hold a "reason", a failed row's with no samples)
EXPORT_SCHEMA = 3
REASONLESS_SCHEMA = 2  # a line none of whose figures holds a reason: what older caramels read
# columns added to runs after schema 1 (a history of schema 1 or 2 gains them when it is migrated)
ADDED_COLUMNS = {
    "site": "TEXT",
    "fingerprint": "TEXT",
    "figures": "INTEGER",
    "nonfinite": "INTEGER",
}
RUN_COLUMNS = (
    "run_key",
    "benchmark",
    "file",
    "run_dir",
    "tags",
    "system",
    "caramel_version",
    "git_commit",
    "host",
    "nodes",
    "job_ids",
    "container",
    "energy_method",
    "started",
    "ended",
    "site",
    "fingerprint",
)
# a figure as the `metrics` view shows it (and history.rows makes it): run key, series, numbers
METRIC_COLUMNS = (
    "run_key",
    "tbl",
    "config",
    "name",
    "unit",
    "direction",
    "n",
    "mean",
    "sd",
    "min",
    "max",
    "samples",
    "reason",
)
# a row of the metrics view, in METRIC_COLUMNS' order: n 0 and no numbers nor samples in a failed
# row's (its reason given)
MetricRow = tuple[
    str,  # run_key
    str,  # tbl
    str,  # config: the configuration's JSON text
    str,  # name
    str,  # unit
    str,  # direction: a Direction's value
    int,  # n
    float | None,  # mean
    float | None,  # sd
    float | None,  # min
    float | None,  # max
    str | None,  # samples: their JSON text
    str | None,  # reason
]
SERIES_COLUMNS = ("benchmark", "system", "tbl", "config", "name", "unit", "direction")
FIGURE_COLUMNS = ("run", "series", "n", "mean", "sd", "min", "max", "samples", "reason")
TABLES = frozenset(("runs", "series", "figures", "baselines", "meta"))
SCHEMA_LOCK = 7_261_001  # PostgreSQL: writers creating or migrating the tables take turns

# a figure whose stored mean, min and max are finite numbers (not NULL: NaN, not infinite, not a
# text where a number belongs: SQLite orders texts after numbers)
FINITE = (
    "coalesce(mean >= -1.7e308 AND mean <= 1.7e308 AND min >= -1.7e308 AND max <= 1.7e308, FALSE)"
)
# a row of the figures table that is a figure: not a failed row's reason (no mean, a reason; one
# per table and configuration of a failed row, history.metrics.FAILED_ROW), which no reader takes
# for a number and no count counts
A_FIGURE = "(figures.mean IS NOT NULL OR figures.reason IS NULL)"
# a run's figure counts, from its rows (an UPDATE of runs: `runs.run_key` is the run's)
COUNTS = (
    "figures = (SELECT COUNT(*) FROM figures WHERE figures.run = runs.id AND " + A_FIGURE + "), "
    "nonfinite = (SELECT COUNT(*) FROM figures WHERE figures.run = runs.id AND "
    + A_FIGURE
    + " AND NOT "
    + FINITE
    + ")"
)
# the failed rows' reasons, few among a million figures: `bench history list` counts them per run
# without reading the figures (a history of schema 4 made before it reads them all, as slowly)
FAILED_INDEX = "CREATE INDEX IF NOT EXISTS failed_rows ON figures (run) WHERE reason IS NOT NULL"
FAILED = "figures.reason IS NOT NULL AND figures.mean IS NULL"  # NOT A_FIGURE, as the index reads
# every figure with its run key and its series, as the metrics table of schema 3 held them
METRICS_VIEW = (
    "CREATE VIEW metrics AS SELECT runs.run_key, series.tbl, series.config, series.name, "
    "series.unit, series.direction, figures.n, figures.mean, figures.sd, figures.min, figures.max, "
    "figures.samples, figures.reason FROM figures JOIN runs ON runs.id = figures.run "
    "JOIN series ON series.id = figures.series"
)


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
    site: str = (
        ""  # where the run ran (docs/dashboard.md): $CARAMEL_SITE, the SLURM cluster or the host
    )
    fingerprint: dict[str, object] = field(
        default_factory=dict
    )  # CPU/GPU models and counts, driver, CUDA/ROCm


def schema(dialect: Dialect) -> list[str]:
    """The history's tables, in the words of `dialect` (the same layout on both engines)."""
    real, key = dialect.real, dialect.key
    return [
        f"CREATE TABLE runs (id {key}, run_key TEXT NOT NULL UNIQUE, benchmark TEXT, file TEXT, "
        "run_dir TEXT, tags TEXT, system TEXT, caramel_version TEXT, git_commit TEXT, host TEXT, "
        f"nodes TEXT, job_ids TEXT, container TEXT, energy_method TEXT, started {real}, "
        f"ended {real}, site TEXT, fingerprint TEXT, figures INTEGER, nonfinite INTEGER)",
        f"CREATE TABLE series (id {key}, benchmark TEXT NOT NULL, system TEXT NOT NULL, "
        "tbl TEXT NOT NULL, config TEXT NOT NULL, name TEXT NOT NULL, unit TEXT NOT NULL, "
        "direction TEXT NOT NULL, UNIQUE (benchmark, system, tbl, config, name, unit, direction))",
        f"CREATE TABLE figures (run INTEGER NOT NULL, series INTEGER NOT NULL, n INTEGER, "
        f"mean {real}, sd {real}, min {real}, max {real}, samples TEXT, reason TEXT"
        f"{dialect.order_column}, PRIMARY KEY (run, series))",
        METRICS_VIEW,
        FAILED_INDEX,
        "CREATE TABLE IF NOT EXISTS baselines (name TEXT PRIMARY KEY, run_key TEXT)",
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
        f"INSERT INTO meta VALUES ('schema', '{SCHEMA_VERSION}') ON CONFLICT (key) DO NOTHING",
    ]


def upsert(table: str, columns: tuple[str, ...], key: tuple[str, ...], replace: bool) -> str:
    """INSERT that keeps (`replace` false) or updates (true) a row whose key is there: both engines'
    SQL."""
    action = (
        ("DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key))
        if replace
        else "DO NOTHING"
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({', '.join(key)}) {action}"
    )


def prepare(db: Connection) -> None:
    """Make the tables (a new history), refuse another layout, bring an older one to this
    (`migrate`). A history of this layout is only read here: a user who may only read it can."""
    tables = {row[0] for row in db.execute(db.dialect.tables)}
    if "runs" not in tables:
        _create(db)
        return
    stored = stored_version(db) if "meta" in tables else "1"
    version = int(stored) if stored.isdigit() else SCHEMA_VERSION + 1  # a text: no caramel's
    if version > SCHEMA_VERSION:
        raise engine.HistoryUnavailable(
            f"{db.shown}: a history of another caramel (schema {stored}; this caramel reads and "
            f"writes schema {SCHEMA_VERSION})",
            hint="use the caramel that made it, or another history "
            "(--history, $CARAMEL_HISTORY); bench result keeps runs locally meanwhile",
        )
    if version < SCHEMA_VERSION or not TABLES <= tables:
        migrate(db)


def _create(db: Connection) -> None:
    """Make the tables of a new history, unless another writer made them meanwhile (PostgreSQL's
    writers take turns by the schema lock)."""
    with db:
        if db.dialect is engine.POSTGRESQL:
            db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
        if "runs" not in {row[0] for row in db.execute(db.dialect.tables)}:
            for statement in schema(db.dialect):
                db.execute(statement)


def stored_version(db: Connection) -> str:
    """The layout the history's meta table says it has, as stored ("1": none stored)."""
    found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return str(found[0]) if found else "1"


def table_columns(db: Connection, table: str) -> set[str]:
    """The columns of `table`."""
    if db.dialect is engine.POSTGRESQL:
        return {
            row[0]
            for row in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                "current_schema() AND table_name = ?",
                (table,),
            )
        }
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def migrate(db: Connection) -> None:
    """Bring a history of an older layout (schema 1 to 3: runs keyed by their text, a metrics table
    repeating each figure's names) to this one in one transaction: the runs copied with an id, each
    distinct series once, each metrics row as a figure of its run and series (in the order written),
    the counts made, the old tables dropped. Writers of PostgreSQL take turns by the schema lock.
    Rows of the metrics table whose run is not in the runs table are left out (no page or command
    could show them). A history this user may only read cannot be migrated: said so."""
    try:
        with db:
            if db.dialect is engine.POSTGRESQL:
                db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
            else:
                db.execute("BEGIN IMMEDIATE")
            tables = {row[0] for row in db.execute(db.dialect.tables)}
            if "figures" in tables:  # another process migrated it meanwhile
                return
            _migrate_tables(db)
    except CaramelError as exc:
        words = str(exc).replace(" ", "").replace("-", "").lower()
        if "readonly" in words or "permissiondenied" in words:
            raise engine.HistoryUnavailable(
                f"{db.shown}: a history of an older layout (schema 3 or before), which this user "
                "may only read: it is migrated to schema 4 when first opened with write access",
                hint="open it once as a user who may write it (bench history list), or copy it",
            ) from None
        raise


def _migrate_tables(db: Connection) -> None:
    """`migrate`'s statements, inside its transaction."""
    have = table_columns(db, "runs")
    for name, kind in ADDED_COLUMNS.items():
        if name not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    db.execute("ALTER TABLE runs RENAME TO old_runs")
    if db.dialect is engine.POSTGRESQL:  # the old primary key's index keeps its name otherwise
        db.execute("ALTER INDEX IF EXISTS runs_pkey RENAME TO old_runs_pkey")
    for statement in schema(db.dialect):
        if statement != METRICS_VIEW:  # made once the metrics table is gone
            db.execute(statement)
    names = ", ".join(RUN_COLUMNS)
    db.execute(f"INSERT INTO runs ({names}) SELECT {names} FROM old_runs ORDER BY started")
    text = {c: f"coalesce(m.{c}, '')" for c in ("tbl", "config", "name", "unit", "direction")}
    db.execute(
        "INSERT INTO series (benchmark, system, tbl, config, name, unit, direction) "
        "SELECT DISTINCT coalesce(r.benchmark, ''), coalesce(r.system, ''), "
        + ", ".join(text.values())
        + " FROM metrics m JOIN runs r ON r.run_key = m.run_key"
    )
    same = " AND ".join(
        [
            "s.benchmark = coalesce(r.benchmark, '')",
            "s.system = coalesce(r.system, '')",
            *(f"s.{c} = {expression}" for c, expression in text.items()),
        ]
    )
    db.execute(
        "INSERT INTO figures (run, series, n, mean, sd, min, max, samples) "
        "SELECT r.id, s.id, m.n, m.mean, m.sd, m.min, m.max, m.samples FROM metrics m "
        f"JOIN runs r ON r.run_key = m.run_key JOIN series s ON {same} "
        f"ORDER BY m.{db.dialect.order}"
    )
    db.execute("DROP TABLE metrics")
    db.execute("DROP TABLE old_runs")
    db.execute(METRICS_VIEW)
    db.execute(f"UPDATE runs SET {COUNTS}")
    db.execute(upsert("meta", ("key", "value"), ("key",), True), ("schema", str(SCHEMA_VERSION)))
