"""benchmarks/resnet50.xml for real: caramel's ResNet through torchrun here, tf_cnn job scripts for GPUs."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from tests.adapters.energy.fake_hwmon import make_hwmon
from tests.run_bench import bench
from tests.shipped import copy_benchmarks

pytest.importorskip("torch")
pytest.importorskip("jpwr")

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


@pytest.mark.slow
def test_local_resnet_images_per_second_and_energy(tmp_path: Path, env: dict[str, str]) -> None:
    copy_benchmarks(tmp_path / "benchmarks")
    hwmon = make_hwmon(tmp_path / "hwmon", {"Module0": 120.0})
    spec = tmp_path / "benchmarks" / "resnet50.xml"
    spec.write_text(spec.read_text().replace("--interval 100</parameter>",
                                             f"--interval 50 --hwmon-base {hwmon}</parameter>"))
    ran = bench("run", "benchmarks/resnet50.xml", "--tag", "local", cwd=tmp_path, env=env, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert len(rows) == 1
    row = rows[0]
    devices = int(row["Devices"])  # the processes of the layout rule (caramel.payloads.workloads.layout)
    assert (row["System"], row["GlobalBatchSize"], row["BatchSize/Device"]) == ("local", "8", str(8 // devices))
    assert devices * int(row["Threads/Task"]) <= (os.cpu_count() or 1)
    assert row["Layout"].startswith(f"{devices}x{row['Threads/Task']} (")  # and what chose it
    assert float(row["Images/second"]) > 0
    assert float(row["GEMM(GFLOP/s)"]) > 0 and 0 < float(row["MFU(%)"]) < 100
    assert row["EnergyStatus"] == "ok"
    assert float(row["AvgPower(W)"]) == pytest.approx(120.0, rel=0.01)
    assert float(row["Images/J"]) == pytest.approx(float(row["Images/second"]) / 120.0, rel=0.02)


def test_gpu_systems_span_nodes_tasks_and_batches(tmp_path: Path, env: dict[str, str]) -> None:
    planned = bench("plan", str(BENCHMARKS / "resnet50.xml"), "--tag", "A100", "--format", "json",
                    cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr
    runs = [w["parameters"] for w in json.loads(planned.stdout)["workpackages"] if w["step"] == "execute"]
    assert len(runs) == 2 * 4 * 9  # nodes 1;2 x tasks per node 1..4 x nine global batch sizes
    p = next(r for r in runs if (r["nodes"], r["taskspernode"], r["global_batch_size"]) == (2, 4, 256))
    assert p["batch_size_per_device"] == 32
    script = p["job_script"]
    assert "#SBATCH --ntasks-per-node=4" in script
    assert (f"srun --disable-dcgm --cpu_bind=v --mpi=pspmix env PMIX_SECURITY_MODE=native apptainer exec "
            f"--bind={p['caramel_package']},{p['container_binds'].split(',')[1]} --nv {p['container_image']} bash -c") in script
    assert p["caramel_package"].endswith("/caramel") and "site-packages," not in script  # caramel alone is bound
    assert "caramel.payloads.measure --method pynvml" in script
    assert "tf_cnn_benchmarks.py --num_gpus 1 --model resnet50_v2 --batch_size 32" in script
