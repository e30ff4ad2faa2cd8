"""`bench layout [--measure]`: the layout the trainers take here and why; the probe stores its winner."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.payloads.workloads.layout import usable_cpus
from caramel.payloads.workloads.layout_store import MAX_AGE_DAYS, Measurement, NodeIdentity, encode

TINY = "--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --vocab-size 64"


def write_store(env: dict[str, str], node: NodeIdentity, days_old: int = 0) -> Path:
    from datetime import datetime, timedelta, timezone
    date = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=days_old)
    path = Path(env["CARAMEL_DATA_DIR"]) / "cpu-layout.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(encode([Measurement("gpt", "1x1", "tokens/s", date, node, TINY, 3, 1, 9.0,
                                        {"1x1": [20000.0], "2x1": [10000.0]})]))
    return path


def test_bench_layout_shows_the_rule_then_a_measurement_then_the_variable(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    shown = bench("layout", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "(rule" in shown.stdout and "measured: none" in shown.stdout
    write_store(env, NodeIdentity.here(usable_cpus()))
    shown = bench("layout", "--workload", "gpt", cwd=tmp_path, env=env)
    assert "gpt: 1x1 (measured " in shown.stdout and ": 1x1 20.0k vs 2x1 10.0k tokens/s" in shown.stdout
    shown = bench("layout", "--workload", "gpt", cwd=tmp_path, env={**env, "CARAMEL_CPU_LAYOUT": "2x1"})
    assert "gpt: 2x1 (CARAMEL_CPU_LAYOUT)" in shown.stdout


def test_a_stale_or_damaged_store_is_said_and_the_rule_decides(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    write_store(env, NodeIdentity.here(usable_cpus()), days_old=MAX_AGE_DAYS + 5)
    shown = bench("layout", "--workload", "gpt", cwd=tmp_path, env=env)
    assert "gpt: " in shown.stdout and "(rule" in shown.stdout and "not used: measured" in shown.stdout
    path = write_store(env, NodeIdentity.here(usable_cpus()))
    path.write_text(path.read_text()[:100])
    shown = bench("layout", cwd=tmp_path, env=env)
    assert shown.returncode == 0 and "(rule" in shown.stdout
    assert f"warning: the stored CPU layout {path} is damaged" in shown.stderr and "Traceback" not in shown.stderr


@pytest.mark.slow
def test_bench_layout_measure_stores_the_winner(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    done = bench("layout", "--measure", "--layouts", "1x1", "--iters", "2", "--repeats", "1", "--shape", TINY,
                 cwd=tmp_path, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "gpt: 1x1 wins (measured " in done.stdout and "gpt: 1x1 (measured " in done.stdout
    assert (tmp_path / "data" / "cpu-layout.json").is_file()
    assert not list(Path.cwd().glob("cpu-layout.json"))
    bad = bench("layout", "--measure", "--layouts", "1y1", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "--layouts '1y1'" in bad.stderr


def test_the_plan_takes_and_shows_a_stored_measurement(tmp_path: Path) -> None:
    import json

    env = isolated_env(tmp_path)
    write_store(env, NodeIdentity.here(usable_cpus()))
    done = bench("plan", "llm", "--tag", "117M", "local", "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    p = json.loads(done.stdout)["workpackages"][0]["parameters"]
    assert p["cpu_layout_choice"].startswith("1x1 (measured ")  # 1x1 fits however busy the node is
    assert (p["cpu_processes"], p["cpu_threads"]) == (1, 1)
    assert p["local_command"].endswith(f"--layout-choice '{p['cpu_layout_choice']}'")


def test_the_shape_comes_from_a_benchmark_planned_for_its_tags(tmp_path: Path, monkeypatch) -> None:
    import pytest

    from caramel.cli.common import BenchmarkOptions
    from caramel.cli.layout import shape_arguments, trainer_of
    from caramel.errors import CaramelError

    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CARAMEL_CPU_LAYOUT", "1x1")
    workload, shape = trainer_of(BenchmarkOptions("llm", ("117M", "local")))
    assert workload == "gpt" and "--hidden-size 64 --num-attention-heads 4 --seq-length 64" in shape
    assert not {"--train-iters", "--threads", "--layout-choice", "--data-path", "--global-batch-size"} & set(shape.split())
    assert trainer_of(BenchmarkOptions("resnet50", ("local",))) == ("resnet", "--model resnet_small")
    assert shape_arguments(["--a", "1", "--threads", "2", "--device=cpu", "--b"]) == ["--a", "1", "--b"]
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: plain\noutpath: bench_run\nstep:\n  - name: s\n    do: echo hi\n")
    with pytest.raises(CaramelError, match="starts none of caramel's trainers"):
        trainer_of(BenchmarkOptions(str(plain)))
    shown = bench("layout", "llm", "--tag", "117M", cwd=tmp_path, env=isolated_env(tmp_path))
    assert shown.returncode == 2 and "with --measure" in shown.stderr
