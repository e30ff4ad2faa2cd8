"""`bench run --repeat N` (issue 21): tables show the mean of the repeats with n and sd, as
docs/history.md says, not the first repeat; a file's own `iterations` keep JUBE's table (its first)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from tests.run_bench import bench

from caramel.stages.state.store import Store, db_path

# each repeat prints its own value: the first repeat's is 1, the mean of 3 is 2
COUNTER = """name: counter
outpath: runs
step:
  name: work
{iterations}  do: 'n=$(($(cat ../../count 2>/dev/null || echo 0) + 1)); echo $n > ../../count; echo "value $n"'
patternset: {{name: p, pattern: {{name: value, type: int, direction: higher, _: "value $jube_pat_int"}}}}
analyser: {{name: a, use: p, analyse: {{step: work, file: stdout}}}}
result: {{use: a, table: {{name: t, style: csv, column: [value]}}}}
"""


def table(tmp_path: Path, env: dict[str, str], *extra: str) -> list[dict[str, str]]:
    out = bench("result", "-i", "last", *extra, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert all(None not in row for row in rows), out.stdout  # no status holds the separator (csv is unquoted)
    return rows


@pytest.mark.slow
def test_repeat_tables_show_the_mean_n_and_sd(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "counter.yaml").write_text(COUNTER.format(iterations=""))
    (tmp_path / "runs").mkdir()
    ran = bench("run", "counter.yaml", "--repeat", "3", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    [row] = table(tmp_path, env)
    assert float(row["value"]) == 2.0 and row["n"] == "3" and float(row["value_sd"]) == pytest.approx(1.0)
    assert "flag: sd 50.0% of value > 5% over the repeats" in row["status"]
    doc = json.loads(bench("result", "-i", "last", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert doc["caption"].startswith("mean of 3 repeats (bench run --repeat 3); estimator: mean of all samples")
    # a repeat that ran on a node loaded above its cores (engine/loadavg.py's events) is flagged
    store = Store(db_path(str(tmp_path / "runs" / "000000")))
    with store.transaction():
        store.event(1, "loadavg", "end 99.00 cores=2")
    store.close()
    [row] = table(tmp_path, env, "--reanalyse")
    assert re.search(r"flag: node loaded at repeats? [\d ]*2", row["status"]), row  # (others: this node's own load)
    # the history keeps each repeat's value
    compare = bench("compare", "-i", "last", "--baseline", "0", "--format", "json", cwd=tmp_path, env=env)
    [metric] = json.loads(compare.stdout)
    assert metric["current"] == 2.0 and metric["current_n"] == 3


def test_a_files_own_iterations_keep_jubes_first(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "counter.yaml").write_text(COUNTER.format(iterations="  iterations: 3\n"))
    (tmp_path / "runs").mkdir()
    assert bench("run", "counter.yaml", "-q", cwd=tmp_path, env=env).returncode == 0
    assert table(tmp_path, env) == [{"value": "1"}]
