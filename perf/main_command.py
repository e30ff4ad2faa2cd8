#!/usr/bin/env python3
"""The README's main command, timed: install into a fresh venv, run the shipped `llm` on `local`.

    python perf/main_command.py               # fresh venv from a clone of this checkout
    python perf/main_command.py --no-install  # only the benchmark, with this interpreter

Targets (issue 5): the whole line from a fresh machine (torch install included) within 5 minutes,
the benchmark itself (bench run + bench result) within 2. Prints the figures and the result table.
Not a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command: str, cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: {command}\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "caramel"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env["CARAMEL_DATA_DIR"] = str(Path(tmp) / "data")
        bench = "bench"
        if args.no_install:
            env["PYTHONPATH"] = str(clone / "src")
            bench = f"{sys.executable} -m caramel"
            install = 0.0
        else:
            venv = Path(tmp) / "venv"
            install, _ = timed(
                f"{sys.executable} -m venv {venv} && . {venv}/bin/activate && "
                "pip install -q '.[train]'",
                clone,
                env,
            )
            env["PATH"] = f"{venv}/bin:{env['PATH']}"
        run, _ = timed(f"{bench} run llm --tag 117M local", clone, env)
        result, table = timed(f"{bench} result -i last", clone, env)
    print(table)
    print(
        f"install: {install:.1f} s   bench run: {run:.1f} s   bench result: "
        f"{result:.1f} s   benchmark total: {run + result:.1f} s (target 120)   whole line: "
        f"{install + run + result:.1f} s (target 300)"
    )


if __name__ == "__main__":
    main()
