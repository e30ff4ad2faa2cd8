"""`bench predict`, `bench plan --predict` and `bench run --time-from-prediction` through the real command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

from caramel.adapters.systems import find_system, with_system
from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.predict.points import targets_of
from caramel.stages.expand.plan import make_plan
from caramel.stages.spec.loader import load

from .conftest import record

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

ROOT = Path(__file__).resolve().parents[3]
LLM = ROOT / "benchmarks" / "llm.yaml"


def law(a: float, b: float, c: float) -> float:
    return 0.03 * a ** 0.7 * b ** 0.5 / c ** 0.5


def test_a_known_law_is_predicted_within_10_percent_at_untested_points(data: Path, env: dict) -> None:
    run = bench("run", "law.yaml", "--repeat", "3", "-q", cwd=data, env=env)
    assert run.returncode == 0, run.stderr
    assert bench("result", cwd=data, env=env).returncode == 0
    done = bench("predict", "law.yaml", "--tag", "test", "--format", "json", cwd=data, env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["benchmark"] == "law" and len(doc["predictions"]) == 4
    for p in doc["predictions"]:
        assert set(p) == {"id", "parameters", "metric", "unit", "value", "low", "high", "level",
                          "interval", "points", "extrapolated", "model"}
        assert p["level"] == 0.9
        assert p["interval"].startswith("prediction interval for one more measurement")
        truth = law(*(float(p["parameters"][k]) for k in "abc"))
        assert abs(p["value"] / truth - 1) < 0.10, (p, truth)
        assert p["low"] < p["value"] < p["high"] and p["points"] == 12 and p["extrapolated"] is False
        assert p["metric"] == "elapsed" and p["unit"] == "s"
    validated = bench("predict", "law.yaml", "--validate", cwd=data, env=env)
    assert validated.returncode == 0 and "<- used" in validated.stdout
    table = bench("predict", "law.yaml", "--tag", "test", cwd=data, env=env)
    assert "90% interval" in table.stdout and "elapsed[s]" in table.stdout
    stated = "90% interval: prediction interval for one more measurement under the model"
    assert stated in table.stdout


def _grid(values: list[int]) -> list[tuple[dict, list[float]]]:
    return [({"a": a, "b": b, "c": c}, [law(a, b, c)] * 2) for a in values for b in (1, 4) for c in (1, 4)]


def test_extrapolation_is_marked(data: Path, env: dict) -> None:
    record(Path(env["CARAMEL_HISTORY"]), "law", _grid([1, 2]), table="law")  # a=3 was never reached
    doc = json.loads(bench("predict", "law.yaml", "--tag", "test", "--format", "json", cwd=data, env=env).stdout)
    assert all(p["extrapolated"] for p in doc["predictions"])
    table = bench("predict", "law.yaml", "--tag", "test", cwd=data, env=env).stdout
    assert "yes: a" in table


def test_no_history_names_what_is_missing_and_how_to_record_it(data: Path, env: dict) -> None:
    done = bench("predict", "law.yaml", cwd=data, env=env)
    assert done.returncode == 2
    assert "no history of benchmark 'law'" in done.stderr and "bench run" in done.stderr
    assert "Traceback" not in done.stderr
    record(Path(env["CARAMEL_HISTORY"]), "other", _grid([1]), table="law")
    done = bench("predict", "law.yaml", cwd=data, env=env)
    assert done.returncode == 2 and "it holds: other" in done.stderr


def test_an_unknown_metric_gets_did_you_mean(data: Path, env: dict) -> None:
    record(Path(env["CARAMEL_HISTORY"]), "law", _grid([1, 2, 4]), table="law")
    done = bench("predict", "law.yaml", "--metric", "elapsd", cwd=data, env=env)
    assert done.returncode == 2 and "did you mean 'elapsed'" in done.stderr


def test_suggest_names_unmeasured_configurations_even_without_history(data: Path, env: dict) -> None:
    done = bench("predict", "law.yaml", "--suggest", "2", "--format", "json", cwd=data, env=env)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["suggestions"]) == 2
    record(Path(env["CARAMEL_HISTORY"]), "law", [({"a": 1, "b": 1, "c": 1}, [0.03] * 3),
                                                 ({"a": 4, "b": 4, "c": 4}, [0.06] * 3)], table="law")
    doc = json.loads(bench("predict", "law.yaml", "--suggest", "3", "--format", "json", cwd=data, env=env).stdout)
    picked = [tuple(s["parameters"].values()) for s in doc["suggestions"]]
    assert len(picked) == 3 and ("1", "1", "1") not in picked and ("4", "4", "4") not in picked
    assert len(set(picked)) == 3


def _llm_local_history(path: Path) -> None:
    """Three small local runs of llm.yaml (117M local: the tiny GPT), as bench result records them."""
    benchmark = with_system(load(str(LLM), {"117M", "local"})[0], find_system({"117M", "local"}))
    config = targets_of(benchmark, make_plan(benchmark, run_id=0))["result"][0].config
    with History.open(str(path)) as history:
        for i, (t, tokens) in enumerate([(0.050, 10240), (0.052, 9850), (0.049, 10450)]):
            history.add(RunRecord(run_key=f"r{i}", benchmark="llm_benchmark", file=str(LLM), tags=["117M", "local"],
                                  system="local", started=1.0 + i),
                        [Metric("result", config, "Time/iteration(s)", "", "lower", [t]),
                         Metric("result", config, "Tokens/second", "", "higher", [tokens])])


def test_cross_system_is_refused_unless_asked_then_node_hours(tmp_path: Path, env: dict) -> None:
    _llm_local_history(Path(env["CARAMEL_HISTORY"]))
    refused = bench("plan", str(LLM), "--tag", "13B", "A100", "--predict", cwd=tmp_path, env=env)
    assert refused.returncode == 2
    assert "on system 'A100'" in refused.stderr and "--from local" in refused.stderr
    done = bench("plan", str(LLM), "--tag", "13B", "A100", "--predict", "--from", "local", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "learned across systems: from the history of local" in done.stdout
    assert "campaign:" in done.stdout and "node-hours" in done.stdout and "(90 %:" in done.stdout
    doc = json.loads(bench("plan", str(LLM), "--tag", "13B", "A100", "--predict", "--from", "local",
                           "--format", "json", cwd=tmp_path, env=env).stdout)
    cost = doc["cost"]
    assert cost["learned_from"] == "local" and cost["peak_ratio"] == 3120
    job = cost["jobs"][0]
    assert job["nodes"] == 44 and job["model"] == "analytic"
    low, value, high = cost["node_hours"][1], cost["node_hours"][0], cost["node_hours"][2]
    assert 0 < low <= value <= high
    predicted = json.loads(bench("predict", str(LLM), "--tag", "13B", "A100", "--from", "local", "--format", "json",
                                 cwd=tmp_path, env=env).stdout)
    assert predicted["learned_from"]["system"] == "local"
    assert {p["metric"] for p in predicted["predictions"]} == {"Time/iteration(s)"}  # Tokens/s: 13B never measured


SUBMIT = """name: job
outpath: runs
parameterset:
  - {name: p, parameter: [{name: n, type: int, _: "1,2"}]}
step:
  - {name: work, use: [p], submit: true, do: "echo elapsed 1 s"}
patternset:
  - {name: pat, pattern: [{name: elapsed, type: float, unit: s, _: "elapsed $jube_pat_fp s"}]}
analyser:
  - {name: an, use: pat, analyse: {step: work, file: job.out}}
result:
  use: an
  table: {name: t, column: [n, elapsed]}
"""


def test_time_from_prediction_sets_the_job_time_where_the_file_sets_none(tmp_path: Path, env: dict) -> None:
    (tmp_path / "job.yaml").write_text(SUBMIT)
    record(Path(env["CARAMEL_HISTORY"]), "job", [({"n": 1}, [1000.0, 1100.0, 1050.0]), ({"n": 2}, [2000.0, 1900.0])],
           system="localcluster", table="t")
    done = bench("run", "job.yaml", "--tag", "localcluster", "--dry-run", "--time-from-prediction", cwd=tmp_path,
                 env=env)
    assert done.returncode == 0, done.stderr
    assert "job --time" in done.stderr
    times = [line for line in done.stdout.splitlines() if line.startswith("#SBATCH --time=")]
    assert times and all(t != "#SBATCH --time=00:05:00" for t in times)  # not the system's default
    plain = bench("run", "job.yaml", "--tag", "localcluster", "--dry-run", cwd=tmp_path, env=env)
    assert "#SBATCH --time=00:05:00" in plain.stdout
    (tmp_path / "job.yaml").write_text(SUBMIT.replace('_: "1,2"}]}', '_: "1,2"}, {name: timelimit, _: "00:09:00"}]}'))
    kept = bench("run", "job.yaml", "--tag", "localcluster", "--dry-run", "--time-from-prediction", cwd=tmp_path,
                 env=env)
    assert "#SBATCH --time=00:09:00" in kept.stdout and "the file sets timelimit" in kept.stderr


def test_plan_predict_gives_node_hours_and_energy_with_intervals(data: Path, env: dict) -> None:
    history = Path(env["CARAMEL_HISTORY"])
    record(history, "law", _grid([1, 2, 4]), table="law")
    record(history, "law", [(c, [s[0] * 300 / 3600] * 2) for c, s in _grid([1, 2, 4])], metric="Energy(Wh)",
           unit="Wh", table="law", key="run2")
    done = bench("plan", "law.yaml", "--tag", "test", "--predict", cwd=data, env=env)
    assert done.returncode == 0, done.stderr
    assert "campaign:" in done.stdout and "node-hours" in done.stdout
    energy = next(line for line in done.stdout.splitlines() if line.startswith("energy:"))
    assert "(90 %:" in energy and energy.endswith("Wh")
    doc = json.loads(bench("plan", "law.yaml", "--tag", "test", "--predict", "--format", "json", cwd=data,
                           env=env).stdout)
    expected = sum(law(3, b, c) for b in (2, 3) for c in (2, 3)) / 3600
    assert doc["cost"]["node_hours"][0] == pytest.approx(expected, rel=0.10)
    assert doc["cost"]["energy_wh"][0] == pytest.approx(expected * 300, rel=0.10)
