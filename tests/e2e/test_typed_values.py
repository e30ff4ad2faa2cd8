"""Values typed once: the plan evaluates every parameter (per cycle where it changes) and records it
with its declared type; run, continue and result read the record and never evaluate again."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from tests.run_bench import bench

ONCE = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="once" outpath="runs">
    <parameterset name="p">
      <parameter name="n" type="int">1,2</parameter>
      <parameter name="tick" mode="python" update_mode="cycle">open({log!r}, "a").write("$n $jube_wp_cycle\\n") and "t$n.$jube_wp_cycle"</parameter>
    </parameterset>
    <patternset name="t"><pattern name="seen" type="string">tick=(\\S+)</pattern></patternset>
    <step name="s" cycles="3">
      <use>p</use>
      <do>echo tick=$tick</do>
      <do done_file="ready_$jube_wp_cycle" active="$jube_wp_cycle == 1">true</do>
    </step>
    <analyser name="a"><use>t</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="r" style="csv"><column>n</column><column>tick</column>
      <column>seen_last</column></table></result>
  </benchmark>
</jube>
"""


@pytest.mark.slow
def test_a_python_parameter_is_evaluated_once_per_workpackage_and_cycle(tmp_path: Path,
                                                                        env: dict[str, str]) -> None:
    log = tmp_path / "evaluations.log"
    (tmp_path / "once.xml").write_text(ONCE.format(log=str(log)))
    proc = bench("run", "once.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "waiting" in proc.stdout  # cycle 1 waits for its done file: the run goes on with `continue`
    for wp in (0, 1):
        (tmp_path / "runs" / "000000" / f"{wp:06d}_s" / "work" / "ready_1").touch()
    proc = bench("continue", "runs", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    for _ in range(2):
        proc = bench("result", "runs", "--no-history", cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
    assert sorted(log.read_text().splitlines()) == ["1 0", "1 1", "1 2", "2 0", "2 1", "2 2"]
    stdout = (tmp_path / "runs" / "000000" / "000000_s" / "work" / "stdout").read_text()
    assert stdout == "tick=t1.0\ntick=t1.1\ntick=t1.2\n"
    rows = list(csv.reader(io.StringIO(proc.stdout.strip())))
    assert rows == [["n", "tick", "seen_last"], ["1", "t1.0", "t1.2"], ["2", "t2.0", "t2.2"]]


TYPES = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="types" outpath="runs">
    <parameterset name="ints"><parameter name="size" type="int">10,9</parameter></parameterset>
    <parameterset name="texts"><parameter name="size" type="string">10,9</parameter></parameterset>
    <step name="a"><use>ints</use><do>echo a</do></step>
    <step name="b"><use>texts</use><do>echo b</do></step>
    <patternset name="p"><pattern name="w" type="string">^(\\w+)$</pattern></patternset>
    <analyser name="an"><use>p</use><analyse step="a"><file>stdout</file></analyse>
      <analyse step="b"><file>stdout</file></analyse></analyser>
    <result><use>an</use>
      <table name="r" style="csv" sort="size"><column>jube_step_name</column><column>size</column></table>
    </result>
  </benchmark>
</jube>
"""


def test_each_workpackage_keeps_its_own_declared_type(tmp_path: Path, env: dict[str, str]) -> None:
    """`size` is an int in step a and a string in step b: a's sort as numbers (9 < 10), b's as text
    ("10" < "9"); guessing the type by name (the last definition wins) sorted both as text."""
    (tmp_path / "types.xml").write_text(TYPES)
    assert bench("run", "types.xml", cwd=tmp_path, env=env).returncode == 0
    proc = bench("result", "runs", "--no-history", "--format", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    import json

    rows = [(row["jube_step_name"], row["size"]) for row in json.loads(proc.stdout)["rows"]]
    a = [size for step, size in rows if step == "a"]
    b = [size for step, size in rows if step == "b"]
    assert a == [9, 10] and b == ["10", "9"]
