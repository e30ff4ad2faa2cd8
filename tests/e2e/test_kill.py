"""SIGKILL `bench run` / `bench continue` at random moments, then `bench continue` to the end.

Every workpackage must end done: the run's state says done for all, and each work folder holds the
token of exactly one attempt (appended to, so a reused folder would show two), the one that
completed: a do appended that token to a shared counter file at its start, the next do at its end.
That end line must be there: a do the stop reached while its `$(cat token)` ran is not taken as
finished (it ran again; it was once recorded done with an end line lacking the token). It may be
there twice: the stop can end `cat` after it printed the token, and a shell cannot tell that from
`cat` killed before (engine/script.py ON_TERM: at least once, docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.run_bench import bench

KILL = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="kill" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">0,1,2,3,4,5</parameter></parameterset>
    <step name="a">
      <use>p</use>
      <do>t=$$(date +%s%N); echo "$jube_wp_id $$t start" >> $jube_benchmark_home/counter.txt; sleep 0.08; echo $$t >> token</do>
      <do>echo "$jube_wp_id $$(cat token) end" >> $jube_benchmark_home/counter.txt</do>
    </step>
    <step name="b" depend="a">
      <do>t=$$(date +%s%N); echo "$jube_wp_id $$t start" >> $jube_benchmark_home/counter.txt; sleep 0.08; echo $$t >> token</do>
      <do>echo "$jube_wp_id $$(cat token) end" >> $jube_benchmark_home/counter.txt</do>
    </step>
  </benchmark>
</jube>
"""


def start(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_kill_at_random_moments_then_continue(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "kill.xml").write_text(KILL)
    rng = random.Random(int(__import__("os").environ.get("KILL_SEED", "1234")))
    kills = 0
    command = ["run", "kill.xml"]
    for _round in range(8):
        proc = start(command, tmp_path, env)
        time.sleep(rng.uniform(0.05, 0.6))  # start-up takes ~0.2 s: kill before, during, after the plan and do's
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if list(tmp_path.glob("runs/*/caramel.db")):
            # The plan is stored: from now on continue it, from the folder bench run was called in.
            # (Killed before that, bench run left at most an empty run folder: run it again.)
            command = ["continue", "-i", "last"]
        if proc.returncode == 0:
            break
    assert kills >= 2
    final = bench(*command, cwd=tmp_path, env=env)
    assert final.returncode == 0, final.stdout + final.stderr
    status = json.loads(bench("status", "--format", "json", cwd=tmp_path, env=env).stdout)
    states = Counter(wp["state"] for wp in status["workpackages"])
    assert states == {"done": 12}
    (run,) = [db.parent for db in tmp_path.glob("runs/*/caramel.db")]  # continue never started a second run

    lines = (tmp_path / "counter.txt").read_text().split("\n")
    starts = Counter(tuple(line.split()[:2]) for line in lines if line.endswith(" start"))
    ends = Counter(tuple(line.split()[:2]) for line in lines if line.endswith(" end"))
    for wp in status["workpackages"]:
        work = next(run.glob(f"{wp['id']:06d}_*")) / "work"
        token = (work / "token").read_text().strip()  # appended to: one line unless the folder was reused
        key = (str(wp["id"]), token)
        assert starts[key] == 1 and ends[key] >= 1, (wp, key)  # the completed attempt's do's, both ended
        assert sorted(p.name for p in work.iterdir() if p.name != "a") == ["stderr", "stdout", "token"]
        assert len(token.split()) == 1  # a clean folder: nothing left from killed attempts


def test_a_killed_bench_leaves_no_do_running(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "long.xml").write_text(
        '<jube><benchmark name="long" outpath="runs"><step name="s">'
        '<do>sleep 29.75; touch $jube_benchmark_home/late</do></step></benchmark></jube>')
    proc = start(["run", "long.xml"], tmp_path, env)
    deadline = time.monotonic() + 20
    while not sleeping("29.75"):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while sleeping("29.75"):  # the shell's watcher kills its process group when bench is gone
        assert time.monotonic() < deadline, "the do outlived bench"
        time.sleep(0.05)
    doc = json.loads(bench("status", "--format", "json", cwd=tmp_path, env=env).stdout)
    # running, or still open: its start was in a batch the killed bench had not committed
    # (engine.batches); either way a continue recovers it from its shell's records
    assert [wp["state"] for wp in doc["workpackages"]] in (["running"], ["open"])
    assert not (tmp_path / "late").exists()


def test_a_killed_bench_stops_the_running_do_not_what_a_finished_one_left(
        tmp_path: Path, env: dict[str, str]) -> None:
    """The watcher is one per long-lived shell (backends.launchers.local): after bench dies it stops
    the script running then, and leaves alone what an earlier workpackage of the same shell left
    in the background (no longer its shell's child)."""
    (tmp_path / "two.xml").write_text(
        '<jube><benchmark name="two" outpath="runs"><parameterset name="p">'
        '<parameter name="n" type="int">0,1</parameter></parameterset><step name="s"><use>p</use>'
        '<do>if [ $n = 0 ]; then sleep 29.61 &gt;/dev/null 2&gt;&amp;1 &amp; else sleep 29.76; fi</do>'
        '</step></benchmark></jube>')
    proc = start(["run", "two.xml"], tmp_path, env)
    try:
        deadline = time.monotonic() + 20
        while not sleepers("29.76", tmp_path):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while sleepers("29.76", tmp_path):
            assert time.monotonic() < deadline, "the running do outlived bench"
            time.sleep(0.05)
        time.sleep(0.5)  # the watcher's last looks: it has signalled all it will
        assert sleepers("29.61", tmp_path), "the watcher stopped what a finished workpackage left"
    finally:
        for pid in sleepers("29.61", tmp_path) + sleepers("29.76", tmp_path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def sleepers(duration: str, under: Path) -> list[int]:
    """The `sleep DURATION` processes working in a folder under `under` (this test's own)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if argv == [b"sleep", duration.encode()] and cwd.startswith(str(under)):
            found.append(int(pid))
    return found


def sleeping(duration: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", duration.encode()]:
                return True
        except OSError:
            continue
    return False


def test_a_killed_bench_with_a_bash_shell_stops_the_running_do_not_what_a_finished_one_left(
        tmp_path: Path, env: dict[str, str]) -> None:
    """With bash the scripts are job-control subshells of the long-lived shell (each its group), the
    watcher started before job control went on (it stays in the shell's group, which it ends last)."""
    import shutil

    env["JUBE_EXEC_SHELL"] = shutil.which("bash") or "bash"
    test_a_killed_bench_stops_the_running_do_not_what_a_finished_one_left(tmp_path, env)
