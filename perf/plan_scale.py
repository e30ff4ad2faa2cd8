#!/usr/bin/env python3
"""How long `bench plan` takes for a space of N workpackages (3 parameters, one step).

    python perf/plan_scale.py --workpackages 10000

Prints the wall time of the whole command (load + expand + JSON output) and of expansion alone,
and the peak memory. The target (issue 1): 10,000 workpackages in under 2 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

from spaces import factors  # perf/spaces.py, beside this file


def write_benchmark(folder: str, n: int) -> str:
    a, b, c = factors(n)
    path = os.path.join(folder, "scale.yaml")
    with open(path, "w") as handle:
        handle.write(f"""name: scale
outpath: scale_run
parameterset:
  - name: space
    parameter:
      - {{name: nodes, type: int, _: "{",".join(str(i) for i in range(1, a + 1))}"}}
      - {{name: batch, type: int, _: "{",".join(str(16 * i) for i in range(1, b + 1))}"}}
      - {{name: model, _: "{",".join(f"m{i}" for i in range(c))}"}}
      - {{name: tasks, type: int, mode: python, _: "$nodes * 4"}}
step:
  - name: run
    use: space
    do: echo $nodes $batch $model
""")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workpackages", "-n", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = write_benchmark(folder, args.workpackages)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "caramel", "plan", path, "--format", "json"],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

        from caramel.stages.expand.plan import make_plan
        from caramel.stages.spec.loader import load_one

        bench = load_one(path)
        start = time.perf_counter()
        plan = make_plan(bench)
        expand = time.perf_counter() - start
    print(f"workpackages      {len(plan.workpackages)}")
    print(f"bench plan (json) {wall:.2f} s   (target < 2 s for 10,000)")
    print(
        f"expansion alone   {expand:.2f} s   ({expand / len(plan.workpackages) * 1e6:.0f} "
        "us per workpackage)"
    )
    print(f"peak memory       {rss:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
