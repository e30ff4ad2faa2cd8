"""Shared do's across a remove: a redone workpackage does not run the step's shared do again
(JUBE's rule), unless the whole step was removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)


def test_redo_one_workpackage_of_a_shared_step(workdir: Path, env: dict[str, str]) -> None:
    assert bench("run", "shared_cycle.xml", cwd=workdir, env=env).returncode == 0
    run = workdir / "runs" / "000000"
    assert bench("remove", "-f", "-w", "1", cwd=workdir, env=env).returncode == 0
    assert bench("continue", cwd=workdir, env=env).returncode == 0
    assert (run / "gather_common" / "stdout").read_text().count("shared sees") == 1
    assert (run / "000001_gather" / "work" / "stdout").read_text() == "after shared: 4\n"
    log = json.loads(bench("log", "--format", "json", cwd=workdir, env=env).stdout)
    assert [c["kind"] for c in log].count("shared") == 1

    assert bench("remove", "-f", "-w", "0", "1", "2", cwd=workdir, env=env).returncode == 0
    assert not (run / "gather_common").exists()  # no workpackage of the step left: its shared folder goes
    assert bench("continue", cwd=workdir, env=env).returncode == 0
    assert (run / "gather_common" / "stdout").read_text().count("shared sees") == 1
    assert (run / "000002_gather" / "work" / "stdout").read_text() == "after shared: 3\n"
