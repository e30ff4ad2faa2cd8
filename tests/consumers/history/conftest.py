"""Helpers: the real `bench` with its own history and registry in a temporary folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

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


from .browser import browser, chromium  # noqa: E402,F401 - fixtures of the page tests


def bench_env(base: Path, history: Path, **extra: str) -> dict[str, str]:
    """An environment of `bench` with its own registry and history under `base`."""
    return isolated_env(base, CARAMEL_HISTORY=str(history), **extra)


@pytest.fixture(scope="module")
def two_sites(tmp_path_factory) -> tuple[Path, Path, Path]:
    """Two histories as two sites would have them (steady.yaml, `--tag local`, 3 repeats): site
    "lab" with three runs, the middle one 30 % slower (a regression), site "cluster" with one run.
    Returns the work folder and the two history files."""
    base = tmp_path_factory.mktemp("sites")
    shutil.copy(DATA / "steady.yaml", base / "steady.yaml")
    lab, cluster = base / "lab.db", base / "cluster.db"
    for history, site, slowdowns in ((lab, "lab", ("1", "1.3", "1")), (cluster, "cluster", ("1.1",))):
        for slowdown in slowdowns:
            env = bench_env(base, history, CARAMEL_SITE=site, SLOWDOWN=slowdown)
            assert bench("run", "steady.yaml", "--tag", "local", "--repeat", "3", "-q", cwd=base, env=env).returncode == 0
            done = bench("result", "-i", "last", cwd=base, env=env)
            assert done.returncode == 0, done.stderr
    return base, lab, cluster


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server (tests/consumers/history/pgserver.py); skipped where none can be had."""
    from .pgserver import PgServer, missing

    why = missing()
    if why:
        pytest.skip(why)
    server = PgServer()
    yield server
    server.close()


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL (with its password) of a fresh, empty database on the session's server."""
    return pg_server.new_database()
