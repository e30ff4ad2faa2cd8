"""The run store, the lock and the registry of recent runs."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from caramel.errors import RunError
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import registry
from caramel.stages.state.lock import RunLock
from caramel.stages.state.rows import CommandRow, RunInfo
from caramel.stages.state.store import Store, db_path

MODEL = Benchmark("b", "runs", tags={"t"})


def make(tmp_path: Path, n: int = 3) -> Store:
    rows = [(i, "s", 0, [i - 1] if i else [], f"{i:06d}_s",
             Params({"x": str(i), "y": "a"}, {"x": "int"}, ({"y": "b", "jube_wp_cycle": "1"},) if i == 2 else ()))
            for i in range(n)]
    return Store.create(str(tmp_path), RunInfo(0, "b", "f.xml", str(tmp_path), str(tmp_path), ["t"]), MODEL, rows)


def test_create_then_read_back(tmp_path: Path) -> None:
    store = make(tmp_path)
    assert [(w.id, w.parents, w.state) for w in store.workpackages()] == [(0, (), "open"), (1, (0,), "open"),
                                                                          (2, (1,), "open")]
    assert store.params(2) == {"x": "2", "y": "a"} and store.model() == MODEL and store.info().tags == ["t"]
    assert not os.path.exists(db_path(str(tmp_path)) + ".new")


def test_params_keep_their_declared_types_and_cycles(tmp_path: Path) -> None:
    store = make(tmp_path)
    params = store.params(2)
    assert params.typed("x") == 2 and params.typed("y") == "a" and params.type_of("y") == "string"
    assert params.at_cycle(1) == {"x": "2", "y": "b", "jube_wp_cycle": "1"} and store.params(1).cycles == ()
    assert store.all_params()[1] == {"x": "1", "y": "a"} and store.all_params()[1].typed("x") == 1


def test_a_run_of_the_previous_schema_is_refused_naming_its_version(tmp_path: Path) -> None:
    store = make(tmp_path)
    store.close()
    db = sqlite3.connect(db_path(str(tmp_path)))
    db.execute("UPDATE runs SET schema=2, version='0.9.0'")
    db.commit()
    db.close()
    with pytest.raises(RunError, match=r"caramel 0\.9\.0 \(run state version 2\); this caramel reads version 3"):
        Store(db_path(str(tmp_path)), readonly=True).info()


def test_a_failed_transaction_changes_nothing(tmp_path: Path) -> None:
    store = make(tmp_path)
    with pytest.raises(ZeroDivisionError), store.transaction():
        store.move(store.workpackages()[0], "finish", env={"A": "1"})
        store.add_commands([CommandRow(0, 1, 0, 0, "do", "echo", "/", 0, 1.0, 2.0)])
        raise ZeroDivisionError
    assert store.workpackages()[0].state == "open" and store.commands() == [] and store.env(0) is None
    with store.transaction():
        store.move(store.workpackages()[0], "finish", env={"A": "1"}, wait_files={"done": "x"})
    other = Store(db_path(str(tmp_path)), readonly=True)  # another process's view
    assert other.workpackages()[0].state == "done" and other.env(0) == {"A": "1"}
    assert other.counts() == {"s": {"done": 1, "open": 2}}


def test_not_a_run(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "caramel.db")
    db.execute("CREATE TABLE photos (id INTEGER)")
    db.close()
    with pytest.raises(RunError, match="not a caramel run state"):
        Store(str(tmp_path / "caramel.db")).info()


def test_an_empty_file_is_a_run_state_cut_short(tmp_path: Path) -> None:
    (tmp_path / "caramel.db").write_bytes(b"")
    with pytest.raises(RunError, match=r"is empty \(0 bytes\)"):
        Store(str(tmp_path / "caramel.db"))


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    with RunLock(str(tmp_path)):
        with pytest.raises(RunError, match=f"busy: another bench \\(host .* pid {os.getpid()} since"):
            RunLock(str(tmp_path), wait=0.2).acquire()
    with RunLock(str(tmp_path)):
        pass


def test_registry_resolves_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "here" / "out"
    for i in (0, 1):
        (out / f"{i:06d}").mkdir(parents=True)
        make(out / f"{i:06d}")
    here = str(tmp_path / "here")
    assert registry.resolve(str(out), None) == str(out / "000001")  # an outpath: its last run
    assert registry.resolve(str(out), "0") == str(out / "000000")
    assert registry.resolve(str(out / "000000"), None) == str(out / "000000")
    assert registry.resolve(None, "last", cwd=here) in (str(out / "000000"), str(out / "000001"))  # found below
    registry.remember(str(out / "000000"), here, "b", 0)
    assert registry.resolve(None, "last", cwd=here) == str(out / "000000")  # the registry knows better
    with pytest.raises(RunError, match="no run 5"):
        registry.resolve(None, "5", cwd=here)
    with pytest.raises(RunError, match="not a run id"):
        registry.resolve(None, "x", cwd=here)
    with pytest.raises(RunError, match="no run was started"):
        registry.resolve(None, None, cwd=str(tmp_path / "data"))


def test_a_state_moves_only_as_the_store_allows(tmp_path: Path) -> None:
    """Store.move is the one way to change a state: a move that does not start from the workpackage's
    state is refused and changes nothing; `update` refuses the state column."""
    from caramel.stages.state.transitions import TransitionError

    store = make(tmp_path)
    wp = store.workpackages()[0]
    with store.transaction():
        store.move(wp, "start", attempt=1, started=5.0)
        store.move(wp, "fail", reason="exit 1", exit_code=1, ended=6.0)
    with pytest.raises(TransitionError, match=r"workpackage 0 is failed: the move 'resume' .* does not start there"):
        with store.transaction():
            store.move(wp, "resume")
    with pytest.raises(TransitionError, match="no state move named 'explode'"):
        store.move(wp, "explode")
    with pytest.raises(ValueError, match="a state changes through Store.move"), store.transaction():
        store.update(0, state="done")
    assert store.workpackages()[0].state == wp.state == "failed"
    assert [(kind, message) for _, _, kind, message in store.events(0)] == [("running", ""), ("failed", "exit 1")]


def test_a_retry_resets_what_the_last_attempt_left(tmp_path: Path) -> None:
    """The fields a new attempt and a removal reset are one list (state.transitions.FRESH)."""
    store = make(tmp_path)
    wp = store.workpackages()[0]
    with store.transaction():
        store.move(wp, "start", attempt=1, started=5.0)
        store.move(wp, "wait", wait_kind="file", wait_files={"done": "d"}, wait_since=6.0, job_id="42",
                   cycle=2, wait_op=1, env={"A": "1"}, reason="waits")
        store.move(wp, "remove", message="", reason="removed: will run again")
    row = store.workpackages()[0]
    assert (row.state, row.reason, row.job_id, row.cycle, row.wait_op, row.wait_kind, row.wait_files,
            row.wait_since, row.started, row.attempt) == ("open", "removed: will run again", "", 0, -1, "", {},
                                                          None, None, 1)
    assert store.env(0) is None and (wp.state, wp.job_id, wp.wait_files) == ("open", "", {})
    assert store.events(0)[-1][2:] == ("removed", "")
    with store.transaction():
        store.move(wp, "start", attempt=2, started=7.0)
    assert store.workpackages()[0].reason == ""


def test_interrupt_moves_every_running_workpackage(tmp_path: Path) -> None:
    store = make(tmp_path)
    first, second, third = store.workpackages()
    with store.transaction():
        store.move(first, "start", attempt=1, started=1.0)
        store.move(second, "start", attempt=1, started=1.0)
        store.move(third, "fail", reason="no")
        store.interrupt_running("interrupted: stopped", recorded=[1])
    assert [w.state for w in store.workpackages()] == ["open", "open", "failed"]
    assert store.events(1)[-1][2:] == ("open", "interrupted: stopped")


def test_a_transaction_sqlite_ended_itself_keeps_the_error_that_ended_it(tmp_path: Path) -> None:
    """A full disk makes SQLite roll back on its own; the ROLLBACK after it ("no transaction is active")
    must not replace the real error."""
    store = make(tmp_path)

    class DiskFull(Exception):
        pass

    with pytest.raises(DiskFull), store.transaction():
        store.db.execute("ROLLBACK")  # what SQLite does itself on SQLITE_FULL
        raise DiskFull
    with store.transaction():  # the store is usable again
        store.set_shared_state("s", 0, 0, "done")


class CountingDb:
    """A run state's connection that counts the statements handed to SQLite (an executemany is one)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.statements = db, []

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if not sql.startswith("PRAGMA"):  # settings, not changes
            self.statements.append(sql.split()[0])
        return self.db.execute(sql, *args)

    def executemany(self, sql: str, rows: object) -> sqlite3.Cursor:
        self.statements.append(sql.split()[0])
        return self.db.executemany(sql, rows)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def counted(store: Store) -> list[str]:
    counting = CountingDb(store.db)
    store.db = counting  # type: ignore[assignment]
    return counting.statements


def test_a_move_of_many_workpackages_is_one_statement_each_with_its_own_fields(tmp_path: Path) -> None:
    """The tasks of a job array queued by one sbatch move at once (Store.move_many): each its own job id,
    in the database and in memory, each its event, in one UPDATE and one INSERT for all of them."""
    store = make(tmp_path, 6)
    wps = store.workpackages()
    with store.transaction():
        for wp in wps:
            store.move(wp, "start", attempt=1, started=1.0)
    statements = counted(store)
    with store.transaction():
        store.move_many(wps, "wait", lambda wp: {"job_id": f"7_{wp.id}", "reason": f"job 7_{wp.id}"})
    assert statements == ["BEGIN", "UPDATE", "INSERT", "COMMIT"]
    assert [(w.state, w.job_id, w.reason) for w in store.workpackages()] == \
        [(wp.state, wp.job_id, wp.reason) for wp in wps] == [("waiting", f"7_{i}", f"job 7_{i}") for i in range(6)]
    assert [store.events(i)[-1][2:] for i in range(6)] == [("waiting", f"job 7_{i}") for i in range(6)]


def test_a_move_of_many_refuses_them_all_when_one_may_not_make_it(tmp_path: Path) -> None:
    """The one transition table checks every workpackage before any changes: one that may not make the
    move (a running one cannot be cancelled) refuses the move of all, in the database and in memory."""
    from caramel.stages.state.transitions import TransitionError

    store = make(tmp_path, 4)
    wps = store.workpackages()
    with store.transaction():
        store.move(wps[2], "start", attempt=1, started=1.0)
    events = store.events()
    with pytest.raises(TransitionError, match=r"workpackage 2 is running: the move 'cancel'"), store.transaction():
        store.move_many(wps, "cancel", lambda wp: {"reason": "cancelled"})
    assert [w.state for w in store.workpackages()] == [wp.state for wp in wps] == ["open", "open", "running", "open"]
    assert store.events() == events and all(wp.reason == "" for wp in wps)


def moves_of_three_starts(store: Store, wps: list) -> None:
    """What the engine's batch does for three array workpackages: start, their job script written
    (wait, its command recorded), one that could not write it failed."""
    for wp in wps:
        store.move(wp, "start", attempt=wp.attempt + 1, started=1.0)
        if wp.id == 1:
            store.move(wp, "fail", ended=2.0, exit_code=1, reason="cannot write")
            continue
        store.move(wp, "wait", cycle=0, wait_op=0, wait_kind="file", wait_since=2.0, env={"A": str(wp.id)},
                   wait_files={"done": f"/w{wp.id}/caramel.done"}, job_id="", reason=f"waits {wp.id}")
        store.add_commands([CommandRow(wp.id, wp.attempt, 0, 0, "do", "cat > job", "/w", 0, 1.0, 2.0)])


def record(store: Store) -> tuple:
    rows = [(w.id, w.state, w.reason, w.exit_code, w.job_id, w.attempt, w.started, w.ended, w.cycle, w.wait_op,
             w.wait_kind, w.wait_files, w.wait_since, store.env(w.id)) for w in store.workpackages()]
    return rows, [event[1:] for event in store.events()], store.commands()


def test_a_batch_writes_the_record_moves_one_by_one_write_in_a_few_statements(tmp_path: Path) -> None:
    """Store.batch (the engine's start of a thousand array workpackages): the same run record as the
    moves made one statement each, events in the same order, in one statement per kind of change."""
    (tmp_path / "one").mkdir()
    (tmp_path / "batch").mkdir()
    one_by_one, batched = make(tmp_path / "one", 3), make(tmp_path / "batch", 3)
    with one_by_one.transaction():
        moves_of_three_starts(one_by_one, one_by_one.workpackages())
    wps = batched.workpackages()
    statements = counted(batched)
    with batched.batch():
        moves_of_three_starts(batched, wps)
    assert sorted(statements) == ["BEGIN", "COMMIT", "INSERT", "INSERT", "UPDATE"]  # the rows, events, commands
    assert record(batched) == record(one_by_one)
    assert [w.state for w in batched.workpackages()] == ["waiting", "failed", "waiting"]


def test_a_read_inside_a_batch_sees_its_moves_and_an_error_discards_them(tmp_path: Path) -> None:
    store = make(tmp_path, 2)
    wps = store.workpackages()
    with store.batch():
        store.move(wps[0], "start", attempt=1, started=1.0)
        store.move(wps[0], "wait", env={"A": "1"}, reason="waits")
        assert store.env(0) == {"A": "1"} and store.counts() == {"s": {"waiting": 1, "open": 1}}
        store.move(wps[1], "start", attempt=1, started=1.0)
    with pytest.raises(ZeroDivisionError), store.batch():
        store.move(store.workpackages()[1], "fail", reason="no")
        raise ZeroDivisionError
    assert [w.state for w in store.workpackages()] == ["waiting", "running"]
    assert [kind for _, _, kind, _ in store.events() if kind != "run"] == ["running", "waiting", "running"]


def test_a_batch_leaves_copying_its_log_to_the_next_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand workpackages' start is a long write-ahead log: its commit does not copy it into the
    database (the jobs are queued first); the next commit does, as SQLite does by default (here at
    every commit of a page or more)."""
    from caramel.stages.state import store as store_module

    monkeypatch.setattr(store_module, "WAL_CHECKPOINT_PAGES", 1)
    store = make(tmp_path, 3)
    store.db.execute("PRAGMA wal_autocheckpoint=1")
    wps, path = store.workpackages(), db_path(str(tmp_path))
    size = os.path.getsize(path)
    with store.batch():
        for wp in wps:
            store.move(wp, "start", attempt=1, started=1.0)
        for k in range(100):
            store.event(wps[0].id, "note", f"{k} " * 100)
    assert os.path.getsize(path) == size and os.path.getsize(path + "-wal") > 0  # in the log only
    with store.transaction():
        store.move(wps[0], "fail", reason="no")
    assert os.path.getsize(path) > size and store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1


def test_an_environment_written_again_is_the_one_given_each_time(tmp_path: Path) -> None:
    """The JSON of the last environment is reused when the next equals it (a thousand workpackages of
    one step): a changed one, even the same dict changed in place, is written as it is now."""
    store = make(tmp_path, 3)
    wps = store.workpackages()
    env = {"A": "1", "PATH": "/bin"}
    with store.batch():
        for wp in wps:
            store.move(wp, "start", attempt=1, started=1.0)
        store.move(wps[0], "wait", env=env)
        env["A"] = "2"
        store.move(wps[1], "wait", env=env)
        store.move(wps[2], "wait", env=dict(env))
    assert [store.env(i) for i in range(3)] == [{"A": "1", "PATH": "/bin"}, {"A": "2", "PATH": "/bin"},
                                                {"A": "2", "PATH": "/bin"}]


def test_a_run_with_nothing_running_or_waiting_leaves_wal(tmp_path: Path) -> None:
    """Store.settle_journal (called as bench closes a run): WAL while a workpackage runs, the
    rollback journal once none runs or waits, its log folded into the file (issue 36: a reader who
    may not write the folder cannot make the -shm a WAL file needs)."""
    store = make(tmp_path)
    path = db_path(str(tmp_path))
    assert store.journal == "wal"
    wp = store.workpackages()[0]
    with store.transaction():
        store.move(wp, "start", attempt=1, started=5.0)
    store.settle_journal()
    assert store.journal == "wal"
    with store.transaction():
        store.move(wp, "fail", reason="exit 1", exit_code=1, ended=6.0)
    store.settle_journal()
    assert store.journal == "delete" and not os.path.exists(path + "-wal")
    store.close()
    # bytes 18-19 of the header: 1 for the rollback journal, 2 for WAL (sqlite.org/fileformat2.html)
    assert Path(path).read_bytes()[18:20] == b"\x01\x01"
    assert Store(path, readonly=True).workpackages()[0].state == "failed"
