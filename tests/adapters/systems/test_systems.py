"""System files: found by tag, validated with file and line, turned into the `system` parameterset."""

from __future__ import annotations

import pytest

from caramel.adapters.backends import schedulers
from caramel.adapters.systems import find_system, load_system, system_names, with_system
from caramel.errors import SpecError
from caramel.stages.spec.model import Benchmark

CARAML = ["A100", "GC200", "GH200", "H100", "JEDI", "MI250", "WAIH100"]


def test_shipped_systems_load_and_carry_carmls_queues():
    names = system_names()
    assert set(CARAML + ["local", "localcluster"]) <= set(names)
    for name in names:
        system = load_system(find_system({name}).file)
        assert system.name == name
    queues = {n: find_system({n}).partition for n in CARAML}
    assert queues == {"A100": "dc-gpu", "GC200": "dc-ipu", "GH200": "dc-gh", "H100": "dc-h100", "JEDI": "all",
                      "MI250": "dc-mi200", "WAIH100": "dc-wai"}
    assert find_system({"local"}).scheduler == "local"


def test_tag_selects_system_and_user_folder_wins(tmp_path, monkeypatch):
    assert find_system({"800M", "nothing"}) is None
    (tmp_path / "A100.yaml").write_text("scheduler: slurm\npartition: mygpu\n")
    assert find_system({"800M", "A100"}, [str(tmp_path)]).partition == "mygpu"
    monkeypatch.setenv("CARAMEL_SYSTEMS_PATH", str(tmp_path))
    assert find_system({"A100"}).partition == "mygpu"
    with pytest.raises(SpecError, match="the tags name 2 systems"):
        find_system({"A100", "MI250"})


def test_a_tag_holding_a_path_names_no_system_file(tmp_path):
    """A tag becomes `<folder>/<tag>.yaml`: one with / or .. would read a file outside the systems folder."""
    systems = tmp_path / "systems"
    systems.mkdir()
    (tmp_path / "evil.yaml").write_text("scheduler: slurm\npartition: outside\n")
    assert find_system({"../evil"}, [str(systems)]) is None


@pytest.mark.parametrize("text, line, message", [
    ("scheduler: slurm\npartiton: x\n", 2, "unknown setting 'partiton'"),
    ("scheduler: lsf\n", 1, "scheduler: 'lsf' is not known"),
    ("nodes: two\n", 1, "nodes: expected a whole number"),
    ("modules: {a: 1}\n", 1, "modules: expected a list"),
    ("name: other\n", 1, "differs from the file name"),
    ("- a\n", 1, "a system file is a mapping"),
    ("a: [\n", 2, "not valid YAML"),
])
def test_bad_system_files_name_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "site.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=message) as err:
        load_system(path)
    assert err.value.where.file == str(path) and err.value.where.line == line


def test_system_parameterset_keeps_commas_and_yields_to_the_files_own():
    system = find_system({"MI250"})
    bench = with_system(Benchmark("b", "out"), system)
    params = {p.name: p.value for p in bench.parametersets["system"].parameters}
    assert params["system_launcher_args"] == "--cpu_bind=none,v --mpi=pspmix env PMIX_SECURITY_MODE=native"
    assert bench.system is system
    own = Benchmark("b", "out")
    own.parametersets = {"system": object()}
    assert with_system(own, system).parametersets["system"] is own.parametersets["system"]


def test_slurm_system_without_scheduler_commands_names_the_system_file(monkeypatch):
    from caramel.errors import RunError
    from caramel.stages.engine import session

    bench = with_system(Benchmark("b", "out"), find_system({"A100"}))
    monkeypatch.setattr(schedulers.shutil, "which", lambda name: None)
    local = with_system(Benchmark("b", "out"), find_system({"local"}))
    with pytest.raises(RunError, match="system 'A100' uses slurm, but sbatch, sacct, scancel are not on PATH") as err:
        session.scheduler_for(bench)
    assert err.value.where.file.endswith("systems/A100.yaml")
    assert session.scheduler_for(local) == "none"  # no scheduler here: the local system needs none
    monkeypatch.setattr(schedulers.shutil, "which", lambda name: "/usr/bin/" + name)
    assert session.scheduler_for(bench) == "slurm"
    # on a login node a local run follows the jobs its do's submit through the scheduler found there
    assert session.scheduler_for(local) == "slurm"


def test_system_parameters_carry_the_container_line_and_leave_out_what_the_file_does_not_state():
    a100 = find_system({"A100"}).parameters()
    assert a100["system_container_prefix"] == "apptainer exec --bind=${container_binds} --nv ${container_image}"
    assert a100["system_image_pytorch"] == "pytorch_ngc2406_x86.sif" and a100["system_images"] == "pytorch tensorflow"
    assert find_system({"MI250"}).parameters()["system_container_prefix"] == (
        "apptainer exec --bind=${container_binds} ${container_image}")
    local = find_system({"local"}).parameters()
    assert "system_account" not in local and local["system_partition"] == "local"  # the Queue column of tables
    assert "system_container_prefix" not in local
    assert (local["system_gpus_per_node"], local["system_gres"], local["system_scheduler"]) == ("0", "", "local")
