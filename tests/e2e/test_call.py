"""A step that calls a Python function (`call: module:function`) through submitit's local executor:
its returned figures in the table and the history, a raising function a failed row, bench's other
commands on such a run (docs/functions.md)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

FUNCTIONS = '''
def rate(size: int, scale: float, **_ignored):
    if size == 0:
        raise ValueError("cannot measure\\nsize 0 makes no sense")
    return {"items_per_s": size * scale * 10.0, "latency_ms": 100.0 / size, "label": f"s{size}"}


def listing(size: int):
    return [size]


def picky(size: int):
    return {"items_per_s": float(size)}
'''

SWEEP = """
name: sweep
outpath: runs
parameterset:
  - name: space
    parameter:
      - {{name: size, type: int, _: "{sizes}"}}
      - {{name: scale, type: float, _: "1.0,2.0"}}
step:
  - name: measure
    use: space
    call: {target}
    figure:
      - {{name: items_per_s, unit: items/s}}
      - {{name: latency_ms, unit: ms}}
      - {{name: label, type: string}}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def write(tmp_path: Path, sizes: str = "1,2,3", target: str = "functions:rate") -> None:
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(sizes=sizes, target=target))


def table(tmp_path: Path, env: dict[str, str]) -> list[dict[str, str]]:
    shown = bench("result", "runs", "--format", "csv", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    return list(csv.DictReader(io.StringIO(shown.stdout.strip())))


def test_a_call_benchmark_sweeps_six_configurations_into_the_table_and_the_history(tmp_path, env):
    write(tmp_path)
    ran = bench("run", "sweep.yaml", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    rows = table(tmp_path, env)
    assert [(r["size"], r["scale"]) for r in rows] == [(s, c) for s in "123" for c in ("1.0", "2.0")]
    assert [float(r["items_per_s[items/s]"]) for r in rows] == [10.0, 20.0, 20.0, 40.0, 30.0, 60.0]
    assert [r["label"] for r in rows] == ["s1", "s1", "s2", "s2", "s3", "s3"]
    work = tmp_path / "runs" / "000000" / "000005_measure" / "work"
    assert json.loads((work / "figures.json").read_text())["figures"]["items_per_s"] == 60.0
    assert json.loads((work / "call.json").read_text())["kwargs"] == {"size": 3, "scale": 2.0}  # typed
    assert any((work / "submitit").iterdir())  # submitit's local executor ran it
    exported = bench("export", "--benchmark", "sweep", cwd=tmp_path, env=env)
    metrics = [m for line in exported.stdout.splitlines() for m in json.loads(line)["metrics"]]
    assert len(metrics) == 12  # two numeric figures of six configurations (a text is no figure)
    first = {(m["name"], m["unit"], m["direction"]) for m in metrics}
    assert first == {("items_per_s", "items/s", "higher"), ("latency_ms", "ms", "lower")}


def test_a_function_that_raises_is_a_failed_row_with_the_exceptions_last_line(tmp_path, env):
    write(tmp_path, sizes="0,1")
    ran = bench("run", "sweep.yaml", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode != 0
    assert ran.stdout.count("ValueError: size 0 makes no sense") == 2, ran.stdout
    rows = table(tmp_path, env)
    # the row carries the exception's last line, in the table, its JSON and the history (issue 37)
    failed = "failed (call functions:rate: ValueError: size 0 makes no sense)"
    assert [r["status"] for r in rows] == [failed, failed, "done", "done"]
    status = bench("status", "runs", cwd=tmp_path, env=env)
    assert "ValueError: size 0 makes no sense" in status.stdout
    shown = bench("result", "runs", "--format", "json", cwd=tmp_path, env=env)
    assert [r["status"] for r in json.loads(shown.stdout)["rows"]][:2] == [failed, failed]


def test_a_return_that_is_not_a_mapping_fails_the_row_clearly(tmp_path, env):
    write(tmp_path, sizes="1", target="functions:listing")
    ran = bench("run", "sweep.yaml", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode != 0
    assert "functions:listing returned a list, not a mapping of figure names to numbers or texts" in ran.stdout


def test_continue_remove_and_result_treat_a_call_run_like_any_other(tmp_path, env):
    write(tmp_path, sizes="1")
    assert bench("run", "sweep.yaml", "--tag", "local", cwd=tmp_path, env=env).returncode == 0
    removed = bench("remove", "runs", "-w", "1", "--force", cwd=tmp_path, env=env)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert [r["status"] for r in table(tmp_path, env)] == ["done", "open"]
    again = bench("continue", "runs", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [float(r["items_per_s[items/s]"]) for r in table(tmp_path, env)] == [10.0, 20.0]


XML = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="xml_call" outpath="runs">
    <parameterset name="space"><parameter name="size" type="int">2,4</parameter></parameterset>
    <step name="measure">
      <use>space</use>
      <call>functions:picky</call>
      <figure name="items_per_s" unit="items/s"/>
    </step>
  </benchmark>
</jube>
"""


def test_the_xml_spelling_is_a_call_element_and_figure_elements_in_the_step(tmp_path, env):
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "call.xml").write_text(XML)
    ran = bench("run", "call.xml", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert [float(r["items_per_s[items/s]"]) for r in table(tmp_path, env)] == [2.0, 4.0]


def test_the_shipped_gpt_function_benchmark_runs_on_local(tmp_path, env):
    from tests.shipped import copy_benchmarks

    copy_benchmarks(tmp_path / "benchmarks")
    shipped = tmp_path / "benchmarks" / "gpt_function.yaml"
    text = shipped.read_text()
    assert '_: "32,64,96"' in text
    shipped.write_text(text.replace('_: "32,64,96"', '_: "32"'))  # one size keeps the test short
    ran = bench("run", "benchmarks/gpt_function.yaml", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = bench("result", "benchmarks/gpt_function_run", "--format", "csv", cwd=tmp_path, env=env)
    rows = list(csv.DictReader(io.StringIO(shown.stdout.strip())))
    assert [row["hidden_size"] for row in rows] == ["32"]
    for row in rows:
        assert float(row["tokens_per_s[tokens/s]"]) > 0 and 0 < float(row["mfu[%]"])
        assert float(row["iteration_s[s]"]) > 0 and float(row["gemm_gflops[GFLOP/s]"]) > 0
