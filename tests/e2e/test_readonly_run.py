"""A finished run is read the same by someone who may not write its folder (issue 36): a colleague
(another user) and anyone on a read-only or snapshot mount get, from `status`, `info`, `log` and
`result --no-eval`, the answers its owner gets (stdout identical, the folder's path aside), never
"cannot write the run state": the run state is left in the rollback journal, and one an older
caramel left in WAL is read without making its `-shm` (state.sqlitefiles).

The run is made by root, as its owner, in a folder under /tmp that `nobody` may enter (pytest's
own temporary folder is root's alone), group-readable for the group `nogroup` (a project group).
The reader is the real `bench` run as `nobody` (setpriv), with a HOME and data folder of its own.
Where the interpreter lives in a folder `nobody` may not enter (/root/.pyenv), its prefix is
reached through a read-only bind mount. Skipped with the reason when not root, without setpriv,
or where mounting is not permitted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.e2e.tiny import TINY
from tests.run_bench import bench, isolated_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: the run is read as another user and on a mount")

READERS = [("status",), ("info",), ("log",), ("result", "--no-eval")]
READER = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]
SRC = str(Path(__file__).resolve().parents[2] / "src")  # this checkout's caramel



def _mount_readonly(source: str, target: Path) -> None:
    """`source` seen read-only at `target` (a bind mount); skips the test where that is not
    permitted."""
    target.mkdir()
    for argv in (["mount", "--bind", source, str(target)],
                 ["mount", "-o", "remount,ro,bind", str(target)]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            _unmount(target)
            pytest.skip(f"cannot mount {source} read-only: {done.stderr.strip()}")


def _unmount(target: Path) -> None:
    subprocess.run(["umount", str(target)], capture_output=True, timeout=30)


@dataclass
class Site:
    base: Path  # the folder under /tmp: the benchmark, the run, the data folders
    python: list[str]  # the interpreter as `nobody` starts it, and its environment
    python_env: dict[str, str]
    mounts: list[Path]  # unmounted at the end, last first

    @property
    def run_dir(self) -> Path:
        return self.base / "runs" / "000000"

    def owner(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = isolated_env(self.base, PYTHONPATH=SRC, CARAMEL_HISTORY=str(self.base / "history.db"))
        return bench(*args, cwd=cwd or self.base, env=env, timeout=120)

    def colleague(self, *args: str) -> subprocess.CompletedProcess:
        home = self.base / "colleague"
        env = dict(isolated_env(home), HOME=str(home), PYTHONPATH=SRC, **self.python_env)
        argv = [*READER, *self.python, "-m", "caramel", *args]
        return subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True, timeout=120)


def _python_for_nobody(base: Path, mounts: list[Path]) -> tuple[list[str], dict[str, str]]:
    """This interpreter as `nobody` can start it: as it is, or through a read-only bind mount of
    its prefix (with the prefix's lib/ for libpython: the binary's RUNPATH names the old place)."""
    direct = subprocess.run([*READER, sys.executable, "-c", "import sys; print(sys.prefix)"],
                            capture_output=True, text=True)
    # started, but its prefix unreadable (under /root, 0700), Python falls back to the system's
    # prefix and packages: caramel's requirements are not there, so read through the mount then
    if direct.returncode == 0 and direct.stdout.strip() == sys.prefix:
        return [sys.executable], {}
    prefix = base / "python"
    _mount_readonly(sys.prefix, prefix)
    mounts.append(prefix)
    python = str(prefix / os.path.relpath(sys.executable, sys.prefix))
    extra = {"LD_LIBRARY_PATH": str(prefix / "lib")}
    probe = subprocess.run([*READER, python, "-c", "import pandas, yaml, lxml, regex, pint"],
                           capture_output=True, text=True, env=dict(os.environ, **extra))
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot start this interpreter ({sys.executable}): "
                    f"{probe.stderr[-300:]}")
    return [python], extra


@pytest.fixture
def site() -> Iterator[Site]:
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv to run bench as another user")
    base = Path(tempfile.mkdtemp(prefix="caramel-readonly-"))
    os.chmod(base, 0o755)
    mounts: list[Path] = []
    try:
        (base / "tiny.xml").write_text(TINY)
        home = base / "colleague"
        home.mkdir()
        shutil.chown(home, "nobody", "nogroup")
        python, python_env = _python_for_nobody(base, mounts)
        here = Site(base, python, python_env, mounts)
        made = here.owner("run", "-q", "tiny.xml")
        assert made.returncode == 0, made.stderr
        # the project group may read the run (docs/security.md: group_readable for a shared folder)
        for folder, _dirs, files in os.walk(here.base / "runs"):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                shutil.chown(name, group="nogroup")
                searchable = 0o010 if os.path.isdir(name) else 0
                os.chmod(name, os.stat(name).st_mode | 0o040 | searchable)
        yield here
    finally:
        for mount in reversed(mounts):
            _unmount(mount)
        if not any(os.path.ismount(mount) for mount in mounts):
            shutil.rmtree(base, ignore_errors=True)


def _left_in_wal(run_dir: Path) -> None:
    """The run state as an older caramel left it: in WAL, its log folded in and gone, no -shm."""
    with contextlib.closing(sqlite3.connect(run_dir / "caramel.db")) as db:
        db.execute("PRAGMA journal_mode=WAL")
    assert not (run_dir / "caramel.db-shm").exists()
    assert (run_dir / "caramel.db").read_bytes()[18:20] == b"\x02\x02"


def _same_answer(owner: subprocess.CompletedProcess, reader: subprocess.CompletedProcess,
                 path: str = "", owner_path: str = "") -> None:
    assert reader.returncode == 0, reader.stderr
    assert "error" not in reader.stderr and "Traceback" not in reader.stderr, reader.stderr
    assert reader.stdout.replace(path, owner_path) == owner.stdout


def test_a_finished_run_leaves_its_state_in_the_rollback_journal(site: Site) -> None:
    # bytes 18-19 of the header: 1 for the rollback journal, 2 for WAL (sqlite.org/fileformat2.html)
    assert (site.run_dir / "caramel.db").read_bytes()[18:20] == b"\x01\x01"
    assert not (site.run_dir / "caramel.db-wal").exists()
    assert site.owner("continue", "-q", str(site.run_dir)).returncode == 0
    assert (site.run_dir / "caramel.db").read_bytes()[18:20] == b"\x01\x01"


@pytest.mark.slow
@pytest.mark.parametrize("journal", ["as-bench-leaves-it", "left-in-wal"])
def test_a_colleague_reads_a_finished_run_as_its_owner_does(site: Site, journal: str) -> None:
    run = site.run_dir
    if journal == "left-in-wal":
        _left_in_wal(run)
    before = sorted(os.listdir(run))
    # the colleague first: no analysis cache, no result folder yet (it may make neither)
    read = {command: site.colleague(*command, str(run)) for command in READERS}
    assert sorted(os.listdir(run)) == before
    for command in READERS:
        _same_answer(site.owner(*command, str(run)), read[command])
    # and again, now that the owner's result made the cache and the result folder
    for command in READERS:
        _same_answer(site.owner(*command, str(run)), site.colleague(*command, str(run)))
    noted = site.colleague("result", "--no-eval", str(run)).stderr
    assert "note: the analysis cache" in noted
    assert "note: database d of run 000000 not written" in noted


@pytest.mark.slow
@pytest.mark.parametrize("journal", ["as-bench-leaves-it", "left-in-wal"])
def test_a_run_on_a_read_only_mount_reads_as_on_its_own_disk(site: Site, journal: str) -> None:
    run = site.run_dir
    if journal == "left-in-wal":
        _left_in_wal(run)
    snapshot = site.base / "snapshot"
    _mount_readonly(str(run.parent), snapshot)
    site.mounts.append(snapshot)
    # read through the mount first: nothing (no -shm, no cache) was made beside the run state yet
    mounted = str(snapshot / "000000")
    read = {command: (site.owner(*command, mounted), site.colleague(*command, mounted))
            for command in READERS}
    for command in READERS:
        owner = site.owner(*command, str(run))
        for reader in read[command]:
            _same_answer(owner, reader, str(snapshot), str(run.parent))
