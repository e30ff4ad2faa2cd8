"""fs.writes: whole files or none, links never written through, errors naming the path and the cause."""

from __future__ import annotations

import errno
import os

import pytest

from caramel.fs.oserrors import FileError
from caramel.fs.paths import PathError
from caramel.fs.writes import replacing, write_text


def test_a_link_at_the_target_is_replaced_never_written_through(tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("keep me\n")
    run = tmp_path / "run"
    (run / "result").mkdir(parents=True)
    (run / "result" / "t.dat").symlink_to(precious)
    write_text(str(run / "result" / "t.dat"), "cells\n", root=str(run))
    assert precious.read_text() == "keep me\n"
    assert not (run / "result" / "t.dat").is_symlink()
    assert (run / "result" / "t.dat").read_text() == "cells\n"


def test_a_linked_folder_inside_the_root_is_not_followed(tmp_path):
    outside = tmp_path / "home"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / "result").symlink_to(outside)
    with pytest.raises(FileError, match="symbolic link"):
        write_text(str(run / "result" / "t.dat"), "cells\n", root=str(run))
    assert list(outside.iterdir()) == []


def test_a_path_outside_the_root_is_refused(tmp_path):
    with pytest.raises(PathError):
        write_text(str(tmp_path / "elsewhere.txt"), "x", root=str(tmp_path / "run"))


def test_missing_folders_below_the_root_are_made(tmp_path):
    write_text(str(tmp_path / "a" / "b" / "c.txt"), "x", root=str(tmp_path))
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "x"


def test_a_full_disk_leaves_the_old_file_and_names_path_and_cause(tmp_path, monkeypatch):
    page = tmp_path / "page.html"
    page.write_text("old page\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(FileError) as caught, replacing(str(page)) as handle:
        handle.write("new")
        monkeypatch.setattr(handle, "write", full)
        handle.write("more")
    message = str(caught.value)
    assert str(page) in message and "no space left" in message and "?" not in message
    assert page.read_text() == "old page\n"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]  # no temporary file left


def test_a_rewrite_keeps_the_file_mode(tmp_path):
    path = tmp_path / "perf.csv"
    path.write_text("a\n")
    path.chmod(0o640)
    write_text(str(path), "b\n")
    assert (path.stat().st_mode & 0o777) == 0o640 and path.read_text() == "b\n"


def test_a_folder_at_the_target_is_an_error_naming_it(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(FileError, match=r"out: it is a folder"):
        write_text(str(tmp_path / "out"), "x")


def test_a_missing_folder_is_named_not_the_current_one(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(FileError) as caught:
        write_text(str(tmp_path / "f" / "x.txt"), "x")
    assert str(tmp_path / "f") in str(caught.value)
    assert os.getcwd() + ":" not in str(caught.value)
