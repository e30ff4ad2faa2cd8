"""Step limits count monotonic time that bench could see, never the wall clock."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from caramel.adapters.backends import launchers
from caramel.stages.engine import runner as runner_module
from caramel.stages.engine.runner import Runner
from caramel.stages.engine.script import Command


def test_a_wall_clock_step_does_not_time_out_a_two_second_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An NTP step (here: the wall clock jumps 10,000 s on) changes no limit."""
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        real = time.time
        command = Command(0, 0, "sleep 1.5", str(tmp_path), str(tmp_path / "out"), str(tmp_path / "err"))
        runner.start("wp", [command], dict(os.environ), str(tmp_path / "carry"), False, limit=600)
        monkeypatch.setattr(time, "time", lambda: real() + 10_000)
        [(_entry, outcome)] = runner.wait()
        assert outcome.status == "done", outcome
    finally:
        runner.close()


@pytest.mark.slow
def test_time_bench_could_not_see_does_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait that returns far later than asked (bench was paused) moves the deadlines by the overshoot."""
    runner = Runner(launchers.get("local"), dict(os.environ))
    try:
        command = Command(0, 0, "sleep 2", str(tmp_path), str(tmp_path / "out"), str(tmp_path / "err"))
        entry = runner.start("wp", [command], dict(os.environ), str(tmp_path / "carry"), False, limit=1.0)
        runner._discount(runner_module.UNSEEN_SLACK + 5)  # as after a pause of 6 s
        assert entry.deadline is not None and entry.deadline > time.monotonic() + 5
        [(_entry, outcome)] = runner.wait()
        assert outcome.status == "done", outcome
    finally:
        runner.close()
