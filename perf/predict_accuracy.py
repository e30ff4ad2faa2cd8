#!/usr/bin/env python3
"""bench predict's accuracy, measured (issue 16): prints the figures, not a test.

    python perf/predict_accuracy.py law    # the sleep law: predictions at 4 untested points vs the law and a later run
    python perf/predict_accuracy.py gpt    # caramel's GPT, 12 configurations x 3: leave-one-out, then hidden x2

Each in a temporary folder with its own history (tests/predict/data/*.yaml). The GPT sweep takes a
few minutes on 2 busy cores (mostly starting torch 42 times).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "predict" / "data"


def bench(*args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: bench {' '.join(args)}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def measured(path: Path, metric: str) -> dict[tuple[str, ...], float]:
    """Per configuration, the mean of the later run's repeats (as the history keeps them)."""
    from caramel.history.store import History

    with History.open(str(path)) as history:
        return {tuple(m.row.values()): statistics.fmean(m.samples) for run in history.runs()
                for m in history.metrics(run.run_key) if m.name == metric}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["law", "gpt"])
    args = parser.parse_args()
    name, later_tag, metric = (("law.yaml", "test", "elapsed") if args.which == "law"
                               else ("gpt_sweep.yaml", "heldout", "Time/iteration(s)"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(DATA / name, folder / name)
        env = dict(os.environ, CARAMEL_DATA_DIR=str(folder / "data"), CARAMEL_HISTORY=str(folder / "history.db"))
        bench("run", name, "--repeat", "3", "-q", cwd=folder, env=env)
        bench("result", cwd=folder, env=env)
        print(bench("predict", name, "--validate", "--metric", metric, cwd=folder, env=env))
        doc = json.loads(bench("predict", name, "--tag", later_tag, "--metric", metric, "--format", "json",
                               cwd=folder, env=env))
        later = dict(env, CARAMEL_HISTORY=str(folder / "later.db"))
        bench("run", name, "--tag", later_tag, "--repeat", "3", "-q", cwd=folder, env=later)
        bench("result", cwd=folder, env=later)
        found = measured(folder / "later.db", metric)
        print(f"{'configuration':28} {'predicted':>10} {'90 % interval':>22} {'measured':>10} {'error':>8}  model")
        for p in doc["predictions"]:
            key = tuple(p["parameters"].values())
            seconds = found[key]
            interval = f"{p['low']:.4g} .. {p['high']:.4g}"
            print(f"{','.join(f'{k}={v}' for k, v in p['parameters'].items()):28} {p['value']:10.4g} {interval:>22} "
                  f"{seconds:10.4g} {100 * (p['value'] / seconds - 1):+7.1f}%  {p['model']}")


if __name__ == "__main__":
    main()
