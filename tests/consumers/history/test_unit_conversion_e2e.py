"""The real `bench compare` of runs that printed one figure in different units (issue 34): a
baseline `performance: 0.013 s` against a run `performance: 12.0 ms` is 13 ms against 12 ms,
-7.7 %, improved (a time), never +92231 % regressed. The factors are pint's
(pint/default_en.txt: `milli- = 1e-3`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

# VALUE and UNIT (environment) are the figure the run prints
PRINTS = """name: timed
outpath: runs
step:
  - name: work
    do: >-
      python3 -c "import os; print('performance:', os.environ['VALUE'], os.environ['UNIT'])"
"""

# a figure `t` (unit s) and a column `phase` whose pattern declares neither unit nor direction
COLUMNS = """name: columns
outpath: runs
step: {name: work, do: 'echo t 0.5; echo phase 3'}
patternset:
  name: p
  pattern:
    - {name: t, type: float, unit: s, _: "t $jube_pat_fp"}
    - {name: phase, type: int, _: "phase $jube_pat_int"}
analyser: {name: a, use: p, analyse: {step: work, file: stdout}}
result: {use: a, table: {name: tbl, column: [t, phase]}}
"""


def _runs(folder: Path, env: dict[str, str], *printed: tuple[str, str]) -> None:
    (folder / "timed.yaml").write_text(PRINTS)
    for value, unit in printed:
        done = bench("run", "timed.yaml", "-q", cwd=folder, env=dict(env, VALUE=value, UNIT=unit))
        assert done.returncode == 0, done.stderr


def _compare(folder: Path, env: dict[str, str], *args: str):
    return bench("compare", "-i", "last", *args, cwd=folder, env=env)


@pytest.mark.slow
def test_seconds_against_milliseconds_is_the_right_change(tmp_path, env):
    # one sample a side: judged against an explicit threshold (docs/history.md, "The rule")
    _runs(tmp_path, env, ("0.013", "s"), ("12.0", "ms"), ("0.013", "s"))
    faster = _compare(tmp_path, env, "-i", "1", "--baseline", "0", "--threshold", "5", "--format", "json")
    assert faster.returncode == 0, faster.stdout + faster.stderr
    [verdict] = json.loads(faster.stdout)
    assert (verdict["unit"], verdict["direction"], verdict["verdict"]) == (
        "ms",
        "lower",
        "improved",
    )
    assert verdict["baseline"] == pytest.approx(13.0) and verdict["current"] == pytest.approx(12.0)
    assert verdict["diff_pct"] == pytest.approx(100 * (12.0 / 13.0 - 1))  # -7.69 %
    assert "baseline converted from s to ms" in verdict["why"]
    table = _compare(tmp_path, env, "-i", "1", "--baseline", "0", "--threshold", "5")
    assert (
        "-7.7%" in table.stdout and "improved" in table.stdout and "regressed" not in table.stdout
    )

    slower = _compare(
        tmp_path, env, "--baseline", "1", "--threshold", "5", "--format", "json"
    )  # run 2 (0.013 s) against 12 ms
    assert slower.returncode == 1, slower.stdout + slower.stderr
    [verdict] = json.loads(slower.stdout)
    assert (verdict["unit"], verdict["verdict"]) == ("s", "regressed")
    assert verdict["baseline"] == pytest.approx(0.012)
    assert verdict["diff_pct"] == pytest.approx(100 * (13.0 / 12.0 - 1))  # +8.3 %, not -99.9 %


@pytest.mark.slow
def test_tokens_per_second_spellings_are_one_unit(tmp_path, env):
    _runs(tmp_path, env, ("1000", "tokens/s"), ("1100", "tok/s"))
    same = _compare(tmp_path, env, "--baseline", "0", "--threshold", "5", "--format", "json")
    [verdict] = json.loads(same.stdout)
    assert verdict["verdict"] == "improved" and verdict["diff_pct"] == pytest.approx(10.0), (
        same.stderr
    )


@pytest.mark.slow
def test_seconds_against_tokens_per_second_is_an_error_naming_both(tmp_path, env):
    _runs(tmp_path, env, ("0.013", "s"), ("1000", "tokens/s"))
    refused = _compare(tmp_path, env, "--baseline", "0")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    message = refused.stderr
    assert "'tokens/s'" in message and "'s'" in message and "[time]" in message
    assert (
        "the run " in message
        and "runs/000001" in message
        and "baseline '0'" in message
        and "runs/000000" in message
    )


@pytest.mark.slow
def test_an_unknown_unit_is_compared_only_with_itself(tmp_path, env):
    _runs(tmp_path, env, ("2", "widgets"), ("3", "widgets"), ("3", "gadgets"))
    same = _compare(tmp_path, env, "-i", "1", "--baseline", "0", "--format", "json")
    assert same.returncode == 0 and json.loads(same.stdout)[0]["diff_pct"] == pytest.approx(50.0), (
        same.stderr
    )
    other = _compare(tmp_path, env, "--baseline", "1")
    assert other.returncode == 2 and "'gadgets'" in other.stderr and "'widgets'" in other.stderr, (
        other.stderr
    )


@pytest.mark.slow
def test_a_target_with_a_unit_is_converted(tmp_path, env):
    _runs(tmp_path, env, ("12.0", "ms"))
    targets = tmp_path / "targets.yaml"
    targets.write_text("timed: {value: 0.013, unit: s}\n")
    judged = _compare(tmp_path, env, "--targets", str(targets))
    assert "+7.69%" in judged.stdout and "pass" in judged.stdout, (
        judged.stdout + judged.stderr
    )  # 13 ms target
    targets.write_text("timed: {value: 1000, unit: tokens/s}\n")
    refused = _compare(tmp_path, env, "--targets", str(targets))
    assert (
        refused.returncode == 2
        and "targets.yaml:1" in refused.stderr
        and "'tokens/s'" in refused.stderr
    )
    assert "'ms'" in refused.stderr and "Traceback" not in refused.stderr
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"performance": {"value": 13000, "unit": "us"}}))
    against = _compare(tmp_path, env, "--baseline", str(flat), "--format", "json")
    [verdict] = json.loads(against.stdout)
    assert verdict["baseline"] == pytest.approx(13.0) and verdict["verdict"] == "improved", (
        against.stderr
    )


def test_a_target_naming_a_column_that_is_no_figure_says_how_to_declare_it(tmp_path, env):
    (tmp_path / "columns.yaml").write_text(COLUMNS)
    assert bench("run", "columns.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    targets = tmp_path / "targets.yaml"
    targets.write_text("columns:\n  t: 0.5\n  phase: 3\n")
    told = _compare(tmp_path, env, "--targets", str(targets))
    assert told.returncode == 2 and "Traceback" not in told.stderr, told.stdout + told.stderr
    assert "targets.yaml:3" in told.stderr and "column 'phase' is not a figure" in told.stderr
    assert "unit=" in told.stderr and "direction=" in told.stderr and "-inf" not in told.stdout
    targets.write_text("phase: 3\n")  # the flat form, naming the column itself
    flat = _compare(tmp_path, env, "--targets", str(targets))
    assert flat.returncode == 2 and "column 'phase' is not a figure" in flat.stderr, flat.stderr
