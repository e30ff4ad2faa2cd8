"""Helpers for end-to-end tests: the real `bench` command on caramel's own benchmark files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.run_bench import isolated_env

DATA = Path(__file__).parent / "data"
SKIP = {"caramel.db", "caramel.db-wal", "caramel.db-shm", "caramel.lock", ".caramel_ended", ".caramel_identity"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment for bench: its own registry of recent runs, no JUBE settings from outside."""
    return isolated_env(tmp_path)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of tests/e2e/data to run in (runs are created next to the benchmark files)."""
    target = tmp_path / "bench"
    shutil.copytree(DATA, target, ignore=shutil.ignore_patterns("expected", "runs"))
    return target


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (links as `-> target`), the folder itself written <ROOT>."""
    out: dict[str, str] = {}
    root = str(folder.parent)
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, folder)
            if name in SKIP:
                continue
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full).replace(root, "<ROOT>")
                if name in dirnames:
                    dirnames.remove(name)
            elif os.path.isfile(full):
                out[rel] = Path(full).read_text(errors="replace").replace(root, "<ROOT>")
    return dict(sorted(out.items()))
