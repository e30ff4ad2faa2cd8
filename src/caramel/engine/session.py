"""Entry points of the engine: start a run, continue one, or show what a run would do.

    summary = start_run(benchmark, Settings(timeout=3600))
    summary = continue_run(run_dir)

`start_run` expands the benchmark once, stores the plan and the model in the run's database,
then hands over to the same engine `continue_run` uses: a run is "store, then continue".
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator

from caramel import __version__
from caramel.backends import get_backend
from caramel.engine.commands import check_step, segment
from caramel.engine.progress import make_progress
from caramel.engine.scheduler import Engine, Settings, Summary
from caramel.engine.workdir import wp_paths
from caramel.errors import RunError
from caramel.expand.plan import make_plan
from caramel.spec.model import Benchmark
from caramel.state import registry
from caramel.state.lock import RunLock
from caramel.state.store import RunInfo, Store, db_path, is_run_dir


def start_run(bench: Benchmark, settings: Settings | None = None, quiet: bool = False, backend: str = "local",
              cwd: str | None = None, on_created: Callable[[str], None] | None = None,
              max_workpackages: int | None = None) -> Summary:
    """Create `<outpath>/<run id>/`, store the plan and run it (`on_created(run_dir)` once it exists)."""
    settings = settings or Settings()
    cwd = cwd or os.getcwd()
    for step in bench.steps.values():
        check_step(step)
    get_backend(backend)  # an unknown backend fails before anything is created
    plan = make_plan(bench, max_workpackages=max_workpackages)
    run_dir = os.path.abspath(plan.run_dir)
    os.makedirs(bench.outpath, exist_ok=True)
    try:
        os.mkdir(run_dir)
    except FileExistsError:
        raise RunError(f"run folder {run_dir} already exists (another bench started a run at the same time?)",
                       hint="run again: it takes the next free id") from None
    with RunLock(run_dir):
        rows = ((wp.id, wp.step.name, wp.iteration, [p.id for p in wp.parents], wp.dirname, wp.texts())
                for wp in plan.workpackages)
        info = RunInfo(plan.run_id, bench.name, bench.file, bench.home, run_dir, sorted(bench.tags), cwd,
                       time.time(), dict(settings.to_dict(), backend=backend), __version__)
        store = Store.create(run_dir, info, bench, rows)
        del plan, rows  # from here on the store is the plan
        registry.remember(run_dir, cwd, bench.name, info.run_id)
        if on_created is not None:
            on_created(run_dir)
        try:
            engine = Engine(store, get_backend(backend), settings, make_progress(quiet))
            with _terminate_as_interrupt():
                return engine.run()
        finally:
            store.close()


def continue_run(run_dir: str, timeout: float | None = None, quiet: bool = False, wait_lock: float = 0.0) -> Summary:
    """Go on with a run: recover interrupted workpackages, check waiting ones, run what can run."""
    if not is_run_dir(run_dir):
        raise RunError(f"{run_dir} is not a caramel run folder (no caramel.db)")
    with RunLock(run_dir, wait=wait_lock):
        store = Store(db_path(run_dir))
        try:
            info = store.info()
            settings = Settings.from_dict(info.settings)
            if timeout is not None:
                settings.timeout = timeout
                store.update_settings(dict(info.settings, **settings.to_dict()))
            engine = Engine(store, get_backend(info.settings.get("backend", "local")), settings, make_progress(quiet))
            with _terminate_as_interrupt():
                return engine.run()
        finally:
            store.close()


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a batch system ending bench) stops the run as Ctrl-C does: running workpackages are
    killed and left open for `bench continue`."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def dry_run(bench: Benchmark, max_workpackages: int | None = None) -> Iterator[str]:
    """What a run would do, without creating anything: each workpackage and its do's (first cycle)."""
    for step in bench.steps.values():
        check_step(step)
    plan = make_plan(bench, max_workpackages=max_workpackages)
    yield f"benchmark {bench.name}: {len(plan.workpackages)} workpackages in {plan.run_dir}"
    for wp in plan.workpackages:
        texts = wp.texts()
        paths = wp_paths(plan.run_dir, wp.dirname, wp.step, texts, bench.home)
        parents = ",".join(str(p.id) for p in wp.parents)
        yield f"{wp.dirname}" + (f"  (after {parents})" if parents else "")
        seg = segment(bench, wp.step, texts, paths.base, 0, 0)
        for command in seg.commands:
            yield f"    $ {command.text}"
        if seg.shared_stop:
            yield f"    (then the shared do {seg.shared_stop[1] + 1}, once for the step)"


def cancel_run(run_dir: str, wait_lock: float = 30.0) -> tuple[list[tuple[int, str]], str]:
    """Cancel the scheduler jobs of every waiting workpackage and mark them cancelled (their
    dependants are cancelled by the next `continue`). Returns [(workpackage id, job id)] and the
    scheduler's message when it refused."""
    if not is_run_dir(run_dir):
        raise RunError(f"{run_dir} is not a caramel run folder (no caramel.db)")
    with RunLock(run_dir, wait=wait_lock):
        store = Store(db_path(run_dir))
        try:
            backend = get_backend(store.info().settings.get("backend", "local"))
            waiting = [wp for wp in store.workpackages() if wp.state == "waiting" and wp.job_id]
            ok, message = backend.cancel([wp.job_id for wp in waiting])
            if not ok:
                raise RunError(f"could not cancel the jobs of {run_dir}: {message}",
                               hint="nothing was marked cancelled; bench status shows the jobs")
            with store.transaction():
                for wp in waiting:
                    store.update(wp.id, state="cancelled", ended=time.time(),
                                 reason=f"cancelled with bench cancel (job {wp.job_id})")
                    store.event(wp.id, "cancelled", f"bench cancel: scancel {wp.job_id}")
            return [(wp.id, wp.job_id) for wp in waiting], message
        finally:
            store.close()
