"""Work folders (engine.workdir): a workpackage's folder is made new on every start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caramel.stages.engine import workdir


@pytest.mark.parametrize("leftover", ["folder", "file", "dangling link", "nothing"])
def test_a_start_makes_a_new_folder_whatever_an_earlier_attempt_left(tmp_path: Path, leftover: str) -> None:
    """The first attempt's folder is made without a look first (a thousand array workpackages: no stat
    each); what an interrupted attempt left there, a folder with files, a file or a link, goes first."""
    wp_dir = tmp_path / "000001_s"
    if leftover == "folder":
        (wp_dir / "work").mkdir(parents=True)
        (wp_dir / "work" / "old.txt").write_text("from the last attempt")
    elif leftover == "file":
        wp_dir.write_text("")
    elif leftover == "dangling link":
        os.symlink(tmp_path / "gone", wp_dir)
    paths = workdir.WpPaths(str(wp_dir), str(wp_dir / "work"), str(wp_dir / "work"))
    workdir.create(paths, [("parent", str(tmp_path / "000000_p" / "work"))], None)
    assert wp_dir.is_dir() and not wp_dir.is_symlink() and sorted(os.listdir(wp_dir / "work")) == ["parent"]
    assert os.readlink(wp_dir / "work" / "parent") == os.path.join("..", "..", "000000_p", "work")
