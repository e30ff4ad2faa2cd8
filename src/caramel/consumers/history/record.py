"""What `bench result` (and `compare`, `report`) do with the history: add a run once."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence

from caramel import redact
from caramel.consumers.history.engine import HistoryUnavailable
from caramel.consumers.history.layout import MetricRow, RunRecord
from caramel.consumers.history.metrics import (
    Configuration,
    MadeTable,
    RowsMadeAgain,
    changed_configurations,
    collect,
)
from caramel.consumers.history.provenance import run_key, run_record
from caramel.consumers.history.store import History, default_path
from caramel.errors import RunError
from caramel.stages.analyse.inputs import AnalysisInput
from caramel.stages.state.store import db_path

# a run as run_snapshot sees it: its run record's (device, inode) and its folders
RunSnapshot = tuple[tuple[int, int], set[str]]
# how the run's tables changed (report.results.history_change): the tables' key, the key of the
# tables they were made again from, and per table the rows made again (None: not known)
TablesChange = tuple[str, str | None, Sequence[RowsMadeAgain | None] | None]


def add_run(
    history: History,
    inp: AnalysisInput,
    tables: Callable[[], Sequence[MadeTable]],
    quiet_if_known: bool = False,
    change: TablesChange | None = None,
    before: RunSnapshot | None = None,
) -> str:
    """Add the run of `inp` (its provenance and metrics) unless it is there; returns its key.
    `tables`: makes the tables the figures come from (report.results.history_tables), called only
    when needed. `quiet_if_known`: nothing changed since the last result, so a run already there is
    left as is. A run already there keeps the figures that did not change. `change`: (the tables'
    key, the key of the tables they were made again from, the rows made again:
    report.results.history_change): when the history's figures were made from that earlier table,
    only the configurations of those rows are made again. `before`: the run folder as
    run_snapshot saw it before the tables were read (taken here when not given): the run must not
    have changed since when figures are written."""
    key, base, deltas = change or ("", None, None)
    try:
        known = history.run(run_key(inp.run_dir))
    except Exception:
        if before is not None:  # a run removed while its tables were made: said as such
            check_still_there(inp.run_dir, before)
        raise
    if quiet_if_known and known is not None and _made_now(history, known, change):
        return known.run_key
    if before is None:
        before = run_snapshot(inp.run_dir)
    record = run_record(inp.run_dir, known)
    made = tables()
    check_still_there(inp.run_dir, before)
    configs = None
    if deltas is not None and base is not None and known is not None:
        if history.made_from(known.run_key) == base:
            configs = changed_configurations(inp, made, deltas)
    if configs is None:
        history.add(record, collect(inp, made, failed=True), replace=True)
    else:
        history.replace_configurations(
            record, _configuration_texts(made, configs), collect(inp, made, configs, failed=True)
        )
    history.set_made_from(record.run_key, key or None)
    return record.run_key


def _made_now(history: History, known: RunRecord, change: TablesChange | None) -> bool:
    """Whether the run the history knows has its figures made from the tables of now (`change`:
    their key; None, not told: any)."""
    return change is None or history.made_from(known.run_key) == change[0]


def _configuration_texts(
    made: Sequence[MadeTable], configs: dict[int, set[Configuration]]
) -> set[tuple[str, str]]:
    """(table, configuration JSON) of each configuration of `configs` (per table index)."""
    return {
        (made[i].table.name, json.dumps(dict(config)))
        for i, found in configs.items()
        for config in found
    }


def add_quietly(
    path: str | None,
    inp: AnalysisInput,
    tables: Callable[[], Sequence[MadeTable]],
    unchanged: bool,
    change: TablesChange | None = None,
    before: RunSnapshot | None = None,
) -> None:
    """`bench result`'s part: a history that cannot be written is a warning, never a failed result.
    A history server that cannot be reached (or refuses) gets the run kept in the spool
    (history.spool) for `bench history push`; the rows written go to the sinks (history.sinks)."""
    target = path or default_path()
    written: list[tuple[RunRecord, list[MetricRow]]] = []
    try:
        with History.open(target) as history:
            add_run(history, inp, tables, quiet_if_known=unchanged, change=change, before=before)
            written = history.written
        _remind(target)
    except RunChanged:
        raise  # the tables shown are of a half-read run: an error, not a history's warning
    except HistoryUnavailable as exc:
        written = _spool(target, inp, tables, exc, before)
    except Exception as exc:  # noqa: BLE001 - the tables were printed; the history is a bonus
        print(
            f"warning: the run was not added to the history ({redact.url(target)}): {exc}",
            file=sys.stderr,
        )
    _to_sinks(written)


def _spool(
    target: str,
    inp: AnalysisInput,
    tables: Callable[[], Sequence[MadeTable]],
    why: Exception,
    before: RunSnapshot | None,
) -> list[tuple[RunRecord, list[MetricRow]]]:
    from caramel.consumers.history.spool import keep

    try:
        where, spooled = keep(target, lambda h: add_run(h, inp, tables, before=before))
    except Exception as exc:  # noqa: BLE001 - nowhere to keep it: say so (the run has it all)
        print(
            f"warning: the run was not added to the history: {why}\n"
            f"and could not be kept locally either: {exc}; "
            f"bench result {inp.run_dir} adds it later",
            file=sys.stderr,
        )
        return []
    option = "" if target == default_path() else f" --history '{redact.url(target)}'"
    print(
        f"warning: the run was not added to the history: {why}\nits figures are kept in {where}; "
        f"deliver them when the history is back with: bench history push{option}",
        file=sys.stderr,
    )
    return spooled.written


def _remind(target: str) -> None:
    """The history is reachable again and runs kept earlier wait for it: say how to deliver them."""
    from caramel.consumers.history.spool import spool_path

    if os.path.isfile(spool_path(target)):
        option = "" if target == default_path() else f" --history '{redact.url(target)}'"
        print(
            f"note: runs kept while the history {redact.url(target)} was away wait in "
            f"{spool_path(target)}: "
            f"bench history push{option}",
            file=sys.stderr,
        )


def _to_sinks(written: list[tuple[RunRecord, list[MetricRow]]]) -> None:
    """Queue the rows for every configured sink and send what is queued (a sink down: a warning)."""
    try:
        from caramel.consumers.history.settings import load_settings

        sinks = load_settings().sinks
        if sinks:  # the sinks' module only where some are configured
            from caramel.consumers.history.sinks import documents, enqueue, flush

            enqueue(sinks, documents(written))
            flush(sinks)
    except Exception as exc:  # noqa: BLE001 - a sink is a copy of the history: never fail the run
        print(f"warning: the results were not sent to the sinks: {exc}", file=sys.stderr)


def run_snapshot(run_dir: str) -> RunSnapshot | None:
    """What must still be there once the run is read: its run record (the same file) and every
    folder of the run folder (the workpackages' and shared folders; files such as the WAL of a cache
    or the spare file of a bench still running come and go on their own)."""
    try:
        found = os.stat(db_path(run_dir))
        with os.scandir(run_dir) as entries:
            folders = {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
        return (found.st_dev, found.st_ino), folders
    except OSError:
        return None


class RunChanged(RunError):
    """The run was removed or replaced while bench result read it (check_still_there)."""


def check_still_there(run_dir: str, before: RunSnapshot | None) -> None:
    """A run removed (bench remove, rm -r) or replaced while it was read gave figures of a half-read
    run: they must not go to the history, where they would stay for ever. A folder the run made
    meanwhile is no change; one that went (a workpackage removed) is."""
    what = _what_changed(before, run_snapshot(run_dir))
    if what:
        raise RunChanged(
            f"the run {run_dir} changed while bench result read it ({what}): its figures are of a "
            "half-read run, so nothing was added to the history",
            hint=(
                "was it removed (bench remove) meanwhile? "
                "run bench result again on a run that stays"
            ),
        )


def _what_changed(before: RunSnapshot | None, after: RunSnapshot | None) -> str:
    """What of the run changed while it was read ("": nothing): its run record, else the folders
    that went."""
    if before is None or after is None or after[0] != before[0]:
        return "its run record went or was replaced"
    gone = sorted(before[1] - after[1])
    if not gone:
        return ""
    return f"{', '.join(gone[:3])}{' ...' if len(gone) > 3 else ''} went"
