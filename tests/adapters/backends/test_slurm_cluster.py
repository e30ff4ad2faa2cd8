"""caramel against a real SLURM (tests/cluster/localcluster.sh): jobs submitted by do's, followed
through sacct, each end state recorded with its reason, cancel, one query per poll, two nodes."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from tests.run_bench import bench

DATA = Path(__file__).parent / "data"


def status(cwd: Path, env: dict[str, str]) -> dict[int, dict]:
    done = bench("status", "-i", "last", "--format", "json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return {wp["id"]: wp for wp in json.loads(done.stdout)["workpackages"]}


def sacct_state(job: str, env: dict[str, str]) -> str:
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "State", "-j", job], env=env, capture_output=True,
                         text=True, timeout=30).stdout.split()
    return out[0] if out else ""


def copy(name: str, tmp_path: Path) -> Path:
    shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def test_each_end_state_is_recorded_with_its_reason(env, tmp_path):
    """COMPLETED (and its dependant runs after the job), FAILED with exit 3, a job killed before
    its done file, TIMEOUT (a minute: SLURM's shortest limit); then the result table."""
    cwd = copy("end_states.yaml", tmp_path)
    started = bench("run", "end_states.yaml", cwd=cwd, env=env)
    # 1 only where a job that ends at once (exit 3, killed) ended before bench run did, as on a loaded
    # node: bench run then says so; nothing else may have failed
    assert started.returncode in (0, 1), started.stdout + started.stderr
    wps = status(cwd, env)
    failed = {i for i, wp in wps.items() if wp["state"] == "failed"}
    assert failed <= {1, 2} and bool(failed) == bool(started.returncode), (failed, started.stdout)
    jobs = {wps[i]["job_id"] for i in range(4)}
    assert all(job.isdigit() for job in jobs) and len(jobs) == 4  # the id sbatch printed, for each
    followed = bench("continue", "-i", "last", "--wait", cwd=cwd, env=env, timeout=400)
    assert followed.returncode == 1, followed.stdout + followed.stderr  # failures → exit 1
    assert "poll" in followed.stderr  # the progress view
    wps = status(cwd, env)
    assert [wps[i]["state"] for i in range(8)] == ["done", "failed", "failed", "failed",
                                                  "done", "cancelled", "cancelled", "cancelled"]
    assert sacct_state(wps[0]["job_id"], env) == "COMPLETED"
    assert wps[1]["reason"] == f"job {wps[1]['job_id']} ended without writing ready: FAILED (exit 3)"
    assert wps[1]["exit_code"] == 3
    assert wps[2]["reason"] == f"job {wps[2]['job_id']} ended without writing ready: FAILED (signal 9)"
    assert wps[3]["reason"] == f"job {wps[3]['job_id']} ended without writing ready: TIMEOUT"
    assert "after completed" in (cwd / "runs/000000/000004_after/work/stdout").read_text()
    table = bench("result", "-i", "last", cwd=cwd, env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == "ending,jobid,node,status"
    assert lines[1].startswith(f"completed,{wps[0]['job_id']},n") and lines[1].endswith(",done")
    assert lines[2].startswith(f"failed,{wps[1]['job_id']},n")
    assert lines[2].endswith(f",failed ({wps[1]['reason']})")  # a failed row carries its reason


def test_cancel_cancels_the_jobs_and_their_dependants(env, tmp_path):
    (tmp_path / "c.yaml").write_text(
        "name: cancel\noutpath: runs\nstep:\n"
        "  - name: submit\n    do:\n      - {done_file: ready, _: 'sbatch --wrap \"sleep 300; touch ready\"'}\n"
        "  - name: after\n    depend: submit\n    do: echo after\n")
    assert bench("run", "c.yaml", cwd=tmp_path, env=env).returncode == 0
    job = status(tmp_path, env)[0]["job_id"]
    cancelled = bench("cancel", "-i", "last", cwd=tmp_path, env=env)
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"cancelled job {job}" in cancelled.stdout
    follow = bench("continue", "-i", "last", cwd=tmp_path, env=env)
    assert follow.returncode == 1
    wps = status(tmp_path, env)
    assert wps[0]["state"] == "cancelled" and wps[0]["reason"] == f"cancelled with bench cancel (job {job})"
    assert wps[1]["state"] == "cancelled"
    for _ in range(30):
        if sacct_state(job, env).startswith("CANCELLED"):
            break
        time.sleep(1)
    assert sacct_state(job, env).startswith("CANCELLED")
    again = bench("continue", "-i", "last", cwd=tmp_path, env=env)  # nothing is submitted again
    assert status(tmp_path, env)[0]["job_id"] == job and again.returncode == 1


def test_refused_submission_fails_with_slurms_message(env, tmp_path):
    (tmp_path / "r.yaml").write_text(
        "name: refused\noutpath: runs\nparameterset:\n  - name: p\n    parameter: {name: part, _: 'nosuch,debug'}\n"
        "step:\n  - name: submit\n    use: p\n"
        "    do:\n      - {done_file: ready, _: 'sbatch -p $part --wrap \"touch ready\"'}\n")
    bench("run", "r.yaml", cwd=tmp_path, env=env)
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=tmp_path, env=env)
    wps = status(tmp_path, env)
    assert wps[0]["state"] == "failed" and "invalid partition" in wps[0]["reason"].lower(), wps[0]
    assert wps[1]["state"] == "done", done.stdout + done.stderr  # the other went on


def test_one_scheduler_query_per_poll_for_200_jobs(env, tmp_path):
    (tmp_path / "many.yaml").write_text(
        "name: many\noutpath: runs\nparameterset:\n  - name: p\n    parameter: {name: i, type: int, mode: python,"
        " _: \"','.join(str(i) for i in range(200))\"}\n"
        "step:\n  - name: submit\n    use: p\n    procs: 2\n"
        "    do:\n      - {done_file: ready, _: 'sbatch --hold -J many$i --wrap \"touch ready\"'}\n")
    log = tmp_path / "calls.log"
    started = bench("run", "many.yaml", cwd=tmp_path, env=env, timeout=600)
    assert started.returncode == 0, started.stderr
    try:
        last = max(int(wp["job_id"]) for wp in status(tmp_path, env).values())
        for _ in range(60):  # accounting learns of a job a moment after sbatch: until then it just waits
            if sacct_state(str(last), env):
                break
            time.sleep(0.5)
        env = dict(env, CARAMEL_SCHEDULER_LOG=str(log))
        for _ in range(3):
            polled = bench("continue", "-i", "last", cwd=tmp_path, env=env)
            assert polled.returncode == 0 and "200 waiting" in polled.stdout
        calls = log.read_text().splitlines()
        assert len(calls) == 3, calls  # one sacct per continue, for all 200 jobs
        assert all(line.split()[1:] == ["sacct", "10"] for line in calls)  # a single -j list
        reasons = [wp["reason"] for wp in status(tmp_path, env).values()]
        assert all(r.startswith("waits for ready (job ") for r in reasons), reasons
        assert any("PENDING: JobHeldUser" in r for r in reasons), reasons
    finally:
        cancelled = bench("cancel", "-i", "last", cwd=tmp_path, env=env)
        assert "200 job(s) cancelled" in cancelled.stdout


def test_multi_node_job_runs_a_task_on_each_node(env, tmp_path):
    cwd = copy("multinode.yaml", tmp_path)
    started = bench("run", "multinode.yaml", cwd=cwd, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    table = bench("result", "-i", "last", cwd=cwd, env=env).stdout.splitlines()
    assert table[:2] == ["nodes,node_first,node_last,node_cnt", "2,n1,n2,2"], table


def test_submit_step_is_a_job_from_the_template_with_the_systems_settings(env, tmp_path):
    """A `submit: true` step becomes one job (templates/slurm/job.sh.j2) with the partition and
    account of systems/localcluster.yaml and the nodes of its parameters; `report` runs after it."""
    cwd = copy("native_job.yaml", tmp_path)
    started = bench("run", "native_job.yaml", "--tag", "localcluster", cwd=cwd, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    script = (cwd / "runs/000000/000001_train/work/caramel_job.sh").read_text()
    for line in ("#SBATCH --nodes=2", "#SBATCH --partition=debug", "#SBATCH --account=caramel",
                 "#SBATCH --time=00:05:00", "export CARAMEL_LAUNCHER='srun --ntasks-per-node=1'"):
        assert line + "\n" in script
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nodes 2 done" in (cwd / "runs/000000/000003_report/work/stdout").read_text()
    rows = bench("result", "-i", "last", cwd=cwd, env=env).stdout.splitlines()
    assert rows[1] == "1,1,n1,n1"
    count, first, last = rows[2].split(",")[1:]
    assert count == "2" and {first, last} == {"n1", "n2"}


def test_platform_job_with_gpu_system_resources_is_accepted_and_runs(env, tmp_path):
    """caramel's own platform.xml + submit.job.in, filled with CARAML's A100 values (partition
    dc-gpu, 4 GPUs, 128 cores): sbatch accepts the script as written and the job runs."""
    cwd = copy("platform_job.yaml", tmp_path)
    assert bench("run", "platform_job.yaml", cwd=cwd, env=env).returncode == 0
    work = cwd / "runs/000000/000000_benchmark/work"
    script = (work / "submit.job").read_text()
    for line in ("#SBATCH --partition=dc-gpu", "#SBATCH --gres=gpu:4", "#SBATCH --cpus-per-task=128",
                 "#SBATCH --account=zam", "#SBATCH --time=00:15:00"):
        assert line + "\n" in script
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "job.out").read_text().strip() == "gpus 4 cpus 128"
    assert status(cwd, env)[0]["job_id"].isdigit()


def test_history_keeps_the_provenance_of_a_cluster_run(env, tmp_path):
    """caramel version, git commit of the benchmark files, host and node list, job ids, container
    image with its digest, energy method, start and end: from a run on the test cluster."""
    import hashlib

    from caramel.consumers.history.store import History

    cwd = copy("native_job.yaml", tmp_path)
    (cwd / "image.sif").write_bytes(b"not really an image")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(cwd)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "native_job.yaml"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "benchmark"], check=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    env = dict(env, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    assert bench("run", "native_job.yaml", "--tag", "localcluster", cwd=cwd, env=env).returncode == 0
    assert bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=cwd, env=env).returncode == 0
    assert bench("result", "-i", "last", cwd=cwd, env=env).returncode == 0
    with History.open(str(tmp_path / "history.db")) as history:
        (run,) = history.runs()
        metrics = history.metrics(run.run_key)
    jobs = sorted(wp["job_id"] for wp in status(cwd, env).values() if wp["job_id"])
    assert run.job_ids == jobs and len(jobs) == 2
    assert run.system == "localcluster" and run.energy_method == "none" and run.tags == ["localcluster"]
    assert set(run.nodes.split(",")) >= {"n1"} and run.host
    assert run.git_commit == commit  # runs/ and the image are untracked: not "dirty"
    digest = hashlib.sha256(b"not really an image").hexdigest()
    assert run.container == f"{cwd}/image.sif@sha256:{digest}"
    assert run.caramel_version and run.started < run.ended
    assert not metrics  # node_cnt counts the nodes: an identifier, no figure (docs/history.md)
    # the fingerprint is the job node's (the job script ran the probe there), the site the cluster's
    assert run.fingerprint["detected_on"] in ("job node n1", "job node n2") and run.fingerprint["cpu_count"] >= 1
    assert run.site == "caramel" and (cwd / "runs/000000/000001_train/work/caramel_fingerprint.txt").is_file()
