"""The test tiers (docs/development.md): tests/conftest.py marks by folder and by fixture, groups
the tests of a shared resource on one xdist worker, and setup.cfg refuses a marker it does not know.

Each check collects a file or two in a pytest subprocess (no test runs, no cluster or server
starts), with a plugin of its own that prints every test's markers after tests/conftest.py gave
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # five pytest subprocesses, each collecting caramel's tests
SHOW = """
import json, pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        groups = [m.args[0] for m in item.iter_markers("xdist_group")]
        marks = sorted({m.name for m in item.iter_markers()} & {"slow", "cluster", "e2e"})
        print("MARKS " + json.dumps([item.nodeid, marks, groups]))
"""


def collected(
    tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess, dict[str, tuple[list, list]]]:
    """Collect `args` (paths, -m) as the suite would; each test's tier markers and xdist groups."""
    (tmp_path / "show_marks.py").write_text(SHOW)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "show_marks",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    marks = {}
    for line in done.stdout.splitlines():
        if line.startswith("MARKS "):
            nodeid, tiers, groups = json.loads(line[6:])
            marks[nodeid] = (tiers, groups)
    return done, marks


def test_cluster_tests_are_cluster_and_slow_on_the_slurm_worker(tmp_path: Path) -> None:
    done, marks = collected(tmp_path, "tests/adapters/backends/test_slurm_cluster.py")
    assert done.returncode == 0 and marks, done.stdout + done.stderr
    for nodeid, (tiers, groups) in marks.items():
        assert {"cluster", "slow"} <= set(tiers) and groups == ["slurm"], nodeid


def test_the_fast_tier_of_a_cluster_file_is_empty_and_pytest_says_so_with_exit_5(
    tmp_path: Path,
) -> None:
    done, marks = collected(
        tmp_path, "-m", "not slow", "tests/adapters/backends/test_slurm_cluster.py"
    )
    assert done.returncode == 5 and not marks, (
        done.stdout + done.stderr
    )  # .ci/run fails on it (set -e)


def test_e2e_by_folder_and_by_a_call_of_bench(tmp_path: Path) -> None:
    done, marks = collected(tmp_path, "tests/e2e/test_sanity.py", "tests/test_settings.py")
    assert done.returncode == 0, done.stdout + done.stderr
    sanity = {k: v for k, v in marks.items() if k.startswith("tests/e2e/")}
    assert sanity and all("e2e" in tiers for tiers, _groups in sanity.values())
    settings = {
        k.split("::")[1]: "e2e" in v[0]
        for k, v in marks.items()
        if k.startswith("tests/test_settings.py")
    }
    # bench config runs the real bench; the reader of settings files is called in this process
    assert settings["test_bench_config_shows_values_and_sources"] is True
    assert settings["test_bench_config_refuses_a_bad_value_in_words"] is True
    assert not all(settings.values())


def test_postgresql_and_module_fixtures_group_their_tests(tmp_path: Path) -> None:
    done, marks = collected(
        tmp_path, "tests/consumers/history/test_figure_counts.py", "tests/fuzz/test_fuzz_inputs.py"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    groups = {nodeid: g for nodeid, (_tiers, g) in marks.items()}
    on_server = [n for n in groups if "postgresql" in n]
    assert on_server and all(groups[n] == ["postgres"] for n in on_server)
    fuzz_targets = [n for n in groups if "test_reader_answers_or_refuses" in n]
    assert fuzz_targets and all(
        groups[n] == ["tests/fuzz/test_fuzz_inputs.py"] for n in fuzz_targets
    )
    assert all(
        len(g) <= 1 for g in groups.values()
    )  # xdist would join two groups' names into a third


def test_a_marker_setup_cfg_does_not_know_is_refused(tmp_path: Path) -> None:
    test = tmp_path / "test_typo.py"
    test.write_text("import pytest\n\n@pytest.mark.slwo\ndef test_x():\n    pass\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            str(ROOT / "setup.cfg"),
            "--rootdir",
            str(tmp_path),
            str(test),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "'slwo' not found in `markers`" in done.stdout + done.stderr
