"""The WAL fallback for real: a run on a FUSE filesystem that refuses shared writable memory maps
(tests/stages/state/nommapfs.py: direct I/O, so mmap(MAP_SHARED) fails with ENODEV) finishes, `continue` and
`result` work, and `bench status` from a second process answers while the run goes on.

Needs /dev/fuse, the right to mount (root) and mfusepy (the [test] extra) with libfuse 3; skipped
elsewhere, where the statfs override and the simulated mmap failure of test_sharedfs.py still run."""

from __future__ import annotations

import importlib.util
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.stages.state import sharedfs
from caramel.stages.state.store import Store

HERE = Path(__file__).parent


@pytest.fixture
def nommap(tmp_path: Path):
    """A mounted nommapfs folder (its files stored under tmp_path/back)."""
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0 or importlib.util.find_spec("mfusepy") is None:
        pytest.skip("needs /dev/fuse, root and mfusepy to mount a FUSE filesystem")
    back, mount = tmp_path / "back", tmp_path / "mnt"
    back.mkdir()
    mount.mkdir()
    server = subprocess.Popen([sys.executable, str(HERE / "nommapfs.py"), str(back), str(mount)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not os.path.ismount(mount):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.skip(f"cannot mount a FUSE filesystem here: {server.communicate()[1][-300:]}")
        time.sleep(0.05)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        server.terminate()
        server.wait(timeout=10)


def test_the_filesystem_really_refuses_shared_maps(nommap: Path) -> None:
    with open(nommap / "probe", "w+b") as file:
        file.write(b"\0" * mmap.PAGESIZE)
        file.flush()
        with pytest.raises(OSError):
            mmap.mmap(file.fileno(), mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    assert not sharedfs.maps_shared(str(nommap))


def test_wal_is_tried_and_left_for_the_rollback_journal(nommap: Path, monkeypatch, capsys) -> None:
    """Even past the probe (told yes here), WAL fails on first use and the file is switched back."""
    monkeypatch.delenv(sharedfs.JOURNAL_ENV, raising=False)
    monkeypatch.setattr(sharedfs, "maps_shared", lambda folder: True)
    store = Store(str(nommap / "caramel.db"))
    assert store.journal == "delete"
    store.db.execute("CREATE TABLE t (x)")
    store.close()
    assert sorted(os.listdir(nommap)) == ["caramel.db"]  # no -shm or -wal left behind
    assert "refuses the shared memory map" in capsys.readouterr().err


SHARED = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="shared" outpath="runs">
    <parameterset name="p"><parameter name="n" type="int">1,2</parameter></parameterset>
    <patternset name="pat"><pattern name="value" type="int">value = $jube_pat_int</pattern></patternset>
    <step name="submit">
      <use>p</use>
      <do>sleep 1.5; echo "value = $n"</do>
      <do done_file="ready">echo submitted</do>
    </step>
    <analyser name="a"><use>pat</use><analyse step="submit"><file>stdout</file></analyse></analyser>
    <result><use>a</use><table name="t" style="csv"><column>n</column><column>value</column></table></result>
  </benchmark>
</jube>
"""


@pytest.mark.slow
def test_a_run_on_the_filesystem_finishes_and_answers_status(nommap: Path, tmp_path: Path) -> None:
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    (nommap / "shared.xml").write_text(SHARED)
    cmd = [sys.executable, "-m", "caramel", "run", "shared.xml"]
    run = subprocess.Popen(cmd, cwd=nommap, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not (nommap / "runs" / "000000" / "caramel.db").exists():
        assert run.poll() is None, run.communicate()
        time.sleep(0.05)
    status = bench("status", "runs", "-i", "0", cwd=nommap, env=env, timeout=60)
    assert status.returncode == 0 and "submit" in status.stdout, status.stdout + status.stderr
    assert run.poll() is None, "the status was read after the run had ended: nothing shown"
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, out + err
    assert "uses a rollback journal" in err and "Traceback" not in err
    for work in (nommap / "runs" / "000000").glob("*/work"):
        (work / "ready").touch()
    finished = bench("continue", "runs", "-i", "0", cwd=nommap, env=env, timeout=120)
    assert finished.returncode == 0, finished.stderr
    result = bench("result", "runs", "-i", "0", cwd=nommap, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [line.split(",") for line in result.stdout.split() if line[:1].isdigit()] == [["1", "1"], ["2", "2"]]
    left = {p.name for p in (nommap / "runs" / "000000").iterdir()}
    assert not {"caramel.db-wal", "caramel.db-shm"} & left
    shutil.rmtree(nommap / "runs")
