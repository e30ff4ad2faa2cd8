"""Storage failures are the user's to fix, never a bug: each gives `error:` naming the file, exit 2.

A damaged, truncated, zero-length or foreign run database, a locked one, an old run made by a
caramel that pickled its model, a damaged history and analysis cache; a full disk (a small tmpfs,
mounted when this runs as root) and a read-only file system: `continue` finishes the run once
the cause is gone, and every do has run exactly once.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from tests.run_bench import bench

SMALL = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="small" outpath="runs">
    <parameterset name="p"><parameter name="i" type="int">{values}</parameter></parameterset>
    <patternset name="pat"><pattern name="v" type="int">value=$jube_pat_int</pattern></patternset>
    <step name="s">
      <use>p</use>
      <do>echo "start $i" >> {ledger}; {extra}echo value=$i; echo "end $i" >> {ledger}</do>
    </step>
    <analyser name="a"><use>pat</use><analyse step="s"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="t" style="csv"><column>i</column><column>v</column></table></result>
  </benchmark>
</jube>
"""

COMMANDS = [["status"], ["info"], ["result", "--no-history"], ["log"], ["continue", "-q"], ["remove", "-w", "1", "-f"]]


def write(folder: Path, n: int = 6, extra: str = "", ledger: Path | None = None) -> Path:
    ledger = ledger or folder / "ledger.txt"
    path = folder / "small.xml"
    path.write_text(SMALL.format(values=",".join(map(str, range(n))), ledger=ledger, extra=extra))
    return path


def ran_once(ledger: Path, n: int, again: set[str] = frozenset()) -> None:
    """Every do ended exactly once (those of `again` at most twice)."""
    ends = Counter(line.split()[1] for line in ledger.read_text().splitlines() if line.startswith("end "))
    assert set(ends) == {str(i) for i in range(n)}
    assert {i for i, count in ends.items() if count != 1} <= again, ends


def user_error(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and "internal error" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.fixture
def done_run(workdir: Path, env: dict[str, str]) -> Path:
    write(workdir)
    assert bench("run", "-q", "small.xml", cwd=workdir, env=env).returncode == 0
    return workdir / "runs" / "000000"


def _truncate(db: Path) -> None:
    with open(db, "r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def _middle(db: Path) -> None:
    with open(db, "r+b") as handle:
        handle.seek(db.stat().st_size // 2)
        handle.write(b"\xab" * 8192)


def _zero(db: Path) -> None:
    db.write_bytes(b"")


def _foreign(db: Path) -> None:
    db.unlink()
    other = sqlite3.connect(db)
    other.execute("CREATE TABLE photos (id INTEGER, path TEXT)")
    other.commit()
    other.close()


def _text(db: Path) -> None:
    db.write_text("these are my notes, not a database\n" * 100)


@pytest.mark.parametrize("damage", [_truncate, _middle, _zero, _foreign, _text], ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_damaged_run_database_is_an_error_naming_it(done_run: Path, env: dict[str, str], damage,
                                                       command: list[str]) -> None:
    db = done_run / "caramel.db"
    damage(db)
    result = bench(*command, str(done_run), cwd=done_run.parent.parent, env=env)
    if damage is _middle and result.returncode == 0:
        return  # the damage hit pages this command does not read: it may answer
    user_error(result, str(db))


def test_a_locked_run_database_is_waited_for_then_an_error(done_run: Path, env: dict[str, str]) -> None:
    db = done_run / "caramel.db"
    holder = sqlite3.connect(db, isolation_level=None)
    # A finished run's state is in the rollback journal (docs/reliability.md); a bench working on
    # it puts it in WAL first, as this writer does: readers still read while it writes.
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN EXCLUSIVE")  # another program writing it
    env = dict(env, CARAMEL_DB_TIMEOUT="0.3")
    try:
        user_error(bench("continue", "-q", str(done_run), cwd=done_run.parent.parent, env=env),
                   "is locked by another process", str(db))
        assert bench("status", str(done_run), cwd=done_run.parent.parent, env=env).returncode == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert bench("continue", "-q", str(done_run), cwd=done_run.parent.parent, env=env).returncode == 0


@pytest.mark.slow
def test_a_run_of_an_older_caramel_is_refused_naming_its_version_and_never_unpickled(
        done_run: Path, env: dict[str, str]) -> None:
    marker = done_run.parent.parent / "unpickled"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    db = sqlite3.connect(done_run / "caramel.db")
    db.execute("UPDATE runs SET schema=1, version='0.3.0', model=?", (pickle.dumps(Evil()),))
    db.commit()
    db.close()
    for command in COMMANDS:
        result = bench(*command, str(done_run), cwd=done_run.parent.parent, env=env)
        if command[0] in ("result", "continue", "info") or result.returncode:
            user_error(result, "caramel 0.3.0", "version 1")  # log and status show the stored rows
    assert not marker.exists()


@pytest.mark.slow
def test_a_damaged_history_is_an_error_naming_it(done_run: Path, env: dict[str, str], tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    history.write_text("not a database " * 500)
    result = bench("result", "--history", str(history), str(done_run), cwd=done_run.parent.parent, env=env)
    assert result.returncode == 0 and "i,v" in result.stdout  # the table; the history is best effort here
    assert result.stderr.startswith("warning: ") and str(history) in result.stderr and "damaged" in result.stderr
    for command in (["compare", "-b", "x", str(done_run)], ["export"], ["report", "-o", "r.html", str(done_run)]):
        user_error(bench(*command, "--history", str(history), cwd=done_run.parent.parent, env=env),
                   str(history), "history")


@pytest.mark.parametrize("damage", [_middle, _zero, _foreign, _text], ids=lambda f: f.__name__[1:])
def test_a_damaged_analysis_cache_is_rebuilt(done_run: Path, env: dict[str, str], damage) -> None:
    first = bench("result", "--no-history", str(done_run), cwd=done_run.parent.parent, env=env)
    assert first.returncode == 0, first.stderr
    cache = done_run / "analyse.db"
    assert cache.exists()
    damage(cache)
    again = bench("result", "--no-history", str(done_run), cwd=done_run.parent.parent, env=env)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
    if damage in (_zero, _text):  # not a database: made again
        assert sqlite3.connect(cache).execute("SELECT count(*) FROM analysis").fetchone()[0] > 0


# --- a full disk and a read-only file system, for real: a small tmpfs (root only) ---------------------
@pytest.fixture
def small_disk(tmp_path: Path):
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_an_error_and_continue_finishes_it(small_disk: Path, env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"  # outside the small disk: the do's record there
    fill, flag = small_disk / "fill", tmp_path / "filled"
    write(small_disk, n=30, ledger=ledger, extra=f'if [ "$i" = 12 ] &amp;&amp; [ ! -e {flag} ]; then touch {flag}; '
                                                 f'dd if=/dev/zero of={fill} bs=64k 2>/dev/null; fi; ')
    result = bench("run", "-q", "small.xml", cwd=small_disk, env=env)
    user_error(result, "the disk is full", "bench continue")
    run_dir = small_disk / "runs" / "000000"
    status = bench("status", str(run_dir), cwd=small_disk, env=env)
    assert status.returncode == 0 and "running" in status.stdout, status.stderr
    db = sqlite3.connect(run_dir / "caramel.db")
    assert db.execute("SELECT count(*) FROM workpackages WHERE state='running'").fetchone() == (0,)
    db.close()
    table = bench("result", "--no-history", str(run_dir), cwd=small_disk, env=env)
    # Done, or still open where the batch holding its end could not be written (engine.batches):
    # the continue below finds those ends in the shells' records and runs none of them again.
    assert table.returncode == 0 and ("0,0,done" in table.stdout or "0,0,open" in table.stdout)
    fill.unlink()
    finished = bench("continue", "-q", str(run_dir), cwd=small_disk, env=env)
    assert finished.returncode == 0, finished.stderr
    # The do that filled the disk could not record its end anywhere (nor could bench): it ran again.
    ran_once(ledger, 30, again={"12"})
    db = sqlite3.connect(run_dir / "caramel.db")
    assert Counter(s for (s,) in db.execute("SELECT state FROM workpackages")) == Counter(done=30)
    db.close()


def test_a_full_disk_at_run_start_is_an_error(small_disk: Path, env: dict[str, str]) -> None:
    write(small_disk, n=2000)
    (small_disk / "fill").write_bytes(b"\0" * (3 * 1024 * 1024 - 200 * 1024))
    user_error(bench("run", "-q", "small.xml", cwd=small_disk, env=env), "disk is full")
    assert not (small_disk / "runs" / "000000").exists()  # no half-made run left behind


@pytest.mark.slow
def test_a_read_only_file_system_is_an_error_and_continue_finishes_once_writable(
        small_disk: Path, env: dict[str, str], tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    write(small_disk, n=4, ledger=ledger)
    assert bench("run", "-q", "small.xml", cwd=small_disk, env=env).returncode == 0
    db = sqlite3.connect(small_disk / "runs" / "000000" / "caramel.db")
    db.execute("UPDATE workpackages SET state='open' WHERE id=3")  # one left to do
    db.commit()
    db.close()
    with open(ledger) as handle:
        kept = [line for line in handle if not line.endswith(" 3\n")]
    ledger.write_text("".join(kept))
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        run_dir = str(small_disk / "runs" / "000000")
        user_error(bench("continue", "-q", run_dir, cwd=tmp_path, env=env), "read-only")
        for command in (["status"], ["info"], ["log"]):
            shown = bench(*command, run_dir, cwd=tmp_path, env=env)
            assert "internal error" not in shown.stderr and shown.returncode in (0, 1, 2), shown.stderr
        result = bench("result", "--no-history", run_dir, cwd=tmp_path, env=env)
        assert "internal error" not in result.stderr, result.stderr
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert bench("continue", "-q", run_dir, cwd=tmp_path, env=env).returncode == 0
    ran_once(ledger, 4)

