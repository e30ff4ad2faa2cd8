"""Declared sanity checks end to end: a workpackage whose log holds what it must not, or whose
figures break the declared expression, is a failed row with its reason, and its figures never
enter the history; fixing the check with `bench result -u` makes the row count again (issue 21)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.run_bench import bench

SANE = """name: sane
outpath: runs
parameterset:
  name: p
  parameter: {name: n, type: int, _: "1,2,3"}
patternset:
  name: pat
  pattern:
    - {name: tokens_per_s, type: float, unit: tokens/s, _: "tokens/s: $jube_pat_fp"}
    - {name: loss, type: float, _: "loss: $jube_pat_fp"}
step:
  name: train
  use: p
  do: "python3 -c \\"n=$n; print('tokens/s:', 100*n); print('loss:', 5*n); print('Traceback' if n==2 else 'ok')\\" > job.out 2>&1"
  sanity:
    - {expect: "tokens/s", file: job.out}
    - {reject: "NaN|Traceback", file: job.out}
analyser:
  name: a
  use: pat
  analyse: {step: train, file: job.out}
  sanity:
    - expr: "tokens_per_s > 0 and loss < 12"
result:
  use: a
  table: {name: t, style: csv, column: [n, tokens_per_s, loss]}
"""


def history_rows(history: Path, failed: bool = False) -> set[tuple]:
    """The history's figures (config, name); `failed`: its failed rows' (config, reason) instead, which
    hold no number (issue 37)."""
    db = sqlite3.connect(history)
    try:
        if failed:
            return set(db.execute("SELECT config, reason FROM metrics WHERE mean IS NULL AND reason IS NOT NULL"))
        return {(config, name) for config, name in db.execute("SELECT config, name FROM metrics WHERE mean IS NOT NULL")}
    finally:
        db.close()


@pytest.mark.slow
def test_failed_sanity_is_a_failed_row_outside_the_history(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "b.yaml").write_text(SANE)
    assert bench("run", "b.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    history = tmp_path / "history.db"
    proc = bench("result", "--history", str(history), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "n,tokens_per_s[tokens/s],loss,status",
        "1,100.0,5.0,done",
        "2,200.0,10.0,failed (sanity of step 'train': reject /NaN|Traceback/ found in job.out of 1_train: "
        "'Traceback')",
        "3,300.0,15.0,failed (sanity of analyser 'a': expr 'tokens_per_s > 0 and loss < 12' is false "
        "(tokens_per_s=300; loss=15))",
        "",
    ]
    assert {config for config, _name in history_rows(history)} == {'{"n": "1"}'}
    # the failed rows are in the history with their reasons, as numbers never (issue 37)
    assert history_rows(history, failed=True) == {
        ('{"n": "2"}', "sanity of step 'train': reject /NaN|Traceback/ found in job.out of 1_train: 'Traceback'"),
        ('{"n": "3"}', "sanity of analyser 'a': expr 'tokens_per_s > 0 and loss < 12' is false "
                       "(tokens_per_s=300; loss=15)")}

    # the check was too strict: fixed in the file, the run's rows are judged again (bench result -u)
    (tmp_path / "b.yaml").write_text(SANE.replace("loss < 12", "loss < 20"))
    proc = bench("result", "-u", "b.yaml", "--history", str(history), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "3,300.0,15.0,done" in proc.stdout and "2,200.0,10.0,failed (sanity of step" in proc.stdout
    assert {config for config, _name in history_rows(history)} == {'{"n": "1"}', '{"n": "3"}'}
    assert {config for config, _reason in history_rows(history, failed=True)} == {'{"n": "2"}'}


PERF = """name: perf
outpath: runs
parameterset:
  name: p
  parameter: {name: n, type: int, _: "1,2"}
step:
  name: run
  use: p
  do: "echo performance: $(( $n * 50 )) samples_per_second; [ $n = 2 ] && echo 'loss: NaN' || true"
  sanity:
    - {reject: "NaN"}
    - {expr: "performance > 60"}
"""


@pytest.mark.slow
def test_sanity_of_performance_lines(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "b.yaml").write_text(PERF)
    assert bench("run", "b.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    history = tmp_path / "history.db"
    proc = bench("result", "--format", "csv", "--history", str(history), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].endswith("50.0,samples_per_second,failed (sanity of step 'run': expr 'performance > 60' is "
                             "false (performance=50))"), lines
    assert lines[2].endswith("100.0,samples_per_second,failed (sanity of step 'run': reject /NaN/ found in "
                             "stdout of 1_run: 'NaN')"), lines
    assert history_rows(history) == set()
    # the table kept in analyse.db is not served after the checks changed
    (tmp_path / "b.yaml").write_text(PERF.replace("performance > 60", "performance > 10"))
    proc = bench("result", "-u", "b.yaml", "--format", "csv", "--history", str(history), cwd=tmp_path, env=env)
    assert proc.stdout.splitlines()[1].endswith("50.0,samples_per_second,done"), proc.stdout
    assert len(history_rows(history)) == 1


COPIES = """name: users
outpath: runs
step:
  name: run
  copies: 2
  do: 'for i in 1 2 3; do echo "performance: $((10 + 10 * CARAMEL_COPY)) img/s"; done'
  sanity:
    - expr: "performance > 15"
"""


@pytest.mark.slow
def test_a_copy_that_fails_its_sanity_leaves_the_aggregate_incomplete(tmp_path: Path, env: dict[str, str]) -> None:
    """The expression sees each copy's own figure (its mean over its lines); the failed copy is a failed
    row, so the declared sum is not made from the copies that remain."""
    (tmp_path / "b.yaml").write_text(COPIES)
    assert bench("run", "b.yaml", "--tag", "local", "-q", cwd=tmp_path, env=env).returncode == 0
    history = tmp_path / "history.db"
    proc = bench("result", "--format", "csv", "--history", str(history), cwd=tmp_path, env=env)
    rows = {line.split(",")[1]: line for line in proc.stdout.splitlines()[1:] if line}
    assert "failed (sanity of step 'run': expr 'performance > 15' is false (performance=10" in rows["0"], proc.stdout
    assert rows["1"].startswith("users,1,20.0,img/s,done"), proc.stdout
    assert "incomplete: sum of 1 of 2 copies" in rows["sum"], proc.stdout
