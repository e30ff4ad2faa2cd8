"""What a run shows while it works: a rich progress bar on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import TaskID


class Progress:
    """No display (output is not a terminal, or --quiet)."""

    def start(self, title: str, counts: dict[str, int]) -> None:
        return None

    def update(self, counts: dict[str, int], current: str = "") -> None:
        return None

    def stop(self) -> None:
        return None


class RichProgress(Progress):
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(),
            transient=False,
        )
        self._task: TaskID | None = None
        self._current = ""

    def start(self, title: str, counts: dict[str, int]) -> None:
        self._bar.start()
        self._task = self._bar.add_task(title, total=sum(counts.values()), info="")
        self.update(counts)

    def update(self, counts: dict[str, int], current: str = "") -> None:
        if self._task is None:
            return
        finished = counts.get("done", 0) + counts.get("failed", 0) + counts.get("cancelled", 0)
        info = ", ".join(
            f"{counts[s]} {s}"
            for s in ("running", "waiting", "failed", "cancelled")
            if counts.get(s)
        )
        self._current = current or self._current
        self._bar.update(self._task, completed=finished, info=f"{info}  {self._current}".strip())

    def stop(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def make_progress(quiet: bool = False) -> Progress:
    """A progress bar only when stdout is a terminal (logs and pipes stay clean)."""
    if quiet or not sys.stdout.isatty():
        return Progress()
    return RichProgress()
