"""The run record's layout: its tables (`SCHEMA`, with its version) and the rows read from them.

state.store reads and writes these; everything else that needs a run's rows imports them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from caramel.vocabulary import Role, WaitKind, WpState

_STATES = {state.value: state for state in WpState}
_WAIT_KINDS = {kind.value: kind for kind in WaitKind}
_ROLES = {role.value: role for role in Role}

# 3: each workpackage's params carry their declared types and per-cycle texts (expand.params);
# 2: the model is typed JSON (state.codec); 1 (caramel before 0.x hardening) held a pickle, never
# read.
SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, benchmark TEXT, file TEXT, home TEXT, run_dir TEXT, tags TEXT,
    cwd TEXT, created REAL, settings TEXT, version TEXT, schema INTEGER, model TEXT);
CREATE TABLE workpackages (
    id INTEGER PRIMARY KEY, step TEXT NOT NULL, iteration INTEGER NOT NULL, parents TEXT NOT NULL,
    dirname TEXT NOT NULL, params TEXT NOT NULL, types TEXT NOT NULL DEFAULT '{}',\
 cycles TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'open', reason TEXT NOT NULL DEFAULT '', exit_code INTEGER,
    job_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL DEFAULT 0, started REAL, ended REAL,
    cycle INTEGER NOT NULL DEFAULT 0, wait_op INTEGER NOT NULL DEFAULT -1,\
 wait_kind TEXT NOT NULL DEFAULT '',
    wait_files TEXT NOT NULL DEFAULT '', wait_since REAL, env TEXT);
CREATE TABLE commands (
    id INTEGER PRIMARY KEY, wp INTEGER, attempt INTEGER, cycle INTEGER, op INTEGER, kind TEXT,
    command TEXT, cwd TEXT, exit_code INTEGER, started REAL, ended REAL);
CREATE INDEX commands_wp ON commands(wp);
CREATE TABLE events (id INTEGER PRIMARY KEY, time REAL, wp INTEGER, kind TEXT, message TEXT);
CREATE TABLE shared_ops (step TEXT, cycle INTEGER, op INTEGER, state TEXT, ended REAL,
    PRIMARY KEY (step, cycle, op));
"""


@dataclass
class RunInfo:
    """What a run is: which benchmark, from which file and folder, with which settings."""

    run_id: int
    benchmark: str
    file: str
    home: str
    run_dir: str
    tags: list[str] = field(default_factory=list)
    cwd: str = ""
    created: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)  # the run's settings, as JSON read them
    version: str = ""


@dataclass
class WpRow:
    """A workpackage's scheduling state (its parameters and environment are read on demand)."""

    id: int
    step: str
    iteration: int
    parents: tuple[int, ...]
    dirname: str
    state: WpState = WpState.OPEN
    reason: str = ""
    exit_code: int | None = None
    job_id: str = ""
    attempt: int = 0
    started: float | None = None
    ended: float | None = None
    cycle: int = 0
    wait_op: int = -1
    wait_kind: WaitKind = WaitKind.NONE
    wait_files: dict[str, str] = field(default_factory=dict)
    wait_since: float | None = None

    def __post_init__(self) -> None:  # the words as the run record holds them (text) made members
        try:  # a dict lookup: WpState(text) costs microseconds, and a run reads thousands of rows
            self.state, self.wait_kind = _STATES[self.state], _WAIT_KINDS[self.wait_kind]
        except KeyError as exc:
            raise ValueError(
                f"workpackage {self.id}: {exc.args[0]!r} is not a state or wait kind"
            ) from None


# an event of the run record: (time, workpackage or None for the run's own, kind, message)
EventRow = tuple[float, int | None, str, str]


@dataclass
class CommandRow:
    wp: int | None
    attempt: int
    cycle: int
    op: int
    role: Role  # column `kind`

    def __post_init__(self) -> None:
        self.role = _ROLES.get(self.role) or Role(self.role)

    command: str
    cwd: str
    exit_code: int | None
    started: float | None
    ended: float | None


# The workpackages columns `Store.workpackages` reads: WpRow's fields by name, in their order, so a
# row is a WpRow's arguments (the table's own column order does not matter).
WP_COLUMNS = ", ".join(f.name for f in fields(WpRow))
# A workpackage's state changes only through `Store.move` (state.transitions), never `Store.update`.
UPDATABLE = {
    "reason",
    "exit_code",
    "job_id",
    "attempt",
    "started",
    "ended",
    "cycle",
    "wait_op",
    "wait_kind",
    "wait_files",
    "wait_since",
    "env",
}
