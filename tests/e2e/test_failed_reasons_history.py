"""A failed row's reason in the history (issue 37): a `do` that exits 3 and a `call:` that raises
each leave one row per table and configuration with no numbers and the row's reason (the exit
code and the last lines of output; the exception's last line), which `bench history list` counts,
`bench export` and `bench import` carry, and compare and the dashboard never take for a number."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.e2e.test_call import FUNCTIONS, SWEEP
from tests.run_bench import bench, isolated_env

from caramel.consumers.history.metrics import collect
from caramel.stages.analyse import from_run
from caramel.stages.report.results import history_tables

pytestmark = pytest.mark.slow  # each over 2 s (docs/development.md: the tiers)

# n=2 prints two lines and exits 3: its reason holds the exit code and those lines (engine/script.py
# failure_reason: the first line, then the output's tails)
EXITS = """
name: exits
outpath: runs
parameterset:
  name: p
  parameter: {name: n, type: int, _: "1,2"}
patternset:
  name: pat
  pattern: {name: rate, type: float, unit: items/s, _: "rate: $jube_pat_fp"}
step:
  name: work
  use: p
  do: "python3 -c \\"n=$n; print('rate:', 10.0*n); print('disk full on node7'); raise SystemExit(3 if n == 2 else 0)\\""
analyser:
  name: a
  use: pat
  analyse: {step: work, file: stdout}
result:
  use: a
  table: {name: t, style: csv, column: [n, rate]}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def reasons(history: Path) -> list[tuple]:
    """The metrics view's failed rows: (config, name, n, mean, samples, reason)."""
    db = sqlite3.connect(history)
    try:
        return db.execute(
            "SELECT config, name, n, mean, samples, reason FROM metrics WHERE reason IS NOT NULL ORDER BY config"
        ).fetchall()
    finally:
        db.close()


def test_the_reasons_of_a_failed_do_and_a_raising_call_reach_the_history_and_back(tmp_path, env):
    (tmp_path / "exits.yaml").write_text(EXITS)
    (tmp_path / "functions.py").write_text(FUNCTIONS)
    (tmp_path / "sweep.yaml").write_text(SWEEP.format(sizes="0,1", target="functions:rate"))
    history = tmp_path / "history.db"
    for name in ("exits", "sweep"):
        ran = bench("run", f"{name}.yaml", "--tag", "local", "-o", f"runs_{name}", cwd=tmp_path, env=env)
        assert ran.returncode != 0, ran.stdout  # one workpackage of each failed
        shown = bench("result", f"runs_{name}", "--format", "csv", cwd=tmp_path, env=env)
        assert shown.returncode == 0, shown.stderr

    found = reasons(history)
    # the do: its configuration n=2, no numbers, the exit code, the command and its last output lines
    do = [row for row in found if row[0] == '{"n": "2"}']
    assert len(do) == 1 and do[0][1:5] == ("", 0, None, None)
    assert do[0][5].startswith("do 1 exited with 3: python3 -c"), do[0][5]
    assert "disk full on node7" in do[0][5] and "rate: 20.0" in do[0][5]
    # the call: one row per configuration of size 0 (two scales), the exception's last line
    call = [row for row in found if '"size": "0"' in row[0]]
    assert len(call) == 2 and all(row[1:5] == ("", 0, None, None) for row in call)
    assert all("ValueError: size 0 makes no sense" in row[5] for row in call), call

    # what else reads a run's figures (autorepeat's widest interval) gets no failed row
    inp = from_run(str(tmp_path / "runs_exits" / "000000"))
    assert [(m.name, m.samples) for m in collect(inp, history_tables(inp))] == [("rate", [10.0])]
    assert [(m.name, m.samples) for m in collect(inp, history_tables(inp), failed=True)] == [
        ("rate", [10.0]),
        ("", []),
    ]

    listed = bench("history", "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = sorted(listed.stdout.splitlines())
    assert "1 figure(s), 1 failed row(s)" in lines[0] and "exits" in lines[0], lines
    assert "4 figure(s), 2 failed row(s)" in lines[1] and "sweep" in lines[1], lines

    # export and import carry each reason, and the re-export is the export
    exported = bench("export", cwd=tmp_path, env=env)
    assert exported.returncode == 0, exported.stderr
    failed = [m for line in exported.stdout.splitlines() for m in json.loads(line)["metrics"] if "reason" in m]
    assert sorted((m["samples"], m["reason"].splitlines()[0]) for m in failed)[0][0] == []
    assert len(failed) == 3
    (tmp_path / "export.jsonl").write_text(exported.stdout)
    other = tmp_path / "other.db"
    imported = bench("import", "export.jsonl", "--history", str(other), cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.stderr
    assert reasons(other) == found
    again = bench("export", "--history", str(other), cwd=tmp_path, env=env)
    assert again.stdout == exported.stdout

    # the dashboard: the failed rows are in the runs' details, never a figure
    page = tmp_path / "page.html"
    made = bench("dashboard", "-o", str(page), cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    assert "2 run(s), 5 figure(s)" in made.stderr, made.stderr
    text = page.read_text()
    assert '"fail":"1 (t n=2: do 1 exited with 3: python3 -c' in text
    assert '"fail":"2 (' in text and "ValueError: size 0 makes no sense ...)" in text


def test_compare_takes_a_failed_row_for_no_figure(tmp_path, env):
    """Two runs of the failing `do`: compare judges the one figure (n=1's rate) and nothing of the
    failed configuration."""
    (tmp_path / "exits.yaml").write_text(EXITS)
    for _ in range(2):
        bench("run", "exits.yaml", "--tag", "local", cwd=tmp_path, env=env)
        assert bench("result", "runs", "-i", "last", cwd=tmp_path, env=env).returncode == 0
    compared = bench("compare", "runs", "-i", "1", "-b", "0", "--format", "json", cwd=tmp_path, env=env)
    assert compared.returncode in (0, 1), compared.stderr
    verdicts = json.loads(compared.stdout)
    text = json.dumps(verdicts)
    assert "rate" in text and '"n": "2"' not in text and "n=2" not in text, text
