"""A real SLURM on this machine for the tests that need one (tests/cluster/localcluster.sh).

The cluster is started once per test session, as root on Debian (it installs the packages on a
fresh machine: that is how CI gets it). Elsewhere these tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "cluster" / "localcluster.sh"
CLUSTER_DIR = os.environ.get("CARAMEL_SLURM_DIR", "/tmp/caramel-slurm")


def _can_run_cluster() -> str:
    if os.geteuid() != 0:
        return "the test cluster needs root"
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        return "the test cluster needs Debian's packages (apt-get)"
    return ""


def start(nodes: int) -> dict[str, str]:
    """Start (or switch to) a cluster of `nodes` nodes; the environment its clients need."""
    why = _can_run_cluster()
    if why:
        pytest.skip(why)
    done = subprocess.run(["bash", str(SCRIPT), "start", "--nodes", str(nodes), "--dir", CLUSTER_DIR],
                          capture_output=True, text=True, timeout=900)
    if done.returncode:
        pytest.fail(f"the test cluster did not start:\n{done.stderr[-3000:]}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    env["SLURM_CONF"] = os.path.join(CLUSTER_DIR, "etc", "slurm.conf")
    return env


def _running() -> bool:
    done = subprocess.run(["bash", str(SCRIPT), "status", "--dir", CLUSTER_DIR], capture_output=True, timeout=60)
    return done.returncode == 0


@pytest.fixture(scope="session")
def cluster_env() -> Iterator[dict[str, str]]:
    """Two nodes (n1, n2: two slurmd on this machine) so multi-node jobs run; one-node jobs too.
    A cluster this session started is stopped when the session ends; one already running stays."""
    started_here = not _can_run_cluster() and not _running()
    yield start(2)
    if started_here:
        subprocess.run(["bash", str(SCRIPT), "stop", "--dir", CLUSTER_DIR], capture_output=True, timeout=300)


@pytest.fixture
def env(cluster_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    out = dict(cluster_env)
    out["CARAMEL_DATA_DIR"] = str(tmp_path / "data")
    out["CARAMEL_DONE_FILE_GRACE"] = "1"
    return out
