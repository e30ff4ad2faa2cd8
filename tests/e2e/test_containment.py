"""Containment (issue 22): caramel writes and deletes only inside what it made, whatever a benchmark
file, a run folder or a stored model says. Each test is one probe that broke an earlier caramel."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

SHARED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="sh" outpath="runs">
    <parameterset name="p"><parameter name="i">0,1</parameter>
      <parameter name="where">{where}</parameter></parameterset>
    <step name="s" shared="{shared}">
      <use>p</use>
      <do>echo $i</do>
      <do shared="true">echo shared</do>
    </step>
  </benchmark>
</jube>
"""


def precious(tmp_path: Path) -> Path:
    folder = tmp_path / "precious" / "sub"
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("years of work\n")
    return folder


def test_a_shared_name_leaving_the_run_folder_is_refused_at_plan(tmp_path: Path) -> None:
    (tmp_path / "b.xml").write_text(SHARED.format(shared="x/../../../../precious/sub", where=""))
    out = bench("plan", "--no-eval", "b.xml", cwd=tmp_path, env=isolated_env(tmp_path))
    assert out.returncode == 2, out.stderr
    assert "b.xml:" in out.stderr and "shared" in out.stderr and "outside" in out.stderr


def test_a_shared_name_made_by_a_parameter_is_refused_and_remove_deletes_nothing_outside(tmp_path: Path) -> None:
    kept = precious(tmp_path)
    (tmp_path / "b.xml").write_text(SHARED.format(shared="$where", where="x/../../../precious/sub"))
    env = isolated_env(tmp_path)
    out = bench("run", "b.xml", cwd=tmp_path, env=env)
    assert "shared name" in out.stderr + out.stdout and "outside" in out.stderr + out.stdout, out.stderr
    bench("remove", "-i", "last", "-w", "0", "-f", cwd=tmp_path, env=env)
    assert (kept / "thesis.tex").read_text() == "years of work\n"


DATABASE = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="db" outpath="runs">
    <parameterset name="p"><parameter name="bname">nightly</parameter>
      <parameter name="rk">planted</parameter></parameterset>
    <patternset name="pat"><pattern name="v" type="int">v=$jube_pat_int</pattern></patternset>
    <step name="s"><use>p</use><do>echo v=1</do></step>
    <analyser name="a"><use>pat</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use>
      <database name="baselines" primekeys="name" file="{file}">
        <key title="name">bname</key><key title="run_key">rk</key>
      </database>
    </result>
  </benchmark>
</jube>
"""


def history_with_baseline(path: Path) -> None:
    import sqlite3

    from caramel.consumers.history.store import History

    with History.open(str(path)):
        pass
    db = sqlite3.connect(path)
    db.execute("INSERT INTO baselines VALUES ('nightly', 'the-real-run')")
    db.commit()
    db.close()


def baselines(path: Path) -> list[tuple]:
    import sqlite3

    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT * FROM baselines").fetchall()
    finally:
        db.close()


def test_a_stored_database_file_never_replaces_rows_of_the_readers_history(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    history_with_baseline(history)
    (tmp_path / "b.xml").write_text(DATABASE.format(file="$CARAMEL_HISTORY"))
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(history))
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    out = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    assert "b.xml:" in out.stderr and "is a caramel history" in out.stderr
    assert baselines(history) == [("nightly", "the-real-run")]


def test_a_foreign_database_file_is_not_expanded_and_stays_in_the_run_folder(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    (tmp_path / "b.xml").write_text(DATABASE.format(file="$CARAMEL_HISTORY"))
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(history))
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    out = bench("result", "--no-eval", "--no-history", "runs", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "runs" / "000000" / "$CARAMEL_HISTORY").is_file()  # the text as written, in the run
    assert not history.exists()


def test_a_foreign_database_file_outside_the_run_folder_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "b.xml").write_text(DATABASE.format(file="../../elsewhere.db"))
    env = isolated_env(tmp_path)
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    out = bench("result", "--no-eval", "--no-history", "runs", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "b.xml:" in out.stderr and "outside" in out.stderr, out.stderr
    assert not (tmp_path / "elsewhere.db").exists()


def test_bench_result_on_a_foreign_run_never_writes_through_a_linked_result_file(tmp_path: Path) -> None:
    (tmp_path / "b.xml").write_text(TABLE)
    env = isolated_env(tmp_path)
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    bashrc = tmp_path / "reader" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("export PATH=/usr/bin\n")
    result = tmp_path / "runs" / "000000" / "result"
    result.mkdir(exist_ok=True)
    (result / "t.dat").unlink(missing_ok=True)
    (result / "t.dat").symlink_to(bashrc)
    out = bench("result", "--no-eval", "--no-history", "runs", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert bashrc.read_text() == "export PATH=/usr/bin\n"
    assert not (result / "t.dat").is_symlink() and "hello" in (result / "t.dat").read_text()


TABLE = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="tb" outpath="runs">
    <parameterset name="p"><parameter name="word">hello</parameter></parameterset>
    <patternset name="pat"><pattern name="v" type="int">v=$jube_pat_int</pattern></patternset>
    <step name="s"><use>p</use><do>echo v=1</do></step>
    <analyser name="a"><use>pat</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="t" style="csv"><column>word</column><column>v</column></table></result>
  </benchmark>
</jube>
"""


def test_an_output_naming_the_history_it_reads_is_refused(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    history_with_baseline(history)
    before = history.read_bytes()
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(history))
    for command in (["dashboard", "--history", str(history), "-o", str(history)],
                    ["dashboard", "-o", str(history)],
                    ["export", "-o", str(history)],
                    ["export", "--history", str(history), "-o", str(tmp_path / "." / "history.db")]):
        out = bench(*command, cwd=tmp_path, env=env)
        assert out.returncode == 2, (command, out.stderr)
        assert "an output may never be one of the command's inputs" in out.stderr
    assert history.read_bytes() == before


def two_runs(tmp_path: Path) -> tuple[dict[str, str], Path]:
    (tmp_path / "b.xml").write_text(TABLE)
    env = isolated_env(tmp_path)
    for _ in range(2):
        assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    return env, tmp_path / "runs"


def test_remove_refuses_a_folder_that_merely_holds_a_caramel_db(tmp_path: Path) -> None:
    env, runs = two_runs(tmp_path)
    for name, content in (("empty", b""), ("copied", (runs / "000000" / "caramel.db").read_bytes())):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "caramel.db").write_bytes(content)
        (folder / "notes.txt").write_text("mine\n")
        out = bench("remove", "-f", str(folder), cwd=tmp_path, env=env)
        assert out.returncode == 2, out.stderr
        assert "is not a run caramel made" in out.stderr and "nothing was removed" in out.stderr
        assert (folder / "notes.txt").exists()


def test_a_caramel_db_copied_into_an_outpath_does_not_make_it_a_run(tmp_path: Path) -> None:
    env, runs = two_runs(tmp_path)
    (runs / "caramel.db").write_bytes((runs / "000000" / "caramel.db").read_bytes())
    out = bench("remove", "-f", "runs", "-i", "last", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert (runs / "000000").is_dir() and not (runs / "000001").exists()


def test_last_is_the_run_made_last_not_the_newest_mtime(tmp_path: Path) -> None:
    import os
    import time

    _env, runs = two_runs(tmp_path)
    future = time.time() + 86400
    os.utime(runs / "000000", (future, future))  # what cp -p of a folder from a clock ahead leaves
    fresh = isolated_env(tmp_path / "elsewhere")  # no registry: bench looks at the outpaths below the folder
    out = bench("remove", "-f", "-i", "last", cwd=tmp_path, env=fresh)
    assert out.returncode == 0, out.stderr
    assert (runs / "000000").is_dir() and not (runs / "000001").exists()


def test_remove_without_a_terminal_and_without_f_deletes_nothing(tmp_path: Path) -> None:
    env, runs = two_runs(tmp_path)
    for extra in ([], ["-w", "0"]):
        out = bench("remove", "runs", "-i", "last", *extra, cwd=tmp_path, env=env)
        assert out.returncode == 2 and "cannot ask" in out.stderr and "-f" in out.stderr, out.stderr
    assert (runs / "000001" / "000000_s").is_dir()


@pytest.mark.slow
def test_remove_is_refused_while_another_bench_holds_the_run(tmp_path: Path) -> None:
    from caramel.stages.state.lock import RunLock

    env, runs = two_runs(tmp_path)
    with RunLock(str(runs / "000001")):
        out = bench("remove", "-f", "runs", "-i", "last", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "busy" in out.stderr, out.stderr
    assert (runs / "000001").is_dir()


def test_a_run_folder_carries_its_identity(tmp_path: Path) -> None:
    import json

    _env, runs = two_runs(tmp_path)
    made = json.loads((runs / "000001" / ".caramel_identity").read_text())
    assert made["run_id"] == 1 and made["benchmark"] == "tb" and made["created"] > 0


def test_a_foreign_runs_result_dir_never_leads_the_readers_writes_out_of_the_run(tmp_path: Path) -> None:
    reader = tmp_path / "reader_config"
    (tmp_path / "b.xml").write_text(TABLE.replace("<result>", f'<result result_dir="{reader}">'))
    env = isolated_env(tmp_path)
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    out = bench("result", "--no-eval", "--no-history", "runs", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert not reader.exists()
    assert "hello" in (tmp_path / "runs" / "000000" / "result" / "t.dat").read_text()


def test_result_output_naming_the_runs_own_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / "b.xml").write_text(TABLE)
    env = isolated_env(tmp_path)
    assert bench("run", "b.xml", cwd=tmp_path, env=env).returncode == 0
    state = tmp_path / "runs" / "000000" / "caramel.db"
    before = state.read_bytes()
    out = bench("result", "--no-history", "runs", "--output", str(state), cwd=tmp_path, env=env)
    assert out.returncode == 2 and "the run's state" in out.stderr, out.stderr
    assert state.read_bytes() == before
