"""The real `bench`: a latency benchmark (`performance: N ms`) and a throughput benchmark
(`performance: N samples/s`) side by side in one folder (issue 21, "It must show")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

# SLOWDOWN (environment) stretches the work: the latency grows with it, the throughput falls.
LATENCY = """name: latency
outpath: latency_run
step:
  - name: serve
    do: >-
      python3 -c "import os; print('performance: %.3f ms' % (100 * float(os.environ.get('SLOWDOWN', '1'))))"
"""
THROUGHPUT = """name: throughput
outpath: throughput_run
step:
  - name: train
    do: >-
      python3 -c "import os; print('performance: %.3f samples/s' % (1000 / float(os.environ.get('SLOWDOWN', '1'))))"
"""


@pytest.fixture
def folder(tmp_path: Path, env: dict[str, str]) -> Path:
    """Runs, in this order: throughput 0, latency 0, latency 1 (20 % slower), throughput 1 (20 % faster)."""
    (tmp_path / "latency.yaml").write_text(LATENCY)
    (tmp_path / "throughput.yaml").write_text(THROUGHPUT)
    for name, slowdown in (("throughput", "1"), ("latency", "1"), ("latency", "1.2"), ("throughput", "0.8")):
        done = bench("run", f"{name}.yaml", "-q", cwd=tmp_path, env=dict(env, SLOWDOWN=slowdown))
        assert done.returncode == 0, done.stderr
    return tmp_path


def _compare(folder: Path, env: dict[str, str], *args: str):
    return bench("compare", *args, "--format", "json", cwd=folder, env=env)


def test_a_latency_rise_is_a_regression_and_the_throughput_keeps_its_own_verdicts(folder, env):
    """One sample a side: judged against the explicit --threshold (without one: cannot judge)."""
    slower = _compare(folder, env, "latency_run", "-i", "last", "--baseline", "0", "--threshold", "5")
    assert slower.returncode == 1, slower.stdout + slower.stderr
    [verdict] = json.loads(slower.stdout)
    assert (verdict["metric"], verdict["unit"], verdict["direction"]) == ("performance", "ms", "lower")
    assert verdict["verdict"] == "regressed" and verdict["diff_pct"] == pytest.approx(20.0)
    assert verdict["config"] == {"model": "latency"}  # the unit is the figure's, not a configuration
    assert verdict["current_sd"] is None and "single sample" in verdict["why"]  # n = 1: no spread, not 0

    faster = _compare(folder, env, "throughput_run", "-i", "last", "--baseline", "0", "--threshold", "5")
    assert faster.returncode == 0, faster.stdout + faster.stderr
    [verdict] = json.loads(faster.stdout)
    assert (verdict["unit"], verdict["direction"], verdict["verdict"]) == ("samples/s", "higher", "improved")

    table = bench("compare", "latency_run", "-i", "last", "--baseline", "0", "--threshold", "5", cwd=folder, env=env)
    assert "performance[ms]" in table.stdout and "100 ± - (n=1)" in table.stdout and "regressed" in table.stdout


def test_a_run_id_is_the_runs_own_benchmarks(folder, env):
    """The last run is throughput 1; run 0 of latency is more recent than run 0 of throughput, and was
    taken: 'no baseline' on every row, exit 0."""
    own = _compare(folder, env, "-i", "last", "--baseline", "0", "--threshold", "5")
    assert own.returncode == 0, own.stdout + own.stderr
    [verdict] = json.loads(own.stdout)
    assert verdict["verdict"] == "improved" and verdict["baseline"] == pytest.approx(1000.0)


def test_a_baseline_of_another_benchmark_is_an_error_naming_both(folder, env):
    named = bench("baseline", "set", "lat", "latency_run", "-i", "0", cwd=folder, env=env)
    assert named.returncode == 0 and "(benchmark latency, 1 figure(s))" in named.stdout
    other = bench("compare", "throughput_run", "-i", "last", "--baseline", "lat", cwd=folder, env=env)
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert "benchmark 'latency'" in other.stderr and "'throughput'" in other.stderr
    assert "nothing was compared" in other.stderr


def test_the_targets_judge_a_latency_above_its_target(folder, env, tmp_path):
    targets = tmp_path / "latency_targets.json"
    targets.write_text(json.dumps({"latency": 100}))
    above = bench("compare", "latency_run", "-i", "last", "--targets", str(targets), cwd=folder, env=env)
    assert above.returncode == 1 and "-20.00%" in above.stdout, above.stdout + above.stderr
    targets.write_text(json.dumps({"throughput": 1000}))
    better = bench("compare", "throughput_run", "-i", "last", "--targets", str(targets), cwd=folder, env=env)
    # the throughput passes its target; one sample cannot judge the spread, so the campaign is not passed
    assert "+25.00%  pass" in better.stdout, better.stdout + better.stderr
    assert better.returncode == 1 and "cannot judge" in better.stdout


def test_a_comparison_of_nothing_is_an_error(tmp_path, env):
    """A run without figures (undeclared patterns), then a baseline with none in common."""
    text = ("name: plain\noutpath: runs\nstep: {name: s, do: 'echo jobid 42; echo t 1.5'}\n"
            "patternset: {name: p, pattern: [{name: jobid, type: int, _: 'jobid $jube_pat_int'}, "
            "{name: PATTERN, type: float, UNIT _: 't $jube_pat_fp'}]}\n"
            "analyser: {name: a, use: p, analyse: {step: s, file: stdout}}\n"
            "result: {use: a, table: {name: t, column: [jobid, PATTERN]}}\n")
    (tmp_path / "plain.yaml").write_text(text.replace("PATTERN", "t").replace("UNIT ", ""))
    assert bench("run", "plain.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    none = bench("compare", "-i", "last", "--baseline", "0", cwd=tmp_path, env=env)
    assert none.returncode == 2 and "the run has no figure to compare" in none.stderr, none.stderr
    assert "unit" in none.stderr and "direction" in none.stderr  # the hint says how to declare one
    named = bench("baseline", "set", "empty", "-i", "last", cwd=tmp_path, env=env)
    assert named.returncode == 0 and "warning: the run has no figure" in named.stderr

    (tmp_path / "plain.yaml").write_text(text.replace("PATTERN", "t").replace("UNIT ", "unit: s, "))
    assert bench("run", "plain.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    (tmp_path / "plain.yaml").write_text(text.replace("PATTERN", "t2").replace("UNIT ", "unit: s, "))
    assert bench("run", "plain.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    apart = bench("compare", "-i", "last", "--baseline", "1", cwd=tmp_path, env=env)
    assert apart.returncode == 2 and "no figure in common; nothing was compared" in apart.stderr, apart.stderr


def test_an_unknown_direction_cannot_be_judged_and_an_unreadable_unit_names_its_line(tmp_path, env):
    (tmp_path / "odd.yaml").write_text(
        "name: odd\noutpath: runs\nstep:\n  - name: s\n    do: >-\n"
        "      python3 -c \"import os; print('performance: %s <b>ms</b>' % os.environ.get('VALUE', '100'))\"\n")
    assert bench("run", "odd.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    assert bench("run", "odd.yaml", "-q", cwd=tmp_path, env=dict(env, VALUE="150")).returncode == 0
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert "stdout:1: the unit '<b>ms</b>' cannot be read" in shown.stderr, shown.stderr
    judged = _compare(tmp_path, env, "-i", "last", "--baseline", "0", "--threshold", "5")
    assert judged.returncode == 0, judged.stdout + judged.stderr
    [verdict] = json.loads(judged.stdout)
    assert (verdict["unit"], verdict["direction"], verdict["verdict"]) == ("", "unknown", "cannot judge")
    assert "declare direction" in verdict["why"]
