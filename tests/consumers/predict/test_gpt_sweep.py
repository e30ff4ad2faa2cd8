"""caramel's GPT trainer swept (12 configurations x 2 repeats, timed by the CPU clock) into a history: leave-one-out error
of time per iteration at most 15 %, and configurations with twice the measured hidden size, run
afterwards, predicted within a factor of 4 in the suite (the accuracy itself: perf/predict_accuracy.py). The real trainer, the real bench (a few minutes on 2 busy cores)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from tests.run_bench import bench

from caramel.consumers.history.store import History

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

def test_gpt_sweep_validates_and_predicts_twice_the_hidden_size(data: Path, env: dict) -> None:
    run = bench("run", "gpt_sweep.yaml", "--repeat", "2", "-q", cwd=data, env=env, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    assert bench("result", cwd=data, env=env).returncode == 0
    validated = bench("predict", "gpt_sweep.yaml", "--validate", "--metric", "Time/iteration(s)", "--format", "json",
                      cwd=data, env=env)
    assert validated.returncode == 0, validated.stderr
    used = next(v for v in json.loads(validated.stdout)["validation"] if v["used"])
    assert used["configurations"] == 12 and used["median_ape"] <= 15, used

    predicted = bench("predict", "gpt_sweep.yaml", "--tag", "heldout", "--metric", "Time/iteration(s)",
                      "--format", "json", cwd=data, env=env)
    assert predicted.returncode == 0, predicted.stderr
    predictions = {tuple(p["parameters"].values()): p for p in json.loads(predicted.stdout)["predictions"]}
    assert len(predictions) == 4 and all(p["extrapolated"] for p in predictions.values())

    env = dict(env, CARAMEL_HISTORY=str(data / "later.db"))  # the later run: not learned from
    later = bench("run", "gpt_sweep.yaml", "--tag", "heldout", "--repeat", "2", "-q", cwd=data, env=env, timeout=600)
    assert later.returncode == 0, later.stdout + later.stderr
    assert bench("result", cwd=data, env=env).returncode == 0
    measured = later_means(data / "later.db", "Time/iteration(s)")
    assert set(measured) == set(predictions)
    # The trainer is timed by the CPU clock (gpt.device_time patched in gpt_sweep.yaml; the patch of a
    # name the trainer no longer had left it on the wall clock until 2026-11-25). Twice the largest
    # measured hidden size is an extrapolation the model gets erratically (predicted/measured 0.62 on a
    # quiet machine, 2.66 in a CI run, both CPU-timed): an open accuracy problem of `bench predict`,
    # whose figure is perf/predict_accuracy.py's. The suite checks the right quantity and order, within
    # a factor of 4 either way (a wrong unit or metric is off by far more).
    for config, seconds in measured.items():
        ratio = predictions[config]["value"] / seconds
        assert 1 / 4 <= ratio <= 4, (config, predictions[config], seconds)


def later_means(path: Path, metric: str) -> dict[tuple[str, ...], float]:
    """Per configuration, the mean of the later run's repeats (as the history learns them)."""
    with History.open(str(path)) as history:
        return {tuple(m.row.values()): statistics.fmean(m.samples) for run in history.runs()
                for m in history.metrics(run.run_key) if m.name == metric}
