"""A new batch scheduler is one class registered by name: nothing else in caramel changes.

The fake scheduler here wraps three shell scripts (tests/adapters/backends/data/fake_scheduler: `fsub` runs a
job script in the background and prints `fake job N`, `fstat` answers for many jobs in one call,
`fdel` ends jobs). A system file names it, and `bench run`, `continue`, `cancel` and `status` run a
`submit: true` benchmark through it: the job script from the template, the job id from the submit's
output, one query per poll, the failure's reason, cancel and its event.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caramel.adapters.backends import schedulers
from caramel.adapters.backends.schedulers import JobState, Scheduler
from caramel.adapters.systems import load_system
from caramel.cli.main import main
from caramel.errors import SpecError
from caramel.stages.state.store import Store, db_path

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "fake_scheduler"


class FakeScheduler(Scheduler):
    commands = ("fsub", "fstat", "fdel")
    template = "slurm"  # its #SBATCH lines are comments to bash: the script runs as it is
    cancel_command = "fdel"

    def submit_line(self, job_file: str) -> str:
        return f"fsub {job_file}"

    def job_id_in(self, path: str) -> str:
        found = re.findall(r"fake job (\d+)", Path(path).read_text()) if os.path.exists(path) else []
        return found[-1] if found else ""

    def job_states(self, job_ids: list[str]) -> dict[str, JobState]:
        done = subprocess.run(["fstat", *job_ids], capture_output=True, text=True, timeout=30)
        out = {}
        for line in done.stdout.splitlines():
            job, state, *code = line.split()
            if state == "running":
                out[job] = JobState("running", "RUNNING")
            else:
                rc = int(code[0])
                ended = os.path.getmtime(os.path.join(os.environ["FAKE_SCHEDULER_DIR"], f"{job}.rc"))
                out[job] = JobState("done" if rc == 0 else "failed", "ENDED" if rc == 0 else f"FAILED (exit {rc})",
                                    exit_code=rc, ended=ended)
        return out

    def cancel(self, job_ids: list[str]) -> tuple[bool, str]:
        done = subprocess.run(["fdel", *job_ids], capture_output=True, text=True, timeout=30)
        return done.returncode == 0, done.stderr.strip()


BENCH = """\
name: fakejob
outpath: runs
parameterset:
  - name: p
    parameter: {name: word, _: "hello,bad,slow"}
step:
  - name: job
    use: p
    submit: true
    do:
      - echo "job says $word" > said.txt
      - if [ "$word" = slow ]; then sleep 300; fi
      - test "$word" != bad
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake scheduler registered as `fake`, its scripts on PATH, a system file naming it."""
    schedulers.names()  # the shipped ones first, then a copy of the registry this test may add to
    monkeypatch.setattr(schedulers.REGISTRY, "classes", dict(schedulers.REGISTRY.classes))
    schedulers.register("fake")(FakeScheduler)
    state = tmp_path / "fake_state"
    state.mkdir()
    monkeypatch.setenv("FAKE_SCHEDULER_DIR", str(state))
    monkeypatch.setenv("PATH", f"{SCRIPTS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    # a job that ended is taken as the scheduler says 2 s after it ended, done file or not: a poll may come
    # between the done file and the job's end
    monkeypatch.setenv("CARAMEL_DONE_FILE_GRACE", "2")
    for name in list(os.environ):
        if name.startswith("JUBE_"):
            monkeypatch.delenv(name)
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "fakesite.yaml").write_text("scheduler: fake\npartition: p1\ncpus_per_task: 2\n")
    (tmp_path / "fake.yaml").write_text(BENCH)
    monkeypatch.chdir(tmp_path)
    yield state
    for pid_file in state.glob("*.pid"):  # nothing a failed test submitted runs on
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def bench(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def states(capsys: pytest.CaptureFixture) -> dict[str, dict]:
    _, out = bench(capsys, "status", "-i", "last", "--format", "json")
    return {str(wp["id"]): wp for wp in json.loads(out)["workpackages"]}


@pytest.mark.slow
def test_a_registered_scheduler_runs_submits_follows_and_cancels_jobs(fake: Path, tmp_path: Path, capsys) -> None:
    code, out = bench(capsys, "run", "fake.yaml", "--tag", "fakesite", "--systems", "systems")
    assert code in (0, 1) and "run 000000 of fakejob" in out, out  # 1: `bad` may have failed already
    calls = (fake / "calls").read_text().splitlines()
    assert calls[:3] == ["fsub caramel_job.sh"] * 3  # the scheduler's submit line, in the work folder
    script = next(tmp_path.glob("runs/000000/000000_job/work/caramel_job.sh")).read_text()
    assert "#SBATCH --partition=p1" in script and "#SBATCH --cpus-per-task=2" in script  # the template, system facts
    wps = states(capsys)
    assert {wp["job_id"] for wp in wps.values()} == {"1", "2", "3"}  # ids from the submit's output
    deadline = time.time() + 120  # the two quick jobs end (their script runs the node probe); the slow one runs on
    while time.time() < deadline and not (wps["0"]["state"] == "done" and wps["1"]["state"] == "failed"):
        time.sleep(0.2)
        bench(capsys, "continue", "-i", "last")
        wps = states(capsys)
    assert wps["0"]["state"] == "done" and (tmp_path / "runs/000000/000000_job/work/said.txt").read_text() == \
        "job says hello\n"
    assert wps["1"]["state"] == "failed"
    assert wps["1"]["reason"] == f"job {wps['1']['job_id']} ended without writing caramel.done: FAILED (exit 1)"
    assert wps["2"]["state"] == "waiting" and wps["2"]["reason"] == f"waits for caramel.done (job {wps['2']['job_id']} RUNNING)"
    polls = [c.split()[1:] for c in (fake / "calls").read_text().splitlines() if c.startswith("fstat")]
    assert polls and max(len(p) for p in polls) >= 2  # every waiting job in one query
    assert all(p == sorted(set(p)) for p in polls) and polls[-1] == [wps["2"]["job_id"]]
    code, out = bench(capsys, "cancel", "-i", "last")
    assert code == 0 and f"cancelled job {wps['2']['job_id']}" in out
    assert (fake / "calls").read_text().splitlines()[-1] == f"fdel {wps['2']['job_id']}"
    wps = states(capsys)
    assert wps["2"]["state"] == "cancelled" and wps["2"]["reason"] == f"cancelled with bench cancel (job {wps['2']['job_id']})"
    assert (fake / f"{wps['2']['job_id']}.rc").read_text().strip() == "143"
    leader = int((fake / f"{wps['2']['job_id']}.pid").read_text())
    for _ in range(50):  # the job itself ended, not just its record
        try:
            os.killpg(leader, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the cancelled job still runs")
    store = Store(db_path(str(tmp_path / "runs" / "000000")), readonly=True)
    try:
        assert (2, "cancelled", f"bench cancel: fdel {wps['2']['job_id']}") in [e[1:] for e in store.events()]
        assert store.info().settings["scheduler"] == "fake"  # continue and cancel find it by this name
    finally:
        store.close()


def test_a_system_naming_an_unregistered_scheduler_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "site.yaml"
    path.write_text("description: x\nscheduler: slurmm\n")
    with pytest.raises(SpecError, match="scheduler: 'slurmm' is not known") as err:
        load_system(path)
    assert err.value.where.line == 2 and "did you mean 'slurm'" in err.value.hint
    path.write_text("scheduler: fake\n")
    with pytest.raises(SpecError, match="'fake' is not known"):
        load_system(path)  # until a module registers it
