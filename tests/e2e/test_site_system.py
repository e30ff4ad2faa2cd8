"""A site adds itself in one system file: the shipped LLM and ResNet benchmarks render its values."""

from __future__ import annotations

import json
from pathlib import Path

from tests.run_bench import bench

SITE = """\
description: a site no shipped file knows
scheduler: slurm
partition: booster-xq
account: proj4711
accelerator: nvidia
gpus_per_node: 6
gres: gpu:h200:6
nodes: 3
cpus_per_task: 96
cpus_per_device: 11
launcher: srun
launcher_args: --cpu-bind=cores --mpi=pmix_v4
container_runtime: apptainer
image_dir: /site/images/ml
energy_method: rocm
images:
  pytorch: torch-site-7.sif
  tensorflow: tf-site-3.sif
"""


def _plan(tmp_path: Path, env: dict[str, str], name: str, *tags: str) -> tuple[int, list[dict], str]:
    done = bench("plan", name, "--tag", *tags, "--systems", str(tmp_path / "site"), "--format", "json",
                 cwd=tmp_path, env=env)
    if done.returncode:
        return done.returncode, [], done.stderr
    return 0, [w["parameters"] for w in json.loads(done.stdout)["workpackages"]
               if w["step"] in ("benchmark", "execute")], ""


def _site(tmp_path: Path, text: str = SITE) -> None:
    (tmp_path / "site").mkdir(exist_ok=True)
    (tmp_path / "site" / "MYSITE.yaml").write_text(text)


def test_a_site_file_renders_into_the_llm_job_script(tmp_path: Path, env: dict[str, str]) -> None:
    _site(tmp_path)
    rc, wps, err = _plan(tmp_path, env, "llm", "800M", "MYSITE")
    assert rc == 0, err
    script = wps[0]["job_script"]
    for line in ("#SBATCH --account=proj4711", "#SBATCH --partition=booster-xq", "#SBATCH --nodes=1",
                 "#SBATCH --cpus-per-task=96", "#SBATCH --gres=gpu:h200:6"):
        assert line + "\n" in script
    assert "srun --cpu-bind=cores --mpi=pmix_v4 apptainer exec --bind=" in script
    assert " --nv /site/images/ml/torch-site-7.sif bash -c 'cd /opt/Megatron-LM && " in script
    assert "caramel.payloads.measure --method rocm --interval 100" in script
    assert "--nproc_per_node 6 --nnodes 1" in script


def test_a_site_file_renders_into_the_resnet_job_scripts(tmp_path: Path, env: dict[str, str]) -> None:
    _site(tmp_path)
    rc, wps, err = _plan(tmp_path, env, "resnet50", "MYSITE")
    assert rc == 0, err
    assert len(wps) == 3 * 6 * 9  # nodes 1..3 x tasks per node 1..6 x nine global batch sizes
    p = next(w for w in wps if (w["nodes"], w["taskspernode"], w["global_batch_size"]) == (3, 6, 4096))
    script = p["job_script"]
    for line in ("#SBATCH --account=proj4711", "#SBATCH --partition=booster-xq", "#SBATCH --nodes=3",
                 "#SBATCH --ntasks-per-node=6", "#SBATCH --cpus-per-task=11"):
        assert line + "\n" in script
    assert "srun --cpu-bind=cores --mpi=pmix_v4 apptainer exec --bind=" in script
    assert " --nv /site/images/ml/tf-site-3.sif bash -c 'python -m caramel.payloads.measure --method rocm " in script
    assert "tf_cnn_benchmarks.py --num_gpus 1 --model resnet50_v2 --batch_size 227" in script


def test_a_missing_system_key_names_the_file_the_key_and_the_benchmark_line(tmp_path: Path,
                                                                             env: dict[str, str]) -> None:
    _site(tmp_path, SITE.replace("account: proj4711\n", ""))
    rc, _, err = _plan(tmp_path, env, "llm", "800M", "MYSITE")
    assert rc == 2
    assert f"the system file {tmp_path / 'site' / 'MYSITE.yaml'} has no 'account'" in err
    assert "llm.yaml:" in err and "Traceback" not in err
    line = int(err.split("llm.yaml:")[1].split(":")[0])
    shipped = Path(__file__).parents[2] / "benchmarks" / "llm.yaml"
    assert "$system_account" in shipped.read_text().splitlines()[line - 1]


def test_a_model_needing_more_devices_than_the_system_holds_is_a_plan_error(tmp_path: Path,
                                                                            env: dict[str, str]) -> None:
    # 175B: tensor x pipeline parallel 8 x 8 = 64 devices on 16 nodes of one GPU each
    _site(tmp_path, SITE.replace("gpus_per_node: 6", "gpus_per_node: 1"))
    rc, _, err = _plan(tmp_path, env, "llm", "175B", "MYSITE")
    assert rc == 2
    assert "this plan needs 64 devices, but 16 node(s) of system 'MYSITE' hold 16" in err
    assert str(tmp_path / "site" / "MYSITE.yaml") in err and "Traceback" not in err


def test_more_nodes_than_the_system_allows_is_a_plan_error(tmp_path: Path, env: dict[str, str]) -> None:
    _site(tmp_path, SITE + "max_nodes: 8\n")
    rc, _, err = _plan(tmp_path, env, "llm", "13B", "MYSITE")
    assert rc == 2
    assert "this plan needs 44 nodes, but system 'MYSITE' allows at most 8" in err


def test_a_benchmark_that_uses_the_system_needs_a_system_tag(tmp_path: Path, env: dict[str, str]) -> None:
    done = bench("plan", "llm", "--tag", "800M", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "no tag names a system file" in done.stderr and "A100" in done.stderr
