"""Helpers: the real `bench` with its own history and registry in a temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_", "SLOWDOWN"))}
    out["CARAMEL_DATA_DIR"] = str(tmp_path / "data")
    out["CARAMEL_HISTORY"] = str(tmp_path / "history.db")
    return out


@pytest.fixture
def steady(tmp_path: Path) -> Path:
    shutil.copy(DATA / "steady.yaml", tmp_path / "steady.yaml")
    return tmp_path


def bench(*args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
