"""A workpackage's first start: its environment, folders, links, files and substitutions.

JUBE's order: create the folders and parent links, take the exported environment of parent steps
with `export="true"` and the `export="true"` parameters, link the shared folder, then the filesets
(copy / link / prepare, in file order) and the substitutesets, all before the first do.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from caramel.errors import Location, RunError
from caramel.stages.engine import files, workdir
from caramel.stages.engine.commands import command_for, do_active, path_text, used_sets
from caramel.stages.engine.script import Command, Outcome, Status, carry_path, parse_exports
from caramel.stages.spec.model import Benchmark, Do, FileEntry, Step
from caramel.vocabulary import Role


def initial_env(
    base: dict[str, str], parent_envs: list[dict[str, str]], params: dict[str, str]
) -> dict[str, str]:
    env = dict(base)
    for parent_env in parent_envs:
        env.update(parent_env)
    for name in params.get("jube_wp_envlist", "").split(","):
        if name and name in params:
            env[name] = params[name]
    return env


def secrets_of(env: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables of `env` its stored form leaves out (caramel.redact.environment), but those
    `base` holds with the same value."""
    from caramel import redact
    from caramel.settings import current

    kept = redact.environment(env, current().secret_patterns)
    return {
        name: value
        for name, value in env.items()
        if name not in kept and (base is None or base.get(name) != value)
    }


def with_secrets(stored: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    """A stored environment (its secrets left out) with the secrets of bench's own environment back,
    for a workpackage that resumes."""
    return {**secrets_of(base), **stored}


def prepare_command(entry: FileEntry, params: dict[str, str], base: str, index: int = 0) -> Command:
    """The `index`-th prepare of a workpackage (counted over its filesets in order) as a Command."""
    do = Do(
        entry.path,
        stdout=entry.stdout,
        stderr=entry.stderr,
        work_dir=entry.work_dir,
        active=entry.active,
        where=entry.where,
    )
    return command_for(do, index, 0, params, base, role=Role.PREPARE)


def prepares(bench: Benchmark, step: Step, params: dict[str, str], base: str) -> list[Command]:
    """Every prepare command the workpackage runs, in order (what `--dry-run` shows)."""
    out: list[Command] = []
    for name in used_sets(step, params, bench.filesets):
        for entry in bench.filesets[name].entries:
            if entry.action == "prepare" and do_active(
                Do(entry.path, active=entry.active, where=entry.where), params
            ):
                command = prepare_command(entry, params, base, len(out))
                if command.text:
                    out.append(command)
    return out


def materialise(
    bench: Benchmark,
    step: Step,
    params: dict[str, str],
    paths: workdir.WpPaths,
    run_dir: str,
    parent_links: list[tuple[str, str]],
    env: dict[str, str],
    run_prepare: Callable[[Command, dict[str, str]], Outcome],
    prepared: int = 0,
) -> dict[str, str]:
    """Make the work folder ready; returns the environment after the `prepare` commands.

    `prepared`: how many prepares already ended (their shells recorded it) in an attempt bench was
    stopped in: they are not run again (exactly once, as do's), the folder they worked in is kept
    as it is, and the environment the last of them exported is taken from its carry file."""
    if not prepared:
        workdir.create(paths, parent_links, workdir.shared_folder(run_dir, step, params))
    preparer = _Preparer(paths.carry_file, run_prepare, prepared)
    for name in used_sets(step, params, bench.filesets):
        for entry in bench.filesets[name].entries:
            if entry.action != "prepare":
                files.place(
                    entry, params, env, paths.work, paths.base
                )  # an existing target is kept
            elif do_active(Do(entry.path, active=entry.active, where=entry.where), params):
                command = prepare_command(entry, params, paths.base, preparer.count)
                if command.text:
                    env = preparer.run(command, entry.where, env)
    for name in used_sets(step, params, bench.substitutesets):
        files.apply_substituteset(bench.substitutesets[name], params, paths.base)
    return env


@dataclass
class _Preparer:
    """Runs a workpackage's prepares in order (`count` so far), or takes the environment of those
    that ended in a stopped attempt (the first `prepared`) from their carry files."""

    carry_file: str
    run_prepare: Callable[[Command, dict[str, str]], Outcome]
    prepared: int
    count: int = 0

    def run(self, command: Command, where: Location, env: dict[str, str]) -> dict[str, str]:
        """The environment after `command`; a RunError where it fails."""
        self.count += 1
        if command.op < self.prepared:
            return _exported(carry_path(self.carry_file, command)) or env
        outcome = self.run_prepare(command, env)
        if outcome.status != Status.DONE:
            raise RunError(
                f"<prepare> {command.text!r} exited with {outcome.exit_code}"
                + (f": {outcome.diagnostics[-1]}" if outcome.diagnostics else ""),
                where,
            )
        return outcome.env if outcome.env is not None else env


def _do_log_path(step: Step, paths: workdir.WpPaths, params: dict[str, str]) -> str:
    """Where `do_log_file=` goes: an absolute path as it is, a bare name in the workpackage's
    folder, a relative path under the current folder (JUBE's); a folder's name is refused."""
    name = path_text(step.do_log_file, params)
    if name.endswith("/"):
        raise RunError(f"do_log_file {name!r} of step '{step.name}' names a folder", step.where)
    if os.path.isabs(name):
        return name
    if "/" not in name:
        return os.path.join(paths.wp_dir, name)
    return os.path.join(os.getcwd(), name)


def _replayed(commands: list[Command], note: str) -> list[str]:
    """The commands' lines, each with `note`, a `cd` before each that runs elsewhere."""
    lines = []
    cwd = None
    for command in commands:
        if command.cwd != cwd:
            lines.append(f"cd {command.cwd}\n")
            cwd = command.cwd
        lines.append(command.text + note + "\n")
    return lines


def _exported(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return parse_exports(handle.read())
    except OSError:
        return {}


def write_do_log(
    step: Step,
    paths: workdir.WpPaths,
    params: dict[str, str],
    env: dict[str, str],
    commands: list[Command],
    shared: bool = False,
) -> None:
    """`do_log_file=`: a shell script replaying what ran (environment first), like JUBE's do log."""
    if not step.do_log_file or not commands:
        return
    path = _do_log_path(step, paths, params)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines: list[str] = []
    if not os.path.exists(path):
        lines.append("#!/bin/sh\n\n")
        lines += [f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k.isidentifier()]
        lines.append("\n")
    lines += _replayed(commands, " # shared execution" if shared else "")
    with open(path, "a") as handle:
        handle.write("".join(lines))
