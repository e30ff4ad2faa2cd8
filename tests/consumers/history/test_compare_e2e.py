"""`--repeat 5`, a 30 % slower workload, and `bench compare`: regressed (exit 1); unchanged: never
regressed (exit 0): within noise, or, where the spread of a loaded node makes the ratio's interval
wider than the band, cannot judge with the repetitions that would decide."""

from __future__ import annotations

import json

import pytest
from tests.run_bench import bench


@pytest.mark.slow
def test_slowdown_is_a_regression_and_a_rerun_is_noise(steady, env):
    assert bench("run", "steady.yaml", "--repeat", "5", "-q", cwd=steady, env=env).returncode == 0
    table = bench("result", "-i", "last", cwd=steady, env=env)
    assert table.returncode == 0 and table.stdout.startswith(
        "items,elapsed[s],elapsed_sd[s],elapsed_ci_low[s],elapsed_ci_high[s],rate,rate_sd,rate_ci_low,rate_ci_high,"
        "note,n")  # the mean of 5, its sd and its 99 % t interval
    assert bench("baseline", "set", "base", "-i", "last", cwd=steady, env=env).returncode == 0

    slow = dict(env, SLOWDOWN="1.3")
    assert bench("run", "steady.yaml", "--repeat", "5", "-q", cwd=steady, env=slow).returncode == 0
    worse = bench("compare", "-i", "last", "--baseline", "base", "--format", "json", cwd=steady, env=env)
    assert worse.returncode == 1, worse.stdout + worse.stderr
    verdicts = json.loads(worse.stdout)
    assert {v["verdict"] for v in verdicts} == {"regressed"}, [(v["ratio_ci"], v["why"]) for v in verdicts]
    rate = next(v for v in verdicts if v["metric"] == "rate")
    assert rate["direction"] == "higher" and rate["current_n"] == rate["baseline_n"] == 5
    assert -27 < rate["diff_pct"] < -20  # 1/1.3 - 1 = -23 %

    assert bench("run", "steady.yaml", "--repeat", "5", "-q", cwd=steady, env=env).returncode == 0
    same = bench("compare", "-i", "last", "--baseline", "0", cwd=steady, env=env)  # a run id works too
    assert same.returncode == 0, same.stdout + same.stderr
    assert "regressed" not in same.stdout
    verdicts = json.loads(bench("compare", "-i", "last", "--baseline", "0", "--format", "json", cwd=steady,
                                env=env).stdout)
    assert all(v["verdict"] == "within noise" or (v["verdict"] == "cannot judge" and v["repetitions_needed"] > 5)
               for v in verdicts), verdicts


@pytest.mark.slow
def test_targets_file(steady, env, tmp_path):
    assert bench("run", "steady.yaml", "-q", cwd=steady, env=env).returncode == 0
    targets = tmp_path / "baselines.json"
    targets.write_text(json.dumps({"rate": 40.0}))
    below = bench("compare", "-i", "last", "--baseline", str(targets), cwd=steady, env=env)
    assert below.returncode == 1 and below.stdout.count("regressed") == 2 + 1  # two rows, and the summary
    targets.write_text(json.dumps({"rate": {"value": 20.0, "threshold": 10}}))
    assert bench("compare", "-i", "last", "--baseline", str(targets), cwd=steady, env=env).returncode == 0
    targets.write_text("{not json")
    bad = bench("compare", "-i", "last", "--baseline", str(targets), cwd=steady, env=env)
    assert bad.returncode == 2 and "not a JSON file of targets" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_history_export_import_adds_a_run_once(steady, env, tmp_path):
    assert bench("run", "steady.yaml", "--repeat", "2", "-q", cwd=steady, env=env).returncode == 0
    assert bench("result", "-i", "last", cwd=steady, env=env).returncode == 0
    assert bench("result", "-i", "last", cwd=steady, env=env).returncode == 0  # unchanged: nothing twice
    out = tmp_path / "export.jsonl"
    assert bench("export", "-o", str(out), cwd=steady, env=env).returncode == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 1 and len(records[0]["metrics"]) == 4
    assert records[0]["metrics"][0]["samples"] and records[0]["run"]["host"]
    other = dict(env, CARAMEL_HISTORY=str(tmp_path / "site.db"))
    first = bench("import", str(out), cwd=steady, env=other)
    assert first.stdout.strip().startswith("1 new run(s), 4 new figure(s)")
    again = bench("import", str(out), cwd=steady, env=other)
    assert again.stdout.strip().startswith("0 new run(s), 0 new figure(s)")
    (tmp_path / "bad.jsonl").write_text('{"run": {}}\n')
    bad = bench("import", str(tmp_path / "bad.jsonl"), cwd=steady, env=other)
    assert bad.returncode == 2 and "bad.jsonl:1: not a bench export" in bad.stderr
    none = bench("export", "--benchmark", "nothing-of-that-name", cwd=steady, env=env)
    assert none.returncode == 0 and none.stdout == ""
    unknown = bench("compare", "-i", "last", "--baseline", "nosuch", cwd=steady, env=env)
    assert unknown.returncode == 2 and "baseline 'nosuch' is no run id, baseline name or file" in unknown.stderr
    assert unknown.stderr.count("hint:") == 1


def test_a_run_compared_with_itself_has_no_regression_even_for_zeros(tmp_path, env):
    """Issue 12: a metric 0 on both sides was 'regressed' (exit 1)."""
    (tmp_path / "zero.yaml").write_text(
        "name: zero\noutpath: runs\nparameterset: {name: p, parameter: {name: n, _: \"1,2\"}}\n"
        "step: {name: work, use: p, do: 'echo errors 0; echo loss 0.0; echo rate 5'}\n"
        "patternset:\n  name: p\n  pattern:\n"
        "    - {name: errors, type: int, direction: lower, _: \"errors $jube_pat_int\"}\n"
        "    - {name: loss, type: float, direction: lower, _: \"loss $jube_pat_fp\"}\n"
        "    - {name: rate, type: float, unit: items/s, _: \"rate $jube_pat_fp\"}\n"
        "analyser: {name: a, use: p, analyse: {step: work, file: stdout}}\n"
        "result: {use: a, table: {name: t, column: [n, errors, loss, rate]}}\n")
    assert bench("run", "zero.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    assert bench("result", "-i", "last", cwd=tmp_path, env=env).returncode == 0
    same = bench("compare", "-i", "last", "--baseline", "0", "--format", "json", cwd=tmp_path, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    verdicts = json.loads(same.stdout)
    assert len(verdicts) == 6 and {v["verdict"] for v in verdicts} == {"within noise"}
    assert {v["diff_pct"] for v in verdicts} == {0.0}
