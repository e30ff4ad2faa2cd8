"""The node's load average at a workpackage's start and end, kept as events of the run record.

A figure measured while the node ran more processes than the cores bench may use is not the node's
figure: analysis reads these events back (`overloaded`) and the tables flag such a row. Where
/proc/loadavg does not exist (not Linux) nothing is recorded. Steps submitted to a scheduler run
on other nodes: their load here says nothing, the engine records none for them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from caramel.stages.engine.copies import usable_cores

if TYPE_CHECKING:
    from caramel.stages.state.store import Store

EVENT = "loadavg"
PROC_LOADAVG = "/proc/loadavg"
# Seconds a reading stands for the node's load: the kernel computes the averages every 5 s, so
# workpackages starting and ending within one second share one reading (a thousand short ones
# read the file a few times, not two thousand).
FRESH = 1.0


def read_loadavg(path: str = PROC_LOADAVG) -> float | None:
    """The 1-minute load average, None where the file is absent or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            text = os.read(fd, 256)
        finally:
            os.close(fd)
        return float(text.split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Sampler:
    """The engine's readings of the load and of the cores bench may use, each kept FRESH seconds."""

    path: str = PROC_LOADAVG
    _taken: float = -FRESH  # time.monotonic() of the last reading
    _text: str | None = None  # `LOAD cores=N`, None where nothing is recorded

    def reading(self) -> str | None:
        now = time.monotonic()
        if now - self._taken >= FRESH:
            load = read_loadavg(self.path)
            self._text = None if load is None else f"{load:.2f} cores={len(usable_cores())}"
            self._taken = now
        return self._text

    def record(self, store: Store, wp_id: int, when: str) -> None:
        """An event `loadavg` with `start|end LOAD cores=N` (call inside the store's
        transaction)."""
        reading = self.reading()
        if reading is not None:
            store.event(wp_id, EVENT, f"{when} {reading}")


def overloaded(events: list[tuple[float, int | None, str, str]]) -> dict[int, str]:
    """Per workpackage whose load average exceeded its usable cores at its start or end, why
    (`load 3.20 > 2 cores at the end`); `events`: (time, wp, kind, message) rows of the run
    record."""
    out: dict[int, str] = {}
    for _time, wp, kind, message in events:
        if kind != EVENT or wp is None:
            continue
        try:
            when, load_text, cores_text = message.split()
            load, cores = float(load_text), int(cores_text.removeprefix("cores="))
        except ValueError:
            continue  # written by another version: no flag rather than a wrong one
        if load > cores and wp not in out:
            out[wp] = f"load {load:.2f} > {cores} cores at the {when}"
    return out
