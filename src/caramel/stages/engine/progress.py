"""What a run shows while it works: a rich progress bar on a terminal, nothing otherwise.

The bar counts workpackages; beside it, each running workpackage's own progress read from its log
where the benchmark declares a progress pattern, else the time it has run (engine.logprogress).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from caramel.stages.engine.logprogress import LogProgress
from caramel.stages.spec.model import BenchmarkMeta

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import RenderableType
    from rich.progress import TaskID


class Progress:
    """No display (output is not a terminal, or --quiet)."""

    def start(self, title: str, counts: dict[str, int], meta: BenchmarkMeta | None = None) -> None:
        return None

    def update(self, counts: dict[str, int], current: str = "") -> None:
        return None

    def watch(self, name: str, folder: str) -> None:
        """Workpackage `name` runs in `folder` (its log is read there)."""
        return None

    def forget(self, name: str) -> None:
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
        from rich.text import Text

        self.logs = LogProgress(BenchmarkMeta())
        logs = self

        class WithLogs(Progress):
            """The bar, then a line per running workpackage (rich's documented way to add lines:
            get_renderables); read at each refresh, a log at most once a second (LogProgress)."""

            def get_renderables(self) -> Iterable[RenderableType]:
                yield self.make_tasks_table(self.tasks)
                for line in logs.logs.lines():
                    yield Text("  " + line, no_wrap=True, overflow="ellipsis")

        self._bar = WithLogs(
            TextColumn("{task.description}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=Console(),
            transient=False,
        )
        self._task: TaskID | None = None

    def start(self, title: str, counts: dict[str, int], meta: BenchmarkMeta | None = None) -> None:
        self.logs = LogProgress(meta or BenchmarkMeta())
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
        self._bar.update(self._task, completed=finished, info=info)

    def watch(self, name: str, folder: str) -> None:
        self.logs.watch(name, folder)

    def forget(self, name: str) -> None:
        self.logs.forget(name)

    def stop(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def make_progress(quiet: bool = False) -> Progress:
    """A progress bar only when stdout is a terminal (logs and pipes stay clean)."""
    if quiet or not sys.stdout.isatty():
        return Progress()
    return RichProgress()
