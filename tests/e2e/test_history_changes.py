"""`bench history changes` on a real history: the shipped quickstart benchmark run 30 times on this
machine, with a module of our own switched from pyslow/1.0 to pyslow/2.0 halfway. pyslow/2.0's
sitecustomize traces every Python call (what a debug build of an interpreter module would cost), so
the matrix products slow down; its LOADEDMODULES entry is what the runs' fingerprints record. The
change point is found at the switch, every series of the benchmark changes at once (one event),
and the changed module is named as the cause; `--fail-on regression --since` fails a CI."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

RUNS, SWITCH = 30, 15
SLOW_SITE = "import sys\nsys.settrace(lambda *a: None)\n"  # a trace function: every line pays


def module(root: Path, version: str) -> Path:
    """The module's bin folder: a python3 that starts the real one with the module's site (only the
    benchmark's `python3` goes through it; bench itself runs on sys.executable)."""
    folder = root / "modules" / "pyslow" / version
    (folder / "site").mkdir(parents=True)
    (folder / "bin").mkdir()
    (folder / "site" / "sitecustomize.py").write_text(SLOW_SITE if version == "2.0" else "")
    wrapper = folder / "bin" / "python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{folder / "site"}" exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return folder / "bin"


@pytest.mark.slow
def test_the_module_switch_is_found_and_named(tmp_path: Path) -> None:
    versions = {"1.0": module(tmp_path, "1.0"), "2.0": module(tmp_path, "2.0")}
    history = tmp_path / "history.db"
    for i in range(RUNS):
        version = "1.0" if i < SWITCH else "2.0"
        env = isolated_env(tmp_path, CARAMEL_HISTORY=str(history),
                           LOADEDMODULES=f"pyslow/{version}",
                           PATH=f"{versions[version]}{os.pathsep}{os.environ['PATH']}")
        ran = bench("run", "quickstart", "--tag", "local", "-q", cwd=tmp_path, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        done = bench("result", "-i", "last", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(history))
    shown = bench("history", "changes", "--format", "json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    found = json.loads(shown.stdout)
    keys = [r.split()[0] for r in bench("history", "list", cwd=tmp_path, env=env).stdout.splitlines()
            if r.strip()]
    switch = keys[SWITCH]
    cause = "modules: pyslow/1.0 -> pyslow/2.0"
    # a timing on a shared machine may also move with its load: such a change names no module
    at_switch = [c for c in found["changes"] if abs(keys.index(c["run_after"]) - SWITCH) <= 2]
    elapsed = [c for c in at_switch if c["series"][-1].endswith("/elapsed")]
    regressed = {tuple(c["series"]) for c in elapsed if c["kind"] == "regression"}
    assert len(regressed) == 3, found  # each size's elapsed time
    for change in found["changes"]:
        assert (cause in change["causes"]) == (change in at_switch), change
    events = [e for e in found["events"] if cause in e["causes"]]
    assert len(events) == 1 and len(events[0]["changes"]) >= 6  # elapsed and mflops, 3 sizes
    ci = bench("history", "changes", "--since", switch, "--fail-on", "regression",
               cwd=tmp_path, env=env)
    assert ci.returncode == 1 and f"likely cause: {cause}" in ci.stdout
    later = bench("history", "changes", "--since", "last", "--fail-on", "regression",
                  cwd=tmp_path, env=env)
    assert later.returncode == 0, later.stdout  # the newest run starts nothing new
