"""Every output option writes where it is pointed (docs/reliability.md, "Writes: whole or not at
all,
and errors that name the file"): a character device or FIFO written through and left as it was, `-`
standard output, a folder refused with a message. The device is one the test makes in tmp_path with
/dev/null's numbers: the machine's own /dev/null is never written."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

LINE = {
    "schema": 2,
    "run": {"run_key": "k1", "benchmark": "b", "started": 1.0},
    "metrics": [{"table": "t", "row": {"n": "1"}, "name": "x", "unit": "s", "samples": [1.0, 2.0]}],
}


@pytest.fixture
def history(tmp_path: Path) -> tuple[str, dict[str, str]]:
    (tmp_path / "in.jsonl").write_text(json.dumps(LINE) + "\n")
    env = isolated_env(tmp_path)
    path = str(tmp_path / "h.db")
    assert bench("import", "in.jsonl", "--history", path, cwd=tmp_path, env=env).returncode == 0
    return path, env


def _device(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return node


@pytest.mark.parametrize("command", [["export", "-o"], ["dashboard", "-o"]])
def test_a_device_output_stays_a_device(tmp_path: Path, history, command: list[str]) -> None:
    """docs/reliability.md, "Writes": `-o` naming a character device writes through it; it stays a
    device with the same numbers, and nothing else appears beside it."""
    path, env = history
    node = _device(tmp_path)
    before = set(os.listdir(tmp_path))
    done = bench(*command, str(node), "--history", path, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert (
        stat.S_ISCHR(os.lstat(node).st_mode)
        and os.lstat(node).st_rdev == os.stat("/dev/null").st_rdev
    )
    assert set(os.listdir(tmp_path)) == before


def test_an_export_to_a_fifo_reaches_its_reader(tmp_path: Path, history) -> None:
    """docs/reliability.md, "Writes": a FIFO is written through to its reader and stays a FIFO."""
    path, env = history
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    done = bench("export", "-o", str(fifo), "--history", path, cwd=tmp_path, env=env, timeout=60)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    assert json.loads(got[0])["run"]["run_key"] == "k1" and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_writes_to_standard_output(tmp_path: Path, history) -> None:
    """docs/reliability.md, "Writes": `-o -` is standard output; no file named `-` is made."""
    path, env = history
    done = bench("export", "-o", "-", "--history", path, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["run"]["run_key"] == "k1"
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("command", [["export", "-o"], ["dashboard", "-o"]])
def test_a_folder_output_is_refused_with_a_message(
    tmp_path: Path, history, command: list[str]
) -> None:
    """docs/reliability.md, "Writes": a folder is refused (exit 2), named, nothing written in it."""
    path, env = history
    folder = tmp_path / "out"
    folder.mkdir()
    done = bench(*command, str(folder), "--history", path, cwd=tmp_path, env=env)
    assert done.returncode == 2 and f"cannot write {folder}: it is a folder" in done.stderr, (
        done.stderr
    )
    assert list(folder.iterdir()) == []
