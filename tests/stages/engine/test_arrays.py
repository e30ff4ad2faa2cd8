"""Job arrays and jobs queued after their parents' jobs (engine.arrays), against a fake SLURM on PATH:
what caramel asks sbatch, the task map and the job ids it records; the bad input it refuses before
queuing anything. The real SLURM is tests/adapters/backends/test_slurm_arrays.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run_bench import bench, isolated_env

from caramel.adapters.backends.schedulers import slurm

FAKE = {
    # each sbatch: its arguments on one line of the log, a new job id (100, 101, ...) printed as --parsable does
    "sbatch": 'echo "$@" >> "$FAKE_SLURM_LOG"; echo $(( 99 + $(wc -l < "$FAKE_SLURM_LOG") ))\n',
    "sacct": "exit 0\n",  # nothing known yet: the workpackages wait
    "squeue": "exit 0\n",
    "scancel": 'echo "scancel $@" >> "$FAKE_SLURM_LOG.cancel"\n',
    "scontrol": 'echo "MaxArraySize            = ${FAKE_MAX_ARRAY:-1001}"\n',
}

CHAIN = """name: chain
outpath: runs
parameterset:
  - name: p
    parameter: {{name: i, _: "{values}"}}
step:
  - name: first
    use: p
    submit: true
    array: {array}
    do: echo first $i
  - name: second
    depend: first
    submit: true
    array: true
    do: echo second $i
  - name: third
    depend: second
    submit: true
    do: echo third $i
"""


def fake_slurm(tmp_path: Path, **extra: str) -> dict[str, str]:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in FAKE.items():
        path = folder / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "fake.yaml").write_text("scheduler: slurm\npartition: debug\n" + "".join(
        f"{k}: {v}\n" for k, v in extra.items()))
    env = isolated_env(tmp_path, FAKE_SLURM_LOG=str(tmp_path / "sbatch.log"))
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    return env


def sbatch_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "sbatch.log"
    return log.read_text().splitlines() if log.exists() else []


def workpackages(tmp_path: Path, env: dict[str, str]) -> list[dict]:
    done = bench("status", "-i", "last", "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["workpackages"]


def test_a_chain_of_submit_steps_is_queued_in_one_run(tmp_path):
    """first: one array of 5 tasks (%2); second: an array whose task i follows task i of first
    (aftercorr); third: one job each, after its parent task. Every job script stays in its work folder."""
    env = fake_slurm(tmp_path)
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1,2,3,4", array=2))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    calls = sbatch_calls(tmp_path)
    assert len(calls) == 2 + 5
    assert calls[0] == "--parsable --array=0-4%2 array.sh"
    assert calls[1] == "--parsable --array=0-4 --dependency=aftercorr:100 array.sh"
    assert calls[2:] == [f"--parsable --dependency=afterok:101_{i} caramel_job.sh" for i in range(5)]
    wps = workpackages(tmp_path, env)
    assert [wp["job_id"] for wp in wps] == [f"100_{i}" for i in range(5)] + [f"101_{i}" for i in range(5)] + [
        str(102 + i) for i in range(5)]
    assert all(wp["state"] == "waiting" for wp in wps)
    run = tmp_path / "runs" / "000000"
    tasks = (run / ".caramel_arrays" / "first.0" / "tasks").read_text().splitlines()
    assert tasks == [f"{i}\t{run}/00000{i}_first/work\t{i}\t1" for i in range(5)]  # workpackage, attempt
    assert (run / ".caramel_arrays" / "first.0" / "job_id").read_text() == "100\n"
    script = (run / ".caramel_arrays" / "first.0" / "array.sh").read_text()
    assert "#SBATCH --partition=debug" in script and "SLURM_ARRAY_TASK_ID" in script
    assert "> job.out 2> job.err" in script  # each task's output in its work folder, real files
    assert (run / "000003_first" / "work" / "caramel_job.sh").read_text().count("echo first 3") == 1
    # bench cancel: every queued job of the chain, each task by its id
    cancelled = bench("cancel", "-i", "last", cwd=tmp_path, env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    assert {wp["state"] for wp in workpackages(tmp_path, env)} == {"cancelled"}
    assert "100_4" in (tmp_path / "sbatch.log.cancel").read_text()


def test_max_array_size_splits_an_array(tmp_path):
    env = fake_slurm(tmp_path)
    env["FAKE_MAX_ARRAY"] = "2"  # scontrol show config says so
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1,2,3,4", array="true").split("  - name: second")[0])
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sbatch_calls(tmp_path) == ["--parsable --array=0-1 array.sh"] * 2 + ["--parsable --array=0-0 array.sh"]
    assert [wp["job_id"] for wp in workpackages(tmp_path, env)] == ["100_0", "100_1", "101_0", "101_1", "102_0"]


def test_an_array_step_by_the_system_files_default(tmp_path):
    env = fake_slurm(tmp_path, job_array="true")
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1,2", array="true").replace("    array: true\n", ""))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert [c.split()[1] for c in sbatch_calls(tmp_path)] == ["--array=0-2"] * 3  # third is an array too


def test_a_throttled_array_larger_than_the_site_allows_queues_nothing(tmp_path):
    env = fake_slurm(tmp_path, max_array_size="3")
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1,2,3,4", array=2))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "c.yaml:7: step 'first': 5 workpackages in one job array with at most 2 at once" in done.stderr
    assert "MaxArraySize" in done.stderr and "Traceback" not in done.stderr
    assert sbatch_calls(tmp_path) == [] and not (tmp_path / "runs" / "000000").exists()


def test_array_on_a_step_that_is_not_submitted_is_refused(tmp_path):
    env = fake_slurm(tmp_path)
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0", array=2).replace("    submit: true\n    array: 2\n",
                                                                                "    array: 2\n"))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "c.yaml:7: array= on a step that is not submitted" in done.stderr and "submit: true" in done.stderr
    assert sbatch_calls(tmp_path) == []
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0", array="sometimes"))
    done = bench("plan", "c.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "c.yaml:7: array='sometimes' is neither true, false nor a whole number" in done.stderr


def test_a_bad_job_array_in_a_system_file_names_its_line(tmp_path):
    env = fake_slurm(tmp_path, job_array="often")
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0", array="true"))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "fake.yaml:3: job_array: 'often' is neither true, false nor a whole number" in done.stderr


def test_sacct_lines_of_array_tasks():
    assert slurm.task_ids("123_4") == ["123_4"]
    assert slurm.task_ids("123_[0-2,7%4]") == ["123_0", "123_1", "123_2", "123_7"]
    assert slurm.task_ids("123") == [] and slurm.task_ids("123+0") == []
    assert slurm.query_ids(["123_4", "123_5", "99", "1000_0"]) == ["99", "123", "1000"]


@given(st.sets(st.integers(0, 3000), min_size=1, max_size=40), st.integers(1, 9))
def test_task_ranges_expand_to_their_tasks(tasks, most):
    """However squeue/sacct write pending tasks (runs as a-b, single ones, a %N throttle), each is named once."""
    ordered = sorted(tasks)
    runs: list[list[int]] = []
    for task in ordered:
        if runs and task == runs[-1][-1] + 1:
            runs[-1].append(task)
        else:
            runs.append([task])
    text = ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
    assert slurm.task_ids(f"77_[{text}%{most}]") == [f"77_{t}" for t in ordered]


@given(st.one_of(st.integers(-5, 5000).map(str), st.sampled_from(["true", "False", "yes", "no", "1", "0", " 7 ", ""]),
                 st.text(max_size=6)))
def test_an_array_setting_is_true_false_a_count_or_refused(text):
    from caramel.stages.spec.limits import array_setting
    from caramel.vocabulary import plain_bool

    value = array_setting(text)
    word = text.strip().lower()
    if word.isdecimal() and int(word) >= 1:
        assert value == str(int(word))
    elif word and plain_bool(word) is not None:
        assert value == ("true" if plain_bool(word) else "false")
    else:
        assert value is None


def test_two_children_of_each_parent_task_make_two_corresponding_arrays(tmp_path):
    env = fake_slurm(tmp_path)
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1", array="true").split("  - name: third")[0].replace(
        "    array: true\n    do: echo second $i", "    array: true\n    use: q\n    do: echo second $i $k").replace(
        "parameterset:\n", "parameterset:\n  - name: q\n    parameter: {name: k, _: 'a,b'}\n"))
    done = bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sbatch_calls(tmp_path) == ["--parsable --array=0-1 array.sh"] + [
        "--parsable --array=0-1 --dependency=aftercorr:100 array.sh"] * 2
    wps = workpackages(tmp_path, env)
    assert sorted(wp["job_id"] for wp in wps[2:]) == ["101_0", "101_1", "102_0", "102_1"]


def test_a_dependant_whose_parent_job_failed_in_the_same_poll_is_cancelled_not_failed():
    """A busy slurmctld may show the dependant CANCELLED without the word Dependency in the same sacct
    answer that shows its parent FAILED: it never ran, so it is cancelled for its parent (it was
    failed as 'ended without writing caramel.done' in the full suite under load)."""
    from types import SimpleNamespace

    from caramel.adapters.backends.schedulers import JobState
    from caramel.stages.engine import waiting

    wps = {0: SimpleNamespace(id=0, step="one", parents=[], job_id="10", state="waiting", ended=None),
           1: SimpleNamespace(id=1, step="two", parents=[0], job_id="11", state="waiting", ended=None)}
    engine = SimpleNamespace(wps=wps)
    states = {"10": JobState("failed", "FAILED (exit 5)"), "11": JobState("failed", "CANCELLED")}
    orphans = waiting._orphans(engine, list(wps.values()), states)
    assert orphans == {1: "not run: job 11 cancelled: workpackage 0 (one) failed"}
    # a child that ran (its parent's job succeeded; caramel failed the parent later) keeps its own failure
    import time

    wps[0].state, wps[0].ended = "failed", time.time()
    states = {"11": JobState("failed", "FAILED (exit 1)")}
    assert waiting._orphans(engine, [wps[1]], states) == {}


@pytest.mark.slow
def test_a_bench_stopped_after_sbatch_finds_the_array_it_queued(tmp_path):
    """The array's id is kept beside its task map as soon as sbatch answers (not in a thousand stdout
    files): a bench stopped before the store recorded the tasks' ids finds them there, queues nothing
    twice; an earlier attempt's array does not count for a new attempt."""
    import sqlite3

    from caramel.stages.state.store import db_path

    env = fake_slurm(tmp_path)
    (tmp_path / "c.yaml").write_text(CHAIN.format(values="0,1,2", array="true").split("  - name: second")[0])
    assert bench("run", "c.yaml", "--tag", "fake", "--systems", "sys", cwd=tmp_path, env=env).returncode == 0
    run = tmp_path / "runs" / "000000"
    with sqlite3.connect(db_path(str(run))) as db:  # as if bench had stopped right after sbatch
        db.execute("UPDATE workpackages SET job_id=''")
    assert not (run / "000001_first" / "work" / "stdout").exists()  # nothing written per workpackage
    done = bench("continue", "-i", "last", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sbatch_calls(tmp_path) == ["--parsable --array=0-2 array.sh"]  # not queued again
    assert [wp["job_id"] for wp in workpackages(tmp_path, env)] == ["100_0", "100_1", "100_2"]
    with sqlite3.connect(db_path(str(run))) as db:  # a new attempt of workpackage 1: that array is not its
        db.execute("UPDATE workpackages SET job_id='', attempt=attempt+1 WHERE id=1")
    assert bench("continue", "-i", "last", cwd=tmp_path, env=env).returncode == 0
    assert len(sbatch_calls(tmp_path)) == 2 and workpackages(tmp_path, env)[1]["job_id"] == "101_0"


def test_a_done_file_written_while_the_scheduler_was_asked_is_not_a_failure(tmp_path):
    """A job that writes caramel.done and ends between the poll's look at the files and the scheduler's
    answer succeeded: the workpackage waits for the next poll instead of failing as 'ended without
    writing caramel.done' (it failed a finished job under load)."""
    import contextlib
    from types import SimpleNamespace

    from caramel.adapters.backends.schedulers import JobState
    from caramel.stages.engine import waiting

    done = tmp_path / "caramel.done"

    def job_states(ids):
        done.write_text("")  # the job's last act, while sacct is asked
        return {"10": JobState("done", "COMPLETED", 0, ended=1.0)}

    failed: list[str] = []
    wp = SimpleNamespace(id=0, step="one", parents=[], job_id="10", state="waiting", ended=None,
                         wait_files={"done": str(done)})
    engine = SimpleNamespace(wps={0: wp}, backend=SimpleNamespace(scheduler=SimpleNamespace(job_states=job_states)),
                             store=SimpleNamespace(transaction=contextlib.nullcontext),
                             fail=lambda wp, reason, code=None: failed.append(reason))
    assert waiting._follow_jobs(engine, [wp], now=100.0) is False and failed == []
