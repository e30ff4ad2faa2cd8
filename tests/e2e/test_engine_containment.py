"""Issue 22 (containment): the engine's channel, signals, prepares exactly once, background processes,
the monotonic clock and a deleted run state, each against the real `bench`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.run_bench import bench

ONE_STEP = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="c" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">{values}</parameter></parameterset>
    <step name="s" {attrs}>
      <use>p</use>
      {dos}
    </step>
    {more}
  </benchmark>
</jube>
"""


def write(folder: Path, dos: str, values: str = "0", attrs: str = "", more: str = "") -> None:
    (folder / "c.xml").write_text(ONE_STEP.format(values=values, attrs=attrs, dos=dos, more=more))


def states(run_dir: Path) -> Counter:
    db = sqlite3.connect(run_dir / "caramel.db")
    try:
        return Counter(state for (state,) in db.execute("SELECT state FROM workpackages"))
    finally:
        db.close()


def run_dir_of(folder: Path) -> Path:
    return folder / "runs" / "000000"


# --- the channel ------------------------------------------------------------------------------------
def test_a_do_writing_markers_to_the_shells_stdout_is_not_heard(tmp_path: Path, env: dict[str, str]) -> None:
    write(tmp_path, '<do>for m in "E 0 7" "EXIT 7" "B x" "END" "W 0" "ENV"; do echo "@caramel $$m" '
                    '> /proc/$$$$/fd/1; done; echo @caramel EXIT 9 &gt;&amp;2; true</do><do>echo second</do>')
    proc = bench("run", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "internal error" not in proc.stderr
    assert states(run_dir_of(tmp_path)) == Counter(done=1)
    assert (run_dir_of(tmp_path) / "000000_s" / "work" / "stdout").read_text() == "second\n"


def test_an_exported_value_holding_markers_is_carried_as_it_is(tmp_path: Path, env: dict[str, str]) -> None:
    value = "a\\n@caramel ENDENV\\n@caramel EXIT 3\\n@caramel E 0 4"
    write(tmp_path, f"<do>export V=\"$$(printf '{value}')\"</do>", attrs='export="true"',
          more='<step name="t" depend="s"><do>printf "%s" "$$V" > v.txt</do></step>')
    proc = bench("run", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert states(run_dir_of(tmp_path)) == Counter(done=2)
    carried = (run_dir_of(tmp_path) / "000001_t" / "work" / "v.txt").read_text()
    assert carried == "a\n@caramel ENDENV\n@caramel EXIT 3\n@caramel E 0 4"


# --- signals ----------------------------------------------------------------------------------------
LOGIN_AND_JOB_SIGNALS = ["SIGHUP", "SIGQUIT", "SIGXCPU", "SIGUSR1", "SIGUSR2", "SIGTERM", "SIGINT"]


@pytest.mark.parametrize("name", LOGIN_AND_JOB_SIGNALS)
@pytest.mark.slow
def test_every_signal_that_ends_a_login_or_a_job_stops_bench_the_recorded_way(
        name: str, tmp_path: Path, env: dict[str, str]) -> None:
    signum = getattr(signal, name)
    ledger = tmp_path / "ledger"
    write(tmp_path, f"<do>echo start $n >> {ledger}; sleep 0.3; echo end $n >> {ledger}</do>", values="0,1,2,3,4,5")
    proc = subprocess.Popen([sys.executable, "-m", "caramel", "run", "-q", "c.xml"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while (not ledger.exists() or "end 0" not in ledger.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signum)  # as a terminal or a batch system does: the whole process group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert err.startswith(f"interrupted by {name}: run ") and len(err.strip().splitlines()) == 1, err
    run_dir = run_dir_of(tmp_path)
    left = states(run_dir)
    assert left["running"] == 0 and left["done"] < 6, left
    cont = bench("continue", "-q", str(run_dir), cwd=tmp_path, env=env)
    assert cont.returncode == 0, cont.stderr
    ends = Counter(line for line in ledger.read_text().splitlines() if line.startswith("end"))
    assert ends == Counter(f"end {n}" for n in range(6)), ends


# --- prepares exactly once ----------------------------------------------------------------------------
PREPARED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="c" outpath="runs">
    <fileset name="f">
      <prepare>echo prepare one >> {ledger}; echo made > made.txt</prepare>
      <prepare>echo prepare two >> {ledger}; sleep {pause}</prepare>
    </fileset>
    <step name="s">
      <use>f</use>
      <do>cat made.txt; echo do >> {ledger}</do>
    </step>
  </benchmark>
</jube>
"""


def test_dry_run_shows_a_filesets_prepare(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "c.xml").write_text(PREPARED.format(ledger="L", pause=0))
    proc = bench("run", "--dry-run", "--no-eval", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "$ echo prepare one >> L; echo made > made.txt" in proc.stdout
    assert proc.stdout.index("prepare one") < proc.stdout.index("prepare two") < proc.stdout.index("cat made.txt")


@pytest.mark.slow
def test_a_prepare_that_ended_before_a_sigterm_is_not_run_again(tmp_path: Path, env: dict[str, str]) -> None:
    ledger = tmp_path / "ledger"
    (tmp_path / "c.xml").write_text(PREPARED.format(ledger=ledger, pause=3))
    proc = subprocess.Popen([sys.executable, "-m", "caramel", "run", "-q", "c.xml"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while (not ledger.exists() or "two" not in ledger.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    cont = bench("continue", "-q", str(run_dir_of(tmp_path)), cwd=tmp_path, env=env)
    assert cont.returncode == 0, cont.stderr
    lines = ledger.read_text().splitlines()
    assert lines.count("prepare one") == 1, lines  # it ended: recorded, never run again
    assert lines.count("do") == 1, lines
    assert (run_dir_of(tmp_path) / "000000_s" / "work" / "stdout").read_text() == "made\n"
    roles = [role for (role,) in sqlite3.connect(run_dir_of(tmp_path) / "caramel.db").execute(
        "SELECT kind FROM commands ORDER BY id")]
    assert roles.count("prepare") == 2 and roles.count("do") == 1, roles


# --- background processes -------------------------------------------------------------------------------
@pytest.mark.parametrize("start", ["(sleep 1; touch ready) &amp;",
                                   "nohup sh -c 'sleep 1; touch ready' &gt;/dev/null 2&gt;&amp;1 &amp;"])
def test_what_a_do_starts_in_the_background_lives_on(start: str, tmp_path: Path, env: dict[str, str]) -> None:
    write(tmp_path, f'<do done_file="ready">{start}</do><do>echo after</do>')
    proc = bench("run", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    ready = run_dir_of(tmp_path) / "000000_s" / "work" / "ready"
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), "the background process of the do was killed"
    cont = bench("continue", "-q", str(run_dir_of(tmp_path)), cwd=tmp_path, env=env)
    assert cont.returncode == 0 and states(run_dir_of(tmp_path)) == Counter(done=1), cont.stderr


@pytest.mark.slow
def test_a_time_limit_ends_only_its_own_workpackages_processes(tmp_path: Path, env: dict[str, str]) -> None:
    # workpackage 0 leaves a background process; workpackage 1 (next, on the reused shell) passes its limit
    write(tmp_path, f'<do>if [ $n = 0 ]; then (sleep 2; touch {tmp_path}/left_by_0) &amp; else '
                    f'(sleep 2; touch {tmp_path}/left_by_1) &amp; sleep 30; fi</do>',
          values="0,1", attrs='timeout="1"')
    proc = bench("run", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr
    assert states(run_dir_of(tmp_path)) == Counter(done=1, failed=1)
    time.sleep(2.5)
    assert (tmp_path / "left_by_0").exists(), "a later workpackage's time limit killed what an earlier one left"
    assert not (tmp_path / "left_by_1").exists(), "the time limit left its own workpackage's processes running"


# --- the clock ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_bench_paused_past_a_deadline_does_not_time_out_a_do_that_finished_in_time(
        tmp_path: Path, env: dict[str, str]) -> None:
    ledger = tmp_path / "ledger"
    write(tmp_path, f"<do>echo start >> {ledger}; sleep 0.5; echo end >> {ledger}</do>", attrs='timeout="2"')
    proc = subprocess.Popen([sys.executable, "-m", "caramel", "run", "-q", "c.xml"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ledger.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGSTOP)
    time.sleep(3.5)  # past the limit, while bench cannot see
    proc.send_signal(signal.SIGCONT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert states(run_dir_of(tmp_path)) == Counter(done=1)


# --- a do deleting the run state -------------------------------------------------------------------------
def test_a_do_deleting_the_run_state_is_caught(tmp_path: Path, env: dict[str, str]) -> None:
    """bench still holds the run: it writes the state again under its name and says so (engine.statefile)."""
    write(tmp_path, "<do>rm -f $jube_benchmark_rundir/caramel.db*</do><do>echo after</do>", values="0,1")
    proc = bench("run", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
    assert "was deleted while the run ran" in proc.stderr, proc.stderr
    status = bench("status", "--format", "json", str(run_dir_of(tmp_path)), cwd=tmp_path, env=env)
    assert status.returncode == 0, status.stderr
    assert [wp["state"] for wp in json.loads(status.stdout)["workpackages"]] == ["done", "done"]
    cont = bench("continue", str(run_dir_of(tmp_path)), cwd=tmp_path, env=env)
    assert cont.returncode == 0, cont.stderr


# --- job control: a bash as the shell gives each script its group without a program ---------------
BASH = shutil.which("bash") or "bash"


def test_a_bash_shell_stops_the_recorded_way_too(tmp_path: Path, env: dict[str, str]) -> None:
    """With bash each script is a background subshell of the long-lived shell (job control), not a
    `setsid` shell: bench's stop reaches its group (backends.launchers.local, Grouping.JOBS)."""
    env["JUBE_EXEC_SHELL"] = BASH
    test_every_signal_that_ends_a_login_or_a_job_stops_bench_the_recorded_way("SIGTERM", tmp_path, env)


def test_a_bash_shell_leaves_what_a_do_starts_in_the_background(tmp_path: Path, env: dict[str, str]) -> None:
    env["JUBE_EXEC_SHELL"] = BASH
    test_what_a_do_starts_in_the_background_lives_on("(sleep 1; touch ready) &amp;", tmp_path, env)


@pytest.mark.slow
def test_a_bash_shells_time_limit_ends_only_its_own_workpackages_processes(
        tmp_path: Path, env: dict[str, str]) -> None:
    env["JUBE_EXEC_SHELL"] = BASH
    test_a_time_limit_ends_only_its_own_workpackages_processes(tmp_path, env)


def test_with_bash_each_script_is_a_process_group_of_its_own(tmp_path: Path, env: dict[str, str]) -> None:
    """The do's process group is its script's (the `P` marker's), neither bench's nor the long-lived
    shell's, made by job control: in the long-lived shell's session, not a `setsid` one of its own;
    the do runs in bash, the configured shell."""
    env["JUBE_EXEC_SHELL"] = BASH
    # /proc/PID/stat: field 4 the parent, 5 the group, 6 the session ($PPID: the shell's parent)
    write(tmp_path, '<do>me=$BASHPID; echo "$(cut -d" " -f4-6 /proc/$me/stat) ${BASH_VERSION:+bash}"'
                    '</do>', values="0,1")
    proc = bench("run", "-q", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    seen = [(run_dir_of(tmp_path) / f"00000{i}_s" / "work" / "stdout").read_text().split()
            for i in (0, 1)]
    (parent0, group0, session0, shell0), (parent1, group1, session1, _shell1) = seen
    assert shell0 == "bash" and group0 != group1, seen  # a group per script
    # the do's parent is its script's subshell, which leads the group: not the long-lived shell
    assert group0 == parent0 and group1 == parent1, seen
    assert session0 == session1 != group0, seen  # the long-lived shell's session: no `setsid`


DASH = shutil.which("dash") or "/bin/sh"


def test_with_dash_each_script_is_a_process_group_of_its_own(
        tmp_path: Path, env: dict[str, str]) -> None:
    """dash turns job control on only with a terminal: its long-lived shell gets one, hung up at
    once (backends.launchers.local Grouping.TERMINAL), and each script is a job of it, a group of
    its own, without a program started: the do's subshell is its script's child, which leads the
    group; every script's parent is the same shell, bench's child, in a session of its own; and no
    do can open /dev/tty."""
    env["JUBE_EXEC_SHELL"] = DASH
    # /proc/PID/stat of the do's subshell (`sh -c 'echo $PPID'` is its child): fields 4-6 are its
    # parent, group and session; then the parent's parent (the shell) and the shell's parent
    write(tmp_path, '<do>me=$(sh -c \'echo $PPID\'); set -- $(cut -d" " -f4-6 /proc/$me/stat); '
                    'g=$(cut -d" " -f4 /proc/$1/stat); sh -c ": &lt;/dev/tty" 2&gt;/dev/null &amp;&amp; t=tty || t=none; '
                    'echo "$1 $2 $3 $g $(cut -d" " -f4 /proc/$g/stat) $t"</do>', values="0,1")
    proc = subprocess.Popen([sys.executable, "-m", "caramel", "run", "-q", "c.xml"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    seen = [(run_dir_of(tmp_path) / f"00000{i}_s" / "work" / "stdout").read_text().split()
            for i in (0, 1)]
    (parent0, group0, session0, shell0, bench0, tty0), (parent1, group1, session1, shell1, _b, tty1) = seen
    assert group0 != group1 and (group0, group1) == (parent0, parent1), seen  # a group per script
    assert shell0 == shell1 == session0 == session1 and bench0 == str(proc.pid), seen
    assert session0 != str(os.getsid(0)) and tty0 == tty1 == "none", seen


def test_a_shell_program_that_does_not_exist_is_named(tmp_path: Path, env: dict[str, str]) -> None:
    """bench starts a dash-like shell itself: a JUBE_EXEC_SHELL that is not there is an error naming
    it, not a shell that "cannot start" (engine.runner Runner._send)."""
    env["JUBE_EXEC_SHELL"] = str(tmp_path / "no" / "sh")
    write(tmp_path, "<do>echo hi</do>")
    proc = bench("run", "-q", "c.xml", cwd=tmp_path, env=env)
    assert f"cannot use {tmp_path / 'no' / 'sh'}: no such file" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_shell_named_without_a_folder_is_found_on_path(tmp_path: Path, env: dict[str, str]) -> None:
    """JUBE_EXEC_SHELL=sh (a name, as JUBE takes it: subprocess finds it on PATH): the do's run in
    that shell, which bench starts itself."""
    env["JUBE_EXEC_SHELL"] = "sh"
    write(tmp_path, "<do>echo hi from $0</do>")
    proc = bench("run", "-q", "c.xml", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert states(run_dir_of(tmp_path)) == Counter({"done": 1})
