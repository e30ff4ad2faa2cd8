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
    from caramel.consumers.history.store import default_path
    from caramel.fs.writes import target_of
    from caramel.stages.expand import layout

    target_of(output)  # a folder, a socket or a block device: refused before anything is read

    inputs: list[tuple[str, str]] = list(files or [])
    histories = history if isinstance(history, list) else [history] if history else []
    inputs += [(path, "the history this command reads") for path in histories or [default_path()]]
    if run_dir:
        inputs += [
            (layout.run_db(run_dir), "the run's state"),
            (layout.analysis_cache(run_dir), "the run's analysis cache"),
        ]
    for path, what in inputs:
        if path and (os.path.exists(path) or os.path.lexists(output)) and same_file(output, path):
            raise RunError(
                f"{option} {output} is {what} ({path}): "
                "an output may never be one of the command's inputs; nothing was written",
                hint=f"give {option} another file",
            )
