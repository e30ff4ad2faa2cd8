#!/usr/bin/env python3
"""A PostgreSQL history against an SQLite one: `bench result` of a big run, and the dashboard.

    python perf/history_pg.py [--workpackages 10000] [--runs 1000] [--rounds 2] [--url
    postgresql://...]

Without --url a server of its own is started (tests/consumers/history/pgserver.py: Debian's
postgresql 15 in a temporary folder, as the test suite does), on this machine, over TCP with a
password. 1. `bench result` on a run of N finished workpackages (perf/result_scale.py's run), first
call,
   into an SQLite file and into PostgreSQL: two copies of the run, so each is a first call.
2. `bench dashboard` over a history of R runs × 100 figures (perf/dashboard_scale.py's), written
   to SQLite, copied to PostgreSQL with `bench history copy` (timed too).
Targets (issue 24): PostgreSQL at most 1.5x SQLite for both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from dashboard_scale import make_histories  # noqa: E402 - perf/, beside this file
from result_scale import make_run  # noqa: E402

BENCH = [sys.executable, "-m", "caramel"]


def timed(args: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(BENCH + args, capture_output=True, text=True, env=env, cwd=cwd)
    took = time.perf_counter() - start
    if done.returncode or "warning" in done.stderr:
        sys.exit(f"bench {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took


def result_round(folder: str, n: int, url: str, base_env: dict) -> tuple[float, float]:
    times = []
    for engine, target in (("sqlite", os.path.join(folder, "result.db")), ("postgresql", url)):
        os.makedirs(os.path.join(folder, engine))
        run_dir = make_run(os.path.join(folder, engine), n)
        env = {**base_env, "CARAMEL_HISTORY": target}
        times.append(timed(["result", run_dir, "--no-files"], env, folder))
    return times[0], times[1]


def dashboard(folder: str, runs: int, url: str, base_env: dict, rounds: int) -> None:
    sites = make_histories(folder, runs, 100)
    merged = os.path.join(folder, "merged.db")
    env = {**base_env, "CARAMEL_HISTORY": merged}
    for site in sites:
        timed(["history", "copy", site, merged], env, folder)
    copy = timed(["history", "copy", merged, url], env, folder)
    print(f"bench history copy of {runs} runs, SQLite -> PostgreSQL: {copy:.2f} s")
    for i in range(rounds):
        lite = timed(["dashboard", "--history", merged, "-o", "lite.html"], env, folder)
        pg = timed(["dashboard", "--history", url, "-o", "pg.html"], env, folder)
        print(
            f"bench dashboard over {runs} runs, round {i + 1}: SQLite {lite:.2f} s, "
            f"PostgreSQL {pg:.2f} s (ratio {pg / lite:.2f}, target <= 1.5)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--url", help="an empty PostgreSQL database (default: a server of its own)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="caramel-history-pg-")
    server = None
    if args.url:
        url = args.url
    else:
        from tests.consumers.history.pgserver import PgServer

        server = PgServer()
        url = server.new_database()
    base_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CARAMEL_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    base_env["CARAMEL_DATA_DIR"] = os.path.join(folder, "data")
    try:
        subprocess.run(
            BENCH + ["--version"], capture_output=True, env=base_env
        )  # bytecode compiled once
        for i in range(args.rounds):
            lite, pg = result_round(os.path.join(folder, f"r{i}"), args.workpackages, url, base_env)
            print(
                f"bench result of {args.workpackages} workpackages (first call), "
                f"round {i + 1}: SQLite {lite:.2f} s, "
                f"PostgreSQL {pg:.2f} s (ratio {pg / lite:.2f}, target <= 1.5)"
            )
            shutil.rmtree(os.path.join(folder, f"r{i}"), ignore_errors=True)
        if server is not None:
            url = server.new_database()
        dashboard(folder, args.runs, url, base_env, args.rounds)
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
