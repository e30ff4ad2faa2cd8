"""`bench result -u FILE` / `bench analyse -u FILE`: a run's analysis definitions from an edited
file.

JUBE 2.7.1's `-u` takes the pattern sets, analysers and results of the benchmark of the same name in
FILE (read with the run's tags), keeps the rest of the run's configuration, and writes the result
back into the run folder (`configuration.xml`), so later calls without `-u` use it too. caramel does
the same with its run record: the updated model replaces the stored one in `caramel.db`
(spec/update.py refuses an edit of what made the run). The analysis cache needs no clearing: what it
keeps is keyed by the definitions (analyse/analyser.py `_config`, report/incremental.py
`definitions`), so nothing analysed with the old ones is served again. A run folder that cannot be
written is updated for this call only, with a warning, as JUBE does (it writes the configuration
only when it can).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable

from caramel.errors import CaramelError
from caramel.stages.spec.loader import load
from caramel.stages.spec.model import Benchmark
from caramel.stages.spec.update import no_benchmark, updated
from caramel.stages.state.store import Store, db_path


def update_run(
    run_dir: str,
    path: str,
    include_path: list[str] | None = None,
    check: Callable[[Benchmark], None] | None = None,
) -> Benchmark:
    """Take the analysis definitions of `path` into the run at `run_dir`; the model now stored.
    `check(model)` may refuse the updated model (raise) before it is stored (--no-eval: then no
    `call:` module of the file is imported either)."""
    store = Store(db_path(run_dir), readonly=True)
    try:
        info = store.info()
        stored = store.model()
    finally:
        store.close()
    edited = load(path, set(info.tags), include_path, no_eval=check is not None)
    match = next((b for b in edited if b.name == stored.name), None)
    if match is None:
        raise no_benchmark(path, stored.name, [b.name for b in edited])
    model = updated(stored, match)
    if check is not None:
        check(model)
    try:
        store = Store(db_path(run_dir))
        try:
            store.replace_model(model)
        finally:
            store.close()
    except (CaramelError, OSError, sqlite3.Error) as exc:
        print(
            f"warning: the run record of {run_dir} cannot be written ({exc}); "
            "the edited definitions are used for this call only",
            file=sys.stderr,
        )
    return model
