"""Tables made again row by row (report.incremental) equal a full re-analysis, whatever changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caramel.stages.analyse import from_plan
from caramel.stages.expand.plan import make_plan
from caramel.stages.report.results import make_results, produce
from caramel.stages.report.table import render, to_json
from caramel.stages.spec.loader import load_one

BENCH = """name: inc
outpath: runs
parameterset:
  - name: first
    parameter:
      - {name: a, type: int, _: "1,2,3"}
  - name: second
    parameter:
      - {name: b, _: "x,y"}
      - {name: c, type: int, _: "5,1,4,2,3"}
patternset:
  - name: t
    pattern:
      - {name: time, type: float, unit: s, _: "time $jube_pat_fp"}
      - {name: word, _: "word $jube_pat_wrd"}
      - {name: rate, type: float, mode: python, _: "$c / $time_avg"}
      - {name: bad, type: int, _: "count $jube_pat_int"}
step:
  - {name: prep, use: first, do: "true"}
  - {name: bench, depend: prep, use: second, iterations: 2, do: "true"}
analyser:
  - name: red
    use: t
    analyse: [{step: bench, file: [out.txt]}]
  - name: flat
    reduce: false
    use: t
    analyse: [{step: prep, file: [out.txt, other.txt]}]
result:
  - use: red
    table:
      - name: sorted
        style: csv
        sort: c,b,time_avg
        column: [a, b, c, {_: time_avg, format: ".3f"}, rate, word, bad_max]
      - name: filtered
        style: pretty
        filter: "$c > 2"
        sort: rate
        column: [b, c, time_cnt, rate]
  - use: [flat, red]
    table:
      name: both
      style: aligned
      column: [jube_res_analyser, a, time_last, word]
"""


def full_text(made) -> str:
    return "".join(render(m.data) + to_json(m.data) + repr(m.data.values) for m in made)


def check(plan, states, cache) -> bool:
    """The incremental tables equal the full ones; True when they were made row by row."""
    produced = produce(from_plan(plan, states, cache))
    expected = make_results(from_plan(plan, states), use_cache=False)
    assert full_text(produced.made) == full_text(expected)
    assert produced.warnings == produce(from_plan(plan, states), use_cache=False).warnings
    return produced.deltas is not None


@pytest.mark.slow
def test_rows_made_again_equal_a_full_analysis(tmp_path: Path) -> None:
    (tmp_path / "inc.yaml").write_text(BENCH)
    os.chdir(tmp_path)
    plan = make_plan(load_one(str(tmp_path / "inc.yaml")), run_id=0)
    run_dir = plan.run_dir
    cache = str(tmp_path / "analyse.db")
    logs = {}
    for wp in plan.workpackages:
        work = Path(run_dir) / wp.dirname / "work"
        work.mkdir(parents=True)
        logs[wp.id] = work / "out.txt"
        logs[wp.id].write_text(f"time {1 + wp.id % 4}.5\nword w{wp.id}\n")
    states = {wp.id: "done" for wp in plan.workpackages}
    states[5] = "failed"
    states[9] = "open"
    assert not check(plan, states, cache)  # the first call makes every row
    incremental = 0
    for step, wp in enumerate(plan.workpackages):
        with open(logs[wp.id], "a") as handle:  # one log after another changes
            handle.write(f"time {step % 3}.25\ncount {'zz' if step % 5 == 0 else step}\n")
        if step == 4:
            states[5] = "done"  # a failed workpackage finishes: the status column goes
        if step == 7:
            states[9] = "done"
        if step == 10:
            (logs[wp.id].parent / "other.txt").write_text("time 8.0\n")  # a file appears
        if step == 12:
            logs[wp.id].unlink()  # a log vanishes
        if step == 15:
            states[20] = "failed"  # the status column comes
        incremental += check(plan, states, cache)
    assert incremental == len(plan.workpackages)
    assert check(plan, states, cache) or True  # nothing changed: the kept tables


def test_kept_rows_that_do_not_decode_are_a_miss(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / "inc.yaml").write_text(BENCH)
    os.chdir(tmp_path)
    plan = make_plan(load_one(str(tmp_path / "inc.yaml")), run_id=0)
    for wp in plan.workpackages:
        work = Path(plan.run_dir) / wp.dirname / "work"
        work.mkdir(parents=True)
        (work / "out.txt").write_text(f"time {wp.id}.5\n")
    states = {wp.id: "done" for wp in plan.workpackages}
    cache = str(tmp_path / "analyse.db")
    check(plan, states, cache)
    for damage in ('{"k": 1}', "[1, 2", '{"k":"x","d":{},"s":[],"n":{},"l":[],"p":[],"t":[]}'):
        db = sqlite3.connect(cache)
        db.execute("UPDATE rows SET data=?", (damage,))
        db.commit()
        db.close()
        states[1] = "failed" if states[1] == "done" else "done"
        assert not check(plan, states, cache)
