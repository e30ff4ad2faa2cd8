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


PATCHED = """name: patched
outpath: runs
parameterset:
  - name: space
    parameter:
      - {name: n, type: int, _: "1,2,3,4,5,6"}
patternset:
  - name: p
    pattern:
      - {name: rank, type: float, _: "rank $jube_pat_fp"}
      - {name: extra, type: int, _: "extra $jube_pat_int"}
step:
  - {name: bench, use: space, do: "true"}
analyser:
  - {name: a, use: p, analyse: [{step: bench, file: [out.txt]}]}
result:
  - use: a
    table:
      - name: moves
        style: csv
        sort: rank_last
        column: [n, rank_last, extra_last]
      - name: extras
        style: csv
        column: [extra_last]
"""


def _patched_run(tmp_path: Path):
    (tmp_path / "patched.yaml").write_text(PATCHED)
    os.chdir(tmp_path)
    plan = make_plan(load_one(str(tmp_path / "patched.yaml")), run_id=0)
    logs = {}
    for wp in plan.workpackages:
        work = Path(plan.run_dir) / wp.dirname / "work"
        work.mkdir(parents=True)
        logs[wp.id] = work / "out.txt"
        logs[wp.id].write_text(f"rank {wp.id}.5\nextra {10 * wp.id}\n")
    return plan, logs, {wp.id: "done" for wp in plan.workpackages}


def _column(plan, states, cache, table: str, index: int) -> list[object]:
    made = produce(from_plan(plan, states, cache)).made
    return [row[index] for row in next(m for m in made if m.table.name == table).data.values]


def test_a_patched_table_equals_one_made_from_scratch(tmp_path: Path) -> None:
    """After a log changed, the kept table is patched (report.patch: `deltas` say so) and equals
    the table a first call on the same logs makes (make_results without the cache): a row that moves
    in the sort order, a workpackage's figure that goes (its row leaves the table of that figure
    only) and comes back, the status column that comes and goes."""
    plan, logs, states = _patched_run(tmp_path)
    cache = str(tmp_path / "analyse.db")
    assert not check(plan, states, cache)  # the first call makes every row
    assert _column(plan, states, cache, "moves", 0) == [1, 2, 3, 4, 5, 6]
    logs[1].write_text("rank 9.5\nextra 10\n")  # workpackage 1 (n 2) moves to the end
    assert check(plan, states, cache)
    assert _column(plan, states, cache, "moves", 0) == [1, 3, 4, 5, 6, 2]
    logs[4].write_text("rank 0.25\n")  # n 5 moves to the front and loses its extra figure
    assert check(plan, states, cache)
    assert _column(plan, states, cache, "moves", 0) == [5, 1, 3, 4, 6, 2]
    assert _column(plan, states, cache, "moves", 2)[0] is None
    assert _column(plan, states, cache, "extras", 0) == [0, 10, 20, 30, 50]  # n 5's row left
    logs[4].write_text("rank 0.25\nextra 7\n")  # ... and gets it back
    assert check(plan, states, cache)
    assert _column(plan, states, cache, "extras", 0) == [0, 10, 20, 30, 7, 50]
    states[2] = "failed"  # the status column comes
    assert check(plan, states, cache)
    states[2] = "done"  # and goes (a log changes too: the tables of this state are not kept)
    logs[5].write_text("rank 5.75\nextra 50\n")
    assert check(plan, states, cache)
    logs[0].write_text("rank 3.5\nextra 0\n")  # a tie with n 4 in the sort: row order decides
    assert check(plan, states, cache)
    assert _column(plan, states, cache, "moves", 0) == [5, 3, 1, 4, 6, 2]


def test_a_table_sorted_by_a_missing_value_is_assembled_again(tmp_path: Path) -> None:
    """A sort value that is missing (None: JUBE's CompType, no total order, a row's place depends on
    every other row) leaves no patch: the table is assembled again from the kept rows' entries and
    the new ones (still row by row: `deltas`), and equals one made from scratch, also once the sort
    values are plainly ordered again."""
    plan, logs, states = _patched_run(tmp_path)
    cache = str(tmp_path / "analyse.db")
    check(plan, states, cache)
    logs[3].write_text("extra 1\n")  # no rank: a sort value None
    assert check(plan, states, cache)
    logs[2].write_text("rank 1.0\nextra 3\n")
    assert check(plan, states, cache)
    states[5] = "failed"  # the status column comes, the table still assembled again
    assert check(plan, states, cache)
    logs[3].write_text("rank 2.0\nextra 3\n")  # plainly ordered again
    assert check(plan, states, cache)
    logs[2].write_text("rank 8.0\nextra 3\n")  # patched
    assert check(plan, states, cache)


def test_kept_places_that_do_not_fit_are_a_miss() -> None:
    """The places of a kept table are JSON from a file anyone may have written: read back as
    written, anything else (a row more or less, a position twice, a sort value that is no list) is
    None, never an error."""
    import json

    from caramel.stages.report.patch import Places

    places = Places([2, 0, 1], [(1, "a"), (2, "b"), (3, "c")], {3: ((0, "z"), "failed")}, True)
    record = json.loads(json.dumps(places.record()))
    assert record[1] == [[1, 2, 3], ["a", "b", "c"]]  # one list a sort key
    assert Places.from_record(record, 3, 2) == places
    assert Places.from_record(record, 4, 2) is None  # a row more today
    assert Places.from_record(record, 3, 1) is None  # a sort key less
    for junk in (
        None,
        [],
        [[0, 0, 1], record[1], [], True],
        [[0, 1, "2"], record[1], [], True],
        [record[0], [[1, 2, 3], ["a", "b"]], [], True],
        [record[0], [[1, 2, 3], 7], [], True],
        [record[0], record[1], [[3, [0], "failed"]], True],
        [record[0], record[1], [["x", [0, "z"], "failed"]], True],
        {"p": 1},
    ):
        assert Places.from_record(junk, 3, 2) is None
    assert not Places.from_record([*record[:3], "yes"], 3, 2).ordered  # only true is true


def test_kept_tables_show_without_their_rows(tmp_path: Path) -> None:
    """An unchanged run's tables are shown as kept (`shown`: the text of each in its own style)
    without their rows read; rows kept that do not decode are an error saying how to make them
    again, read only where they are needed (another style, the history)."""
    import sqlite3

    from caramel.stages.analyse.inputs import AnalyseError

    plan, logs, states = _patched_run(tmp_path)
    cache = str(tmp_path / "analyse.db")
    first = produce(from_plan(plan, states, cache)).made
    db = sqlite3.connect(cache)
    db.execute("UPDATE tables SET rows='[[1, 2'")
    db.commit()
    db.close()
    again = produce(from_plan(plan, states, cache))
    assert again.from_cache
    assert [m.shown for m in again.made] == [m.shown for m in first]
    assert again.made[0].shown.text == render(first[0].data)
    with pytest.raises(AnalyseError, match="--reanalyse"):
        _ = again.made[0].data  # the rows, read when first needed


def test_kept_rows_read_back_as_written(tmp_path: Path) -> None:
    """The finished tables' rows as JSON lines (report.keptrows): read back equal, with their lines
    (what a patch keeps); a text of another shape is a ValueError (the cache's miss or error)."""
    from caramel.stages.report.keptrows import read_rows, row_lines, rows_text

    plan, _logs, states = _patched_run(tmp_path)
    tables = [m.data for m in make_results(from_plan(plan, states), use_cache=False)]
    text = rows_text(tables, [None, row_lines(tables[1])])
    back = read_rows(text, len(tables))
    assert [to_json(data) for data, _lines in back] == [to_json(data) for data in tables]
    assert [lines for _data, lines in back] == [row_lines(data) for data in tables]
    lines = text.split("\n")
    for junk in (
        "\n".join(lines[:-1]),  # a row fewer
        text + "\n" + lines[-1],  # a row more
        text.replace('"done"', "7", 1),
        "\n".join([lines[0].replace(",6]", ",-1]"), *lines[1:]]),
    ):
        with pytest.raises((ValueError, TypeError)):
            read_rows(junk, len(tables))


def _tables_strategy():
    from hypothesis import strategies as st

    from caramel.stages.report.table import Key, TableData

    scalar = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
    )

    @st.composite
    def table(draw):
        width = draw(st.integers(0, 3))
        rows = draw(st.integers(0, 4))
        keys = [Key(draw(st.text(max_size=3)), None, "", 0) for _ in range(width)]
        row = st.tuples(
            st.lists(scalar, min_size=width, max_size=width),
            st.lists(st.text(max_size=4), min_size=width, max_size=width),
            st.text(max_size=6),
            st.integers(0, 10**6),
        )
        found = draw(st.lists(row, min_size=rows, max_size=rows))
        return TableData(
            draw(st.text(max_size=4)),
            "csv",
            ",",
            False,
            keys,
            [list(r[0]) for r in found],
            [list(r[1]) for r in found],
            [r[2] for r in found],
            [r[3] for r in found],
            caption=draw(st.text(max_size=6)),
        )

    return st.lists(table(), max_size=3)


def test_kept_rows_round_trip_and_junk_is_a_value_error() -> None:
    """Property (report.keptrows): any tables' rows read back as written, their lines as
    row_lines makes them; any text cut or changed reads back or is a ValueError or TypeError,
    never another exception."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from caramel.stages.report.keptrows import read_rows, row_lines, rows_text

    @settings(max_examples=300, deadline=None)
    @given(_tables_strategy(), st.integers(0, 10**6), st.text(max_size=3))
    def round_trip(tables, cut, junk) -> None:
        text = rows_text(tables, [None] * len(tables))
        back = read_rows(text, len(tables))
        assert [to_json(data) for data, _lines in back] == [to_json(data) for data in tables]
        assert [lines for _data, lines in back] == [row_lines(data) for data in tables]
        at = cut % (len(text) + 1)
        for count in (len(tables), len(tables) + 1):
            try:
                read_rows(text[:at] + junk + text[at + 1 :], count)
            except (ValueError, TypeError):
                pass

    round_trip()
