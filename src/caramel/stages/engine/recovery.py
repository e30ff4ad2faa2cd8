"""Exactly once: a do that finished is never run again, whatever happened to bench meanwhile.

The script running a workpackage's do's appends `E <wp>.<attempt> <cycle> <op> <status>` to
`<run folder>/.caramel_ended` when a do ends (engine.script), itself, in the shell that ran it (one
file for the run: appending to it costs no file creation per workpackage; a shared do's line,
`E shared ...`, goes to its shared folder's `.caramel_ended`): that line survives bench being
stopped or killed at any moment, when the run's database has not heard of that end. When bench
starts again, a workpackage that was `running` (bench died) or was stopped by an interruption goes
on from these lines: after the last do that finished, with the environment that do exported (its
carry file), or failed when that do failed. With no line it starts again from scratch (nothing of it
finished).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from caramel.stages.engine.script import (
    Command,
    Outcome,
    Ran,
    Status,
    carry_path,
    check_files,
    parse_exports,
)
from caramel.stages.engine.workdir import WpPaths
from caramel.stages.expand import layout

RECORD_NAME = layout.ENDED_RECORD
SPARE_NAME = ".caramel_spare"
SPARE_BYTES = 512 * 1024
INTERRUPTED = "interrupted"  # how the reason of a workpackage stopped by bench begins


def record_file(folder: str) -> str:
    return os.path.join(folder, RECORD_NAME)


def wp_tag(wp_id: int, attempt: int) -> str:
    """How a workpackage's attempt is named in the run's record file."""
    return f"{wp_id}.{attempt}"


def prepare_tag(wp_id: int, attempt: int) -> str:
    """How the prepares of a workpackage's attempt are named in the run's record file (`op`: which
    one)."""
    return "P" + wp_tag(wp_id, attempt)


@dataclass
class Ended:
    """The last do of an attempt whose end its shell recorded."""

    cycle: int
    op: int
    status: int
    # the record file's time: about when that line was written (bench did not see the end)
    when: float


def read_ended(path: str) -> dict[str, Ended]:
    """The latest (cycle, op) recorded in file `path` for each tag."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
        when = os.path.getmtime(path)
    except OSError:
        return {}
    out: dict[str, Ended] = {}
    for line in lines:
        parts = line.split()
        if (
            len(parts) != 5
            or parts[0] != "E"
            or not all(p.lstrip("-").isdigit() for p in parts[2:])
        ):
            continue  # a line cut short by a full disk or a crash of the machine
        cycle, op, status = (int(p) for p in parts[2:])
        best = out.get(parts[1])
        if best is None or (cycle, op) >= (best.cycle, best.op):
            out[parts[1]] = Ended(cycle, op, status, when)
    return out


def last_ended(path: str, tag: str) -> Ended | None:
    """The latest (cycle, op) recorded in `path` for `tag`, or None."""
    return read_ended(path).get(tag)


def outcome_of(cmd: Command, paths: WpPaths, ended: Ended) -> Outcome:
    """What the recorded end of `cmd` means: it failed, or it finished and its files say done,
    waiting, break or error_file (checked now, as its script would have), with its exports."""
    ran = [Ran(0, ended.when, ended.when, ended.status)]
    if ended.status != 0:
        return Outcome(Status.FAILED, 0, ended.status, ran)
    out = check_files(cmd, 0, Outcome(Status.DONE, ran=ran))
    with contextlib.suppress(OSError):
        with open(carry_path(paths.carry_file, cmd), encoding="utf-8", errors="replace") as handle:
            exports = parse_exports(handle.read())
        if exports:
            out.env = exports
    return out


def reserve(run_dir: str) -> str:
    """Space kept while bench runs (a file of SPARE_BYTES): when the disk fills, bench frees it to
    record that it stopped, so no workpackage stays `running`. '' when there is no room for it."""
    path = os.path.join(run_dir, SPARE_NAME)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, SPARE_BYTES)
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        release(path)
        return ""
    return path


def release(spare: str) -> None:
    if spare:
        with contextlib.suppress(OSError):
            os.unlink(spare)
