"""The shipped benchmark files, copied without anything a user's run left beside them."""

from __future__ import annotations

import shutil
from pathlib import Path

from caramel.consumers.catalog import SUFFIXES
from caramel.resources import shipped


def copy_benchmarks(dest: Path) -> Path:
    """Copy the shipped benchmark files (top-level files only: never a run folder or data) to `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in shipped("benchmarks").iterdir():
        if path.is_file() and path.suffix in SUFFIXES:
            shutil.copy2(path, dest / path.name)
    return dest
