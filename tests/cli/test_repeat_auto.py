"""`bench run --repeat auto` (issue 34) with the real `bench` in tmp folders: a quiet figure
stops at the minimum (converged), a noisy one at the maximum count, a failure at once, the time
limit after the repeat it ends in; `repeat: auto` in a YAML and an XML file behaves the same, and a
bad value is an error naming file, line and what is expected. docs/cli.md describes the rule."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

# the figure every repeat prints: {value} is a constant, or a shell expression of the repeat
YAML = """name: {name}
outpath: runs
{repeat}step:
  name: work
  do: '{do}'
patternset: {{name: p, pattern: {{name: value, type: float, unit: s, _: "value $jube_pat_fp"}}}}
analyser: {{name: a, use: p, analyse: {{step: work, file: stdout}}}}
result: {{use: a, table: {{name: t, style: csv, column: [value]}}}}
"""
XML = """<?xml version="1.0"?>
<jube>
  <benchmark name="{name}" outpath="runs"{repeat}>
    <patternset name="p">
      <pattern name="value" type="float" unit="s">value $jube_pat_fp</pattern>
    </patternset>
    <step name="work"><do>{do}</do></step>
    <analyser name="a"><use>p</use><analyse step="work"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="t" style="csv"><column>value</column></table></result>
  </benchmark>
</jube>
"""
QUIET = "echo value 10.0"
# 30 % spread around 100, seeded by the repeat (the workpackage's iteration): the same figures
# every run
NOISY = (
    'python3 -c "import random; random.seed($jube_wp_iteration); '
    'print(\\"value\\", 100 * (1 + 0.3 * (2 * random.random() - 1)))"'
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def write(tmp_path: Path, do: str, repeat: str = "", name: str = "b", xml: bool = False) -> str:
    if xml:
        text = XML.format(name=name, do=do, repeat=f' repeat="{repeat}"' if repeat else "")
    else:
        text = YAML.format(
            name=name, do=do.replace("'", "''"), repeat=f"repeat: {repeat}\n" if repeat else ""
        )
    path = tmp_path / f"{name}.{'xml' if xml else 'yaml'}"
    path.write_text(text)
    return path.name


def status(tmp_path: Path, env: dict[str, str]) -> dict:
    out = bench("status", "-i", "last", "--format", "json", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_a_quiet_figure_converges_at_the_minimum(tmp_path: Path, env: dict[str, str]) -> None:
    ran = bench("run", write(tmp_path, QUIET), "--repeat", "auto", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (
        "repeats: 3 repeats (--repeat auto): converged: "
        "widest 95 % half-width 0.00 % (t/value) <= 2 %"
        in ran.stdout
    )
    run = status(tmp_path, env)
    assert run["steps"] == {
        "work": {"done": 3}
    }  # the 27 repeats not needed are taken out of the run
    assert run["repeat_auto"]["repeats"] == 3 and run["repeat_auto"]["stopped"].startswith(
        "converged"
    )
    shown = bench("status", "-i", "last", cwd=tmp_path, env=env).stdout
    assert "repeats: 3 repeats (--repeat auto): converged" in shown
    table = bench("result", "-i", "last", "--format", "json", cwd=tmp_path, env=env)
    doc = json.loads(table.stdout)
    assert doc["caption"].startswith("mean of 3 repeats (bench run --repeat auto)")


@pytest.mark.slow
def test_a_noisy_figure_runs_to_the_maximum(tmp_path: Path, env: dict[str, str]) -> None:
    ran = bench(
        "run",
        write(tmp_path, NOISY),
        "--repeat",
        "auto",
        "--repeat-max",
        "5",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # 30 % spread: the half-width after 5 repeats is far above 2 % (analyse.convergence)
    assert "repeat 4 done; widest 95 % half-width" in ran.stdout
    assert (
        "repeats: 5 repeats (--repeat auto): max count: 5 repeats, widest 95 % half-width"
        in ran.stdout
    )
    assert status(tmp_path, env)["steps"] == {"work": {"done": 5}}


@pytest.mark.slow
def test_a_loose_target_stops_the_noisy_figure_earlier(tmp_path: Path, env: dict[str, str]) -> None:
    ran = bench(
        "run",
        write(tmp_path, NOISY),
        "--repeat",
        "auto",
        "--repeat-max",
        "8",
        "--repeat-target",
        "40",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    made = status(tmp_path, env)["repeat_auto"]
    assert 3 < made["repeats"] < 8 and made["stopped"].startswith("converged"), made


@pytest.mark.slow
def test_the_time_limit_stops_after_the_repeat_it_ends_in(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ran = bench(
        "run",
        write(tmp_path, "sleep 0.3; " + NOISY),
        "--repeat",
        "auto",
        "--repeat-time",
        "0.2",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "repeats: 1 repeat (--repeat auto): max time:" in ran.stdout
    assert status(tmp_path, env)["steps"] == {"work": {"done": 1}}


@pytest.mark.slow
def test_a_failed_repeat_stops_the_loop_and_keeps_what_ran(
    tmp_path: Path, env: dict[str, str]
) -> None:
    fails_second = "test $jube_wp_iteration -lt 1 && echo value 10.0"
    ran = bench("run", write(tmp_path, fails_second), "--repeat", "auto", cwd=tmp_path, env=env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "repeats: 2 repeats (--repeat auto): failed: workpackage" in ran.stdout
    assert status(tmp_path, env)["steps"] == {"work": {"done": 1, "failed": 1}}


@pytest.mark.slow
@pytest.mark.parametrize("xml", [False, True], ids=["yaml", "xml"])
def test_repeat_auto_in_the_file(tmp_path: Path, env: dict[str, str], xml: bool) -> None:
    ran = bench("run", write(tmp_path, QUIET, repeat="auto", xml=xml), cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "repeats: 3 repeats (--repeat auto): converged" in ran.stdout
    # --repeat overrides the file's
    ran = bench(
        "run",
        write(tmp_path, QUIET, repeat="auto", xml=xml),
        "--repeat",
        "2",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0 and "--repeat auto" not in ran.stdout
    assert status(tmp_path, env)["steps"] == {"work": {"done": 2}}


@pytest.mark.parametrize("xml", [False, True], ids=["yaml", "xml"])
def test_a_bad_repeat_names_file_line_and_what_is_expected(
    tmp_path: Path, env: dict[str, str], xml: bool
) -> None:
    name = write(tmp_path, QUIET, repeat="sometimes", xml=xml)
    ran = bench("plan", name, cwd=tmp_path, env=env)
    line = 3  # the line of `repeat:` (YAML), of the <benchmark> tag holding it (XML)
    assert ran.returncode != 0 and "Traceback" not in ran.stderr
    assert (
        f"{name}:{line}: repeat='sometimes' is neither a whole number of at least 1 nor 'auto'"
        in ran.stderr
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--repeat", "sometimes"],
        ["--repeat", "0"],
        ["--repeat", "auto", "--repeat-min", "1"],
        ["--repeat", "auto", "--repeat-max", "2"],
        ["--repeat", "auto", "--repeat-target", "0"],
    ],
)
def test_bad_repeat_options_are_errors(
    tmp_path: Path, env: dict[str, str], args: list[str]
) -> None:
    ran = bench("run", write(tmp_path, QUIET), *args, cwd=tmp_path, env=env)
    assert ran.returncode != 0 and "Traceback" not in ran.stderr and "--repeat" in ran.stderr, (
        ran.stderr
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_ctrl_c_then_continue_goes_on_a_repeat_at_a_time(
    tmp_path: Path, env: dict[str, str]
) -> None:
    name = write(tmp_path, "sleep 0.5; " + NOISY)
    started = subprocess.Popen(
        [sys.executable, "-m", "caramel", "run", name, "--repeat", "auto", "--repeat-max", "4"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while (
        not (tmp_path / "runs" / "000000" / "000001_work").exists() and time.monotonic() < deadline
    ):
        time.sleep(
            0.05
        )  # the second repeat's folder (workpackage 1) is made: the first repeat has ended
    os.kill(started.pid, signal.SIGINT)
    out, err = started.communicate(timeout=60)
    assert started.returncode == 130, out + err
    assert (
        status(tmp_path, env)["repeat_auto"].get("stopped") is None
    )  # not finished: nothing taken out
    went_on = bench("continue", "-i", "last", cwd=tmp_path, env=env)
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    assert "repeats: 4 repeats (--repeat auto): max count" in went_on.stdout
    assert status(tmp_path, env)["steps"] == {"work": {"done": 4}}
