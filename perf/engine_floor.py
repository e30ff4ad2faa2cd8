#!/usr/bin/env python3
"""The engine against its floor and against the first week's engine: N trivial workpackages.

    git worktree add /tmp/caramel-week1 cb46364     # the first week's engine (or `git archive`)
    python perf/engine_floor.py -n 1000 --rounds 5 --old /tmp/caramel-week1/src
    python perf/engine_floor.py -n 10000 --rounds 1 --old /tmp/caramel-week1/src
    python perf/engine_floor.py --old /tmp/caramel-week1/src --also before=/tmp/caramel-main/src

The contenders run interleaved round by round (floor, old, new, floor, old, new, ...), so a load
that comes and goes on a shared machine falls on all of them alike:
- floor: one `sh` running the same N do's (perf/overhead.py's benchmark: `echo value=...`), each in
  a subshell of its own in its own work folder, its stdout and stderr to files there; the folders
  made by one `mkdir`. What any engine that runs do's in a shell must at least spend;
- shell: the same, each workpackage's do in a fresh `sh -c` of its own (as JUBE runs each do: a
  shell started per do), its stdout and stderr to files in its folder. The issue's "bare-shell
  floor" read as what running each workpackage in a shell of its own costs at least;
- session: the same, each workpackage's subshell inside a shell started through `setsid` (a
  session, so a process group, of its own: what caramel's containment needs, docs/reliability.md).
  What an engine that can stop exactly one workpackage's processes must at least spend;
- old: `bench run` of the caramel under `--old` (PYTHONPATH), the first week's engine;
- new: `bench run` of the caramel this script is run with (`--new`, else $PYTHONPATH);
- `--also NAME=SRC`: more caramels to compare (another commit's engine);
- `--bash`: the new caramel once more with bash as its shell (`JUBE_EXEC_SHELL`), where each script
  is a job-control subshell of a long-lived shell instead of a shell bench starts (new+bash).
CPU is user + system time of the process and every child it waited for (wait4's rusage); wall is
the elapsed time. Every caramel's tree is byte-compiled first, as an installed package is (with
PYTHONDONTWRITEBYTECODE set, each bench would otherwise compile its modules: more of them today's).
Prints the median of each and the ratios new/floor and new/old. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from overhead import write_benchmark  # perf/overhead.py, beside this file
from spaces import factors  # perf/spaces.py

FLOORS = ("floor", "shell", "session")


def timed(cmd: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds of the process and its waited-for children, wall seconds); exits on failure."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[:3]} failed in {cwd}")
    return usage.ru_utime + usage.ru_stime, wall


def floor_script(folder: str, n: int, kind: str = "floor") -> str:
    """The floor's shell program: the benchmark's do in a subshell per workpackage (`shell`: in a
    `sh -c` of its own; `session`: that subshell in a shell of its own started through `setsid`,
    the script on its stdin)."""
    a, b, c = factors(n)
    names = [f"{i:06d}" for i in range(n)]
    lines = ["mkdir " + " ".join(names)]
    i = 0
    for nodes in range(1, a + 1):
        for batch in range(1, b + 1):
            for model in range(c):
                text = f"cd {names[i]} && echo value={nodes} {16 * batch} m{model}"
                do = f"({text}) >{names[i]}/stdout 2>{names[i]}/stderr"
                if kind == "shell":
                    do = f"/bin/sh -c '{text}' >{names[i]}/stdout 2>{names[i]}/stderr"
                lines.append(f"setsid /bin/sh -s <<'END'\n{do}\nEND" if kind == "session" else do)
                i += 1
    path = os.path.join(folder, "floor.sh")
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def measure(kind: str, n: int, pythonpath: str) -> tuple[float, float]:
    folder = tempfile.mkdtemp(prefix=f"engine_{kind}_{n}_")
    try:
        env = dict(os.environ, CARAMEL_DATA_DIR=os.path.join(folder, "data"))
        if kind.endswith("+bash"):
            env["JUBE_EXEC_SHELL"] = shutil.which("bash") or "bash"
        if kind in FLOORS:
            return timed(["/bin/sh", floor_script(folder, n, kind)], folder, env)
        write_benchmark(folder, n)
        env["PYTHONPATH"] = pythonpath
        return timed(
            [sys.executable, "-m", "caramel", "run", "overhead.xml", "--quiet"], folder, env
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--old", default="", help="src folder of the first week's caramel")
    parser.add_argument(
        "--new", default=os.environ.get("PYTHONPATH", ""), help="src folder of the caramel to test"
    )
    parser.add_argument(
        "--also", action="append", default=[], help="NAME=SRC: one more caramel to compare"
    )
    parser.add_argument("--bash", action="store_true", help="also the new caramel with bash")
    args = parser.parse_args()
    paths = {kind: "" for kind in FLOORS}
    if args.old:
        paths["old"] = args.old
    paths.update(item.split("=", 1) for item in args.also)
    if args.bash:
        paths["new+bash"] = args.new
    paths["new"] = args.new
    kinds = list(paths)
    for src in {path for path in paths.values() if path}:
        subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True)
    runs: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for _round in range(args.rounds):
        for kind in kinds:
            runs[kind].append(measure(kind, args.workpackages, paths[kind]))
    print(
        f"{args.workpackages} workpackages, {args.rounds} interleaved rounds, medians; load "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs at the end"
    )
    cpu = {kind: statistics.median(c for c, _w in runs[kind]) for kind in kinds}
    wall = {kind: statistics.median(w for _c, w in runs[kind]) for kind in kinds}
    for kind in kinds:
        print(f"{kind:>8}: CPU {cpu[kind]:6.2f} s  wall {wall[kind]:6.2f} s")
    mine = [kind for kind in kinds if kind.startswith("new")]
    for new in mine:
        for other in kinds:
            if other not in mine:
                print(
                    f"{new}/{other}: CPU {cpu[new] / cpu[other]:.2f}x  "
                    f"wall {wall[new] / wall[other]:.2f}x"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
