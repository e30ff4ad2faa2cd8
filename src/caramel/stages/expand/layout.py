"""Where a run keeps what: the one owner of the run folder's layout.

A run folder (JUBE's layout, so JUBE users find their files where they expect them):

    <run dir>/caramel.db                    the run's state (state.store)
    <run dir>/analyse.db                    analysed values kept between `bench result` calls
    <run dir>/.caramel_ended                each do's end, appended by the shell that ran it
    <run dir>/.caramel_identity             the run's identity (id, benchmark, creation time): what
    `remove` checks <run dir>/<6-digit id>_<step>[_suffix]/         a workpackage's folder (bench's
    own files) <run dir>/<6-digit id>_<step>[_suffix]/work/    its work folder (the do's run here)
    <run dir>/<step>_<name>/                a step's `shared=` folder, linked as <name> from each
    work folder <run dir>/.caramel_arrays/<step>.<n>/   a job array's script, its task map and its
    tasks' output links

A step with `work_dir=` runs its do's in that folder, relative to the benchmark file's folder.
Every stage that needs one of these paths asks this module; nothing else joins them.
"""

from __future__ import annotations

import os

from caramel.errors import Location
from caramel.fs import paths

RUN_DB = "caramel.db"
ANALYSIS_CACHE = "analyse.db"
ENDED_RECORD = ".caramel_ended"
IDENTITY_FILE = ".caramel_identity"  # written once when the run is made (state.identity)
CARRY_FILE = ".caramel_env"  # a do's subshell leaves its exports here for the next do
FINGERPRINT_FILE = "caramel_fingerprint.txt"  # written by the job (templates/slurm/fingerprint.sh)
WORK = "work"


def wp_dirname(wp_id: int, step: str, suffix: str = "") -> str:
    """The workpackage folder's name: `000042_train` or `000042_train_<suffix>` (suffix with its
    `_`)."""
    return f"{wp_id:06d}_{step}{suffix}"


def array_folder(run_dir: str, step: str) -> str:
    """A new folder for one job array of `step`: `<run dir>/.caramel_arrays/<step>.<n>`, n counting
    up."""
    parent = os.path.join(run_dir, ".caramel_arrays")
    os.makedirs(parent, exist_ok=True)
    n = len(os.listdir(parent))
    while True:
        folder = os.path.join(parent, f"{step}.{n}")
        try:
            os.mkdir(folder)
            return folder
        except FileExistsError:
            n += 1


def wp_folder(run_dir: str, dirname: str) -> str:
    """A workpackage's folder; its name (made from a step's suffix=, read back from the run record)
    is one name inside the run folder, or refused (fs.paths)."""
    return os.path.join(
        run_dir, paths.name(dirname, "workpackage folder", run_dir, f"the run record of {run_dir}")
    )


def work_folder(run_dir: str, dirname: str) -> str:
    """`<run dir>/<dirname>/work`: where a workpackage's do's run unless its step has
    `work_dir=`."""
    return os.path.join(wp_folder(run_dir, dirname), WORK)


def work_folders(run_dir: str, dirnames: list[str]) -> list[str]:
    """`work_folder` of every name at once: each name checked as `wp_folder` checks it, the paths
    joined by hand (a run of 10,000 workpackages builds them on every `bench result`)."""
    where = f"the run record of {run_dir}"
    prefix = os.path.join(run_dir, "")
    return [
        f"{prefix}{paths.name(dirname, 'workpackage folder', run_dir, where)}{os.sep}{WORK}"
        for dirname in dirnames
    ]


def shared_folder(run_dir: str, step: str, name: str, source: Location | str | None = None) -> str:
    """The one folder of a step with `shared="name"`: `name` (substituted) is one name, or refused
    naming `source` (the step's file and line)."""
    paths.name(step, "step", run_dir, source)
    paths.name(name, f"step '{step}': shared name", run_dir, source)
    return os.path.join(run_dir, f"{step}_{name}")


def step_work_dir(home: str, resolved: str) -> str:
    """The folder a step's `work_dir=` names, given its text already substituted (relative to
    `home`, the benchmark file's folder; an absolute text stays)."""
    return os.path.normpath(os.path.join(home, resolved))


def resolve_path_text(text: str) -> str:
    """`~` and environment variables in a substituted file or folder name, as JUBE expands them."""
    return os.path.expandvars(os.path.expanduser(text))


def run_db(run_dir: str) -> str:
    return os.path.join(run_dir, RUN_DB)


def identity_file(run_dir: str) -> str:
    return os.path.join(run_dir, IDENTITY_FILE)


def analysis_cache(run_dir: str) -> str:
    return os.path.join(run_dir, ANALYSIS_CACHE)
