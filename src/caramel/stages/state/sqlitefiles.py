"""The one place caramel opens an SQLite file: the run state, the analysis cache, the run
registry, the campaign list, the histories (the spool's too), the sink queue and a benchmark's
result databases.

Each file's owner describes it once as a `FileKind` (what errors call it, how long a lock is waited
for, its journal, its transactions) and opens it here, so every file is opened the same way:

- by a `file:` URI of its absolute path, percent-quoted (`urllib.parse.quote`): a folder named
  `a#b%41?c` is that folder, never `a` followed by a fragment or a query (SQLite reads `#`, `?` and
  `%HH` in a URI), and `mode=ro` stays a mode that no path can cut off (a read-only open never makes
  a file);
- read-only (`readonly=True`: `status`, `info`, `log`, `result` of a run folder the reader may not
  write: another user's, a read-only or snapshot mount) without writing anything: SQLite opens a
  file in WAL mode read-only only where it can make the `-shm` index beside it
  (sqlite.org/wal.html, "Read-Only Databases"), so a WAL file whose log is empty or gone (its
  writer closed it) is opened `immutable=1` when the plain open is refused; a run's state goes
  back to the rollback journal when its run ends (`leave_wal`), which any reader opens;
- with its busy timeout (`FileKind.timeout_s`, else `CARAMEL_DB_TIMEOUT`);
- with its journal: the rollback journal as the file has it, or the one its filesystem allows
  (`Journal.BY_FILESYSTEM`: WAL on a local disk, the rollback journal on a filesystem shared between
  hosts or one refusing WAL's shared memory map; state.sharedfs tells which);
- through `connect`, with every SQLite error a `StorageError` naming the file (in state.dbfile's
  words); `open_connection` gives the bare sqlite3 connection to the few owners that handle
  SQLite's errors themselves (a cache that is only best effort, a reader with its own messages).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import urllib.parse
from dataclasses import dataclass
from enum import Enum

from caramel.stages.state import sharedfs
from caramel.stages.state.dbfile import (
    Guarded,
    busy_timeout,
    create_private,
    problem,
    storage_error,
)

_NOTED: set[str] = set()  # files whose fallback to the rollback journal was told (once a process)
# Bytes 18 and 19 of an SQLite file (its write and read versions) are 2 in WAL mode, 1 in rollback
# mode (sqlite.org/fileformat2.html, "The Database Header")
_HEADER_VERSIONS = slice(18, 20)
_WAL_VERSIONS = b"\x02\x02"


class Journal(Enum):
    """The journal a file opened for writing gets."""

    ROLLBACK = "rollback"  # SQLite's rollback journal (or what the file holds)
    BY_FILESYSTEM = "by filesystem"  # WAL where the filesystem allows it (state.sharedfs)


@dataclass(frozen=True)
class FileKind:
    """How one of the SQLite files caramel keeps is opened."""

    what: str  # what the errors call it: "run state", "history"...
    timeout_s: float | None = None  # how long a lock is waited for; None: CARAMEL_DB_TIMEOUT
    journal: Journal = Journal.ROLLBACK
    autocommit: bool = False  # the owner's BEGIN/COMMIT are the transactions (isolation_level=None)
    any_thread: bool = False  # one connection used by several threads (the engine's workers)


def uri(path: str, readonly: bool = False, immutable: bool = False) -> str:
    """The `file:` URI of `path`: its absolute path percent-quoted (the bytes the OS has), then the
    mode (`ro`: never made, never written; `rwc`: made when missing, as a plain open); `immutable`
    (read-only only): SQLite takes no lock and makes no `-shm`, the file being one nobody writes."""
    quoted = urllib.parse.quote(os.fsencode(os.path.abspath(path)))
    if readonly:
        return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")
    return f"file:{quoted}?mode=rwc"


def _sqlite(
    path: str,
    timeout_s: float,
    readonly: bool = False,
    autocommit: bool = True,
    any_thread: bool = False,
    immutable: bool = False,
) -> sqlite3.Connection:
    """The only `sqlite3.connect` of caramel; a file it makes is its owner's alone
    (create_private)."""
    if not readonly:
        create_private(path)
    return sqlite3.connect(
        uri(path, readonly, immutable),
        uri=True,
        timeout=timeout_s,
        isolation_level=None if autocommit else "DEFERRED",
        check_same_thread=not any_thread,
    )


def _open_readonly(path: str, timeout_s: float, kind: FileKind) -> sqlite3.Connection:
    """A read-only connection to `path` that writes nothing beside it. A file in WAL mode whose
    `-shm` index this process cannot make (a folder it may not write) is refused by SQLite's plain
    read-only open; when its log holds nothing (`-wal` gone or empty: every commit is in the file)
    it is read as immutable instead: the same content, no index, no lock. A log that holds commits
    still needs its index: then SQLite's error stands."""
    db = _sqlite(path, timeout_s, True, kind.autocommit, kind.any_thread)
    if not _wal_marked(path):
        return db
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchall()  # maps the index, or fails
        return db
    except sqlite3.OperationalError as exc:
        db.close()
        if problem(exc) != "readonly" or _log_holds_commits(path):
            raise
    return _sqlite(path, timeout_s, True, kind.autocommit, kind.any_thread, immutable=True)


def _wal_marked(path: str) -> bool:
    """Whether the SQLite file `path` is in WAL mode (its header says so)."""
    try:
        with open(path, "rb") as file:
            header = file.read(_HEADER_VERSIONS.stop)
    except OSError:
        return False
    return header[_HEADER_VERSIONS] == _WAL_VERSIONS


def _log_holds_commits(path: str) -> bool:
    """Whether the WAL log of `path` may hold commits not yet in the file (it is there, not
    empty)."""
    try:
        return os.path.getsize(path + "-wal") > 0
    except OSError:
        return False


def leave_wal(db: sqlite3.Connection) -> bool:
    """Put the file of `db` (its only connection, in no transaction) back to the rollback journal:
    its log is copied into it and removed, and a reader that may not write its folder opens it
    read-only as any file. Best effort: False when another connection holds it (a reader: the file
    stays in WAL, which `_open_readonly` reads too) or SQLite refuses."""
    try:
        db.execute("PRAGMA busy_timeout=1000")  # a reader's snapshot: not waited for long
        return str(db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower() == "delete"
    except sqlite3.Error:
        return False


def open_connection(
    path: str, kind: FileKind, readonly: bool = False, timeout_s: float | None = None
) -> sqlite3.Connection:
    """The sqlite3 connection to `path`, a file of `kind` (`timeout_s`: this call's lock wait
    instead of the kind's). Its errors are SQLite's (sqlite3.Error): `connect` turns them into
    errors naming the file. A file whose journal is chosen by its filesystem gets it first; in WAL,
    synchronous=NORMAL (a commit survives the crash of bench itself, not a power loss, without an
    fsync per change)."""
    timeout_s = _lock_wait(kind, timeout_s)
    if readonly:
        return _open_readonly(path, timeout_s, kind)
    by_filesystem = kind.journal is Journal.BY_FILESYSTEM
    journal = set_journal(path, kind.what, timeout_s) if by_filesystem else ""
    db = _sqlite(path, timeout_s, False, kind.autocommit, kind.any_thread)
    try:
        _apply_journal(db, journal)
    except BaseException:
        db.close()
        raise
    return db


def _lock_wait(kind: FileKind, timeout_s: float | None) -> float:
    """The call's lock wait, else the kind's, else the settings' busy timeout."""
    if timeout_s is not None:
        return timeout_s
    return kind.timeout_s if kind.timeout_s is not None else busy_timeout()


def _apply_journal(db: sqlite3.Connection, journal: str) -> None:
    """The journal mode on the connection ('' : SQLite's own); in WAL, synchronous=NORMAL."""
    if not journal:
        return
    db.execute(f"PRAGMA journal_mode={journal}").fetchall()
    if journal == "wal":
        db.execute("PRAGMA synchronous=NORMAL")


def connect(
    path: str,
    kind: FileKind,
    after: str = "",
    readonly: bool = False,
    timeout_s: float | None = None,
) -> Guarded:
    """`open_connection`, with every SQLite error (opening included) a `StorageError` naming the
    file and, `after`, how to go on once its cause is gone."""
    try:
        connection = open_connection(path, kind, readonly, timeout_s)
    except sqlite3.Error as exc:
        raise storage_error(path, exc, kind.what, after) from None
    return Guarded(connection, path, kind.what, after)


def set_journal(path: str, what: str = "run state", timeout: float = 10.0) -> str:
    """Put the SQLite file `path` (made if missing) in its journal mode (`sharedfs.chosen_journal`)
    before it is opened; returns the mode in force. Where the shared-memory file of WAL cannot be
    mapped (probed first, and caught if WAL fails all the same) the file gets the rollback journal,
    with a one-line notice on stderr (once a process); other errors propagate (sqlite3.Error). `wal`
    and `delete` are kept in the file; `truncate` and `persist` are set again on each connection
    (`open_connection` does)."""
    mode, _why = sharedfs.chosen_journal(path)
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if mode != "wal":
        _leave_wal(path, mode, timeout)
        return mode
    if _map_refused(folder):
        _leave_wal(path, "delete", timeout)
    elif _try_wal(path, timeout):
        return "wal"
    else:
        _leave_wal(path, "delete", timeout)
        _remove_wal_leftovers(path)
    _note_rollback(path, what, folder)
    return "delete"


def _map_refused(folder: str) -> bool:
    """WAL by default (not asked for) where the filesystem refuses the shared memory map."""
    return sharedfs.requested_journal() is None and not sharedfs.maps_shared(folder)


def _remove_wal_leftovers(path: str) -> None:
    """After a WAL attempt that failed: the index nobody could map, and an empty log."""
    for leftover in (path + "-shm", path + "-wal"):
        with contextlib.suppress(OSError):
            if leftover.endswith("-shm") or os.path.getsize(leftover) == 0:
                os.unlink(leftover)


def _note_rollback(path: str, what: str, folder: str) -> None:
    """The one-line notice (once a process per file) that a file uses a rollback journal."""
    if path in _NOTED:
        return
    _NOTED.add(path)
    print(
        f"note: the {what} {path} uses a rollback journal: its filesystem "
        f"({sharedfs.filesystem(folder).name}) refuses the shared memory map SQLite's WAL "
        "needs",
        file=sys.stderr,
    )


def _try_wal(path: str, timeout: float) -> bool:
    """Whether `path` works in WAL mode (False: its -shm index cannot be mapped)."""
    db = _sqlite(path, timeout)
    try:
        db.execute("PRAGMA journal_mode=WAL").fetchall()
        # maps the -shm file: fails here if refused
        db.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return True
    except sqlite3.OperationalError as exc:
        if "i/o" not in str(exc).lower():
            raise
        return False
    finally:
        db.close()


def _leave_wal(path: str, mode: str, timeout: float) -> None:
    """Set `mode` on a file that may hold the WAL mark already (made on a local disk, then moved, or
    marked by a WAL attempt that failed). A connection in exclusive locking mode from its first
    access reads a WAL file without the shared-memory index, so the switch works where the index
    cannot be mapped; on a file in rollback mode already it is a plain switch."""
    db = _sqlite(path, timeout)
    try:
        current = db.execute("PRAGMA journal_mode").fetchone()[0]
        # a WAL mark fails here where -shm is refused
        db.execute("SELECT count(*) FROM sqlite_master").fetchall()
        if current == mode:
            return
    except sqlite3.OperationalError:
        current = "wal"  # the WAL mark, and an index that cannot be mapped
    finally:
        db.close()
    db = _sqlite(path, timeout)
    try:
        if current == "wal":
            db.execute("PRAGMA locking_mode=EXCLUSIVE").fetchall()
        db.execute(f"PRAGMA journal_mode={mode}").fetchall()
    finally:
        db.close()
