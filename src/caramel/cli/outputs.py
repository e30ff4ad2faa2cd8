"""An output is never one of the command's inputs: `-o` naming the history a command reads (or the
run state it analyses) is refused before anything is read or written, exit 2.

`bench dashboard --history A.db -o A.db` or `bench export -o $CARAMEL_HISTORY` would replace the
database they just read with a page or a JSON file; the check compares files (the same inode when
both exist, the same real path when the output is new), so a link or another spelling of the name
is caught too.
"""

from __future__ import annotations

import os

from caramel.errors import RunError
from caramel.fs.paths import same_file


def refuse_inputs(
    output: str,
    run_dir: str | None = None,
    history: str | list[str] | None = None,
    option: str = "-o",
    files: list[tuple[str, str]] | None = None,
) -> None:
    """Raise RunError when `output` is the history (the given one(s), else the default), the run
    state of `run_dir`, or one of `files` ((path, what it is))."""
    from caramel.fs.writes import target_of

    target_of(output)  # a folder, a socket or a block device: refused before anything is read
    inputs = [*(files or []), *_histories(history), *_run_inputs(run_dir)]
    for path, what in inputs:
        if _is_input(output, path):
            raise RunError(
                f"{option} {output} is {what} ({path}): "
                "an output may never be one of the command's inputs; nothing was written",
                hint=f"give {option} another file",
            )


def _histories(history: str | list[str] | None) -> list[tuple[str, str]]:
    """The histories the command reads: those given, else the default one."""
    from caramel.consumers.history.store import default_path

    histories = history if isinstance(history, list) else [history] if history else []
    return [(path, "the history this command reads") for path in histories or [default_path()]]


def _run_inputs(run_dir: str | None) -> list[tuple[str, str]]:
    """The run's state and analysis cache (none without a run)."""
    from caramel.stages.expand import layout

    if not run_dir:
        return []
    return [
        (layout.run_db(run_dir), "the run's state"),
        (layout.analysis_cache(run_dir), "the run's analysis cache"),
    ]


def _is_input(output: str, path: str) -> bool:
    """Whether `output` is the file `path` (the same inode, or the same real path while the
    output is new)."""
    if not path:
        return False
    return (os.path.exists(path) or os.path.lexists(output)) and same_file(output, path)
