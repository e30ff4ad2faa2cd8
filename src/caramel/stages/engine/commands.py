"""A step's `do`s for one workpackage, substituted: what a script runs next.

A workpackage runs its `do`s cycle after cycle (`cycles=`). A run of the script stops early at a
shared `do` (it runs once for all workpackages of the step, when they all reached it), at a
missing done file, at a break file or at a failure; it is resumed later from the next `do`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from caramel.errors import RunError
from caramel.stages.engine.script import Command
from caramel.stages.expand import layout
from caramel.stages.expand.conditions import eval_bool
from caramel.stages.expand.params import Params
from caramel.stages.expand.substitute import substitute
from caramel.stages.spec.model import Benchmark, Do, Step
from caramel.vocabulary import Role


def final_text(text: str, params: dict[str, str]) -> str:
    """JUBE's substitution of a final text (`$$` becomes `$`)."""
    return substitute(text, params, final=True)


def path_text(text: str, params: dict[str, str]) -> str:
    """A file or folder name: substituted, then `~` and environment variables expanded (as JUBE
    does)."""
    return layout.resolve_path_text(final_text(text, params))


@dataclass
class Segment:
    """Commands to run in one script, and where it stops: a shared do at (cycle, op), or the end."""

    commands: list[Command]
    shared_stop: tuple[int, int] | None = None


def do_active(do: Do, params: dict[str, str]) -> bool:
    return eval_bool(final_text(do.active, params), "active= of a <do>", do.where)


def command_for(
    do: Do, op: int, cycle: int, params: dict[str, str], work: str, role: Role = Role.DO
) -> Command:
    """One do as a Command. stdout/stderr files live in the step's work folder (JUBE names them
    before it changes to the do's own `work_dir`); done/error/break files are relative to that
    one."""
    text = final_text(do.command, params).strip(";").strip()
    stdout = os.path.join(work, path_text(do.stdout, params) if do.stdout else "stdout")
    stderr = os.path.join(work, path_text(do.stderr, params) if do.stderr else "stderr")
    cwd = work
    if do.work_dir:
        cwd = os.path.join(work, path_text(do.work_dir, params))
        if "$" in cwd:
            raise RunError(
                f"work_dir {cwd!r} of a <do> names an unknown parameter or variable", do.where
            )

    def at(name: str) -> str:
        return os.path.join(cwd, path_text(name, params)) if name else ""

    return Command(
        op,
        cycle,
        text,
        cwd,
        stdout,
        stderr,
        role,
        at(do.done_file),
        at(do.error_file),
        at(do.break_file),
        make_cwd=bool(do.work_dir),
    )


def segment(
    bench: Benchmark,
    step: Step,
    params: Params,
    work: str,
    cycle: int,
    op: int,
    time_limit: float = 0.0,
    queue_later: bool = False,
) -> Segment:
    """The do's from (cycle, op) on, up to the first active shared do (not included). `queue_later`:
    a submit step's command writes its job script, and the engine queues it (engine.arrays)."""
    if step.submit:
        return _job_segment(bench, step, params, work, cycle, op, time_limit, queue_later)
    if step.call:  # one command hands the function to submitit (engine/call.py); nothing after it
        from caramel.stages.engine.call import call_command

        return Segment(
            [call_command(bench, step, params, work, time_limit)] if (cycle, op) == (0, 0) else []
        )
    commands: list[Command] = []
    for c in range(cycle, step.cycles):
        cycle_params = params.at_cycle(
            c
        )  # the plan evaluated each cycle's values: read, never evaluated here
        for k, do in enumerate(step.dos):
            if c == cycle and k < op:
                continue
            if not do_active(do, cycle_params):
                continue
            if do.shared:
                return Segment(commands, (c, k))
            commands.append(command_for(do, k, c, cycle_params, work))
    return Segment(commands)


def shared_params(params: dict[str, str]) -> dict[str, str]:
    """A shared do sees no workpackage's own `jube_wp_*` values (JUBE removes them)."""
    return {name: value for name, value in params.items() if not name.startswith("jube_wp_")}


def check_step(step: Step) -> None:
    """Constraints JUBE enforces on shared do's."""
    for do in step.dos:
        if do.shared and not step.shared:
            raise RunError(
                f"step '{step.name}': <do shared=\"true\"> needs shared= on its step",
                do.where,
                hint='add shared="shared" (the name of the shared folder link) to the <step>',
            )
        if do.shared and step.procs != 1:
            raise RunError(
                f"step '{step.name}': a shared <do> is not allowed in a step with procs > 1",
                do.where,
            )


def used_sets(step: Step, params: dict[str, str], available: Mapping[str, object]) -> list[str]:
    """Names of `available` sets the step uses, in use order (names may hold `$parameters`)."""
    names: list[str] = []
    for use in step.uses:
        for raw in use.names:
            for name in final_text(raw, params).split(","):
                name = name.strip()
                if name in available and name not in names:
                    names.append(name)
    return names


def _job_segment(
    bench: Benchmark,
    step: Step,
    params: Params,
    work: str,
    cycle: int,
    op: int,
    time_limit: float = 0.0,
    queue_later: bool = False,
) -> Segment:
    """A `submit` step: every active do of every cycle in one job script; nothing after its job."""
    from caramel.stages.engine.jobscript import submit_command

    if (cycle, op) != (0, 0):
        return Segment([])  # the job wrote its done file: the step is complete
    body = []
    for c in range(step.cycles):
        cycle_params = params.at_cycle(c)
        for do in step.dos:
            if do_active(do, cycle_params):
                if do.done_file or do.shared:
                    raise RunError(
                        "a do of a submit step has no done_file= or shared= (the job is the step)",
                        do.where,
                        hint="remove submit=, or those attributes",
                    )
                body.append(final_text(do.command, cycle_params).strip(";").strip())
    return Segment([submit_command(bench, step, params, body, work, time_limit, queue_later)])
