"""SQLite files on shared filesystems: the rollback journal where WAL is unsafe (networked or parallel
filesystems, told by statfs) or impossible (no shared writable memory map), WAL elsewhere."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from caramel.consumers.history.store import History
from caramel.errors import RunError
from caramel.stages.state import sharedfs, sqlitefiles
from caramel.stages.state.sharedfs import filesystem
from caramel.stages.state.sqlitefiles import set_journal
from caramel.stages.state.store import Store


def journal_of(path: Path) -> str:
    return sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]


@pytest.fixture
def statfs(monkeypatch: pytest.MonkeyPatch):
    """Pretend the folder is on the filesystem with this statfs magic number (and mount type)."""
    def pretend(magic: int, mount: str = "") -> None:
        monkeypatch.setattr(sharedfs, "_statfs_type", lambda folder: magic)
        monkeypatch.setattr(sharedfs, "_mount_type", lambda folder: mount)
    monkeypatch.delenv(sharedfs.JOURNAL_ENV, raising=False)
    return pretend


@pytest.mark.parametrize(("magic", "name"), [(0x6969, "nfs"), (0x0BD00BD0, "lustre"), (0x47504653, "gpfs"),
                                             (0x19830326, "beegfs"), (0x00C36400, "ceph"), (0xFF534D42, "cifs")])
def test_networked_and_parallel_filesystems_get_the_rollback_journal(tmp_path: Path, statfs, magic: int,
                                                                     name: str) -> None:
    statfs(magic)
    assert filesystem(str(tmp_path)) == sharedfs.Filesystem(name, True)
    assert set_journal(str(tmp_path / "x.db")) == "delete" and journal_of(tmp_path / "x.db") == "delete"


def test_a_local_disk_keeps_wal(tmp_path: Path, statfs) -> None:
    statfs(0xEF53, "ext4")
    assert set_journal(str(tmp_path / "x.db")) == "wal" and journal_of(tmp_path / "x.db") == "wal"


def test_remote_fuse_filesystems_are_told_by_their_mount_type(tmp_path: Path, statfs) -> None:
    statfs(sharedfs.FUSE_MAGIC, "fuse.sshfs")
    assert filesystem(str(tmp_path)) == sharedfs.Filesystem("fuse.sshfs", True)
    statfs(sharedfs.FUSE_MAGIC, "fuse.squashfuse")
    assert not filesystem(str(tmp_path)).shared


def test_the_real_folder_is_asked(tmp_path: Path) -> None:
    """statfs and mountinfo answer for this machine's temporary folder (a local one here)."""
    found = filesystem(str(tmp_path))
    assert found.name not in ("", "unknown") and not found.shared


def test_a_wal_file_moved_onto_nfs_leaves_wal(tmp_path: Path, statfs) -> None:
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.close()
    statfs(0x6969)
    assert set_journal(str(tmp_path / "x.db")) == "delete" and journal_of(tmp_path / "x.db") == "delete"


def test_the_environment_overrides_the_filesystem(tmp_path: Path, statfs, monkeypatch: pytest.MonkeyPatch) -> None:
    statfs(0x6969)
    monkeypatch.setenv("CARAMEL_SQLITE_JOURNAL", "wal")
    assert set_journal(str(tmp_path / "a.db")) == "wal"
    statfs(0xEF53, "ext4")
    monkeypatch.setenv("CARAMEL_SQLITE_JOURNAL", "DELETE")
    assert set_journal(str(tmp_path / "b.db")) == "delete"
    monkeypatch.setenv("CARAMEL_SQLITE_JOURNAL", "off")
    # refused where the settings are read (issue 36: before anything is made), naming its values
    with pytest.raises(RunError, match="CARAMEL_SQLITE_JOURNAL='off': expected one of") as caught:
        set_journal(str(tmp_path / "c.db"))
    assert "wal, delete, truncate, persist" in caught.value.message


def test_a_folder_that_refuses_shared_maps_falls_back_with_a_notice(tmp_path: Path, statfs, monkeypatch,
                                                                    capsys: pytest.CaptureFixture) -> None:
    statfs(0xEF53, "ext4")
    monkeypatch.setattr(sharedfs, "maps_shared", lambda folder: False)  # mmap(MAP_SHARED) -> ENODEV
    path = tmp_path / "caramel.db"
    assert set_journal(str(path)) == "delete" and set_journal(str(path)) == "delete"
    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 1 and "uses a rollback journal" in notes[0] and "ext4" in notes[0]


def test_a_wal_that_fails_after_the_probe_falls_back(tmp_path: Path, statfs, monkeypatch) -> None:
    """The probe said yes, WAL failed all the same (what SQLite does on such a filesystem: disk I/O error)."""
    statfs(0xEF53, "ext4")
    monkeypatch.setattr(sqlitefiles, "_try_wal", lambda path, timeout: False)
    assert set_journal(str(tmp_path / "x.db")) == "delete" and journal_of(tmp_path / "x.db") == "delete"


def test_the_run_state_on_nfs_uses_the_rollback_journal(tmp_path: Path, statfs) -> None:
    statfs(0x6969)
    store = Store(str(tmp_path / "caramel.db"))
    assert store.journal == "delete" and journal_of(tmp_path / "caramel.db") == "delete"
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: durable without WAL
    store.close()


def test_the_history_never_uses_wal(tmp_path: Path) -> None:
    """The history file is read from many hosts (docs/reliability.md): its journal is the rollback one."""
    with History(str(tmp_path / "history.db")):
        pass
    assert journal_of(tmp_path / "history.db") == "delete"
