"""The small version of perf/signal_trials.py: 3 seeded trials each of SIGHUP, SIGKILL (then `bench
continue`) and SIGTERM during a 100-workpackage run with prepares and exports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_three_trials_per_signal_every_do_and_prepare_ends_exactly_once() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, str(ROOT / "perf" / "signal_trials.py"), "--trials", "3", "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    summary = json.loads(proc.stdout)
    for name in ("SIGHUP", "SIGKILL", "SIGTERM"):
        figures = summary[name]
        assert figures["exactly_once"] == 3, figures
        assert figures["internal_errors"] == 0, figures
        assert figures["left_running_after_continue"] == 0 and figures["all_done_after_continue"] == 3, figures
        if name != "SIGKILL":
            assert figures["left_running_after_signal"] == 0, figures
    assert proc.returncode == 0, proc.stderr
