"""The run state: one SQLite database per run, `<run dir>/caramel.db`.

Every state change is one transaction (WAL journal on a local disk, the rollback journal on a
filesystem shared between hosts: state.sqlitefiles), so after a crash the database still tells
which workpackages are done; work folders are outputs, never the truth. The plan (workpackages,
parents, final parameter texts) and the benchmark model are stored when the run starts, so
`bench continue` never expands the benchmark again. Each workpackage's params (expand.params: final
texts, declared types, the texts of later cycles) are stored as typed JSON: every later stage reads
them from here, none evaluates a definition again.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from caramel import redact
from caramel.settings import current
from caramel.stages.expand import layout
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import identity_file, sqlitefiles, transitions
from caramel.stages.state.codec import encode_model
from caramel.stages.state.dbfile import Guarded, StorageError
from caramel.stages.state.reads import RunReads
from caramel.stages.state.rows import (
    SCHEMA,
    SCHEMA_VERSION,
    UPDATABLE,
    CommandRow,
    RunInfo,
    WpRow,
)
from caramel.stages.state.sqlitefiles import FileKind, Journal
from caramel.vocabulary import ACTIVE_STATES

# a planned workpackage as Store.create takes it: id, step, iteration, parents' ids, dirname, params
PlannedRow = tuple[int, str, int, list[int], str, Params]
SqlValues = tuple[object, ...]  # one row's values for an INSERT or UPDATE

DB_NAME = layout.RUN_DB
# SQLite's default: the log is copied into the database at the commit that makes it this long
WAL_CHECKPOINT_PAGES = 1000


# The run state: WAL on a local disk, the rollback journal on a filesystem shared between hosts
# or one that refuses WAL's shared memory map (state.sqlitefiles); one connection serves the
# engine's threads.
RUN_STATE = FileKind("run state", journal=Journal.BY_FILESYSTEM, autocommit=True, any_thread=True)
# A run state being written whole (the plan of a new run, a copy restored): renamed into place once
# complete, then opened as RUN_STATE.
WHOLE_RUN_STATE = FileKind("run state", autocommit=True)


@dataclass
class _Gathered:
    """The writes of a `Store.batch`, in the order they were made: each workpackage's changed
    columns (later changes of a column win, as the UPDATEs one by one would leave it), events,
    command rows."""

    columns: dict[int, dict[str, object]] = field(default_factory=dict)
    events: list[tuple[float, int | None, str, str]] = field(default_factory=list)
    commands: list[SqlValues] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.columns or self.events or self.commands)


def db_path(run_dir: str) -> str:
    return os.path.join(run_dir, DB_NAME)


def is_run_dir(path: str) -> bool:
    return os.path.isfile(db_path(path))


class Store(RunReads):
    """Access to one run's database. Writes happen inside `with store.transaction():`."""

    def __init__(self, path: str, readonly: bool = False) -> None:
        self.path = path
        after = f"then `bench continue {os.path.dirname(path)}` finishes the run"
        try:
            empty = os.path.getsize(path) == 0
        except OSError:
            empty = False
        if empty:
            raise StorageError(
                f"the run state {path} is empty (0 bytes): it was cut short",
                hint="a full disk or a copy that failed? the work folders are intact, but the "
                "run's state is lost: start the run again",
            )
        # WAL runs synchronous=NORMAL (sqlitefiles); the rollback journal of a shared filesystem
        # keeps synchronous=FULL: its commits are durable only so.
        self.db = sqlitefiles.connect(path, RUN_STATE, after, readonly)
        self.journal = "" if readonly else str(self.db.execute("PRAGMA journal_mode").fetchone()[0])
        self._depth = 0
        self._gathered: _Gathered | None = None  # inside a `batch`: its writes, not yet made
        self._last_env: tuple[dict[str, str], str] = (
            {},
            "{}",
        )  # the last environment written, and its JSON

    # --- creation ---------------------------------------------------------------------------
    @classmethod
    def create(
        cls, run_dir: str, info: RunInfo, model: Benchmark, rows: Iterable[PlannedRow]
    ) -> Store:
        """A new database holding the run, its model and its workpackages (id, step, iteration,
        parents, dirname, Params). Written under a temporary name and renamed when complete:
        `caramel.db` exists only once the whole plan is in it."""
        path = db_path(run_dir)
        tmp = path + ".new"
        info.created = info.created or time.time()
        for leftover in (tmp, tmp + "-journal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
        db = sqlitefiles.connect(tmp, WHOLE_RUN_STATE, "then run again")
        try:
            _write_plan(db, info, model, rows)
        except BaseException:
            db.close()
            for leftover in (tmp, tmp + "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            raise
        db.close()
        # The identity `bench remove` checks, before the record takes its name (state.identity)
        identity_file.write(
            run_dir, identity_file.Identity(info.run_id, info.benchmark, info.created)
        )
        os.rename(tmp, path)
        return cls(path)

    def close(self) -> None:
        self.db.close()

    def settle_journal(self) -> None:
        """A run whose bench ends with no workpackage running or waiting goes back from WAL to the
        rollback journal (sqlitefiles.leave_wal, best effort), so a colleague or a read-only mount
        reads the finished run without making a `-shm` beside it; the next `bench continue` takes
        WAL again."""
        if self.journal != "wal":
            return
        active = tuple(state.value for state in ACTIVE_STATES)
        marks = ",".join("?" * len(active))
        # called as bench closes the run, perhaps after an error: that error is the one to tell
        try:
            self._write_gathered()
            if self.db.execute(
                f"SELECT 1 FROM workpackages WHERE state IN ({marks}) LIMIT 1", active
            ).fetchone():
                return
        except StorageError:
            return
        if sqlitefiles.leave_wal(self.db.connection):
            self.journal = "delete"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic change (nested uses join the outer transaction)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk ends the transaction): a ROLLBACK
            # then fails with "no transaction is active", which must not hide the error that got
            # here.
            if self.db.in_transaction:
                with contextlib.suppress(StorageError):
                    self.db.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction (as `transaction`) whose workpackage changes, events and command rows are
        gathered and written at its end, one statement for each kind of change (a thousand
        workpackages' starts: three executemany, not five thousand statements). Every move is
        checked when it is made, as outside a batch; a read of the run state inside the batch first
        writes what was gathered, so it reads what it would read without one. An error discards it
        all."""
        if self._gathered is not None:  # nested: joins the outer batch
            yield
            return
        # Its commit (a long log: a thousand rows) leaves copying the log into the database to the
        # next commit: a thousand array tasks are queued first.
        own_commit = self._depth == 0 and self.journal == "wal"
        with self.transaction():
            self._gathered = _Gathered()
            try:
                yield
                self._write_gathered()
            finally:
                self._gathered = None
            if own_commit:
                self.db.execute("PRAGMA wal_autocheckpoint=0")
        if own_commit:
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")

    def _write_gathered(self) -> None:
        """Make the writes a batch gathered so far (inside its transaction)."""
        gathered = self._gathered
        if not gathered:
            return
        self._gathered = _Gathered()
        by_columns: dict[tuple[str, ...], list[SqlValues]] = {}
        for wp_id, changes in gathered.columns.items():
            by_columns.setdefault(tuple(changes), []).append((*changes.values(), wp_id))
        for names, rows in by_columns.items():
            self.db.executemany(
                f"UPDATE workpackages SET {', '.join(f'{name}=?' for name in names)} WHERE id=?",
                rows,
            )
        self.db.executemany(
            "INSERT INTO events (time, wp, kind, message) VALUES (?,?,?,?)", gathered.events
        )
        self._insert_commands(gathered.commands)

    def abandon_transaction(self) -> None:
        """Roll back a transaction an interruption left open (its change did not happen), and forget
        it."""
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self._depth = 0
        self._gathered = None

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file and truncate it (frees disk space)."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def replace_model(self, model: Benchmark) -> None:
        """Store `model` as the run's benchmark: the analysis definitions of `bench result -u`
        (analysis/update.py, after checking nothing that made the run changed), or the repeats a
        `--repeat auto` run made (engine.rounds)."""
        with self.transaction():
            self.db.execute("UPDATE runs SET model=?", (encode_model(model),))

    def update_settings(self, settings: dict[str, object]) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET settings=?", (json.dumps(settings),))

    def drop_unstarted(self, wp_ids: Iterable[int], why: str) -> int:
        """Take workpackages that never started (open, no attempt) out of the run: the repeats
        `bench run --repeat auto` planned and did not need (engine.rounds). Returns how many went
        (call inside a transaction)."""
        self._write_gathered()
        gone = self.db.executemany(
            "DELETE FROM workpackages WHERE id=? AND state='open' AND attempt=0",
            ((wp_id,) for wp_id in wp_ids),
        ).rowcount
        self.event(None, "repeat", f"{why}: {gone} workpackages of later repeats taken out")
        return gone

    def update(self, wp_id: int, **fields: object) -> None:
        """Change columns of one workpackage other than its state (call inside a transaction)."""
        self._write(wp_id, fields)

    def move(self, wp: WpRow, name: str, message: str | None = None, **fields: object) -> None:
        """Make the state move `name` of state.transitions for `wp` (call inside a transaction): its
        new state and the fields the move resets (`fields` given here win) go to the database and to
        `wp`, and the move's event is recorded (`message`: the reason unless given). A move that
        does not start from `wp`'s state raises TransitionError, and nothing changes."""
        self._make(wp, transitions.check(name, wp.id, wp.state), message, fields)

    def move_many(
        self,
        wps: Sequence[WpRow],
        name: str,
        fields_of: Callable[[WpRow], dict[str, object]],
        message: str | None = None,
    ) -> None:
        """The state move `name` for every workpackage of `wps`, each with its own `fields_of(wp)`,
        as one batch of writes (one statement for all of them; call inside a transaction). Every one
        is checked before any changes: one that may not make the move raises TransitionError, and no
        workpackage changes, in the database or in memory."""
        moves = [transitions.check(name, wp.id, wp.state) for wp in wps]
        with self.batch():
            for wp, move in zip(wps, moves, strict=True):
                self._make(wp, move, message, fields_of(wp))

    def _make(
        self, wp: WpRow, move: transitions.Move, message: str | None, fields: dict[str, object]
    ) -> None:
        """The checked move `move` for `wp`: its state and fields in the database and in `wp`, its
        event."""
        changes = {
            key: dict(value) if isinstance(value, dict) else value  # no dict shared between rows
            for key, value in {**move.resets, **fields}.items()
        }
        self._write(wp.id, changes, state=move.target)
        if move.always_record or wp.state != move.target:
            self.event(
                wp.id,
                move.event_kind,
                str(fields.get("reason", "")) if message is None else message,
            )
        wp.state = move.target
        for field_name, value in changes.items():
            if hasattr(wp, field_name):
                setattr(wp, field_name, value)

    def interrupt_running(self, reason: str, recorded: Iterable[int] = ()) -> None:
        """Move every running workpackage to open (the move "interrupt": bench is stopping), in one
        statement that needs nothing read first; events for the ids `recorded` (whose scripts bench
        ended)."""
        move = transitions.MOVES["interrupt"]
        self._write_gathered()
        for wp_id in recorded:
            self.event(wp_id, move.event_kind, reason)
        self.db.execute(
            f"UPDATE workpackages SET state=?, reason=? WHERE state IN "
            f"({','.join('?' * len(move.sources))})",
            (move.target, reason, *sorted(move.sources)),
        )

    # `fields`: column -> its Python value (env a mapping of text, wait_files a list), encoded below
    def _write(self, wp_id: int, fields: dict[str, Any], state: str | None = None) -> None:
        """Columns of one workpackage; its `state` only from `move`."""
        _refuse_not_updatable(fields)
        if state is not None:
            fields = {"state": state, **fields}
        values = [self._column_value(name, value) for name, value in fields.items()]
        if (
            self._gathered is not None
        ):  # inside a batch: written at its end, each column's last value
            self._gathered.columns.setdefault(wp_id, {}).update(zip(fields, values, strict=True))
            return
        sets = ", ".join(f"{name}=?" for name in fields)
        self.db.execute(f"UPDATE workpackages SET {sets} WHERE id=?", (*values, wp_id))

    def _column_value(self, name: str, value: Any) -> Any:
        """A column's value as stored: the environment and the wait files as JSON."""
        if name == "env":
            return self._env_text(value) if value is not None else None
        if name == "wait_files":
            return json.dumps(value) if value else ""
        return value

    def _env_text(self, env: dict[str, str]) -> str:
        """`env` as JSON, without its secrets (caramel.redact.environment: a run folder is shared
        and copied). The workpackages of a step carry the same environment (bench's own, a few
        parameters): one written just before is not encoded again (a thousand times 3 kB of
        JSON)."""
        if env != self._last_env[0]:
            kept = redact.environment(env, current().secret_patterns)
            self._last_env = (dict(env), json.dumps(kept))
        return self._last_env[1]

    def event(self, wp_id: int | None, kind: str, message: str = "") -> None:
        row = (time.time(), wp_id, kind, message)
        if self._gathered is not None:
            self._gathered.events.append(row)
        else:
            self.db.execute("INSERT INTO events (time, wp, kind, message) VALUES (?,?,?,?)", row)

    def add_commands(self, rows: Iterable[CommandRow]) -> None:
        values = [
            (
                r.wp,
                r.attempt,
                r.cycle,
                r.op,
                r.role,
                r.command,
                r.cwd,
                r.exit_code,
                r.started,
                r.ended,
            )
            for r in rows
        ]
        if self._gathered is not None:
            self._gathered.commands += values
        else:
            self._insert_commands(values)

    def _insert_commands(self, values: Sequence[SqlValues]) -> None:
        if values:
            self.db.executemany(
                "INSERT INTO commands (wp, attempt, cycle, op, kind, command, cwd, exit_code, "
                "started, ended) VALUES (?,?,?,?,?,?,?,?,?,?)",
                values,
            )

    # --- shared operations ----------------------------------------------------------------------
    def set_shared_state(self, step: str, cycle: int, op: int, state: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO shared_ops VALUES (?,?,?,?,?)",
            (step, cycle, op, state, time.time()),
        )

    def take_running_shared(self) -> set[tuple[str, int, int]]:
        """The shared do's (step, cycle, op) a bench was running when it died, forgotten here: the
        engine reads from their shells' records whether they ended (call inside a transaction)."""
        self._write_gathered()
        running = {
            (step, cycle, op)
            for step, cycle, op in self.db.execute(
                "SELECT step, cycle, op FROM shared_ops WHERE state='running'"
            )
        }
        self.db.execute("DELETE FROM shared_ops WHERE state='running'")
        return running

    def clear_shared(self, step: str) -> None:
        self.db.execute("DELETE FROM shared_ops WHERE step=?", (step,))


def _refuse_not_updatable(fields: dict[str, Any]) -> None:
    bad = set(fields) - UPDATABLE
    if bad:
        raise ValueError(
            f"not updatable: {bad}"
            + (" (a state changes through Store.move)" if "state" in bad else "")
        )


def _planned_values(row: PlannedRow) -> tuple[object, ...]:
    """A planned workpackage's columns as stored: parents as a list of ids, params as JSON."""
    wp_id, step, it, parents, dirname, params = row
    return (
        wp_id,
        step,
        it,
        ",".join(map(str, parents)),
        dirname,
        json.dumps(params),
        json.dumps(params.types, sort_keys=True),
        json.dumps(params.cycles) if params.cycles else "",
    )


def _write_plan(db: Guarded, info: RunInfo, model: Benchmark, rows: Iterable[PlannedRow]) -> None:
    """The schema, the run, its model and its workpackages, in one transaction."""
    db.execute("BEGIN")
    for statement in (text for text in SCHEMA.split(";") if text.strip()):
        db.execute(statement)
    db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            info.run_id,
            info.benchmark,
            info.file,
            info.home,
            info.run_dir,
            json.dumps(info.tags),
            info.cwd,
            info.created,
            json.dumps(info.settings),
            info.version,
            SCHEMA_VERSION,
            encode_model(model),
        ),
    )
    db.executemany(
        "INSERT INTO workpackages (id, step, iteration, parents, dirname, params, types, "
        "cycles) VALUES (?,?,?,?,?,?,?,?)",
        (_planned_values(row) for row in rows),
    )
    db.execute(
        "INSERT INTO events (time, wp, kind, message) VALUES (?,?,?,?)",
        (time.time(), None, "run", f"run {info.run_id:06d} of {info.benchmark} created"),
    )
    db.execute("COMMIT")
