"""Runs kept locally while their history cannot be written (a PostgreSQL server down, a password
refused, a database of another schema): one SQLite history per target in the user's data folder
(`history-spool/`), delivered once by `bench history push` (each run committed in the target,
then removed from the spool, so a push stopped halfway delivers the rest next time)."""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from caramel import redact
from caramel.consumers.history.store import History, upsert
from caramel.consumers.history.transfer import Copied, copy_runs


def spool_dir() -> str:
    from caramel.stages.state.registry import data_dir

    return os.path.join(data_dir(), "history-spool")


def spool_path(target: str) -> str:
    """The spool file of a history: named by the history (without its password) and a digest."""
    shown = redact.url(target)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", shown.split("@")[-1].split("://")[-1]).strip("-")[-40:]
    return os.path.join(spool_dir(), f"{slug}-{hashlib.sha1(shown.encode()).hexdigest()[:10]}.db")


def keep(target: str, add: Callable[[History], object]) -> tuple[str, History]:
    """Run `add` on the spool of `target` (naming the target inside it); returns the spool's path
    and the (closed) spool history, whose `written` holds what was added."""
    path = spool_path(target)
    with History(path) as spooled:
        with spooled.db:
            spooled.db.execute(
                upsert("meta", ("key", "value"), ("key",), True), ("target", redact.url(target))
            )
        add(spooled)
    return path, spooled


@dataclass
class Pending:
    path: str
    target: str  # the history it is for, without its password
    runs: int


def pending() -> list[Pending]:
    out = []
    for path in sorted(glob.glob(os.path.join(spool_dir(), "*.db"))):
        with History(path) as spooled:
            found = spooled.db.execute("SELECT value FROM meta WHERE key = 'target'").fetchone()
            out.append(Pending(path, found[0] if found else "", len(spooled.runs())))
    return out


def push(target: str) -> Copied | None:
    """Deliver the runs spooled for `target` (None when there are none); the spool file goes when
    empty."""
    path = spool_path(target)
    if not os.path.isfile(path):
        return None
    with History(path) as spooled, History(target) as history:
        copied = copy_runs(spooled, history, replace=True, after_each=spooled.remove)
        left = len(spooled.runs())
    if not left:
        os.remove(path)
    return copied
