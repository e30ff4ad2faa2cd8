"""A run state deleted while the run ran (a do's `rm -f caramel.db*`, a cleanup script) is written
again.

SQLite keeps writing to the file it opened, even once its name is gone: bench still holds the whole
run, only the folder has lost it, and the run would end "holding no caramel run". So when bench
closes a run's state it checks that `<run>/caramel.db` is still the file it opened (device and
inode); when it is not, it writes what it holds back under that name (SQLite's backup, into a
temporary file renamed into place, stale `-wal`/`-shm` files removed first so none is applied to
it) and says so in one warning. A run folder deleted as a whole cannot be written again: that is an
error naming the folder. If bench itself dies after the deletion, the run state is lost (the
shells' records of each do's end stay, but the plan went with the file).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys

from caramel.errors import RunError
from caramel.stages.state import sqlitefiles
from caramel.stages.state.store import WHOLE_RUN_STATE, Store, db_path


def identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def close_keeping(
    store: Store, run_dir: str, opened: tuple[int, int] | None, quiet: bool = False
) -> None:
    """Close `store`; if its file is no longer at `<run_dir>/caramel.db`, write it there again
    first."""
    path = db_path(run_dir)
    if opened is None or identity(path) == opened:
        store.settle_journal()
        store.close()
        return
    if not os.path.isdir(run_dir):
        store.close()
        raise RunError(
            f"the run folder {run_dir} was deleted while the run ran: nothing of the run is kept",
            hint="a do (or a cleanup) removed it; start the run again",
        )
    temporary = path + ".restoring"
    try:
        copy = sqlitefiles.open_connection(temporary, WHOLE_RUN_STATE)
        try:
            store.db.connection.backup(copy)  # dbfile.Guarded wraps the connection
        finally:
            copy.close()
        store.close()
        for stale in (path + "-wal", path + "-shm", path + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        os.replace(temporary, path)
    except (OSError, sqlite3.Error) as exc:
        with contextlib.suppress(Exception):
            store.close()
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise RunError(
            f"the run state {path} was deleted while the run ran and could not be written again: "
            f"{exc}",
            hint="a do (or a cleanup) removed it; start the run again",
        ) from None
    if not quiet:
        print(
            f"warning: the run state {path} was deleted while the run ran (by a do?); bench wrote "
            "it again "
            "from what it held",
            file=sys.stderr,
        )
