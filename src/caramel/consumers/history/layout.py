"""The history's layout: its tables and columns, the SQL every writer shares (`upsert`, the stored
figure counts), and how a history of an older layout is brought to this one when it is opened.

Both engines (history.engine) take the same SQL; the few words that differ are the Dialect's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from caramel.consumers.history import engine
from caramel.consumers.history.engine import Connection, Dialect
from caramel.errors import CaramelError

# the history's layout; 2 added runs.site, runs.fingerprint and the meta table (additive: a history
# of schema 1 gains the columns on open, and older caramels ignore them); 3 added runs.figures and
# runs.nonfinite, each run's figure counts kept by every write (History._recount), so `bench history
# list` reads a thousand rows instead of counting a million: a history of schema 2 or 1 is counted
# once when it is opened (`migrate`), and a caramel of schema 2, which would write without counting,
# refuses it
SCHEMA_VERSION = 3
# the layout of a `bench export` line (history.validate reads every one up to it; 1: no "schema"
# key)
EXPORT_SCHEMA = 2
# columns added after schema 1: added to an older history when it is opened
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
)
METRIC_KEY = ("run_key", "tbl", "config", "name")
TABLES = frozenset(("runs", "metrics", "baselines", "meta"))
SCHEMA_LOCK = (
    7_261_001  # PostgreSQL: writers creating the tables at once take turns (an advisory lock)
)

# a figure whose stored mean, min and max are finite numbers (not NULL: NaN, not infinite, not a
# text where a number belongs: SQLite orders texts after numbers)
FINITE = (
    "coalesce(mean >= -1.7e308 AND mean <= 1.7e308 AND min >= -1.7e308 AND max <= 1.7e308, FALSE)"
)
# a run's figure counts, from its rows (an UPDATE of runs: `runs.run_key` is the run's)
COUNTS = (
    "figures = (SELECT COUNT(*) FROM metrics WHERE metrics.run_key = runs.run_key), "
    "nonfinite = (SELECT COUNT(*) FROM metrics WHERE metrics.run_key = runs.run_key AND NOT "
    + FINITE
    + ")"
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
    fingerprint: dict = field(default_factory=dict)  # CPU/GPU models and counts, driver, CUDA/ROCm


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
    dialect = db.dialect
    if not TABLES <= {row[0] for row in db.execute(dialect.tables)}:
        with db:
            if dialect is engine.POSTGRESQL:
                db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
            for statement in schema(dialect):
                db.execute(statement)
    found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if found and not (str(found[0]).isdigit() and int(found[0]) <= SCHEMA_VERSION):
        raise engine.HistoryUnavailable(
            f"{db.shown}: a history of another caramel (schema {found[0]}; this caramel reads and writes "
            f"schema {SCHEMA_VERSION})",
            hint="use the caramel that made it, or another history "
            "(--history, $CARAMEL_HISTORY); bench result keeps runs locally meanwhile",
        )
    # a history of schema 1 is marked as of this layout when its meta table is made: its columns
    # tell (SQLite only: a PostgreSQL history was made at schema 2 or later)
    if (
        not found
        or int(found[0]) < SCHEMA_VERSION
        or (dialect is engine.SQLITE and missing_columns(db))
    ):
        migrate(db)


def missing_columns(db: Connection) -> list[str]:
    """The columns added since schema 1 that the runs table lacks."""
    if db.dialect is engine.POSTGRESQL:
        have = {
            row[0]
            for row in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'runs'"
            )
        }
    else:
        have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    return [name for name in ADDED_COLUMNS if name not in have]


def migrate(db: Connection) -> None:
    """Bring a history of an older layout to this one: the columns added since, and each run's
    figure counts, in one transaction (writers of PostgreSQL take turns by the schema lock). A
    history this user may only read is read as it is: the counts missing, History.listing counts."""
    try:
        with db:
            if db.dialect is engine.POSTGRESQL:
                db.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
            else:
                db.execute("BEGIN IMMEDIATE")
            missing = missing_columns(
                db
            )  # read under the lock: another process may have migrated it
            for name in missing:
                db.execute(f"ALTER TABLE runs ADD COLUMN {name} {ADDED_COLUMNS[name]}")
            found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if missing or not found or int(found[0]) < SCHEMA_VERSION:
                db.execute(f"UPDATE runs SET {COUNTS}")
            db.execute(
                upsert("meta", ("key", "value"), ("key",), True), ("schema", str(SCHEMA_VERSION))
            )
    except CaramelError as exc:
        if "readonly" not in str(exc).replace(" ", "").replace(
            "-", ""
        ) and "permission denied" not in str(exc):
            raise
