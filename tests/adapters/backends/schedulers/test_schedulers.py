"""Which scheduler a run gets: the system's, or with none named the one this host submits to."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from caramel.adapters.backends import schedulers
from caramel.errors import RunError


def test_get_by_name_and_did_you_mean() -> None:
    assert schedulers.get("slurm").name == "slurm"
    with pytest.raises(RunError, match="no scheduler named 'slrum'") as err:
        schedulers.get("slrum")
    assert err.value.hint == "did you mean 'slurm'?"


def test_a_system_naming_no_scheduler_follows_the_one_found_here(monkeypatch: pytest.MonkeyPatch) -> None:
    on_path: set[str] = set()
    monkeypatch.setattr(schedulers.shutil, "which", lambda name: f"/usr/bin/{name}" if name in on_path else None)
    local = SimpleNamespace(scheduler="local")
    assert schedulers.for_system(local).name == "none"
    assert schedulers.for_system(None).name == "none"
    on_path.add("sbatch")  # a SLURM login node
    assert schedulers.for_system(local).name == "slurm" and schedulers.for_system(None).name == "slurm"
    assert schedulers.get("slurm").missing() == ["sacct", "scancel"]
    assert schedulers.for_system(SimpleNamespace(scheduler="slurm")).name == "slurm"


def test_the_job_script_is_the_schedulers_template() -> None:
    slurm = schedulers.get("slurm")
    assert slurm.submit_line("caramel_job.sh") == "sbatch --parsable caramel_job.sh"
    assert slurm.time_text(90) == "00:01:30"
    values = dict(wp_id=0, step="s", benchmark="b", job_name="b.s.0", nodes=1, tasks_per_node=1, cpus_per_task=1,
                  time_limit="", partition="", account="", gres="", job_out="o", job_err="e",
                  scheduler_options=["--exclusive"],
                  modules=[], env={}, system="x", launcher="", body="echo hi", done_file="d", fingerprint_file="f")
    assert "#SBATCH --job-name=b.s.0" in slurm.job_script(values)
    assert "#SBATCH --exclusive\n" in slurm.job_script(values)  # the system's scheduler_options
    with pytest.raises(RunError, match="has no job script template"):
        schedulers.get("none").job_script(values)


def test_no_module_but_a_schedulers_own_names_its_commands() -> None:
    """A scheduler's commands (sbatch, sinfo, qsub...) are named in its module only: the site facts
    (detection, partition and account checks) are asked through the Scheduler interface."""
    import ast
    import inspect
    from pathlib import Path

    import caramel

    owners = {}
    for name in schedulers.names():
        scheduler = schedulers.get(name)
        for command in (*scheduler.commands, *scheduler.site_commands):
            owners[command] = Path(inspect.getfile(type(scheduler))).resolve()
    found = []
    for path in sorted(Path(caramel.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text())
        documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        docs = {id(node.body[0].value) for node in ast.walk(tree)  # docstrings may name one as an example
                if isinstance(node, documented) and ast.get_docstring(node) is not None}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found += [f"{path.name}:{node.lineno} names {word}" for word in node.value.split()
                          if word in owners and owners[word] != path.resolve()]
    assert not found, found
