"""The small version of perf/signal_trials.py: seeded trials of SIGHUP, SIGKILL (then `bench
continue`) and SIGTERM during a 100-workpackage run with prepares and exports.

One trial per signal by default (the tests' time, docs/development.md); CARAMEL_SIGNAL_TRIALS=3 runs
the three of a release check (`python3 perf/signal_trials.py` runs 50). The trials of a signal are
seeded by its name, so the first trial is the same whatever the count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRIALS = int(os.environ.get("CARAMEL_SIGNAL_TRIALS", "1"))

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["SIGHUP", "SIGKILL", "SIGTERM"])
def test_trials_per_signal_every_do_and_prepare_ends_exactly_once(name: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "perf" / "signal_trials.py"),
            "--trials",
            str(TRIALS),
            "--signals",
            name,
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    figures = json.loads(proc.stdout)[name]
    assert figures["exactly_once"] == TRIALS, figures
    assert figures["internal_errors"] == 0, figures
    assert (
        figures["left_running_after_continue"] == 0 and figures["all_done_after_continue"] == TRIALS
    ), figures
    if name != "SIGKILL":
        assert figures["left_running_after_signal"] == 0, figures
    assert proc.returncode == 0, proc.stderr
