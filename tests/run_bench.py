"""The real `bench` as a user runs it (`python -m caramel` in a subprocess), in an environment of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def bench(*args: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def isolated_env(base: Path, **extra: str) -> dict[str, str]:
    """This process's environment without JUBE's or caramel's settings (nor the tests' SLOWDOWN), with
    bench's registry of recent runs under `base` and `extra` on top."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_", "SLOWDOWN"))}
    # a fresh data folder holds no CPU layout: a first run would measure one (a minute); tests that
    # measure say so in `extra`
    out.update(CARAMEL_DATA_DIR=str(base / "data"), CARAMEL_LAYOUT_MEASURE="never")
    out.update(extra)
    return out
