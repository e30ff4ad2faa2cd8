"""The two engines a history lives in, behind one small connection interface.

SQLite (a file: the embedded default) and PostgreSQL (a URL, `postgresql://user:pass@host/db`, for a
team). Both take the same SQL, written once in history.store: `?` placeholders (turned into
psycopg's `%s`) and `INSERT ... ON CONFLICT`, which both engines understand; the few words that
differ (a double-precision float, the insertion order of rows) are the `Dialect`'s. A server that
cannot be reached, refuses the password or fails mid-transaction is a `HistoryUnavailable` naming
the URL without its password: `bench result` keeps the run in its spool then (history.spool).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from caramel import redact
from caramel.errors import RunError

CONNECT_TIMEOUT_S = 5  # a server that does not answer is told within seconds, not minutes
URL_SCHEMES = ("postgresql://", "postgres://")


# a row as the database driver gives it: its values of the types stored (a history written by an
# older or a hostile caramel may hold any), so each reader checks what it takes
Row = tuple[Any, ...]
# the parameters of one statement (the values of its `?` placeholders)
Params = Sequence[object]


class Cursor(Protocol):
    """What the history reads of a DB-API cursor (sqlite3's or psycopg's)."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Row | None: ...

    def fetchmany(self, size: int = ...) -> list[Row]: ...

    def fetchall(self) -> list[Row]: ...

    def __iter__(self) -> Iterator[Row]: ...


class HistoryUnavailable(RunError):
    """The history's database cannot be reached or used now (server down, password, schema)."""


@dataclass(frozen=True)
class Dialect:
    name: str
    real: str  # a double-precision float (PostgreSQL's REAL is single precision)
    order: str  # the column giving the figures' insertion order
    order_column: str  # how that column is declared ("" where it is implicit)
    tables: str  # the names of the tables there are
    key: str  # an id column numbered by the database
    # a numeric column `{0}` as a number, or NULL where it holds anything else: SQLite keeps what a
    # damaged history stored (a text, a blob) whatever the column's type; PostgreSQL's are typed
    number: str


SQLITE = Dialect(
    "sqlite",
    "REAL",
    "rowid",
    "",
    "SELECT name FROM sqlite_master WHERE type = 'table'",
    "INTEGER PRIMARY KEY",
    "CASE WHEN typeof({0}) IN ('integer', 'real') THEN {0} END",
)
POSTGRESQL = Dialect(
    "postgresql",
    "DOUBLE PRECISION",
    "seq",
    ", seq BIGSERIAL",
    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
    "AND table_type = 'BASE TABLE'",
    "BIGSERIAL PRIMARY KEY",
    "{0}",
)


def is_url(target: str | None) -> bool:
    return target is not None and target.startswith(URL_SCHEMES)


def check_port(url: str) -> None:
    """Refuse a history URL whose port is no number from 0 to 65535, naming the setting it came
    from (the server would otherwise be reported unreachable, or a ValueError escape)."""
    from urllib.parse import urlsplit

    from caramel.settings import Source, current

    try:
        _ = urlsplit(url).port  # ValueError for a port that is no number
    except ValueError:
        settings = current()
        origin = settings.origin.get("history")
        setting = (
            "the setting history ($CARAMEL_HISTORY)"
            if origin is Source.ENVIRONMENT
            else f"history: in {settings.settings_file}"
            if origin is Source.FILE
            else "--history"
        )
        if url != settings.history:
            setting = "--history"
        port = urlsplit(url).netloc.rpartition(":")[2]
        raise RunError(
            f"the history URL {redact.url(url)} has the port {port!r}, which is no "
            f"number from 0 to 65535 (from {setting})",
            hint="write the port as digits: postgresql://user@host:5432/db (or leave it out: 5432)",
        ) from None


def unavailable(target: str, exc: BaseException, doing: str = "") -> HistoryUnavailable:
    """A clear error for a server that failed: what happened and what to do, never the password."""
    first = redact.scrub(
        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, target
    )
    low = first.lower()
    if "password" in low or "authentication" in low:
        hint = "check the user and password (in the URL, $PGPASSWORD or ~/.pgpass)"
    elif "does not exist" in low and "database" in low:
        hint = "create the database (createdb), or name one that exists in the URL"
    else:
        hint = (
            "is the server running and reachable (host, port, firewall)? "
            "meanwhile bench result keeps runs locally"
        )
    what = f"the history server {redact.url(target)}" + (f" ({doing})" if doing else "")
    return HistoryUnavailable(f"{what}: {first}", hint=hint)


class Connection:
    """One open history database: execute, executemany (returning rows changed), a transaction."""

    dialect: Dialect = SQLITE

    def __init__(self, target: str) -> None:
        self.target = target

    @property
    def shown(self) -> str:
        return redact.url(self.target)

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open on it (SQLite's; a PostgreSQL connection answers False)."""
        return False

    def __enter__(self) -> Connection:
        """`with db:` is a transaction, as with an sqlite3 connection."""
        entered = self.transaction()
        entered.__enter__()
        self.__dict__.setdefault("_entered", []).append(entered)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.__dict__["_entered"].pop().__exit__(*exc)


class SqliteConnection(Connection):
    def __init__(self, path: str, readonly: bool = False) -> None:
        from caramel.stages.state import sqlitefiles

        super().__init__(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        # the rollback journal (read from many hosts), a lock waited for 30 s; errors name the file
        history = sqlitefiles.FileKind("history", timeout_s=30)
        self.db = sqlitefiles.connect(path, history, readonly=readonly)

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        return self.db.execute(sql, params)

    @property
    def in_transaction(self) -> bool:
        return self.db.in_transaction

    def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        before = self.db.total_changes
        self.db.executemany(sql, rows)
        return self.db.total_changes - before

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self.db.in_transaction:  # nested: the caller's transaction holds
            yield
            return
        with self.db:
            yield

    def close(self) -> None:
        self.db.close()


_PLACEHOLDER = re.compile(r"\?")


class PostgresConnection(Connection):
    dialect = POSTGRESQL

    def __init__(self, url: str) -> None:
        super().__init__(url)
        try:
            import psycopg
        except ImportError:
            raise RunError(
                f"{redact.url(url)}: a PostgreSQL history needs psycopg",
                hint="pip install 'caramel[team]' (or: pip install 'psycopg[binary]')",
            ) from None
        self.errors = (psycopg.OperationalError, psycopg.InterfaceError)
        self.database_error = psycopg.DatabaseError
        try:
            self.db = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise unavailable(url, exc) from None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except self.errors as exc:
            raise unavailable(self.target, exc) from None
        except self.database_error as exc:
            raise RunError(
                f"the history {self.shown}: {redact.scrub(str(exc).strip(), self.target)}"
            ) from None

    def execute(self, sql: str, params: Params = ()) -> Cursor:
        with self._guard():
            return self.db.execute(_PLACEHOLDER.sub("%s", sql), params or None)

    def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        rows = list(rows)
        if not rows:
            return 0
        with self._guard(), self.db.cursor() as cursor:
            cursor.executemany(_PLACEHOLDER.sub("%s", sql), rows)
            return max(cursor.rowcount, 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._guard(), self.db.transaction():
            yield

    def close(self) -> None:
        try:
            self.db.close()
        except self.errors:
            pass


def connect(target: str, readonly: bool = False) -> Connection:
    """The database of `target`: a PostgreSQL URL, else an SQLite file (`sqlite:///path` too)."""
    if is_url(target):
        check_port(target)
        return PostgresConnection(target)
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") - 1 :]
    return SqliteConnection(target, readonly)
