"""Jobs caramel queues itself: a submit step's workpackages as job arrays, and jobs queued at once
after their parents' jobs (`--dependency`), so a chain of submit steps sits in the queue together.

A submit step's workpackage whose job caramel queues itself (`queues_later`: its step is an array,
or a parent's job is still queued) runs one command that only writes its job script, and waits. Once
nothing else can start, `submit_waiting` queues every such script:

- an array step: the scripts with the same resources (their `#SBATCH` lines) form one job array of
at
  most the site's MaxArraySize tasks (a larger one is split); its script
  (`<run>/.caramel_arrays/<step>.<n>/`) finds task i's work folder through the map beside it and
  runs that folder's own job script, its output into that folder's job.out and job.err (what SLURM
  itself says about task i, a time limit's cancellation, is in `<i>.out`/`<i>.err` beside the map);
- a workpackage whose parents' jobs are still queued is held with `afterok:` on their ids; an
  array whose tasks each follow one task of a parent array takes that task's index and
  `aftercorr:` (task i starts after the parent's task i ended well, not after the whole parent
  array);
- each queued job's id is kept at once where a bench stopped right after sbatch finds it, so it
never
  queues a job twice: a single job's id ("123") appended to the workpackage's stdout, an array's id
  in `job_id` beside its task map, whose lines name each task's workpackage and attempt (task 4 of
  array 123 is "123_4").

Starting a thousand such workpackages costs per workpackage its two folders (two mkdir, no look
first), its job script (rendered, written in three system calls) and its state moves, checked one by
one and written together (a batch of the store, engine.Engine._fill: one UPDATE, one INSERT of
events and one of commands for all of them); the array costs one folder, one map and one sbatch, and
its tasks' job ids one move for all of them (Store.move_many). perf/array_scale.py measures it.
"""

from __future__ import annotations

import locale
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caramel.errors import CaramelError, RunError
from caramel.stages.engine import call_batch
from caramel.stages.engine.jobscript import JOB_FILE, written_script
from caramel.stages.engine.script import Command, Outcome, Ran, Status
from caramel.stages.expand import layout
from caramel.stages.spec.model import Benchmark, Step
from caramel.vocabulary import WaitKind, WpState

if TYPE_CHECKING:
    from caramel.adapters.backends import Scheduler
    from caramel.stages.engine.interface import EngineInterface
    from caramel.stages.state.rows import WpRow

STDOUT = (
    "stdout"  # the submit command's output in the work folder (engine.jobscript.submit_command)
)
TASK_MAP, JOB_ID_FILE = (
    "tasks",
    "job_id",
)  # in an array's folder: its task map, and its id once queued
_SHARED: dict[tuple[str, ...], tuple[str, ...]] = {}
_ENCODING = locale.getpreferredencoding(
    False
)  # what open() writes a text file in, as the shell's `cat >` did


def write_job(engine: EngineInterface, wp: WpRow, command: Command) -> Outcome:
    """Do what a `queue_later` submit command does, here rather than in a shell (a thousand
    workpackages write their scripts in a second): its job script written into its work folder,
    its stdout emptied (a job id left there by an earlier attempt is not this one's); it then waits.
    The script's resources are kept for `batches` (not read back from a thousand files)."""
    started = time.time()
    script = written_script(command)
    try:
        _write_new(os.path.join(command.cwd, JOB_FILE), script)
        if os.path.exists(command.stdout):
            open(command.stdout, "w").close()
    except OSError as exc:
        with open(command.stderr, "a") as handle:
            handle.write(f"caramel: cannot write {JOB_FILE}: {exc}\n")
        return Outcome(Status.FAILED, index=0, exit_code=1, ran=[Ran(0, started, time.time(), 1)])
    resources = engine.backend.scheduler.array_directives(script)
    engine.keep_job_resources(
        wp, _SHARED.setdefault(resources, resources)
    )  # one tuple for equal ones
    return Outcome(Status.WAITING, index=0, exit_code=0, ran=[Ran(0, started, time.time(), 0)])


def _write_new(path: str, text: str) -> None:
    """`text` as the file `path` (made or emptied first, never through a link), in three system
    calls: a thousand job scripts are written without a file object each (its fstat, ioctl and
    seeks)."""
    data = text.encode(_ENCODING)
    handle = os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666
    )
    try:
        while data:
            data = data[os.write(handle, data) :]
    finally:
        os.close(handle)


def array_of(bench: Benchmark, step: Step) -> str:
    """The step's `array` setting, else its system's `job_array`: "false", "true" or "N". A `call:`
    step on SLURM is one batch of submitit (one job array) unless it says `array: false`."""
    if step.call:
        return (step.array or "true") if call_batch.on_slurm(bench) else "false"
    if not step.submit:
        return "false"
    return step.array or (bench.system.job_array if bench.system is not None else "") or "false"


def throttle(setting: str) -> int:
    """N of `array: N` (at most N tasks at once); 0 for none."""
    return int(setting) if setting.isdigit() else 0


def check_plan(bench: Benchmark, step_sizes: dict[str, int], scheduler: Scheduler) -> None:
    """Before anything is queued: an array step with at most N tasks at once cannot be split over
    several arrays (each would run N at once), so it must fit the site's MaxArraySize."""
    for name, count in step_sizes.items():
        step = bench.steps[name]
        setting = array_of(bench, step)
        if setting == "false" or not throttle(setting):
            continue
        limit = (
            bench.system.max_array_size if bench.system is not None else 0
        ) or scheduler.max_array_size()
        if limit and count > limit:
            raise RunError(
                f"step '{name}': {count} workpackages in one job array with at most {setting} at "
                "once, "
                f"but this site's arrays hold at most {limit} tasks (MaxArraySize)",
                step.where,
                hint=f"write array: true (caramel splits it into arrays of {limit}), or fewer "
                "workpackages (tags, a smaller parameter space)",
            )


def queues_later(engine: EngineInterface, wp: WpRow, step: Step) -> bool:
    """Whether caramel queues `wp`'s job itself: its step is an array (a submit step's, or a call
    step's batch), or a parent's job is still queued."""
    if not (step.submit or step.call):
        return False
    return array_of(engine.bench, step) != "false" or (
        step.submit and any(engine.wps[p].state != WpState.DONE for p in wp.parents)
    )


def may_start(engine: EngineInterface, wp: WpRow) -> bool:
    """Whether `wp` may start: its parents are done, or (a submit step) each parent is done or a
    submit step's job in the queue, which `wp`'s job will wait for."""
    step = engine.bench.steps[wp.step]
    for parent in (engine.wps[p] for p in wp.parents):
        if parent.state == WpState.DONE:
            continue
        if not (
            step.submit
            and engine.bench.steps[parent.step].submit
            and parent.state == WpState.WAITING
            and parent.job_id
        ):
            return False
    return True


@dataclass
class Batch:
    """Workpackages queued by one sbatch: an array (`indices`) or one job (`indices` empty)."""

    step: str
    wps: list[WpRow] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    after: tuple[str, ...] = ()
    corresponding: bool = False


def submit_waiting(engine: EngineInterface) -> bool:
    """Queue every job script written and not yet queued (see the module); True when some were."""
    todo = [
        wp
        for wp in engine.waiting_at(WaitKind.FILE)
        if not wp.job_id and _queued_here(engine, engine.bench.steps[wp.step])
    ]
    if not todo:
        return False
    scheduler = engine.backend.scheduler
    with engine.store.batch():
        unqueued = _unqueued(engine, todo, scheduler)
    for batch in batches(engine, unqueued, scheduler):
        _submit(engine, batch, scheduler)
    return True


def _unqueued(engine: EngineInterface, todo: list[WpRow], scheduler: Scheduler) -> list[WpRow]:
    """The workpackages of `todo` whose job is not queued; one that a bench which stopped before
    recording it had queued gets its job id recorded (call inside the store's batch)."""
    unqueued = []
    in_arrays: dict[tuple[int, int], str] | None = None  # read once, when first needed
    for wp in todo:
        if wp.id in engine.job_resources:  # written by this bench, never queued
            unqueued.append(wp)
            continue
        if in_arrays is None:
            in_arrays = queued_tasks(engine.info.run_dir)
        found = scheduler.job_id_in(_stdout(wp)) or in_arrays.get((wp.id, wp.attempt), "")
        if found:
            _record(engine, wp, found)
        else:
            unqueued.append(wp)
    return unqueued


# a batch's group: (step, its resource lines, the jobs it waits for, one parent task's children)
_GroupKey = tuple[str, tuple[str, ...], tuple[str, ...], bool]


def batches(engine: EngineInterface, wps: list[WpRow], scheduler: Scheduler) -> list[Batch]:
    """How `wps` are queued: arrays of one step with the same resources and parents' jobs, split
    where the site's arrays are smaller; one job each for steps that are no arrays."""
    system = engine.bench.system
    limit = (system.max_array_size if system is not None else 0) or scheduler.max_array_size() or 1
    groups: dict[_GroupKey, list[tuple[int, WpRow]]] = defaultdict(list)
    out: list[Batch] = []
    for wp in wps:
        step = engine.bench.steps[wp.step]
        after = tuple(
            sorted(engine.wps[p].job_id for p in wp.parents if engine.wps[p].state != WpState.DONE)
        )
        if array_of(engine.bench, step) == "false":
            out.append(Batch(wp.step, [wp], [], after))
            continue
        key, index = _group_of(engine, wp, step, after)
        groups[key].append((index, wp))
    for (step_name, _resources, after, corresponding), members in groups.items():
        if corresponding:  # several children of one parent task: one array for each of them
            out += _corresponding_arrays(step_name, after, members)
        else:
            out += _arrays(step_name, after, members, limit)
    return out


def _group_of(
    engine: EngineInterface, wp: WpRow, step: Step, after: tuple[str, ...]
) -> tuple[_GroupKey, int]:
    """The group `wp` is queued with, and its task index there: the task of its one parent's
    array it follows alone (aftercorr), or -1 in an array of the jobs waiting for `after`."""
    resources = () if step.call else _resources_of(engine, wp)
    parent_task = after[0].partition("_") if len(after) == 1 else ("", "", "")
    if parent_task[2].isdigit():  # one parent, a task of an array: this task follows it alone
        return (wp.step, resources, (parent_task[0],), True), int(parent_task[2])
    return (wp.step, resources, after, False), -1


def _corresponding_arrays(
    step_name: str, after: tuple[str, ...], members: list[tuple[int, WpRow]]
) -> list[Batch]:
    """Arrays whose task i follows task i of the parent array: several children of one parent
    task go to as many arrays (the first array without that task takes it)."""
    rounds: list[Batch] = []
    taken: list[set[int]] = []
    for index, wp in members:
        k = next((k for k, used in enumerate(taken) if index not in used), len(rounds))
        if k == len(rounds):
            rounds.append(Batch(step_name, after=after, corresponding=True))
            taken.append(set())
        rounds[k].wps.append(wp)
        rounds[k].indices.append(index)
        taken[k].add(index)
    return rounds


def _arrays(
    step_name: str, after: tuple[str, ...], members: list[tuple[int, WpRow]], limit: int
) -> list[Batch]:
    """The members in arrays of at most `limit` tasks, numbered from 0."""
    out = []
    for start in range(0, len(members), limit):
        chunk = [wp for _, wp in members[start : start + limit]]
        out.append(Batch(step_name, chunk, list(range(len(chunk))), after))
    return out


def _submit(engine: EngineInterface, batch: Batch, scheduler: Scheduler) -> None:
    """One sbatch for `batch`; its job ids recorded, or every workpackage of it failed with sbatch's
    words."""
    try:
        if engine.bench.steps[batch.step].call:
            folder = _write_map(engine, batch)
            ids = call_batch.submit(
                engine,
                batch.wps,
                folder,
                throttle(array_of(engine.bench, engine.bench.steps[batch.step])),
            )
            array, _, task = ids[0].partition("_")
            kept, line = (
                (os.path.join(folder, JOB_ID_FILE), array)
                if task
                else (_stdout(batch.wps[0]), ids[0])
            )
        elif batch.indices:
            folder, spec = _write_array(engine, batch, scheduler)
            array = scheduler.submit("array.sh", folder, spec, batch.after, batch.corresponding)
            ids = [f"{array}_{i}" for i in batch.indices]
            kept, line = os.path.join(folder, JOB_ID_FILE), array
        else:
            ids = [scheduler.submit(JOB_FILE, _work(batch.wps[0]), "", batch.after)]
            kept, line = _stdout(batch.wps[0]), ids[0]
    except (CaramelError, OSError, call_batch.SubmitError) as exc:
        with engine.store.transaction():
            for wp in batch.wps:
                engine.fail(wp, f"could not queue its job: {exc}")
        return
    with open(kept, "a") as handle:  # before the store records it: a stop meanwhile finds it there
        handle.write(f"{line}\n")
    for wp in batch.wps:
        engine.keep_job_resources(wp, None)
    queued = dict(zip((wp.id for wp in batch.wps), ids, strict=True))
    with engine.store.transaction():  # every task's move at once: one statement, not one a task
        engine.move_many(batch.wps, "wait", lambda wp: _queued(wp, queued[wp.id], batch))
        for wp in batch.wps:
            engine.queue_children(wp)


def _write_array(engine: EngineInterface, batch: Batch, scheduler: Scheduler) -> tuple[str, str]:
    """The array's folder (script, task map: "index, work folder, workpackage, attempt" a line) and
    its --array text."""
    folder = _write_map(engine, batch)
    map_file = os.path.join(folder, TASK_MAP)
    directives = _resources_of(engine, batch.wps[0])
    script = scheduler.array_script(
        dict(
            step=batch.step,
            benchmark=engine.bench.name,
            folder=folder,
            map_file=map_file,
            job_file=JOB_FILE,
            directives=list(directives),
            job_name=f"{engine.bench.name}.{batch.step}",
        )
    )
    with open(os.path.join(folder, "array.sh"), "w") as handle:
        handle.write(script)
    spec = ",".join(str(i) for i in batch.indices)
    if batch.indices == list(range(len(batch.indices))):
        spec = f"0-{len(batch.indices) - 1}"
    most = throttle(array_of(engine.bench, engine.bench.steps[batch.step]))
    return folder, spec + (f"%{most}" if most else "")


def _record(engine: EngineInterface, wp: WpRow, job: str) -> None:
    """`wp` waits for its done file, its job `job` followed through the scheduler."""
    engine.move(wp, "wait", job_id=job, reason=_waits_for(wp, job))
    engine.queue_children(wp)


def _queued(wp: WpRow, job: str, batch: Batch) -> dict[str, object]:
    """What `wp`'s move records once `batch` is queued: its job `job`, and the jobs it waits for."""
    after = (
        tuple(f"{a}_{job.split('_')[1]}" for a in batch.after)
        if batch.corresponding
        else batch.after
    )
    return {"job_id": job, "reason": _waits_for(wp, job, after)}


def _waits_for(wp: WpRow, job: str, after: tuple[str, ...] = ()) -> str:
    done = os.path.basename(wp.wait_files.get("done", ""))
    return f"waits for {done} (job {job}" + (f", after {', '.join(after)})" if after else ")")


def _write_map(engine: EngineInterface, batch: Batch) -> str:
    """A new folder for the array, and its task map in it."""
    folder = layout.array_folder(engine.info.run_dir, batch.step)
    with open(os.path.join(folder, TASK_MAP), "w") as handle:
        handle.write(
            "".join(
                f"{index}\t{_work(wp)}\t{wp.id}\t{wp.attempt}\n"
                for index, wp in zip(batch.indices, batch.wps, strict=True)
            )
        )
    return folder


def _queued_here(engine: EngineInterface, step: Step) -> bool:
    """Whether the jobs of `step`'s waiting workpackages are queued by caramel (here), not by their
    do."""
    return step.submit or (bool(step.call) and array_of(engine.bench, step) != "false")


def queued_tasks(run_dir: str) -> dict[tuple[int, int], str]:
    """(workpackage, attempt) -> the array task id ("123_4") of every array queued in this run
    (those whose sbatch answered: their `job_id` was written)."""
    parent = os.path.join(run_dir, ".caramel_arrays")
    out: dict[tuple[int, int], str] = {}
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        array = _read(os.path.join(parent, name, JOB_ID_FILE)).strip()
        if not array:
            continue
        for line in _read(os.path.join(parent, name, TASK_MAP)).splitlines():
            fields = line.split("\t")
            if (
                len(fields) == 4
                and fields[0].isdigit()
                and fields[2].isdigit()
                and fields[3].isdigit()
            ):
                out[(int(fields[2]), int(fields[3]))] = f"{array}_{fields[0]}"
    return out


def _resources_of(engine: EngineInterface, wp: WpRow) -> tuple[str, ...]:
    """The resource lines of `wp`'s job script: kept when this bench wrote it, else read."""
    found = engine.job_resources.get(wp.id)
    if found is None:
        found = engine.backend.scheduler.array_directives(_read(os.path.join(_work(wp), JOB_FILE)))
    return found


def _work(wp: WpRow) -> str:
    return os.path.dirname(wp.wait_files["done"])


def _stdout(wp: WpRow) -> str:
    return os.path.join(_work(wp), STDOUT)


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""
