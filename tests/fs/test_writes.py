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


# Outputs are written where the user pointed (docs/reliability.md, "Writes: whole or not at all, and
# errors that name the file"; docs/security.md, "Outputs go where they are pointed").


def _null_device(tmp_path):
    """A character device with /dev/null's numbers, made in `tmp_path` (never the machine's own)."""
    import stat

    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return node


def test_a_character_device_is_written_through_and_stays_a_device(tmp_path):
    """docs/reliability.md, "Writes": a character device (`-o /dev/null`) is written through, never
    replaced by a regular file; no temporary file is left beside it."""
    import stat

    node = _null_device(tmp_path)
    write_text(str(node), "a page\n")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert os.lstat(node).st_rdev == os.stat("/dev/null").st_rdev
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_a_fifo_is_written_through_to_its_reader(tmp_path):
    """docs/reliability.md, "Writes": a FIFO is written through (its reader gets the text) and
    stays one."""
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_text(str(fifo), "through the pipe\n")
    reader.join(10)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    """docs/reliability.md, "Writes": `-` is standard output, no file named `-` is made."""
    monkeypatch.chdir(tmp_path)
    write_text("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
    assert not (tmp_path / "-").exists()


def test_a_folder_is_refused_with_a_message(tmp_path):
    """docs/reliability.md, "Writes": a folder (a socket, a block device) is refused, nothing
    written."""
    folder = tmp_path / "pages"
    folder.mkdir()
    with pytest.raises(FileError, match="it is a folder; nothing was written"):
        write_text(str(folder), "x")
    assert list(folder.iterdir()) == []


def test_a_socket_is_refused(tmp_path):
    """docs/reliability.md, "Writes": a socket is neither replaced nor written."""
    import socket

    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        with pytest.raises(FileError, match="it is a socket"):
            write_text(path, "x")


def test_temporaries_of_a_killed_write_are_cleaned_by_the_next_write(tmp_path):
    """docs/reliability.md, "Writes": a write killed before its rename leaves
    `.NAME.HOST.PID.RAND.tmp`; the next write to NAME removes those of a process that is gone, and
    keeps a live writer's."""
    import subprocess
    import sys

    from caramel.fs.writes import _host

    out = tmp_path / "export.jsonl"
    script = ("import os,sys,time\nfrom caramel.fs.writes import replacing\n"
              "with replacing(sys.argv[1]) as h:\n"
              " h.write('x'); h.flush(); print('ready', flush=True); time.sleep(60)\n")
    children = [subprocess.Popen([sys.executable, "-c", script, str(out)], stdout=subprocess.PIPE,
                                 text=True) for _ in range(3)]
    # (started at once: each sees the others' temporaries as a live writer's)
    for child in children:
        assert child.stdout.readline() == "ready\n"
    for child in children:
        child.kill()
        child.wait()
        child.stdout.close()
    assert len(list(tmp_path.glob(".export.jsonl.*.tmp"))) == 3
    live = tmp_path / f".export.jsonl.{_host()}.{os.getpid()}.0badc0de.tmp"  # a live writer's
    live.write_text("busy")
    write_text(str(out), "whole\n")
    assert out.read_text() == "whole\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, live.name])
