"""Which run a command means: `-i ID|last` and an optional run or outpath directory.

`bench run` records each new run in a small SQLite registry in the user's data folder
(`$CARAMEL_DATA_DIR`, else `$XDG_DATA_HOME/caramel`, else `~/.local/share/caramel`), keyed by the
folder it was called from; so `bench continue -i last` with no directory finds the run started
from the current folder.
"""

from __future__ import annotations

import os
import sqlite3
import time

from caramel.errors import RunError
from caramel.settings import current
from caramel.stages.state import identity, sqlitefiles
from caramel.stages.state.store import is_run_dir

KEEP = 200  # runs remembered per folder
RUN_REGISTRY = sqlitefiles.FileKind("run registry", timeout_s=10)  # best effort: errors are let go


def data_dir() -> str:
    return current().data_dir


def _connect() -> sqlite3.Connection:
    folder = data_dir()
    os.makedirs(folder, exist_ok=True)
    db = sqlitefiles.open_connection(os.path.join(folder, "runs.db"), RUN_REGISTRY)
    db.execute(
        "CREATE TABLE IF NOT EXISTS runs (run_dir TEXT PRIMARY KEY, cwd TEXT, benchmark TEXT, "
        "run_id INTEGER, created REAL)"
    )
    return db


def remember(run_dir: str, cwd: str, benchmark: str, run_id: int) -> None:
    """Best effort: a read-only home folder must not stop a run."""
    try:
        with _connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?)",
                (os.path.abspath(run_dir), os.path.abspath(cwd), benchmark, run_id, time.time()),
            )
            db.execute(
                "DELETE FROM runs WHERE cwd=? AND run_dir NOT IN (SELECT run_dir FROM runs WHERE "
                "cwd=? ORDER BY created DESC LIMIT ?)",
                (os.path.abspath(cwd), os.path.abspath(cwd), KEEP),
            )
        db.close()
    except (OSError, sqlite3.Error):
        pass


def forget(run_dir: str) -> None:
    try:
        with _connect() as db:
            db.execute("DELETE FROM runs WHERE run_dir=?", (os.path.abspath(run_dir),))
        db.close()
    except (OSError, sqlite3.Error):
        pass


def recent(cwd: str) -> list[tuple[str, int]]:
    """(run dir, run id) of runs started from `cwd`, newest first (those still on disk)."""
    try:
        db = _connect()
        rows = db.execute(
            "SELECT run_dir, run_id FROM runs WHERE cwd=? ORDER BY created DESC",
            (os.path.abspath(cwd),),
        ).fetchall()
        db.close()
    except (OSError, sqlite3.Error):
        return []
    return [(d, i) for d, i in rows if is_run_dir(d)]


def runs_in(outpath: str) -> list[tuple[str, int]]:
    """(run dir, id) of the runs inside an outpath folder, lowest id first."""
    out = []
    try:
        names = os.listdir(outpath)
    except OSError:
        return []
    for name in names:
        path = os.path.join(outpath, name)
        if name.isdigit() and is_run_dir(path):
            out.append((path, int(name)))
    return sorted(out, key=lambda item: item[1])


def parse_id(text: str | None) -> int | None:
    """`last` (or nothing) is None; otherwise a run id."""
    if text is None or text == "last":
        return None
    try:
        return int(text)
    except ValueError:
        raise RunError(
            f"-i {text!r} is not a run id", hint="give a number (as shown by bench run) or last"
        ) from None


def resolve(directory: str | None, run_id: str | None, cwd: str | None = None) -> str:
    """The run directory meant by a DIR argument (run or outpath folder) and `-i ID|last`.

    `last` is the run made last: the highest id in an outpath, the newest entry of the registry,
    else the newest creation time the runs below `cwd` recorded (never a folder's mtime, which a
    `bench result` or a `cp -p` changes). A folder holding a caramel.db that is no proven run
    (state.identity) but holding runs is taken as their outpath."""
    wanted = parse_id(run_id)
    cwd = cwd or os.getcwd()
    found, where = _candidates(directory, cwd)
    if len(found) == 1 and found[0][1] < 0:  # DIR is a run folder
        if wanted is not None and os.path.basename(found[0][0]) != f"{wanted:06d}":
            raise RunError(f"{found[0][0]} is run {os.path.basename(found[0][0])}, not {wanted}")
        return found[0][0]
    return _pick(found[::-1], wanted, where)


def resolve_all(directory: str | None, run_ids: list[str], cwd: str | None = None) -> list[str]:
    """The run directories of JUBE's `-i ID ...` (jube/main.py, search_for_benchmarks): each ID a
    run id, `last`, `all` (every run there) or a negative position (-1 the last run, -2 the one
    before); in the order the runs were made, each once."""
    cwd = cwd or os.getcwd()
    found, where = _candidates(directory, cwd)
    if len(found) == 1 and found[0][1] < 0:  # DIR is a run folder: every ID must name it
        return [resolve(directory, text, cwd) for text in dict.fromkeys(run_ids)][:1]
    chosen = [path for text in run_ids for path in _named_by(text, found, where)]
    order = {path: place for place, (path, _id) in enumerate(found)}
    return sorted(dict.fromkeys(chosen), key=lambda path: order.get(path, -1))


def _named_by(text: str, found: list[tuple[str, int]], where: str) -> list[str]:
    """The runs one `-i` word names among `found` (oldest first): `all` every one, a negative
    position one from the end, an id or `last` the one."""
    if text == "all":
        return [path for path, _id in found]
    number = None if text == "last" else parse_id(text)
    if number is None or number >= 0:
        return [_pick(found[::-1], number, where)]
    if -number > len(found):
        raise RunError(
            f"-i {text}: {where} holds only {len(found)} runs",
            hint=f"-1 is the last run, -{len(found)} the first",
        )
    return [found[number][0]]


def _candidates(directory: str | None, cwd: str) -> tuple[list[tuple[str, int]], str]:
    """(run dir, id) of the runs DIR or `cwd` means, oldest first, and where they were looked for;
    a DIR that is a run folder itself is the one run, with id -1."""
    if directory:
        return _runs_of_folder(os.path.abspath(directory))
    found = recent(cwd) or _runs_below(cwd)
    if not found:
        raise RunError(
            f"no run was started from {cwd}",
            hint="start one here (bench run quickstart --tag local; bench benchmarks lists "
            "the others), or name the run folder or its outpath as DIR",
        )
    return found[::-1], cwd


def _runs_of_folder(directory: str) -> tuple[list[tuple[str, int]], str]:
    """A DIR argument's runs: itself (id -1) where it is a run folder, else those of the outpath."""
    if is_run_dir(directory) and (identity.is_proven(directory) or not runs_in(directory)):
        return [(directory, -1)], directory
    if not os.path.isdir(directory):
        raise RunError(
            f"{directory} does not exist", hint="give a run folder or the outpath holding runs"
        )
    found = runs_in(directory)
    if not found:
        raise RunError(
            f"{directory} holds no caramel run",
            hint="give a run folder or the outpath holding runs",
        )
    return found, directory


def _runs_below(cwd: str) -> list[tuple[str, int]]:
    """Without a registry entry (another machine, another data folder): the runs of the outpaths
    right below `cwd`, newest first by the creation time they recorded."""
    found: list[tuple[str, int]] = []
    for name in sorted(os.listdir(cwd)):
        found += runs_in(os.path.join(cwd, name))
    found.sort(key=lambda item: (identity.created(item[0]) or 0.0, item[1]), reverse=True)
    return found


def _pick(found: list[tuple[str, int]], wanted: int | None, where: str) -> str:
    if wanted is None:
        return found[0][0]
    for path, run_id in found:
        if run_id == wanted:
            return path
    raise RunError(
        f"no run {wanted} in {where}",
        hint="runs there: " + ", ".join(str(i) for _p, i in found[:10]),
    )
