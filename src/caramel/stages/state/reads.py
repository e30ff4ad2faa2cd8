"""What the run state tells: reads of `<run dir>/caramel.db` (the run, its workpackages, their
commands and events). state.store's `Store` writes; it is a `RunReads` too, so one object does both.
A read that follows writes gathered by a `Store.batch` writes them first (`_write_gathered`), so it
reads what it would read without the batch.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from typing import Any, cast

from caramel.errors import RunError
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import bounded, dbfile
from caramel.stages.state.codec import CodecError, decode_model
from caramel.stages.state.dbfile import StorageError
from caramel.stages.state.rows import (
    SCHEMA_VERSION,
    WP_COLUMNS,
    CommandRow,
    EventRow,
    RunInfo,
    WpRow,
)


@functools.lru_cache(maxsize=64)
def _types(text: str) -> dict[str, str]:
    """Declared types as stored (few distinct ones in a run: decoded once each; never mutated)."""
    types: dict[str, str] = bounded.loads(text, "the declared types of a workpackage")
    return types


def _params(texts: str, types: str, cycles: str) -> Params:
    try:
        return Params(
            bounded.loads(texts, "the parameters of a workpackage"),
            _types(types),
            tuple(bounded.loads(cycles, "the later cycles of a workpackage")) if cycles else (),
        )
    except (TypeError, ValueError) as exc:
        raise RunError(
            f"the parameters stored in the run state are damaged: {exc}",
            hint="the run state was not written by this caramel, or was changed by hand",
        ) from None


class RunReads:
    """The reads of a run's database (`db`, at `path`)."""

    db: dbfile.Guarded
    path: str

    def _write_gathered(self) -> None:
        """Writes a batch gathered (Store); nothing to write here."""

    # --- the run -----------------------------------------------------------------------------
    def info(self) -> RunInfo:
        row = self._run_row()
        if row is None:
            raise RunError(f"{self.path} holds no run")
        self._check_version(row)
        try:
            tags, settings = (
                bounded.loads(row["tags"], "the run's tags"),
                bounded.loads(row["settings"], "the run's settings"),
            )
            _check_tags_and_settings(tags, settings)
            return RunInfo(
                row["id"],
                row["benchmark"],
                row["file"],
                row["home"],
                row["run_dir"],
                tags,
                row["cwd"],
                row["created"],
                settings,
                row["version"],
            )
        except (TypeError, ValueError) as exc:
            raise RunError(f"the run state {self.path} is damaged: {exc}") from None

    def _run_row(self) -> sqlite3.Row | None:
        """The run's row, read by column name; a file of another program is refused."""
        try:
            found = self.db.execute(
                "SELECT id, benchmark, file, home, run_dir, tags, cwd, created, settings, "
                "version, schema FROM runs"
            )
            found.row_factory = sqlite3.Row
            return cast("sqlite3.Row | None", found.fetchone())
        except StorageError as exc:
            if dbfile.problem(exc) != "foreign":
                raise
            raise StorageError(
                f"{self.path} is not a caramel run state",
                hint="another program wrote it, or it is not what bench expects there",
            ) from None

    def _check_version(self, row: sqlite3.Row) -> None:
        """A run state of another version is read by the caramel that wrote it."""
        if row["schema"] == SCHEMA_VERSION:
            return
        made = f"caramel {row['version']}" if row["version"] else "another caramel"
        raise RunError(
            f"{self.path} was written by {made} (run state version {row['schema']}); "
            f"this caramel reads version {SCHEMA_VERSION} only",
            hint=f"finish or read that run with {made}, or start it again with this one",
        )

    def model(self) -> Benchmark:
        """The benchmark model stored at run start (never re-read from the file)."""
        self.info()  # checks the version first
        try:
            text = self.db.execute("SELECT model FROM runs").fetchone()[0]
            return decode_model(text, "the stored model")  # the error below names the file
        except (CodecError, TypeError) as exc:
            raise RunError(
                f"the benchmark stored in {self.path} cannot be read: {exc}",
                hint="the run state is damaged or was not written by caramel; start the run again",
            ) from None

    # --- workpackages -------------------------------------------------------------------------
    def workpackages(self) -> list[WpRow]:
        self._write_gathered()
        out = []
        for row in self.db.execute(f"SELECT {WP_COLUMNS} FROM workpackages ORDER BY id"):
            wp = WpRow(
                *row
            )  # WP_COLUMNS names WpRow's fields in order (a dict per row costs 2x here)
            parents, wait_files = (
                cast(str, wp.parents),
                cast(str, wp.wait_files),
            )  # as stored: texts
            wp.parents = tuple(int(p) for p in parents.split(",")) if parents else ()
            wp.wait_files = (
                self._json(wait_files, f"workpackage {wp.id}'s wait files") if wait_files else {}
            )
            out.append(wp)
        return out

    def params(self, wp_id: int) -> Params:
        """The workpackage's params as the plan recorded them (texts, declared types, later
        cycles)."""
        row = self.db.execute(
            "SELECT params, types, cycles FROM workpackages WHERE id=?", (wp_id,)
        ).fetchone()
        return _params(*row) if row else Params()

    def jobs_and_end(self) -> tuple[list[str], float | None]:
        """The run's scheduler job ids (each once) and when its last workpackage ended: what a run's
        provenance needs, without reading every workpackage."""
        self._write_gathered()
        ids = [
            row[0]
            for row in self.db.execute(
                "SELECT DISTINCT job_id FROM workpackages WHERE job_id != ''"
            )
        ]
        return ids, self.db.execute("SELECT MAX(ended) FROM workpackages").fetchone()[0]

    def first_params(self, count: int) -> list[Params]:
        """The params of the first `count` workpackages, in id order, in one query."""
        return [
            _params(*row)
            for row in self.db.execute(
                "SELECT params, types, cycles FROM workpackages ORDER BY id LIMIT ?", (count,)
            )
        ]

    def all_params(self) -> dict[int, Params]:
        """Every workpackage's params, in one query. The texts are decoded as one JSON array: one
        decoder call instead of one per workpackage, whose fixed cost adds up on a large run."""
        rows = self.db.execute("SELECT id, params, types, cycles FROM workpackages").fetchall()
        texts = _params_at_once(rows)
        if texts is not None:
            with contextlib.suppress(TypeError, ValueError, RecursionError):
                return {
                    row[0]: Params(found, _types(row[2]), _cycles(row[3]))
                    for row, found in zip(rows, texts, strict=True)
                }
        return {row[0]: _params(*row[1:]) for row in rows}  # one by one: names what is damaged

    def analysis_rows(self) -> list[tuple[int, str, int, tuple[int, ...], str, str, str]]:
        """What the analysis needs of each workpackage besides its params, in id order:
        (id, step, iteration, parents, dirname, state, reason)."""
        self._write_gathered()
        return [
            (
                wp_id,
                step,
                it,
                tuple(int(p) for p in parents.split(",")) if parents else (),
                dirname,
                state,
                reason,
            )
            for wp_id, step, it, parents, dirname, state, reason in self.db.execute(
                "SELECT id, step, iteration, parents, dirname, state, "
                "reason FROM workpackages ORDER BY id"
            )
        ]

    def env(self, wp_id: int) -> dict[str, str] | None:
        self._write_gathered()
        row = self.db.execute("SELECT env FROM workpackages WHERE id=?", (wp_id,)).fetchone()
        return self._json(row[0], f"workpackage {wp_id}'s environment") if row and row[0] else None

    def _json(self, text: str, what: str) -> Any:
        """A JSON value of the run record, bounded (state.bounded); damaged is a RunError naming the
        file."""
        try:
            return bounded.loads(text, f"{self.path}: {what}")
        except bounded.OverLimit:
            raise
        except (TypeError, ValueError) as exc:
            raise RunError(
                f"{self.path}: {what} stored in the run state is damaged: {exc}"
            ) from None

    def commands(self, wp_id: int | None = None) -> list[CommandRow]:
        self._write_gathered()
        query = (
            "SELECT wp, attempt, cycle, op, kind, command, cwd, exit_code, started, "
            "ended FROM commands"
        )
        args: tuple[int, ...] = ()
        if wp_id is not None:
            query += " WHERE wp=?"
            args = (wp_id,)
        return [CommandRow(*r) for r in self.db.execute(query + " ORDER BY id", args)]

    def events(self, wp_id: int | None = None) -> list[EventRow]:
        self._write_gathered()
        query = "SELECT time, wp, kind, message FROM events"
        if wp_id is not None:
            return list(self.db.execute(query + " WHERE wp=? ORDER BY id", (wp_id,)))
        return list(self.db.execute(query + " ORDER BY id"))

    # --- shared operations ----------------------------------------------------------------------
    def shared_state(self, step: str, cycle: int, op: int) -> str:
        row = self.db.execute(
            "SELECT state FROM shared_ops WHERE step=? AND cycle=? AND op=?", (step, cycle, op)
        ).fetchone()
        return row[0] if row else ""

    def counts(self) -> dict[str, dict[str, int]]:
        """{step: {state: count}} in step order of first appearance."""
        self._write_gathered()
        out: dict[str, dict[str, int]] = {}
        for step, state, n in self.db.execute(
            "SELECT step, state, count(*) FROM workpackages GROUP BY step, state ORDER BY min(id)"
        ):
            out.setdefault(step, {})[state] = n
        return out


def _check_tags_and_settings(tags: object, settings: object) -> None:
    if (
        not isinstance(tags, list)
        or not all(isinstance(t, str) for t in tags)
        or not isinstance(settings, dict)
    ):
        raise ValueError("its tags are not a list of texts, or its settings not a mapping")


def _params_at_once(rows: list[Any]) -> list[dict[str, Any]] | None:
    """The params texts of the rows as one JSON array; None where that does not decode into one
    mapping per row (then they are read one by one)."""
    try:
        if any(len(row[1]) > bounded.MAX_BYTES for row in rows):
            raise ValueError("a workpackage's parameters are over the limit")
        texts = bounded.loads(
            "[" + ",".join(row[1] for row in rows) + "]",
            "the parameters",
            max_bytes=bounded.MAX_BYTES * max(1, len(rows)),
        )
    except (ValueError, TypeError):
        return None
    if len(texts) != len(rows) or not all(isinstance(t, dict) for t in texts):
        return None
    return cast("list[dict[str, Any]]", texts)


def _cycles(text: str) -> tuple[Any, ...]:
    return tuple(json.loads(text)) if text else ()
