"""Every test keeps caramel's user data (the run registry, campaigns, the history) in a folder of its own,
and never measures the CPU layout on a first run (CARAMEL_LAYOUT_MEASURE=never).

Without this, a test that calls bench in-process, or a subprocess that inherits this environment, would
add runs to the user's ~/.local/share/caramel: tests are hermetic. A test that sets its own values
(tests/run_bench.isolated_env, monkeypatch) still wins.

It also marks the tests' tiers and their xdist groups (below; docs/development.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import pytest
from tests import run_bench


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path_factory.mktemp("caramel-data")
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(folder))
    monkeypatch.setenv("CARAMEL_HISTORY", str(folder / "history.db"))
    # a fresh data folder holds no CPU layout, and a bench run would measure one (a minute): tests
    # take the rule unless they test the measurement (tests/payloads/workloads/test_layout_first_use.py)
    monkeypatch.setenv("CARAMEL_LAYOUT_MEASURE", "never")


# The tiers (docs/development.md): the markers are registered in setup.cfg. A folder that holds
# one kind of test is marked here, so a test added there is marked without a decorator; other tests
# carry `@pytest.mark.slow` (or a module's `pytestmark`) themselves.
TESTS = Path(__file__).parent
FOLDER_MARKS = {
    # every test there runs the real `bench` on caramel's own benchmark files
    TESTS / "e2e": ("e2e",),
}
# Session resources one machine holds once: the SLURM test cluster (tests/cluster/localcluster.sh),
# the PostgreSQL server (tests/consumers/history/pgserver.py), the headless chromium. A session
# fixture runs once per xdist worker: the tests that use one run on one worker (`--dist loadgroup`
# in setup.cfg's addopts), so it starts once and the cluster stops when that worker ends.
SHARED_FIXTURE_GROUPS = {"cluster_env": "slurm", "pg_server": "postgres", "chromium": "chromium"}
CLUSTER_FIXTURE = "cluster_env"


def _folder_marks(path: Path) -> tuple[str, ...]:
    return tuple(m for folder, marks in FOLDER_MARKS.items() if path.is_relative_to(folder)
                 for m in marks)


def _module_scoped(item: pytest.Function) -> bool:
    """Whether the test uses a fixture made once per module (or class): its module then runs on one
    worker, or each worker that gets one of its tests would make the fixture again."""
    # pytest keeps the resolved fixtures of an item only here (no public accessor)
    defs = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
    return any(d[-1].scope in ("module", "class") for d in defs.values() if d)


def _calls_bench(function: Callable, depth: int = 2) -> bool:
    """Whether `function`, or a function of its module it calls (`depth` calls deep), calls the real
    bench (tests/run_bench.bench) by a global name."""
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    called = [function.__globals__.get(name) for name in code.co_names]
    if any(f is run_bench.bench for f in called):
        return True
    return depth > 0 and any(inspect.isfunction(f) and f.__module__ == function.__module__
                             and f is not function and _calls_bench(f, depth - 1) for f in called)


def _runs_bench(item: pytest.Function) -> bool:
    """Whether the test or one of its fixtures runs the real bench in a subprocess."""
    defs = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
    return any(_calls_bench(f) for f in [item.function, *(d[-1].func for d in defs.values() if d)])


def _xdist_group(item: pytest.Function) -> str:
    for fixture, group in SHARED_FIXTURE_GROUPS.items():
        if fixture in item.fixturenames:
            return group
    if _module_scoped(item):
        return item.nodeid.split("::")[0]
    return ""


# first: xdist's worker reads the groups in its own hook of this name
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function):  # a plugin's own kind of test: no fixtures
            continue
        marks = set(_folder_marks(item.path))
        if _runs_bench(item):
            marks.add("e2e")
        for mark in sorted(marks):
            item.add_marker(mark)
        if CLUSTER_FIXTURE in item.fixturenames:
            item.add_marker("cluster")
            item.add_marker("slow")
        # one group per test: xdist joins several groups' names into a group of their own
        given = item.get_closest_marker("xdist_group")
        group = given.args[0] if given is not None else _xdist_group(item)
        if given is None and group:
            item.add_marker(pytest.mark.xdist_group(group))
        if group in SHARED_FIXTURE_GROUPS.values():  # starting the server or browser takes seconds
            item.add_marker("slow")
