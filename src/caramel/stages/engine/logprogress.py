"""What a running workpackage has done so far, read from its own log: `120/1500 iterations,
0.0481 s/iteration, ETA 0:01:06`, where the benchmark declares a progress pattern (its `meta`:
`progress`, `progress_file`, `progress_rate`, `progress_unit`; docs/file-format.md), else the
time it has run.

The log is read at most once a second per workpackage, and only its last READ_BYTES: a progress
line is short and the last one is all that counts. The ETA comes from the iterations seen pass
while bench watched (the first reading is the reference), not from the declared rate, whose unit
bench does not know (s/iteration, tokens/s, images/s). A file outside the work folder (a link
leading out) is never read (engine.tails.inside).
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import regex  # a time bound on each match: a declared pattern never stalls the display

from caramel.stages.engine.tails import inside
from caramel.stages.spec.model import BenchmarkMeta
from caramel.stages.spec.regexes import with_builtins

READ_BYTES = 8192  # the end of the log read each time
EVERY_S = 1.0  # a log is read at most this often
MATCH_TIMEOUT_S = 0.05


@dataclass(frozen=True)
class Reading:
    """The last progress line of a log: iteration `done` of `total` (None: not declared), the
    last rate (text as the log wrote it, "" if none)."""

    done: int
    total: int | None
    rate: str = ""


@dataclass
class _Watched:
    folder: str
    since: float  # when bench started the workpackage
    first: tuple[float, int] | None = None  # (time, iteration) of the first reading
    text: str = ""
    read_at: float = 0.0


@dataclass
class LogProgress:
    """The progress of the workpackages that run now, one short text for the progress line."""

    meta: BenchmarkMeta
    clock: Callable[[], float] = time.monotonic  # tests give their own
    _watched: dict[str, _Watched] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._iteration = _compiled(self.meta.progress)
        self._rate = _compiled(self.meta.progress_rate)

    def watch(self, name: str, folder: str) -> None:
        with self._lock:
            self._watched[name] = _Watched(folder, self._now())

    def forget(self, name: str) -> None:
        with self._lock:
            self._watched.pop(name, None)

    def lines(self) -> list[str]:
        """`NAME: 120/1500 iterations, ...` for each workpackage running, or its time so far."""
        with self._lock:
            watched = list(self._watched.items())
        return [f"{name}: {self._describe(w)}" for name, w in watched]

    def follow(self, folders: dict[str, str]) -> list[str]:
        """The lines of the workpackages in `folders` (name -> work folder) whose log shows
        progress: a job that waits in the queue, or wrote no progress line yet, shows none (its
        time in bench's sight is not its running time). The others are forgotten."""
        for name in set(self._watched) - set(folders):
            self.forget(name)
        for name, folder in folders.items():
            if name not in self._watched:
                self.watch(name, folder)
        return [
            line
            for line, (name, watched) in zip(self.lines(), list(self._watched.items()), strict=True)
            if watched.first is not None and name in folders
        ]

    def _now(self) -> float:
        return self.clock()

    def _describe(self, watched: _Watched) -> str:
        now = self._now()
        if now - watched.read_at >= EVERY_S or not watched.text:
            watched.read_at = now
            reading = self.read(watched.folder)
            watched.text = (
                _elapsed(now - watched.since)
                if reading is None
                else self._line(watched, reading, now)
            )
        return watched.text

    def read(self, folder: str) -> Reading | None:
        """The last progress line in the workpackage's log, or None (no pattern, no line yet)."""
        if self._iteration is None:
            return None
        path = inside(self.meta.progress_file, folder)
        if path is None:
            return None
        text = _tail(path)
        found = _last(self._iteration, text)
        if found is None:
            return None
        numbers = [_integer(group) for group in found.groups()[:2]]
        if numbers[0] is None:
            return None
        rate = _last(self._rate, text) if self._rate is not None else None
        return Reading(
            numbers[0],
            numbers[1] if len(numbers) > 1 else None,
            rate.group(1) if rate is not None and rate.group(1) else "",
        )

    def _line(self, watched: _Watched, reading: Reading, now: float) -> str:
        parts = [
            f"{reading.done}/{reading.total} iterations"
            if reading.total
            else f"iteration {reading.done}"
        ]
        if reading.rate:
            parts.append(f"{reading.rate} {self.meta.progress_unit}".strip())
        if watched.first is None or reading.done < watched.first[1]:
            watched.first = (now, reading.done)
        first_at, first_done = watched.first
        if reading.total and reading.done > first_done and now > first_at:
            per_iteration = (now - first_at) / (reading.done - first_done)
            left = max(0, reading.total - reading.done) * per_iteration
            parts.append(f"ETA {_elapsed(left)}")
        return ", ".join(parts)


def _compiled(pattern: str) -> regex.Pattern[str] | None:
    return regex.compile(with_builtins(pattern), regex.MULTILINE) if pattern else None


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - READ_BYTES))
            return handle.read(READ_BYTES).decode(errors="replace")
    except OSError:
        return ""


def _last(pattern: regex.Pattern[str] | None, text: str) -> regex.Match[str] | None:
    """The last match of `pattern` in `text`; None also when matching takes too long."""
    if pattern is None:
        return None
    last = None
    try:
        for last in pattern.finditer(text, timeout=MATCH_TIMEOUT_S):  # noqa: B007 - the last one
            pass
    except TimeoutError:
        return None
    return last


def _integer(text: str | None) -> int | None:
    try:
        return int(float(text)) if text is not None else None
    except ValueError:
        return None


def _elapsed(seconds: float) -> str:
    return str(datetime.timedelta(seconds=round(seconds)))
