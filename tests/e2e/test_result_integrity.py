"""`bench result` never keeps figures of a run that is not what it read.

- A run removed while `bench result` reads it (`bench remove` from another shell) gave the figures
  of a half-read run, and they went to the history for ever: now an error, and no history rows.
- A log replaced by one of the same size and modification time (`cp -p`, `rsync -t`) kept its old
  figures until `--reanalyse`, because the analysis cache knew a file by size and mtime only: the
  signature now carries the inode and the ctime too (which no copy tool can set back).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import bench

BENCH = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="h" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2,3</parameter></parameterset>
    <patternset name="t"><pattern name="time" type="float" unit="s">time $jube_pat_fp</pattern></patternset>
    <step name="s"><use>p</use><do>echo time $n.5</do></step>
    <analyser name="a"><use>t</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="r" style="csv"><column>n</column><column>time_avg</column></table></result>
  </benchmark>
</jube>
"""

# `bench result` whose reading of the run is followed by a removal of part of it, as a `bench remove`
# running meanwhile would do (what the reading saw is the first workpackages, not the last one)
REMOVED_WHILE_READ = """
import runpy, shutil, sys
from caramel.stages.report import results
_produce = results.produce
def produce(inp, *args, **kwargs):
    out = _produce(inp, *args, **kwargs)
    shutil.rmtree(inp.run_dir)
    return out
results.produce = produce
sys.argv = ["bench", *sys.argv[1:]]
runpy.run_module("caramel", run_name="__main__")
"""


def _rows(history: Path) -> list:
    if not history.exists():
        return []
    with sqlite3.connect(history) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return list(db.execute("SELECT * FROM metrics")) + list(db.execute("SELECT * FROM runs")) \
            if "metrics" in tables else []


def _run(tmp_path: Path, env: dict[str, str]) -> Path:
    (tmp_path / "h.xml").write_text(BENCH)
    proc = bench("run", "h.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "runs" / "000000"


@pytest.mark.slow
def test_a_run_removed_while_read_adds_nothing_to_the_history(tmp_path: Path, env: dict[str, str]) -> None:
    _run(tmp_path, env)
    history = tmp_path / "history.db"
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run([sys.executable, "-c", REMOVED_WHILE_READ, "result", "runs", "--history", str(history),
                           "--no-files"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(env, PYTHONPATH=os.pathsep.join([src, env.get("PYTHONPATH", "")])))
    assert proc.returncode == 2, proc.stderr
    assert "changed while bench result read it" in proc.stderr and "nothing was added to the history" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert _rows(history) == []


def test_a_workpackage_removed_while_read_adds_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    run = _run(tmp_path, env)
    history = tmp_path / "history.db"
    script = REMOVED_WHILE_READ.replace("shutil.rmtree(inp.run_dir)",
                                        "shutil.rmtree(inp.run_dir + '/000002_s')")
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run([sys.executable, "-c", script, "result", str(run), "--history", str(history), "--no-files"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(env, PYTHONPATH=os.pathsep.join([src, env.get("PYTHONPATH", "")])))
    assert proc.returncode == 2, proc.stderr
    assert "(000002_s went)" in proc.stderr
    assert _rows(history) == []


def _times(tmp_path: Path, env: dict[str, str]) -> list[str]:
    proc = bench("result", "runs", "--no-history", "--no-files", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.slow
def test_a_log_replaced_in_place_with_the_same_size_and_mtime_is_read_again(tmp_path: Path,
                                                                             env: dict[str, str]) -> None:
    run = _run(tmp_path, env)
    log = run / "000001_s" / "work" / "stdout"
    assert _times(tmp_path, env) == ["n,time_avg[s]", "1,1.5", "2,2.5", "3,3.5"]
    before = os.stat(log)
    source = tmp_path / "other"
    source.write_text(log.read_text().replace("2.5", "7.5"))
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    shutil.copy2(source, log)  # cp -p: the same file (inode), its bytes rewritten, its times set back
    after = os.stat(log)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert _times(tmp_path, env) == ["n,time_avg[s]", "1,1.5", "2,7.5", "3,3.5"]


@pytest.mark.slow
def test_a_log_renamed_over_with_the_same_size_and_mtime_is_read_again(tmp_path: Path,
                                                                        env: dict[str, str]) -> None:
    run = _run(tmp_path, env)
    log = run / "000002_s" / "work" / "stdout"
    assert _times(tmp_path, env)[-1] == "3,3.5"
    before = os.stat(log)
    staged = log.with_name(".stdout.tmp")  # rsync -t: a new file beside, its mtime set, renamed over
    staged.write_text(log.read_text().replace("3.5", "9.5"))
    os.utime(staged, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(staged, log)
    assert _times(tmp_path, env)[-1] == "3,9.5"
