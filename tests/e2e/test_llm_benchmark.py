"""benchmarks/llm.yaml for real: caramel's GPT through torchrun on this machine, and the GPU job scripts."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from tests.adapters.energy.fake_hwmon import make_hwmon
from tests.run_bench import bench
from tests.shipped import copy_benchmarks

pytest.importorskip("torch")
pytest.importorskip("jpwr")

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
CARAML_COLUMNS = ("JobID,System,Version,Queue,JobTime,Runtime(min),Model,ModelSize,Dataset,Nodes,Devices,"
                  "GlobalBatchSize,PipelineParallel,TensorParallel,DataParallel,Iterations,Time/iteration(s),"
                  "Tokens/second,Avg_TFLOPs/GPU,EnergyFile").split(",")
ENERGY_COLUMNS = ["Energy(Wh)", "Energy/device(Wh)", "Tokens/J", "AvgPower(W)", "EnergyStatus"]
CARAMEL_COLUMNS = ["Parameters", "Processes", "Threads/Process", "Layout", "GEMM(GFLOP/s)", "MFU(%)"]


def run_llm(tmp_path: Path, env: dict[str, str], hwmon: Path | None = None) -> list[dict[str, str]]:
    copy_benchmarks(tmp_path / "benchmarks")
    if hwmon is not None:  # the local system's meter reads the fake tree instead of /sys/class/hwmon
        spec = tmp_path / "benchmarks" / "llm.yaml"
        spec.write_text(spec.read_text().replace('"--method $energy_method --interval 100"',
                                                 f'"--method $energy_method --interval 50 --hwmon-base {hwmon}"'))
    # `smoke`: 60 counted iterations, not the README job's 1000 (what a user runs; its length is for the
    # figures, not for checking that the job works)
    ran = bench("run", "benchmarks/llm.yaml", "--tag", "117M", "local", "smoke", cwd=tmp_path, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.strip().splitlines()
    assert lines[0].split(",") == CARAML_COLUMNS + ENERGY_COLUMNS + CARAMEL_COLUMNS
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


@pytest.mark.slow
def test_local_gpt_has_tokens_per_second_and_energy_unavailable(tmp_path: Path, env: dict[str, str]) -> None:
    rows = run_llm(tmp_path, env)
    assert len(rows) == 1
    row = rows[0]
    # the tiny CPU shape is named as such, with its counted parameters (not CARAML's "117M")
    assert row["System"] == "local" and row["ModelSize"] == "tiny-2x64" and row["Parameters"] == "169728"
    # the layout chosen for this node (the rule: the data folder holds no measurement), the same in the plan
    # and in the trainer's log, which says what chose it
    processes, threads = int(row["Processes"]), int(row["Threads/Process"])
    assert row["Layout"].startswith(f"{processes}x{threads} (rule")
    assert row["DataParallel"] == row["Devices"] == str(processes) and processes * threads <= (os.cpu_count() or 1)
    assert row["Iterations"] == "60"
    assert float(row["Tokens/second"]) > 0
    assert float(row["GEMM(GFLOP/s)"]) > 0 and 0 < float(row["MFU(%)"]) < 100
    assert Path(row["EnergyFile"]).is_file()
    assert row["EnergyStatus"].startswith("unavailable")
    assert all(row[c] == "" for c in ["Energy(Wh)", "Energy/device(Wh)", "Tokens/J", "AvgPower(W)"])
    assert list(tmp_path.glob("benchmarks/llm_benchmark_run/000000/data/corpus_text_document.idx"))


@pytest.mark.slow
def test_local_gpt_with_a_fake_power_source(tmp_path: Path, env: dict[str, str]) -> None:
    hwmon = make_hwmon(tmp_path / "hwmon", {"Module0": 200.0, "Module1": 100.0})
    row = run_llm(tmp_path, env, hwmon)[0]
    assert row["EnergyStatus"] == "ok"
    energy_files = list(tmp_path.glob("benchmarks/llm_benchmark_run/*/*_benchmark/work/energy/energy.*.csv"))
    seconds = float(dict(r.split(",", 1) for r in energy_files[0].read_text().splitlines())["seconds"])
    assert float(row["Energy(Wh)"]) == pytest.approx(300.0 * seconds / 3600, rel=0.02)
    assert float(row["Energy/device(Wh)"]) == pytest.approx(float(row["Energy(Wh)"]) / 2, rel=0.01)  # 2 meters
    assert float(row["AvgPower(W)"]) == pytest.approx(300.0, rel=0.01)
    assert float(row["Tokens/J"]) == pytest.approx(float(row["Tokens/second"]) / 300.0, rel=0.02)


@pytest.mark.parametrize(("system", "method", "srun", "gpu_flag"), [
    ("A100", "pynvml", "srun --disable-dcgm --cpu_bind=v --mpi=pspmix env PMIX_SECURITY_MODE=native", "--nv"),
    ("MI250", "rocm", "srun --cpu_bind=none,v --mpi=pspmix env PMIX_SECURITY_MODE=native", ""),
    ("JEDI", "gh", "srun --cpu_bind=v --mpi=pmi2", "--nv"),
])
def test_gpu_systems_render_megatron_in_apptainer(tmp_path: Path, env: dict[str, str], system: str, method: str,
                                                   srun: str, gpu_flag: str) -> None:
    planned = bench("plan", str(BENCHMARKS / "llm.yaml"), "--tag", "800M", system, "--format", "json",
                    cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    wp = next(w for w in plan["workpackages"] if w["step"] == "benchmark")
    p = wp["parameters"]
    assert (p["tp_size"], p["pp_size"], p["dp_size"], p["global_batch_size"]) == (1, 1, p["total_devices"], 32)
    script = " ".join(p["job_script"].split(" "))  # words as the shell splits them on a line
    script = script.replace("  ", " ")
    image = p["container_image"]
    assert image == f"{tmp_path}/containers/{image.rsplit('/', 1)[1]}"  # the system's image_dir, from bench's folder
    binds = re.search(r"apptainer exec --bind=(\S+) ", script).group(1).split(",")
    assert binds[0] == p["caramel_package"] and binds[2] == str(tmp_path / "data")  # caramel alone, the run, the data
    assert f"{srun} apptainer exec --bind={','.join(binds)} {gpu_flag} {image} bash -c".replace("  ", " ") in script
    assert f"python -m caramel.payloads.measure --method {method} --interval 100" in script
    assert f"--nproc_per_node {p['gpus_per_node']} --nnodes 1" in script
    assert f"bash -c 'cd {'/opt/Megatron-LM-ROCm' if system == 'MI250' else '/opt/Megatron-LM'} && " in script
    assert "pretrain_gpt.py --num-layers 16 --hidden-size 2048 --num-attention-heads 8" in script
    assert f"#SBATCH --partition={p['queue']}" in script
    assert ("#SBATCH --gres=gpu:" in script) == (system != "MI250")
    # CARAML's values for these systems, now read from systems/<SYSTEM>.yaml
    partition, cores, gpus, image_name = {"A100": ("dc-gpu", 128, 4, "pytorch_ngc2406_x86.sif"),
                                          "MI250": ("dc-mi200", 48, 8, "pytorch_rocm612.sif"),
                                          "JEDI": ("all", 72, 4, "pytorch_ngc2402_arm.sif")}[system]
    assert f"#SBATCH --account=zam\n#SBATCH --partition={partition}\n" in script
    assert f"#SBATCH --cpus-per-task={cores}\n" in script and p["gpus_per_node"] == gpus
    assert image == f"{tmp_path}/containers/{image_name}"
    # the job tells the asynchronous step it ended (done_file ready, error_file error)
    assert re.search(r"\|\| touch \S+_benchmark/work/error\ntouch \S+_benchmark/work/ready$", script.rstrip())


def test_large_models_derive_parallel_sizes_as_caramel_does(tmp_path: Path, env: dict[str, str]) -> None:
    planned = bench("plan", str(BENCHMARKS / "llm.yaml"), "--tag", "175B", "H100", "--format", "json",
                    cwd=tmp_path, env=env)
    p = json.loads(planned.stdout)["workpackages"][0]["parameters"]
    assert (p["nodes"], p["total_devices"], p["tp_size"], p["pp_size"], p["dp_size"]) == (16, 64, 8, 8, 1)
    assert p["global_batch_size"] == 1 * 2 * 64


def test_a_missing_size_tag_is_named_not_a_python_error(tmp_path: Path, env: dict[str, str]) -> None:
    planned = bench("plan", str(BENCHMARKS / "llm.yaml"), "--tag", "local", cwd=tmp_path, env=env)
    assert planned.returncode == 2
    line = next(i for i, t in enumerate((BENCHMARKS / "llm.yaml").read_text().splitlines(), 1) if t.startswith("check_tags"))
    assert f"llm.yaml:{line}: this benchmark needs tags matching '117M|800M|13B|175B'" in planned.stderr
    assert "given: local" in planned.stderr and "KeyError" not in planned.stderr
