"""`bench result -u FILE` / `bench analyse -u FILE`, JUBE's update: a finished run whose pattern was
wrong gives, once the file is fixed, the corrected table; the update is kept for later calls, as
JUBE keeps it (configuration.xml); a change of the run itself is refused naming it (issue 21).

The expected tables are JUBE 2.7.1's on the same benchmark (`jube run wrong.xml`, then `jube result
-a -u fixed.xml`; `jube result -u` without -a shows the new columns over the old analysis, which
caramel never does: it analyses what the definitions changed), measured with shared/tools/jube-parity's
JUBE install; this test does not need JUBE."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.run_bench import bench

WRONG = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="upd" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3</parameter></parameterset>
    <patternset name="pat">
      <pattern name="rate" type="float" unit="items/s">rate=$jube_pat_fp</pattern>
    </patternset>
    <step name="work">
      <use>p</use>
      <do>echo "rate: $(( $n * 100 )).5 items/s" &gt; job.out; echo "time: $n.25 s" &gt;&gt; job.out</do>
    </step>
    <analyser name="a"><use>pat</use><analyse step="work"><file>job.out</file></analyse></analyser>
    <result><use>a</use>
      <table name="t" style="csv" sort="n"><column>n</column><column>rate</column></table>
    </result>
  </benchmark>
</jube>
"""
FIXED = WRONG.replace("rate=$jube_pat_fp", "rate: $jube_pat_fp").replace(
    "</patternset>", '  <pattern name="time" type="float" unit="s">time: $jube_pat_fp</pattern>\n    </patternset>').replace(
    "<column>rate</column>", "<column>rate</column><column>time</column>")

JUBE_BEFORE = "n,rate[items/s]\n1,\n2,\n3,\n\n"
JUBE_AFTER = "n,rate[items/s],time[s]\n1,100.5,1.25\n2,200.5,2.25\n3,300.5,3.25\n\n"


def result(tmp_path: Path, env: dict[str, str], *args: str):
    return bench("result", "-i", "last", "--no-history", "--no-files", *args, cwd=tmp_path, env=env)


@pytest.mark.slow
def test_the_fixed_file_gives_the_corrected_table_and_stays(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "wrong.xml").write_text(WRONG)
    (tmp_path / "fixed.xml").write_text(FIXED)
    assert bench("run", "-q", "wrong.xml", cwd=tmp_path, env=env).returncode == 0
    assert result(tmp_path, env).stdout == JUBE_BEFORE  # the tables and rows are now kept in analyse.db
    proc = result(tmp_path, env, "-u", "fixed.xml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == JUBE_AFTER
    assert result(tmp_path, env).stdout == JUBE_AFTER  # kept for later calls, as JUBE keeps it
    # back to the wrong file: nothing analysed with the fixed definitions is served (no stale cache)
    proc = bench("analyse", "-u", "wrong.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert result(tmp_path, env).stdout == JUBE_BEFORE


@pytest.mark.slow
def test_a_change_of_the_run_itself_is_refused_naming_it(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "wrong.xml").write_text(WRONG)
    assert bench("run", "-q", "wrong.xml", cwd=tmp_path, env=env).returncode == 0
    edits = {
        "1,2,3</parameter>": ("1,2,4</parameter>", ":4: ", "parameterset 'p' differs in its parameters: 'n' "
                              "(value: '1,2,3' became '1,2,4')"),
        '<step name="work">': ('<step name="work" iterations="2">', ":9: ", "step 'work' differs in its "
                               "iterations: 1 became 2"),
        '<benchmark name="upd"': ('<benchmark name="udp"', ": ", "no benchmark named 'upd'"),
    }
    for old, (new, line, message) in edits.items():
        (tmp_path / "edited.xml").write_text(FIXED.replace(old, new))
        proc = result(tmp_path, env, "-u", "edited.xml")
        assert proc.returncode == 2 and message in proc.stderr and f"edited.xml{line}" in proc.stderr, proc.stderr
    assert result(tmp_path, env).stdout == JUBE_BEFORE  # nothing of a refused update was kept


@pytest.mark.slow
def test_no_eval_refuses_an_update_that_needs_evaluation_before_keeping_it(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "wrong.xml").write_text(WRONG)
    (tmp_path / "python.xml").write_text(FIXED.replace(
        "</patternset>", '  <pattern name="twice" mode="python" type="float">2 * $rate</pattern>\n    </patternset>'))
    assert bench("run", "-q", "wrong.xml", cwd=tmp_path, env=env).returncode == 0
    proc = result(tmp_path, env, "-u", "python.xml", "--no-eval")
    assert proc.returncode == 2 and "twice" in proc.stderr, proc.stderr
    assert result(tmp_path, env).stdout == JUBE_BEFORE
