#!/usr/bin/env python3
"""How kind `bench run` is to SLURM: sbatch calls and the time until every job is queued, for N
workpackages of one submit step as one job each vs as a job array; and a chain of three dependent
submit steps, all queued by one `bench run` without a scheduler poll in between.

    bash tests/cluster/localcluster.sh start        # the test cluster (as root), then its
    environment: eval "$(tests/cluster/localcluster.sh env --dir /tmp/caramel-slurm)"
    python perf/array_scale.py --workpackages 1000 --repeats 3    # or --quick: one pair

Every sbatch goes through a shim on PATH that logs when it returns and whether it succeeded, so the
calls caramel's shell makes (one job each) and those caramel makes itself (arrays) are counted
alike, and only the ones that queued something count; "queued" is the last successful sbatch's
return, from the moment `bench run` was started. The jobs the scheduler then has are counted by
`squeue` (each array task one), beside those caramel recorded. The jobs are submitted held (`--hold`
in the system file: the shared machine runs none of them) and cancelled afterwards.
`--baseline DIR` also times the array path of another checkout (DIR/src: the code before a change)
in the same pairs, so both see the same load.
Targets (issue 15): 1 sbatch for N <= MaxArraySize, >= 20x less time to queued; the chain queued
within one run, no sacct/squeue before its last sbatch. The two ways are measured in turn
(`--repeats` pairs, medians compared) after one warm-up run, with Python's bytecode kept as an
installed caramel keeps it. The time to queued is wall time: on a loaded machine it is mostly
waiting for a core, so the load average is printed beside it; the CPU ratio is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SYSTEM = (
    "scheduler: slurm\npartition: debug\naccount: caramel\ntime_limit: '00:05:00'\n"
    "extra_sbatch: ['--hold']\n"
)
SHIM = """#!/bin/bash
"{real}" "$@"; rc=$?
echo "$(date +%s.%N) sbatch $rc" >> "{log}"
exit $rc
"""
QUERY_SHIM = """#!/bin/bash
echo "$(date +%s.%N) {name} 0" >> "{log}"
exec "{real}" "$@"
"""
SETTLE_S, SETTLE_AFTER_S = (
    60.0,
    3.0,
)  # after a measure's cancel: at most this long for the queue to empty, then this
FAILED_SBATCH_STOP = 3  # a measure stops once this many sbatch failed: the cluster is gone
START_CLUSTER = (
    "start the test cluster and take its environment:\n"
    "    bash tests/cluster/localcluster.sh start\n"
    '    eval "$(tests/cluster/localcluster.sh env --dir DIR)"    # DIR: '
    "/tmp/caramel-slurm unless started with --dir"
)


def check_cluster() -> dict[str, str]:
    """The SLURM commands this harness calls (name -> path); it stops with what to do when the test
    cluster's environment is missing or the cluster does not answer (else every sbatch would fail
    and it would measure nothing)."""
    if not os.environ.get("SLURM_CONF"):
        sys.exit(
            "array_scale: SLURM_CONF is not set: this shell lacks the test cluster's "
            f"environment; {START_CLUSTER}"
        )
    found = {name: shutil.which(name) for name in ("sbatch", "sacct", "squeue", "scancel", "sinfo")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        sys.exit(
            f"array_scale: {', '.join(missing)} not on PATH (the SLURM clients): {START_CLUSTER}"
        )
    try:
        answer = subprocess.run(
            [found["sinfo"], "-h", "-o", "%P"], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        answer = None
    if answer is None or answer.returncode or not answer.stdout.strip():
        said = (
            (answer.stderr.strip().splitlines() or ["no partitions"])[-1]
            if answer
            else "no answer in 30 s"
        )
        sys.exit(
            f"array_scale: the cluster of SLURM_CONF={os.environ['SLURM_CONF']} does not answer "
            f"({said}); {START_CLUSTER}"
        )
    return {name: str(path) for name, path in found.items()}


def setup(
    folder: Path, slurm: dict[str, str], source: Path = ROOT / "src", name: str = ""
) -> dict[str, str]:
    """The shims (sbatch, sacct, squeue: each call logged) and the held system file; the environment
    that runs the caramel of `source` (`name`: its own folder of bytecode)."""
    bin_dir, log = folder / "bin", folder / "calls.log"
    bin_dir.mkdir(exist_ok=True)
    for name_, text in (("sbatch", SHIM), ("sacct", QUERY_SHIM), ("squeue", QUERY_SHIM)):
        (bin_dir / name_).write_text(text.format(real=slurm[name_], log=log, name=name_))
        (bin_dir / name_).chmod(0o755)
    (folder / "sys").mkdir(exist_ok=True)
    (folder / "sys" / "held.yaml").write_text(SYSTEM)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUBE_", "CARAMEL_", "PYTHONDONTWRITEBYTECODE"))
    }
    # bytecode kept (in the temporary folder) as an installed caramel has it: without it every bench
    # compiles caramel's modules again (0.3 s of CPU), which no user's bench does
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        CARAMEL_DATA_DIR=str(folder / "data"),
        PYTHONPATH=str(source) + os.pathsep + env.get("PYTHONPATH", ""),
        PYTHONPYCACHEPREFIX=str(folder / f"pycache{name}"),
    )
    return env


def bench(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "caramel", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )


def calls(folder: Path, since: float) -> list[tuple[float, str, int]]:
    """(when it returned, command, exit status) of every logged call since `since`."""
    log = folder / "calls.log"
    lines = log.read_text().split("\n") if log.exists() else []
    out = [
        (float(t), name, int(rc))
        for t, name, rc in (line.split() for line in lines if line.strip())
    ]
    return [(t, name, rc) for t, name, rc in out if t >= since]


def scheduled(slurm: dict[str, str], job_ids: list[str]) -> int:
    """How many jobs the scheduler has of `job_ids` (squeue, each array task one; they are held)."""
    ids = sorted({job.split("_")[0] for job in job_ids if job})
    if not ids:
        return 0
    done = subprocess.run(
        [slurm["squeue"], "-h", "-r", "-o", "%i", "-j", ",".join(ids)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return len(done.stdout.split()) if done.returncode == 0 else 0


def run_watched(folder: Path, work: Path, env: dict[str, str], start: float) -> tuple[int, str]:
    """`bench run` of `work`'s benchmark, stopped as soon as sbatch fails again and again (the
    cluster went away meanwhile: a thousand sbatch each waiting for its time-out would take
    hours)."""
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "caramel",
            "run",
            "b.yaml",
            "--tag",
            "held",
            "--systems",
            str(folder / "sys"),
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as running:
        while True:
            try:
                _, stderr = running.communicate(timeout=2)
                return running.returncode, stderr
            except subprocess.TimeoutExpired:
                failed = sum(1 for _, name, rc in calls(folder, start) if name == "sbatch" and rc)
                if failed >= FAILED_SBATCH_STOP:
                    running.kill()
                    sys.exit(
                        f"array_scale: {failed} sbatch failed during one bench run: "
                        "the test cluster stopped or does not take jobs (`sinfo`, "
                        f"tests/cluster/localcluster.sh status); {START_CLUSTER}"
                    )


def settle(slurm: dict[str, str], job_ids: list[str]) -> None:
    """Wait until the scheduler has let go of the cancelled jobs, and its accounting a little more:
    a thousand cancelled jobs keep slurmctld and its database busy for seconds, which the next
    measure (the array right after one job each) would pay for."""
    deadline = time.time() + SETTLE_S
    while time.time() < deadline and scheduled(slurm, job_ids):
        time.sleep(0.5)
    time.sleep(SETTLE_AFTER_S)


def one_step(
    folder: Path,
    env: dict[str, str],
    slurm: dict[str, str],
    n: int,
    array: bool,
    repeat: int | str = 0,
) -> dict[str, float]:
    """N workpackages of one submit step: the sbatch calls that succeeded (and failed), the seconds
    from `bench run` to the last one's return, the jobs caramel recorded and those the scheduler
    has."""
    work = folder / (("array" if array else "single") + str(repeat))
    work.mkdir()
    (work / "b.yaml").write_text(f"""name: scale
outpath: runs
parameterset:
  - name: p
    parameter: {{name: i, type: int, _: "{",".join(map(str, range(n)))}"}}
step:
  - name: job
    use: p
    submit: true
    array: {"true" if array else "false"}
    do: echo $i
""")
    start, cpu = time.time(), _children_cpu()
    returncode, stderr = run_watched(folder, work, env, start)
    ended, cpu = time.time(), _children_cpu() - cpu
    if returncode not in (0, 1):
        sys.exit(stderr)
    made = [(t, rc) for t, name, rc in calls(folder, start) if name == "sbatch" and t <= ended]
    sbatch = [t for t, rc in made if rc == 0]
    status = json.loads(bench(work, env, "status", "-i", "last", "--format", "json").stdout)
    job_ids = [wp["job_id"] for wp in status["workpackages"] if wp["job_id"]]
    in_queue = scheduled(slurm, job_ids)
    bench(work, env, "cancel", "-i", "last")
    settle(slurm, job_ids)
    return {
        "sbatch": len(sbatch),
        "sbatch_failed": len(made) - len(sbatch),
        "queued_s": max(sbatch) - start if sbatch else float("nan"),
        "bench_run_s": ended - start,
        "jobs": len(job_ids),
        "in_queue": in_queue,
        "cpu_s": cpu,
    }


def _children_cpu() -> float:
    """CPU seconds of the processes this one waited for (bench, its shells, the sbatch they ran)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def chain(folder: Path, env: dict[str, str], slurm: dict[str, str]) -> dict[str, object]:
    """Three dependent submit steps (4 workpackages each, arrays): queued by one `bench run`?"""
    work = folder / "chain"
    work.mkdir()
    (work / "c.yaml").write_text("""name: chain
outpath: runs
parameterset:
  - name: p
    parameter: {name: i, type: int, _: "0,1,2,3"}
step:
  - {name: one, use: p, submit: true, array: true, do: echo one $i}
  - {name: two, use: p, depend: one, submit: true, array: true, do: echo two $i}
  - {name: three, use: p, depend: two, submit: true, array: true, do: echo three $i}
""")
    start = time.time()
    bench(work, env, "run", "c.yaml", "--tag", "held", "--systems", str(folder / "sys"))
    made = calls(folder, start)
    status = json.loads(bench(work, env, "status", "-i", "last", "--format", "json").stdout)
    bench(work, env, "cancel", "-i", "last")
    sbatch = [t for t, name, rc in made if name == "sbatch" and rc == 0]
    if not sbatch:
        sys.exit(
            "array_scale: no sbatch of the chain succeeded (is the test cluster up? bench "
            "status shows why)"
        )
    polls_before = sum(1 for t, name, _ in made if name != "sbatch" and t < max(sbatch))
    return {
        "sbatch": len(sbatch),
        "queued_in_one_run": all(wp["job_id"] for wp in status["workpackages"]),
        "polls_before_last_sbatch": polls_before,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=1000)
    parser.add_argument(
        "--repeats",
        "-r",
        type=int,
        default=3,
        help="pairs (one job each, then the array) measured in turn; the medians are compared",
    )
    parser.add_argument(
        "--quick", action="store_true", help="one pair (under 3 minutes on a quiet machine)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="another checkout (its src/): its array path timed in the same pairs, "
        "for a before/after",
    )
    args = parser.parse_args()
    repeats = 1 if args.quick else max(1, args.repeats)
    slurm = check_cluster()
    if args.baseline is not None and not (args.baseline / "src" / "caramel").is_dir():
        sys.exit(
            f"array_scale: --baseline {args.baseline}: no src/caramel there (a checkout of caramel)"
        )
    pairs: list[tuple[dict[str, float], dict[str, float]]] = []
    before: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = setup(folder, slurm)
        base_env = setup(folder, slurm, args.baseline / "src", "-baseline") if args.baseline else {}
        one_step(
            folder, env, slurm, 4, array=True, repeat="-warm"
        )  # warm-up: bytecode written, slurmctld awake
        if base_env:
            one_step(folder, base_env, slurm, 4, array=True, repeat="-warm-baseline")
        for k in range(repeats):  # interleaved: a load that changes meanwhile touches both alike
            single = one_step(folder, env, slurm, args.workpackages, array=False, repeat=k)
            if (
                base_env and k % 2
            ):  # the baseline first every other pair: neither always follows the long one
                before.append(
                    one_step(
                        folder,
                        base_env,
                        slurm,
                        args.workpackages,
                        array=True,
                        repeat=f"{k}-baseline",
                    )
                )
            array = one_step(folder, env, slurm, args.workpackages, array=True, repeat=k)
            if base_env and not k % 2:
                before.append(
                    one_step(
                        folder,
                        base_env,
                        slurm,
                        args.workpackages,
                        array=True,
                        repeat=f"{k}-baseline",
                    )
                )
            pairs.append((single, array))
            print(
                f"  pair {k + 1}: one job each {single['queued_s']:.2f} s, "
                f"array {array['queued_s']:.2f} s"
                + (f" (baseline's array {before[-1]['queued_s']:.2f} s)" if before else "")
                + f"; load {_load()}",
                flush=True,
            )
        linked = chain(folder, env, slurm)
    single = {key: statistics.median(p[0][key] for p in pairs) for key in pairs[0][0]}
    array = {key: statistics.median(p[1][key] for p in pairs) for key in pairs[0][1]}
    print(
        f"{args.workpackages} workpackages of one submit step (jobs held, then cancelled), "
        f"median of {repeats}:"
    )
    rows = [("one job each", single), ("job array", array)]
    if before:
        rows.append(
            ("baseline arr", {key: statistics.median(b[key] for b in before) for key in before[0]})
        )
    for name, got in rows:
        failed = f" ({got['sbatch_failed']:.0f} failed)" if got["sbatch_failed"] else ""
        print(
            f"  {name:13s} sbatch calls {got['sbatch']:5.0f}{failed}  queued after "
            f"{got['queued_s']:7.2f} s  (bench run {got['bench_run_s']:6.2f} s, "
            f"CPU {got['cpu_s']:6.2f} s; jobs: {got['jobs']:.0f} recorded, "
            f"{got['in_queue']:.0f} in the scheduler's queue)"
        )
    short = [
        (name, got)
        for name, got in rows
        if got["in_queue"] < args.workpackages or not got["sbatch"]
    ]
    for name, got in short:
        print(
            f"  NOT VALID ({name}): the scheduler has {got['in_queue']:.0f} of "
            f"{args.workpackages} jobs ({got['sbatch']:.0f} sbatch succeeded, "
            f"{got['sbatch_failed']:.0f} failed); bench status shows why"
        )
    ratio = single["queued_s"] / array["queued_s"] if array["queued_s"] else float("inf")
    each = ", ".join(f"{s['queued_s'] / a['queued_s']:.1f}x" for s, a in pairs if a["queued_s"])
    print(
        f"  time to queued: {ratio:.1f}x less with the array (target >= 20x; each pair: {each}); "
        f"sbatch calls {array['sbatch']:.0f} (target 1 for <= MaxArraySize)"
    )
    if before:
        base = rows[2][1]
        print(
            f"  baseline ({args.baseline}): its array queued after {base['queued_s']:.2f} s, "
            f"{single['queued_s'] / base['queued_s']:.1f}x less than one job each; "
            f"this checkout's array {base['queued_s'] / array['queued_s']:.2f}x faster (CPU "
            f"{base['cpu_s']:.2f} s -> {array['cpu_s']:.2f} s)"
        )
    print(
        f"  CPU: {single['cpu_s'] / array['cpu_s']:.1f}x less with the array; "
        f"load {_load()} on {os.cpu_count()} cores (the time to queued depends on it)"
    )
    print(
        f"chain of 3 dependent submit steps: {linked['sbatch']} sbatch, "
        f"all queued in one bench run: {linked['queued_in_one_run']}, "
        f"scheduler polls before the last sbatch: {linked['polls_before_last_sbatch']}"
    )
    return 1 if short else 0


def _load() -> str:
    """The load averages over 1, 5 and 15 minutes, as `uptime` prints them."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
