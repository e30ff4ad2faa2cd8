"""Work folders: `<run dir>/<6-digit id>_<step>[_suffix]/work`, parent links, shared folders.

Layout as JUBE makes it: a child's work folder holds a link named after each parent step pointing
at that parent's work folder; a step with `shared="NAME"` has one folder `<run dir>/<step>_NAME`
for all its workpackages, linked as `NAME` from each work folder; a step with `work_dir=` runs its
do's in that folder (relative to the benchmark file) instead of its own work folder.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from caramel.errors import RunError
from caramel.stages.engine.commands import final_text, path_text
from caramel.stages.expand import layout
from caramel.stages.spec.model import Step


@dataclass
class WpPaths:
    wp_dir: str  # the workpackage folder (bench's own files live here, beside work/)
    work: str  # <wp_dir>/work
    base: str  # where the do's run: work, or the step's work_dir

    @property
    def carry_file(self) -> str:
        """Where a do's subshell leaves its exports for the next do (see engine.script)."""
        return os.path.join(self.wp_dir, layout.CARRY_FILE)


def wp_paths(run_dir: str, dirname: str, step: Step, params: dict[str, str], home: str) -> WpPaths:
    wp_dir = layout.wp_folder(run_dir, dirname)
    work = layout.work_folder(run_dir, dirname)
    base = work
    if step.work_dir:
        base = layout.step_work_dir(home, path_text(step.work_dir, params))
        if "$" in base:
            raise RunError(
                f"work_dir {base!r} of step '{step.name}' names an unknown parameter or variable",
                step.where,
                hint="define the parameter, or write the folder without $",
            )
    return WpPaths(wp_dir, work, base)


def shared_folder(run_dir: str, step: Step, params: dict[str, str]) -> tuple[str, str] | None:
    """(link name, folder) of the step's shared folder, or None."""
    if not step.shared:
        return None
    name = final_text(step.shared, params)
    return name, layout.shared_folder(run_dir, step.name, name, step.where)


def clean(wp_dir: str) -> None:
    """Remove what an interrupted attempt left, so a workpackage always starts in a clean folder."""
    if os.path.islink(wp_dir) or os.path.isfile(wp_dir):
        os.unlink(wp_dir)
    elif os.path.isdir(wp_dir):
        shutil.rmtree(wp_dir)


def create(paths: WpPaths, parents: list[tuple[str, str]], shared: tuple[str, str] | None) -> None:
    """Make the folders and links, the workpackage's folder a new one: what an interrupted attempt
    left there is removed first (`clean`). `parents`: (parent step name, parent work folder)."""
    if "$" in os.path.basename(paths.wp_dir):
        raise RunError(
            f"'{paths.wp_dir}' cannot be a workpackage folder name",
            hint="check the suffix= of the step: it names an unknown parameter",
        )
    try:  # a first attempt's folder is new: no look before (three stat calls a workpackage)
        os.mkdir(paths.wp_dir)
    except FileExistsError:  # a folder, file or link an earlier attempt left
        clean(paths.wp_dir)
        os.mkdir(paths.wp_dir)
    os.mkdir(paths.work)
    for step_name, parent_work in parents:
        link = os.path.join(paths.work, step_name)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(parent_work, paths.work), link)
    if shared is not None:
        name, folder = shared
        os.makedirs(folder, exist_ok=True)
        link = os.path.join(paths.work, name)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(folder, paths.work), link)
    if paths.base != paths.work:
        os.makedirs(paths.base, exist_ok=True)
