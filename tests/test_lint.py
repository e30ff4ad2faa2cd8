"""ruff holds for the package, its harnesses and its tests (pyproject.toml's [tool.ruff]): the
rules of its select list, McCabe complexity at most 15 (C901) among them. A function above it is
split, or carries `# noqa: C901` with the reason (docs/development.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing() -> None:
    pytest.importorskip("ruff", reason="ruff is in the [test] extra (pip install -e .[test])")
    ruff = shutil.which("ruff") or sys.executable
    argv = [ruff] if ruff != sys.executable else [ruff, "-m", "ruff"]
    done = subprocess.run([*argv, "check", "--no-cache", "src", "perf", "tests"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
