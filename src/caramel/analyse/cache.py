"""Analysed values kept between `bench result` calls: `<run dir>/analyse.db` (SQLite).

Table `analysis`: one row per analyser and result group (root workpackage): the signature of the
files read (path, size, modification time in ns, in reading order) and the values computed from
them. A group is analysed again when its signature changes (a log grew, a job finished, a file
appeared) or when the analyser's definition (`config`) differs.

Table `tables`: the finished tables of the last calls, keyed by everything they depend on
(definitions, every group's signature, every workpackage's state), so a call on an unchanged run
costs only the stats of its files.

The run's own `caramel.db` is not touched: the engine owns it, and a result may be made while the
run goes on.

The cached values are pickles, each sealed with an HMAC-SHA256 under a key only this user can read
(`<data dir>/cache.key`, mode 0600): a run folder may sit in a shared project folder, and an
`analyse.db` written by anyone else (or damaged) fails the check and is a miss, never unpickled.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import pickle
import sqlite3
import time

from caramel.state.dbfile import problem
from caramel.state.registry import data_dir

SCHEMA = ("CREATE TABLE IF NOT EXISTS analysis (analyser TEXT NOT NULL, root INTEGER NOT NULL, config TEXT NOT NULL, "
          "signature BLOB NOT NULL, data BLOB NOT NULL, PRIMARY KEY (analyser, root));"
          "CREATE TABLE IF NOT EXISTS tables (key TEXT PRIMARY KEY, created REAL, data BLOB)")
KEEP_TABLES = 4  # finished tables kept (one per combination of options used lately)


class AnalysisCache:
    """Best effort: a cache that cannot be read or written is simply not used."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None
        if path and os.path.isdir(os.path.dirname(path) or "."):
            for _attempt in range(2):
                try:
                    self.db = sqlite3.connect(path, timeout=10, isolation_level=None)
                    self.db.execute("PRAGMA journal_mode=WAL")
                    for statement in SCHEMA.split(";"):
                        self.db.execute(statement)
                    break
                except sqlite3.Error as exc:
                    self.close()
                    if problem(exc) != "damaged":
                        break  # full, read-only, locked: not used this time
                    _remove(path)  # damaged (it is only a cache): made again

    def load(self, analyser: str, config: str) -> dict[int, tuple[bytes, bytes]]:
        """root -> (signature, data) of the groups cached for this analyser definition."""
        if self.db is None:
            return {}
        try:
            rows = self.db.execute("SELECT root, signature, data FROM analysis WHERE analyser=? AND config=?",
                                   (analyser, config)).fetchall()
        except sqlite3.Error:
            return {}
        return {root: (sig, data) for root, sig, data in rows}

    def store(self, analyser: str, config: str, entries: list[tuple[int, bytes, bytes]]) -> None:
        if self.db is None or not entries:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM analysis WHERE analyser=? AND config<>?", (analyser, config))
            self.db.executemany("INSERT OR REPLACE INTO analysis VALUES (?,?,?,?,?)",
                                ((analyser, root, config, sig, data) for root, sig, data in entries))
            self.db.execute("COMMIT")
        except sqlite3.Error:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def load_tables(self, key: str):
        """Finished tables made from exactly this state of the run (see report.results), or None."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT data FROM tables WHERE key=?", (key,)).fetchone()
            return loads(row[0]) if row else None
        except Exception:  # an unreadable entry is a miss
            return None

    def store_tables(self, key: str, data) -> None:
        if self.db is None:
            return
        try:
            self.db.execute("INSERT OR REPLACE INTO tables VALUES (?,?,?)", (key, time.time(), dumps(data)))
            self.db.execute("DELETE FROM tables WHERE key NOT IN (SELECT key FROM tables ORDER BY created DESC "
                            "LIMIT ?)", (KEEP_TABLES,))
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _remove(path: str) -> None:
    for name in (path, path + "-wal", path + "-shm"):
        with contextlib.suppress(OSError):
            os.unlink(name)


class Unsealed(ValueError):
    """A cached value without this user's seal: not read."""


_KEY: bytes | None = None
_DIGEST = 32


def _key() -> bytes:
    """This user's cache key, made on first use (a random key per process when none can be kept)."""
    global _KEY
    if _KEY is None:
        path = os.path.join(data_dir(), "cache.key")
        try:
            with open(path, "rb") as handle:
                _KEY = handle.read()
        except OSError:
            _KEY = b""
        if len(_KEY) < 32:
            _KEY = os.urandom(32)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_KEY)
            except OSError:
                pass  # a read-only home: the cache lives as long as this bench
    return _KEY


def dumps(obj) -> bytes:
    blob = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return hmac.new(_key(), blob, hashlib.sha256).digest() + blob


def loads(sealed: bytes):
    """The value of a sealed blob; Unsealed when its seal is not this user's (then it is not unpickled)."""
    if not isinstance(sealed, bytes) or len(sealed) < _DIGEST:
        raise Unsealed("not a sealed value")
    seal, blob = sealed[:_DIGEST], sealed[_DIGEST:]
    if not hmac.compare_digest(seal, hmac.new(_key(), blob, hashlib.sha256).digest()):
        raise Unsealed("sealed by someone else")
    return pickle.loads(blob)
