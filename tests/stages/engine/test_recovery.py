"""Exactly once: each do's end recorded by its shell; stopping scripts; recovery after bench died."""

from __future__ import annotations

import os
import sqlite3
import time
from collections import Counter
from pathlib import Path

from tests.run_bench import bench, isolated_env
from tests.stages.engine.test_script import cmds

from caramel.adapters.backends import launchers
from caramel.stages.engine.recovery import last_ended, record_file
from caramel.stages.engine.runner import Runner


def test_the_script_records_each_do_that_ended(tmp_path: Path) -> None:
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        c = cmds(tmp_path, "true", "exit 3", "echo never")
        runner.run(c, dict(os.environ), str(tmp_path / "carry"), False, record=(record_file(str(tmp_path)), "3.7"))
        assert Path(record_file(str(tmp_path))).read_text() == "E 3.7 0 0 0\nE 3.7 0 1 3\n"
        ended = last_ended(record_file(str(tmp_path)), "3.7")
        assert ended is not None and (ended.cycle, ended.op, ended.status) == (0, 1, 3)
        assert last_ended(record_file(str(tmp_path)), "3.6") is None  # another attempt's lines do not count
    finally:
        runner.close()


def test_a_cut_line_is_ignored(tmp_path: Path) -> None:
    Path(record_file(str(tmp_path))).write_text("E 0.1 0 0 0\nE 0.1 0 1 0\nE 0.1 0 2")
    ended = last_ended(record_file(str(tmp_path)), "0.1")
    assert ended is not None and ended.op == 1


def test_stopping_ends_the_running_do_records_what_finished_and_a_second_stop_is_harmless(tmp_path: Path) -> None:
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        c = cmds(tmp_path, "true", f"sleep 30; touch {tmp_path}/late", "echo never")
        runner.start("wp", c, dict(os.environ), str(tmp_path / "carry"), False,
                     record=(record_file(str(tmp_path)), "0.1"))
        time.sleep(0.5)
        began = time.monotonic()
        [(entry, outcome)] = runner.kill_all(grace=5)
        assert time.monotonic() - began < 3  # the do ended on SIGTERM, not after the grace
        assert runner.kill_all() == [] and runner.stop([entry]) == []  # again: nothing, no error
        assert outcome.ran[0].exit_code == 0 and outcome.status == "failed"
        assert Path(record_file(str(tmp_path))).read_text() == "E 0.1 0 0 0\n"  # the stopped do is not recorded
        assert not (tmp_path / "late").exists()
    finally:
        runner.close()


def test_a_do_whose_command_substitution_the_stop_ended_is_not_recorded_as_finished(tmp_path: Path) -> None:
    """The stop ends a command substitution of the do's last command: `cat` dies, `echo` still writes
    its line and exits 0. The do did not do its work (its line lacks the token): it is not recorded,
    so `bench continue` runs it again. (It was recorded as finished when a signal whose command
    exited below 128 let the do go on: tests/e2e/test_kill.py then saw a done workpackage whose
    end line had no token.) First and last do (each in a subshell of its own)."""
    # a duration no other process uses: the wait below reads every process on the machine (another
    # test's `sleep 30`, on a parallel worker, must not count)
    sleep = f"sleep 30.{os.getpid()}"
    for texts in ((f'echo "got $({sleep}; cat token)" >> ledger', "echo two >> ledger"),
                  (f'echo "got $({sleep}; cat token)" >> ledger',)):
        runner = Runner(launchers.get("local"), dict(os.environ))
        folder = tmp_path / str(len(texts))
        folder.mkdir()
        (folder / "token").write_text("T\n")
        try:
            runner.start("wp", cmds(folder, *texts), dict(os.environ), str(folder / "carry"), False,
                         record=(record_file(str(folder)), "0.1"))
            while sleep not in _children_of_group_commands():
                time.sleep(0.01)
            [(_entry, outcome)] = runner.kill_all(grace=5)
            assert outcome.status == "failed"
            assert not Path(record_file(str(folder))).exists()  # not finished: it runs again
            assert (folder / "ledger").read_text() == "got \n"  # what the substitution's death left
        finally:
            runner.close()


def test_a_stop_that_lands_after_the_last_command_runs_the_do_again(tmp_path: Path) -> None:
    """The signal arrives after the do's last command (`kill -TERM 0`, a builtin, sends bench's stop
    to the whole group from inside the do), before its shell recorded it. A shell cannot tell this
    from a signal that ended a substitution of that command (above): the do is not recorded and
    runs again (at least once, never counted finished when it may not have); nothing after it runs."""
    for texts in (("echo one >> ledger; kill -TERM 0", "echo two >> ledger"), ("echo one >> ledger; kill -TERM 0",)):
        runner = Runner(launchers.get("local"), dict(os.environ))
        folder = tmp_path / str(len(texts))
        folder.mkdir()
        try:
            runner.run(cmds(folder, *texts), dict(os.environ), str(folder / "carry"), False,
                       record=(record_file(str(folder)), "0.1"))
            assert not Path(record_file(str(folder))).exists()
            assert (folder / "ledger").read_text() == "one\n"
        finally:
            runner.close()


def _children_of_group_commands() -> str:
    """The command lines of every process here (to see a do's `sleep` start)."""
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return "\n".join(lines)


def test_a_stop_between_two_commands_ends_the_do_at_its_next_command(tmp_path: Path) -> None:
    """A signal that finds a do between commands (a loop of builtins here) lets it go on; the next
    command it starts is signalled in turn: the do ends there, unrecorded, long before the grace."""
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        busy = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"
        c = cmds(tmp_path, f"touch began; {busy}; sleep 30; touch late", "echo never")
        runner.start("wp", c, dict(os.environ), str(tmp_path / "carry"), False,
                     record=(record_file(str(tmp_path)), "0.1"))
        while not (tmp_path / "began").exists():
            time.sleep(0.01)
        began = time.monotonic()
        [(_entry, outcome)] = runner.kill_all(grace=20)
        assert time.monotonic() - began < 10, "the sleep started after the signal was not signalled"
        assert outcome.status == "failed" and not (tmp_path / "late").exists()
        assert not Path(record_file(str(tmp_path))).exists()
    finally:
        runner.close()


# With /bin/sh (dash) bench starts each script's shell itself (backends.launchers.local, SPAWN): bench
# is the $PPID of a do's subshell ($$ is its script shell's id).
KILLED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="killed" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">0,1</parameter></parameterset>
    <step name="s">
      <use>p</use>
      <do>export FOO=bar$n; echo "end 1 $n" >> {ledger}</do>
      <do>[ "$n" = 1 ] &amp;&amp; [ ! -e {flag} ] &amp;&amp; touch {flag} &amp;&amp; kill -9 $$PPID &amp;&amp; sleep 10; echo "end 2 $n" >> {ledger}</do>
      <do>echo "end 3 $n $$FOO" >> {ledger}</do>
    </step>
  </benchmark>
</jube>
"""


def test_after_bench_was_killed_continue_goes_on_after_the_last_do_that_ended(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    ledger = tmp_path / "ledger.txt"
    (tmp_path / "k.xml").write_text(KILLED.format(ledger=ledger, flag=tmp_path / "flag"))
    assert bench("run", "-q", "k.xml", cwd=tmp_path, env=env).returncode == -9  # its do killed it
    run_dir = tmp_path / "runs" / "000000"
    assert bench("continue", "-q", str(run_dir), cwd=tmp_path, env=env).returncode == 0
    ends = Counter(ledger.read_text().splitlines())
    assert ends == Counter(["end 1 0", "end 2 0", "end 3 0 bar0", "end 1 1", "end 2 1", "end 3 1 bar1"])
    db = sqlite3.connect(run_dir / "caramel.db")
    assert db.execute("SELECT state, attempt FROM workpackages WHERE id=1").fetchone() == ("done", 1)
    db.close()


HOLDER = """import os, sqlite3, sys, time
db_path, record, pid, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
db = sqlite3.connect(db_path, isolation_level=None, timeout=30)
db.execute("BEGIN EXCLUSIVE")  # bench cannot record the shared do's end
open(ready, "w").close()
while not (os.path.exists(record) and open(record).read().startswith("E shared")):
    time.sleep(0.01)
time.sleep(0.3)
os.kill(pid, 9)  # bench dies after the shell recorded the end, before the database heard of it
db.execute("ROLLBACK")
"""

SHARED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="shared" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">0,1</parameter></parameterset>
    <step name="s" shared="shared">
      <use>p</use>
      <do>echo "end 1 $n" >> {ledger}</do>
      <do shared="true">if [ ! -e {flag} ]; then touch {flag}; setsid {python} {holder} $jube_benchmark_rundir/caramel.db $jube_benchmark_rundir/s_shared/.caramel_ended $$PPID {ready} >/dev/null 2>&amp;1 &lt;/dev/null &amp; while [ ! -e {ready} ]; do sleep 0.05; done; fi; echo "end shared" >> {ledger}</do>
      <do>echo "end 3 $n" >> {ledger}</do>
    </step>
  </benchmark>
</jube>
"""


def test_a_shared_do_that_ended_while_bench_died_is_not_run_again(tmp_path: Path) -> None:
    import sys

    env = isolated_env(tmp_path)
    ledger = tmp_path / "ledger.txt"
    (tmp_path / "holder.py").write_text(HOLDER)
    (tmp_path / "s.xml").write_text(SHARED.format(ledger=ledger, flag=tmp_path / "flag", python=sys.executable,
                                                  holder=tmp_path / "holder.py", ready=tmp_path / "ready"))
    assert bench("run", "-q", "s.xml", cwd=tmp_path, env=env, timeout=60).returncode == -9
    assert "end shared" in ledger.read_text()
    run_dir = tmp_path / "runs" / "000000"
    done = bench("continue", "-q", str(run_dir), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert Counter(ledger.read_text().splitlines()) == Counter(
        ["end 1 0", "end 1 1", "end shared", "end 3 0", "end 3 1"])


def test_stopping_a_script_whose_shell_was_already_released_is_harmless(tmp_path: Path) -> None:
    """An interruption between a dead shell's release and its removal from the active scripts
    (once `ValueError: I/O operation on closed file` when bench stopped)."""
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        entry = runner.start("wp", cmds(tmp_path, "sleep 30"), dict(os.environ), str(tmp_path / "carry"), False)
        entry.shell.kill()  # released, still listed as running
        [(stopped, outcome)] = runner.kill_all(grace=1)
        assert stopped is entry and outcome.status == "failed" and len(runner) == 0
    finally:
        runner.close()


def test_stopping_a_script_that_just_ended_leaves_no_released_shell_to_reuse(tmp_path: Path) -> None:
    """An interruption after a script's end was read (its shell idle again) but before it left the
    running ones (once `ValueError: I/O operation on closed file` when bench closed its shells)."""
    runner = Runner(launchers.get("local"), dict(os.environ))
    entry = runner.start("wp", cmds(tmp_path, "true"), dict(os.environ), str(tmp_path / "carry"), False)
    time.sleep(0.3)
    assert runner._read(entry) is not None and entry.shell in runner.idle
    runner.kill_all(grace=1)
    assert entry.shell not in runner.idle
    runner.close()
