"""Entry points of the engine: start a run, continue one, or show what a run would do.

    summary = start_run(benchmark, Settings(timeout=3600))
    summary = continue_run(run_dir)

`start_run` expands the benchmark once, stores the plan and the model in the run's database,
then hands over to the same engine `continue_run` uses: a run is "store, then continue".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from types import FrameType

from caramel import __version__
from caramel.adapters import backends
from caramel.adapters.backends import Backend
from caramel.errors import STOP_SIGNALS, Interrupted, RunError
from caramel.stages.engine import arrays, rounds, statefile
from caramel.stages.engine.commands import check_step, segment
from caramel.stages.engine.engine import Engine
from caramel.stages.engine.materialise import prepares
from caramel.stages.engine.progress import make_progress
from caramel.stages.engine.settings import Settings, Summary
from caramel.stages.engine.workdir import wp_paths
from caramel.stages.expand.plan import Plan, make_plan, next_run_id
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import registry
from caramel.stages.state.lock import RunLock
from caramel.stages.state.rows import RunInfo
from caramel.stages.state.store import PlannedRow, Store, db_path, is_run_dir
from caramel.vocabulary import WpState


def scheduler_for(bench: Benchmark) -> str:
    """The name of the run's scheduler (backends.schedulers.for_system). One the system file names
    must have its commands here (a login node), or the run does not start."""
    from caramel.adapters.backends import schedulers

    system = bench.system
    scheduler = schedulers.for_system(system)
    missing = scheduler.missing()
    if system is not None and system.scheduler not in schedulers.NO_SCHEDULER and missing:
        raise RunError(
            f"system '{system.name}' uses {scheduler.name}, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH",
            system.where,
            hint="run on a login node of that system, or pick another system tag "
            "(bench run ... --tag local)",
        )
    return scheduler.name


def start_run(
    bench: Benchmark,
    settings: Settings | None = None,
    quiet: bool = False,
    scheduler: str | None = None,
    cwd: str | None = None,
    on_created: Callable[[str], None] | None = None,
    max_workpackages: int | None = None,
    go_on: rounds.GoOn | None = None,
) -> Summary:
    """Create `<outpath>/<run id>/`, store the plan and run it (`on_created(run_dir)` once it
    exists). `scheduler`: the name of the run's scheduler (default: its system's,
    backends.for_system). `go_on`: run a repeat at a time while it says so (`--repeat auto`,
    engine.rounds)."""
    settings = settings or Settings()
    cwd = cwd or os.getcwd()
    for step in bench.steps.values():
        check_step(step)
    if go_on is not None:
        rounds.check_steps(bench.steps)
    backend = backends.for_system(
        bench.system, scheduler
    )  # an unknown one fails before anything is created
    plan, run_dir = _planned(bench, backend, max_workpackages)
    with RunLock(run_dir):
        rows = (
            (wp.id, wp.step.name, wp.iteration, [p.id for p in wp.parents], wp.dirname, wp.params())
            for wp in plan.workpackages
        )
        info = RunInfo(
            plan.run_id,
            bench.name,
            bench.file,
            bench.home,
            run_dir,
            sorted(bench.tags),
            cwd,
            time.time(),
            dict(settings.to_dict(), **backend.settings()),
            __version__,
        )
        store = _create_store(info, bench, rows)
        del plan, rows  # from here on the store is the plan
        opened = statefile.identity(db_path(run_dir))
        registry.remember(run_dir, cwd, bench.name, info.run_id)
        if on_created is not None:
            on_created(run_dir)
        try:
            engine = Engine(store, backend, settings, make_progress(quiet))
            with _signals_as_interrupt(run_dir):
                return engine.run() if go_on is None else rounds.run_repeats(engine, go_on)
        finally:
            statefile.close_keeping(store, run_dir, opened, quiet)


def _planned(bench: Benchmark, backend: Backend, max_workpackages: int | None) -> tuple[Plan, str]:
    """The run's plan, checked against its scheduler, and its new folder; the folder goes again
    (its id free) when the plan fails."""
    run_id, run_dir = reserve_run_dir(bench.outpath)
    try:
        plan = make_plan(bench, run_id, max_workpackages=max_workpackages)
        arrays.check_plan(
            bench, Counter(wp.step.name for wp in plan.workpackages), backend.scheduler
        )
    except BaseException:
        with contextlib.suppress(OSError):
            os.rmdir(run_dir)  # the id is free again
        raise
    return plan, run_dir


def _create_store(info: RunInfo, bench: Benchmark, rows: Iterable[PlannedRow]) -> Store:
    """The run's state, made in its folder. Where that fails and no run was made (a full disk?)
    the folder goes, its id free again; stopped just after the run was made (Ctrl-C), the run
    stays and `bench continue` runs it."""
    try:
        return Store.create(info.run_dir, info, bench, rows)
    except BaseException:
        if not os.path.exists(db_path(info.run_dir)):
            shutil.rmtree(info.run_dir, ignore_errors=True)
        else:
            with contextlib.suppress(Exception):
                registry.remember(info.run_dir, info.cwd, bench.name, info.run_id)
        raise


def reserve_run_dir(outpath: str) -> tuple[int, str]:
    """The next free run id and its new, empty folder. `mkdir` is atomic: of several bench starting
    at once, each gets its own id (one that lost the race takes the next)."""
    try:
        os.makedirs(outpath, exist_ok=True)
    except OSError as exc:
        raise RunError(
            f"cannot create the outpath {outpath}: {exc.strerror}",
            hint="check the outpath= of the benchmark and the permissions of its folder",
        ) from None
    run_id = next_run_id(outpath)
    for _attempt in range(10000):
        run_dir = os.path.abspath(os.path.join(outpath, f"{run_id:06d}"))
        try:
            os.mkdir(run_dir)
            return run_id, run_dir
        except FileExistsError:
            run_id += 1
        except OSError as exc:
            raise RunError(
                f"cannot create the run folder {run_dir}: {exc.strerror}",
                hint="check the permissions and free space of the outpath",
            ) from None
    raise RunError(f"no free run id in {outpath}")


def continue_run(
    run_dir: str,
    timeout: float | None = None,
    quiet: bool = False,
    wait_lock: float = 0.0,
    go_on: rounds.GoOn | None = None,
    stop_after_failure: bool = False,
) -> Summary:
    """Go on with a run: recover interrupted workpackages, check waiting ones, run what can run
    (`go_on`: a repeat at a time while it says so, as start_run; `stop_after_failure`: `-e`,
    Settings)."""
    if not is_run_dir(run_dir):
        raise RunError(f"{run_dir} is not a caramel run folder (no caramel.db)")
    with RunLock(run_dir, wait=wait_lock):
        store = Store(db_path(run_dir))
        opened = statefile.identity(db_path(run_dir))
        try:
            info = store.info()
            settings = Settings.from_dict(info.settings)
            if timeout is not None:
                settings.timeout = timeout
                store.update_settings(dict(info.settings, **settings.to_dict()))
            settings.stop_after_failure = stop_after_failure
            engine = Engine(store, backends.for_run(info.settings), settings, make_progress(quiet))
            with _signals_as_interrupt(run_dir):
                return engine.run() if go_on is None else rounds.run_repeats(engine, go_on)
        finally:
            statefile.close_keeping(store, run_dir, opened, quiet)


@contextlib.contextmanager
def _signals_as_interrupt(run_dir: str = "") -> Iterator[None]:
    """Every signal of STOP_SIGNALS (Ctrl-C, `timeout`, a batch system ending bench or warning of
    its time limit, a closed login) stops the run: the first raises `Interrupted` (the engine ends
    the running do's and records their state); any further one while bench stops is ignored, so a
    second Ctrl-C cannot cut that short."""
    stopping = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise Interrupted(signum, run_dir)

    try:
        previous = {signum: signal.signal(signum, handler) for signum in STOP_SIGNALS}
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        # Once interrupted, the handlers stay (ignoring further signals) until bench has exited.
        if not stopping:
            for signum, old in previous.items():
                signal.signal(signum, old)


def dry_run(bench: Benchmark, max_workpackages: int | None = None) -> Iterator[str]:
    """What a run would do, without creating anything: each workpackage, its filesets' prepares and
    its do's (first cycle)."""
    for step in bench.steps.values():
        check_step(step)
    plan = make_plan(bench, max_workpackages=max_workpackages)
    yield f"benchmark {bench.name}: {len(plan.workpackages)} workpackages in {plan.run_dir}"
    for wp in plan.workpackages:
        params = wp.params()
        paths = wp_paths(plan.run_dir, wp.dirname, wp.step, params, bench.home)
        parents = ",".join(str(p.id) for p in wp.parents)
        yield f"{wp.dirname}" + (f"  (after {parents})" if parents else "")
        for command in prepares(bench, wp.step, params, paths.base):
            yield f"    $ {command.text}    (prepare)"
        seg = segment(bench, wp.step, params, paths.base, 0, 0)
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
            scheduler = backends.for_run(store.info().settings).scheduler
            waiting = [
                wp for wp in store.workpackages() if wp.state == WpState.WAITING and wp.job_id
            ]
            ok, message = scheduler.cancel([wp.job_id for wp in waiting])
            if not ok:
                raise RunError(
                    f"could not cancel the jobs of {run_dir}: {message}",
                    hint="nothing was marked cancelled; bench status shows the jobs",
                )
            with store.transaction():
                for wp in waiting:
                    store.move(
                        wp,
                        "cancel",
                        message=f"bench cancel: {scheduler.cancel_command or 'cancel'} {wp.job_id}",
                        ended=time.time(),
                        reason=f"cancelled with bench cancel (job {wp.job_id})",
                    )
            return [(wp.id, wp.job_id) for wp in waiting], message
        finally:
            store.close()
