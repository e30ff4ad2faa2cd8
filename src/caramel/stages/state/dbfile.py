"""SQLite files whose failures reach the user as errors naming the file and what to do.

A full disk, a read-only folder, a file locked by another process, a damaged, truncated or foreign
file: none of these is a bug in caramel. `Guarded` wraps a connection so that every SQLite error
becomes a `StorageError` (exit 2) saying which file, what is wrong with it and how to go on;
SQLite itself keeps what was committed before (a failed change is rolled back whole). Every SQLite
file is opened by state.sqlitefiles, which wraps its connections here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from caramel.errors import RunError


def busy_timeout() -> float:
    """How long a database locked by another process is waited for (seconds; caramel.settings)."""
    from caramel.settings import current

    return current().db_timeout


# OSErrors a disk or a user causes (never a bug): the CLI reports them as errors naming the file.
STORAGE_ERRNOS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EIO,
    errno.EFBIG,
    errno.ENOTDIR,
    errno.ENAMETOOLONG,
    errno.ELOOP,
    errno.EISDIR,
}


class StorageError(RunError):
    """A file caramel keeps its state in cannot be used."""


@dataclass(frozen=True)
class _Problem:
    """A problem an error names: by its errno, or by words of its message."""

    word: str
    codes: frozenset[int]
    fragments: tuple[str, ...]

    def named_by(self, code: object, text: str) -> bool:
        return code in self.codes or any(fragment in text for fragment in self.fragments)


# the first that an error names is its problem
_PROBLEMS = (
    _Problem("full", frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG}), ("full",)),
    _Problem("locked", frozenset(), ("locked", "busy")),
    _Problem(
        "readonly",
        frozenset({errno.EROFS, errno.EACCES, errno.EPERM}),
        ("readonly", "read-only", "unable to open", "permission"),
    ),
    _Problem("foreign", frozenset(), ("no such table", "no such column", "has no column")),
    _Problem("damaged", frozenset({errno.EIO}), ("not a database", "malformed", "disk i/o")),
)


def problem(exc: BaseException) -> str:
    """What an SQLite or OS error says about the file, in a word: full, locked, readonly, damaged,
    foreign."""
    text = str(exc).lower()
    code = getattr(exc, "errno", None)
    return next((p.word for p in _PROBLEMS if p.named_by(code, text)), "other")


def storage_error(path: str, exc: BaseException, what: str, after: str = "") -> StorageError:
    """The error for `exc` on file `path` (`what` it is: "run state", "history"...); `after` says
    how to go on once the cause is gone (e.g. "then `bench continue RUN` finishes the run")."""
    kind = problem(exc)
    then = f"; {after}" if after else ""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if kind == "full":
        return StorageError(
            f"cannot write the {what} {path}: the disk is full",
            hint=f"free space on the file system holding {folder} (df -h {folder}); nothing "
            f"recorded before was lost{then}",
        )
    if kind == "locked":
        return StorageError(
            f"the {what} {path} is locked by another process",
            hint=f"wait until it ends (fuser {path} shows which){then}",
        )
    if kind == "readonly":
        return StorageError(
            f"cannot write the {what} {path}: the file or its folder is read-only",
            hint=f"make them writable (chmod u+w {path} {folder}){then}",
        )
    if kind == "foreign":
        return StorageError(
            f"{path} is not a caramel {what} ({exc})",
            hint="it was written by another program or another caramel version; "
            "move it away or give the right file",
        )
    if kind == "damaged":
        return StorageError(f"the {what} {path} is damaged: {exc}", hint=_damaged_hint(what, path))
    return StorageError(
        f"cannot use the {what} {path}: {exc}", hint=f"check the file and its folder{then}"
    )


def _damaged_hint(what: str, path: str) -> str:
    if what == "analysis cache":
        return f"delete it (rm {path}): it is only a cache, bench result makes it again"
    if what == "history":
        return (
            f"move it away (mv {path} {path}.damaged): bench starts a new history; "
            f"sqlite3 {path} .recover may save the runs it held"
        )
    return (
        "the run's work folders are intact, but bench cannot read its state: start the run again "
        "(sqlite3 .recover may save the state)"
    )


class Guarded:
    """A sqlite3 connection whose errors are `StorageError`s naming its file."""

    def __init__(
        self, connection: sqlite3.Connection, path: str, what: str, after: str = ""
    ) -> None:
        self.connection = connection
        self.path = path
        self.what = what
        self.after = after

    def error(self, exc: BaseException) -> StorageError:
        return storage_error(self.path, exc, self.what, self.after)

    def execute(self, sql: str, args: Any = ()) -> sqlite3.Cursor:
        try:
            return self.connection.execute(sql, args)
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        try:
            return self.connection.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def executescript(self, sql: str) -> sqlite3.Cursor:
        try:
            return self.connection.executescript(sql)
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def commit(self) -> None:
        try:
            self.connection.commit()
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def rollback(self) -> None:
        try:
            self.connection.rollback()
        except sqlite3.Error:
            pass  # nothing was written; the error that led here is the one to report

    @property
    def in_transaction(self) -> bool:
        return self.connection.in_transaction

    @property
    def total_changes(self) -> int:
        return self.connection.total_changes

    def close(self) -> None:
        try:
            self.connection.close()
        except sqlite3.Error:
            pass

    def __enter__(self) -> Guarded:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """`with db:` commits on success, rolls back on an error (as sqlite3.Connection does)."""
        if kind is None:
            self.commit()
        else:
            self.rollback()


def create_private(path: str) -> None:
    """Make a new database file readable by its owner alone (settings.group_readable: and the
    group), before SQLite makes it with the umask's mode: a run state holds environments, a history
    the site's figures (docs/security.md, "Secrets"). SQLite gives its journal files the same
    mode."""
    from caramel.settings import current

    with contextlib.suppress(OSError):  # one there already; a folder not writable: SQLite says so
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        os.close(os.open(path, flags, current().file_mode))
