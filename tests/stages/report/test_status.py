"""Failed, unfinished and incomplete workpackages keep their row, with a status, never looking done."""

import json
import math
import os

import pytest

import caramel
from caramel.cli.main import main
from caramel.stages.engine.session import start_run
from caramel.stages.spec.loader import load_one

BENCH = """<?xml version="1.0"?>
<jube><benchmark name="mixed" outpath="bench_run">
  <parameterset name="p"><parameter name="x" type="int">1,2,3</parameter></parameterset>
  <patternset name="pat">
    <pattern name="rate" type="float" unit="img/s">rate $jube_pat_fp</pattern>
    <pattern name="per_x" type="float" mode="python">$rate / ($x - 3)</pattern>
  </patternset>
  <step name="train"><use>p</use>
    <do>echo "rate $x.5"</do>
    <do>test $x != 2</do>
    <do>test $x != 3 || rm stdout.missing 2>/dev/null; true</do>
  </step>
  <step name="evaluate" depend="train"><do>echo "score 1"</do></step>
  <analyser name="a"><use>pat</use>
    <analyse step="train"><file>stdout</file><file>extra.log</file></analyse>
  </analyser>
  <result><use>a</use>
    <table name="t" style="csv" sort="x"><column>x</column><column>rate</column><column>per_x</column></table>
  </result>
</benchmark></jube>
"""


@pytest.fixture
def run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.xml").write_text(BENCH)
    summary = start_run(load_one(str(tmp_path / "b.xml")), quiet=True, cwd=str(tmp_path))
    return summary.run_dir


def test_failed_and_unfinished_rows_have_a_status(run_dir, capsys):
    # the failed train (x=2) leaves its evaluate child open; x=1 and 3 have no extra.log
    extra = os.path.join(run_dir, "000000_train", "work", "extra.log")
    with open(extra, "w") as handle:
        handle.write("rate 100\n")
    capsys.readouterr()
    assert main(["result", run_dir]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "x,rate[img/s],per_x,status"
    assert lines[1] == "1,1.5,-0.75,done"
    assert lines[2] == "2,2.5,-2.5,failed (do 2 exited with 1: test 2 != 2)"  # its reason (issue 37)
    assert lines[3] == "3,3.5,nan,done (missing extra.log)"
    # the division by zero of x=3 is named with its expression and workpackage
    assert "pattern 'per_x': python expression '3.5 / (3 - 3)' failed for workpackage 2: ZeroDivisionError" in err


def test_notebook_api_is_typed_with_units(run_dir):
    df = caramel.results(run_dir, table="t")
    assert list(df.columns) == ["x", "rate", "per_x", "status", "workpackage"]
    assert str(df["x"].dtype) == "Int64" and str(df["rate"].dtype) == "float64"
    assert df.attrs["units"] == {"rate": "img/s"}
    assert list(df["status"]) == ["done (missing extra.log)", "failed (do 2 exited with 1: test 2 != 2)",
                                  "done (missing extra.log)"]
    assert math.isnan(df["per_x"][2])
    full = caramel.results(os.path.dirname(run_dir))  # the outpath: its last run
    assert {"rate_avg", "rate_cnt", "x", "x_train", "status", "jube_res_analyser"} <= set(full.columns)
    assert full.attrs["units"]["rate_avg"] == "img/s" and "rate_cnt" not in full.attrs["units"]
    assert str(full["rate_cnt"].dtype) == "Int64"


def test_json_style_and_output_file(run_dir, tmp_path, capsys):
    target = tmp_path / "out.json"
    assert main(["result", run_dir, "--format", "json", "--output", str(target), "-a"]) == 0
    doc = json.loads(target.read_text())
    assert doc["name"] == "t" and doc["units"] == {"rate[img/s]": "img/s"}
    assert doc["rows"][1]["status"] == "failed (do 2 exited with 1: test 2 != 2)"
    assert doc["rows"][0]["_workpackage"] == 0
    assert doc["rows"][2]["per_x"] is None  # nan is null in JSON


def test_log_that_changes_is_analysed_again(run_dir, capsys):
    assert main(["result", run_dir]) == 0
    stdout = os.path.join(run_dir, "000000_train", "work", "stdout")
    with open(stdout, "a") as handle:
        handle.write("rate 9.5\n")
    capsys.readouterr()
    assert main(["analyse", run_dir]) == 0
    assert "1 analysed now, 2 unchanged" in capsys.readouterr().out
    df = caramel.results(run_dir)
    assert df["rate_max"][0] == 9.5


def test_unknown_table_and_missing_run(run_dir, tmp_path, capsys):
    assert main(["result", run_dir, "--only", "tt"]) == 2
    assert "no table or database named 'tt'" in capsys.readouterr().err
    assert main(["result", str(tmp_path / "nothing")]) == 2


def test_waiting_and_never_started_workpackages_keep_their_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.xml").write_text("""<?xml version="1.0"?>
<jube><benchmark name="wait" outpath="bench_run">
  <parameterset name="p"><parameter name="x" type="int">1,2</parameter></parameterset>
  <patternset name="pat"><pattern name="v" type="int">v=$jube_pat_int</pattern></patternset>
  <step name="submit"><use>p</use><do>echo v=$x</do><do done_file="ready"></do></step>
  <step name="after" depend="submit"><do>echo v=9</do></step>
  <analyser name="a"><use>pat</use>
    <analyse step="submit"><file>stdout</file></analyse>
    <analyse step="after"><file>stdout</file></analyse>
  </analyser>
  <result><use>a</use><table name="t" sort="x"><column>x</column><column>v</column></table></result>
</benchmark></jube>""")
    summary = start_run(load_one(str(tmp_path / "w.xml")), quiet=True, cwd=str(tmp_path))
    capsys.readouterr()
    assert main(["result", summary.run_dir]) == 0
    # the waiting submits and their never started children: one row each, with the values the chain
    # has so far (the submit's, merged as JUBE merges) and the status saying it is not finished
    assert capsys.readouterr().out == "x,v,status\n1,1,waiting\n2,2,waiting\n\n"
    open(os.path.join(summary.run_dir, "000000_submit", "work", "ready"), "w").close()
    assert main(["continue", summary.run_dir, "-q"]) in (0, 1)
    capsys.readouterr()
    assert main(["result", summary.run_dir]) == 0
    assert capsys.readouterr().out == "x,v,status\n1,9,done\n2,2,waiting\n\n"
