"""PBS, the worked example of docs/backends.md: one module (backends/schedulers/pbs.py) and nothing else.

`qsub`, `qstat` and `qdel` are faked by small scripts on PATH in tmp that record their calls and answer
as PBS does (`N.server` from qsub, `qstat -x -f -F json`, `-W depend=afterok:`); a system file saying
`scheduler: pbs` runs a `submit: true` benchmark through them with `bench run`, `continue` and `cancel`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from caramel.adapters.backends import schedulers
from caramel.adapters.backends.schedulers import pbs
from caramel.adapters.systems import load_system
from caramel.adapters.systems.probe import check, detect
from caramel.cli.main import main

QSUB = r"""#!/bin/sh
# qsub [-W depend=afterok:ID:ID] SCRIPT: print "N.fakepbs"; run the script in a session of its own, from
# /, once its dependencies ended with 0 (one that did not: never run, Exit_status -1, as PBS deletes it)
dir=${FAKE_PBS_DIR:?}
echo "qsub $*" >> "$dir/calls"
after=""
if [ "$1" = "-W" ]; then after=$(echo "$2" | sed 's/^depend=afterok://; s/:/ /g'); shift 2; fi
n=$(( $(cat "$dir/last" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$dir/last"
id="$n.fakepbs"
setsid sh -c '
  for dep in $4; do
    while [ ! -f "$3/$dep.rc" ]; do sleep 0.1; done
    if [ "$(cat "$3/$dep.rc")" != 0 ]; then echo -1 > "$3/$5.rc"; exit 0; fi
  done
  touch "$3/$5.started"
  cd / && PBS_O_WORKDIR="$2" PBS_JOBID="$5" bash "$2/$1" > "$2/job.out" 2> "$2/job.err"
  echo $? > "$3/$5.rc"
' job "$1" "$PWD" "$dir" "$after" "$id" </dev/null >/dev/null 2>&1 &
echo $! > "$dir/$id.pid"
echo "$id"
"""

QDEL = r"""#!/bin/sh
# qdel ID...: end each job's session; PBS records Exit_status 256+15.
dir=${FAKE_PBS_DIR:?}
echo "qdel $*" >> "$dir/calls"
for id in "$@"; do
  kill -TERM "-$(cat "$dir/$id.pid")" 2>/dev/null
  [ -f "$dir/$id.rc" ] || echo 271 > "$dir/$id.rc"
done
"""

QSTAT = r"""#!/usr/bin/env python3
# qstat --version | -Q -f -F json | -B -f -F json | -x -f -F json ID...: answers as PBS does.
import json, os, sys, time
d = os.environ["FAKE_PBS_DIR"]
args = sys.argv[1:]
with open(os.path.join(d, "calls"), "a") as calls:
    calls.write("qstat " + " ".join(args) + "\n")
if args == ["--version"]:
    print("pbs_version = 22.05.11")
elif args[:1] == ["-Q"]:
    print(json.dumps({"Queue": {"workq": {"queue_type": "Execution", "resources_max": {
        "ncpus": 48, "mem": "192gb", "ngpus": 4, "walltime": "24:00:00", "nodect": 8}},
        "route": {"queue_type": "Route"}}}))
elif args[:1] == ["-B"]:
    print(json.dumps({"Server": {"fakepbs": {"default_queue": "workq"}}}))
else:
    jobs = {}
    for job in [a for a in args if not a.startswith("-") and a != "json"]:
        at = lambda ext: os.path.join(d, f"{job}.{ext}")
        if not os.path.exists(at("pid")):
            print(f"qstat: Unknown Job Id {job}", file=sys.stderr)
        elif os.path.exists(at("rc")):
            jobs[job] = {"job_state": "F", "Exit_status": int(open(at("rc")).read()),
                         "exec_host": "node7/0*2",
                         "mtime": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(os.path.getmtime(at("rc"))))}
        elif os.path.exists(at("started")):
            jobs[job] = {"job_state": "R", "exec_host": "node7/0*2"}
        else:
            jobs[job] = {"job_state": "H", "comment": "job held, waiting on dependency"}
    print(json.dumps({"timestamp": int(time.time()), "pbs_version": "22.05.11", "pbs_server": "fakepbs",
                      "Jobs": jobs}, indent=4))
"""

BENCH = """\
name: pbsjob
outpath: runs
parameterset:
  - name: p
    parameter: {name: word, _: "hello,bad,slow"}
step:
  - name: job
    use: p
    submit: true
    do:
      - echo "job says $word in $(pwd)" > said.txt
      - if [ "$word" = slow ]; then sleep 300; fi
      - test "$word" != bad
  - name: after
    depend: job
    submit: true
    do: echo "after $word" > after.txt
"""


@pytest.fixture
def fake_pbs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """qsub/qstat/qdel on PATH, a system file naming pbs, the benchmark; yields the fakes' folder."""
    state, bin_dir = tmp_path / "pbs_state", tmp_path / "bin"
    state.mkdir()
    bin_dir.mkdir()
    for name, text in (("qsub", QSUB), ("qstat", QSTAT), ("qdel", QDEL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("FAKE_PBS_DIR", str(state))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    # a job that ended is taken as PBS says 2 s after it ended, done file or not (a poll may come between
    # the done file and the job's end, as on a real cluster); engine.waiting reads it when first imported
    monkeypatch.setenv("CARAMEL_DONE_FILE_GRACE", "2")
    for name in list(os.environ):
        if name.startswith("JUBE_"):
            monkeypatch.delenv(name)
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "pbssite.yaml").write_text(
        "scheduler: pbs\npartition: workq\naccount: proj1\ncpus_per_task: 2\ntime_limit: '00:10:00'\n"
        "scheduler_options: ['-l place=excl']\n")
    (tmp_path / "pbs.yaml").write_text(BENCH)
    monkeypatch.chdir(tmp_path)
    yield state
    for pid_file in state.glob("*.pid"):
        with contextlib.suppress(OSError, ValueError):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def bench(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def states(capsys: pytest.CaptureFixture) -> dict[str, dict]:
    _, out = bench(capsys, "status", "-i", "last", "--format", "json")
    return {str(wp["id"]): wp for wp in json.loads(out)["workpackages"]}


def test_pbs_is_registered_by_its_module_alone() -> None:
    assert "pbs" in schedulers.names() and isinstance(schedulers.get("pbs"), pbs.Pbs)
    assert schedulers.get("pbs").time_text(2 * 86400 + 61) == "48:01:01"  # walltime: hours past a day


def test_qstat_json_becomes_job_states() -> None:
    text = json.dumps({"Jobs": {
        "11.srv": {"job_state": "R", "exec_host": "n1/0*4+n2/0*4"},
        "12.srv": {"job_state": "F", "Exit_status": 0, "mtime": "Tue Nov 24 12:00:00 2026"},
        "13.srv": {"job_state": "F", "Exit_status": 3},
        "14.srv": {"job_state": "F", "Exit_status": 271},
        "15.srv": {"job_state": "Q", "comment": "Not Running: Insufficient amount of resource: ngpus"}}})
    found = pbs.states_from_json(text, ["11.srv", "12.srv", "13.srv", "14.srv", "15.srv.long.name", "16.srv"])
    assert (found["11.srv"].state, found["11.srv"].nodes) == ("running", "n1,n2")
    assert found["12.srv"].state == "done" and found["12.srv"].ended is not None
    assert (found["13.srv"].state, found["13.srv"].reason) == ("failed", "FAILED (exit 3)")
    assert found["14.srv"].reason == "KILLED (signal 15)"
    assert found["15.srv.long.name"].state == "pending"  # found by its number: servers print other suffixes
    assert "16.srv" not in found  # nothing known: left out, never failed
    assert pbs.states_from_json("qstat: not JSON", ["11.srv"]) == {}


def test_the_job_id_is_what_qsub_printed(tmp_path: Path) -> None:
    out = tmp_path / "stdout"
    out.write_text("writing the script\n4711.pbs01.example.org\n")
    assert pbs.job_id_in(str(out)) == "4711.pbs01.example.org"
    assert pbs.job_id_in(str(tmp_path / "none")) == ""


def test_a_submit_step_runs_through_qsub_qstat_and_qdel(fake_pbs: Path, tmp_path: Path, capsys) -> None:
    code, out = bench(capsys, "run", "pbs.yaml", "--tag", "pbssite", "--systems", "systems")
    assert code in (0, 1) and "run 000000 of pbsjob" in out, out
    calls = (fake_pbs / "calls").read_text().splitlines()
    assert [c for c in calls if c.startswith("qsub")][:3] == ["qsub caramel_job.sh"] * 3
    script = (tmp_path / "runs/000000/000000_job/work/caramel_job.sh").read_text()
    for line in ("#PBS -l select=1:ncpus=2:mpiprocs=1", "#PBS -l walltime=00:10:00", "#PBS -q workq",
                 "#PBS -A proj1", "#PBS -l place=excl", '#PBS -o ' + str(tmp_path / "runs/000000/000000_job/work/job.out")):
        assert line + "\n" in script, line
    assert "#SBATCH" not in script
    wps = states(capsys)
    assert [wps[i]["job_id"] for i in "012"] == ["1.fakepbs", "2.fakepbs", "3.fakepbs"]
    deadline = time.time() + 120
    while time.time() < deadline and not (wps["3"]["state"] == "done" and wps["1"]["state"] == "failed"):
        time.sleep(0.2)
        bench(capsys, "continue", "-i", "last")
        wps = states(capsys)
    work = tmp_path / "runs/000000/000000_job/work"
    assert wps["0"]["state"] == "done" and (work / "said.txt").read_text() == f"job says hello in {work}\n"
    assert wps["3"]["state"] == "done"  # the dependent job, held until its parent's ended well
    assert (tmp_path / "runs/000000/000003_after/work/after.txt").read_text() == "after hello\n"
    assert wps["1"]["reason"] == "job 2.fakepbs ended without writing caramel.done: FAILED (exit 1)"
    submits = [c for c in (fake_pbs / "calls").read_text().splitlines() if c.startswith("qsub -W")]
    assert f"qsub -W depend=afterok:{wps['0']['job_id']} caramel_job.sh" in submits
    polls = [c.split()[5:] for c in (fake_pbs / "calls").read_text().splitlines() if c.startswith("qstat -x")]
    assert polls and max(len(p) for p in polls) >= 2  # every waiting job in one query
    assert wps["2"]["state"] == "waiting" and wps["2"]["reason"] == "waits for caramel.done (job 3.fakepbs RUNNING on node7)"
    code, out = bench(capsys, "cancel", "-i", "last")
    assert code == 0 and "cancelled job 3.fakepbs" in out
    qdel = [c for c in (fake_pbs / "calls").read_text().splitlines() if c.startswith("qdel")]
    assert any("3.fakepbs" in c.split() for c in qdel)
    wps = states(capsys)
    assert wps["2"]["state"] == "cancelled" and (fake_pbs / "3.fakepbs.rc").read_text().strip() == "271"
    assert wps["4"]["state"] == "cancelled" and wps["4"]["reason"] == \
        "not run: job 5.fakepbs cancelled: workpackage 1 (job) failed"  # its parent failed: the held job went
    assert wps["5"]["state"] == "cancelled" and qdel[-1] == "qdel 3.fakepbs 6.fakepbs"  # the whole chain, one qdel


def test_detect_and_check_ask_pbs(fake_pbs: Path) -> None:
    draft = detect("pbssite2")
    assert "scheduler: pbs\n" in draft and "partition: workq" in draft and "gpus_per_node: 4\n" in draft
    assert "launcher: mpiexec\n" in draft and "from qstat" in draft
    found = {f.what: (f.ok, f.detail) for f in check(load_system(Path("systems/pbssite.yaml")))}
    assert found["partition workq"] == (True, "listed by qstat -Q")
    assert found["command qsub"][0] and "account proj1" not in found  # PBS cannot say: no finding
