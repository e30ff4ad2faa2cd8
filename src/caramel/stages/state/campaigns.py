"""Campaigns: the runs one `bench run --suite` started, under one id.

A small SQLite file of its own (`campaigns.db` in the user's data folder, next to the run
registry), so the run store needs no new field: a campaign is its id, the folder it was started
from, the suite tags and system tags, and its runs in the order they were started.
"""

from __future__ import annotations

import os
import time
import uuid

from caramel.errors import RunError
from caramel.stages.state import sqlitefiles
from caramel.stages.state.dbfile import Guarded
from caramel.stages.state.registry import data_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (id TEXT PRIMARY KEY, cwd TEXT, suite TEXT, tags TEXT,\
 created REAL);
CREATE TABLE IF NOT EXISTS campaign_runs (campaign TEXT, position INTEGER, run_dir TEXT,\
 benchmark TEXT,
                                          PRIMARY KEY (campaign, position));
CREATE TABLE IF NOT EXISTS campaign_failures (campaign TEXT, benchmark TEXT, file TEXT, error TEXT);
"""


CAMPAIGN_LIST = sqlitefiles.FileKind("campaign list", timeout_s=10)


def _connect() -> Guarded:
    """The campaign list; its errors name the file (state.dbfile)."""
    folder = data_dir()
    os.makedirs(folder, exist_ok=True)
    db = sqlitefiles.connect(os.path.join(folder, "campaigns.db"), CAMPAIGN_LIST)
    db.executescript(SCHEMA)
    return db


def new_campaign(cwd: str, suite: list[str], tags: list[str]) -> str:
    """A new campaign's id: its date and a short random part (`20261123-0107-3f9a`)."""
    campaign = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]
    with _connect() as db:
        db.execute(
            "INSERT INTO campaigns VALUES (?,?,?,?,?)",
            (campaign, os.path.abspath(cwd), " ".join(suite), " ".join(tags), time.time()),
        )
    db.close()
    return campaign


def add_run(campaign: str, run_dir: str, benchmark: str) -> None:
    with _connect() as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM campaign_runs WHERE campaign=?", (campaign,)
        ).fetchone()
        db.execute(
            "INSERT INTO campaign_runs VALUES (?,?,?,?)",
            (campaign, count, os.path.abspath(run_dir), benchmark),
        )
    db.close()


def add_failure(campaign: str, benchmark: str, file: str, error: str) -> None:
    """A member of the campaign that has no run: its file could not be read (or its run not
    made)."""
    with _connect() as db:
        db.execute(
            "INSERT INTO campaign_failures VALUES (?,?,?,?)",
            (campaign, benchmark, os.path.abspath(file), error),
        )
    db.close()


def failures(campaign: str) -> list[tuple[str, str, str]]:
    """(benchmark, file, error) of each member that has no run, in the order they were recorded."""
    with _connect() as db:
        rows = db.execute(
            "SELECT benchmark, file, error FROM campaign_failures WHERE campaign=? ORDER BY rowid",
            (campaign,),
        ).fetchall()
    db.close()
    return [tuple(r) for r in rows]


def resolve_campaign(name: str, cwd: str | None = None) -> tuple[str, list[str]]:
    """(campaign id, its run folders) for `ID` or `last` (the newest started from `cwd`)."""
    cwd = os.path.abspath(cwd or os.getcwd())
    with _connect() as db:
        campaign = _last_campaign(db, cwd) if name == "last" else _named_campaign(db, name)
        runs = [
            r[0]
            for r in db.execute(
                "SELECT run_dir FROM campaign_runs WHERE campaign=? ORDER BY position", (campaign,)
            )
        ]
    db.close()
    return campaign, [r for r in runs if os.path.isdir(r)]


def _last_campaign(db: Guarded, cwd: str) -> str:
    row = db.execute(
        "SELECT id FROM campaigns WHERE cwd=? ORDER BY created DESC LIMIT 1", (cwd,)
    ).fetchone()
    if row is None:
        raise RunError(
            f"no campaign was started from {cwd}",
            hint="bench run --suite TAG --tag SYSTEM starts one; or give its id: -c ID",
        )
    return str(row[0])


def _named_campaign(db: Guarded, name: str) -> str:
    """The campaign whose id is `name` or ends in it."""
    row = db.execute(
        "SELECT id FROM campaigns WHERE id=? OR id LIKE ?", (name, f"%{name}")
    ).fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT id FROM campaigns ORDER BY created DESC LIMIT 5")]
        raise RunError(
            f"no campaign '{name}'",
            hint="recent campaigns: " + (", ".join(known) if known else "none"),
        )
    return str(row[0])
