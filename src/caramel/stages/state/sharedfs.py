"""Which SQLite journal a file gets, from the filesystem that holds it.

SQLite's write-ahead log (WAL) keeps its index in a `-shm` file that every connection maps into
memory with a shared writable mapping; that works only among processes of one host, and some
filesystems (FUSE with direct I/O, some network mounts) refuse the mapping outright. A run folder in
$HOME,
$PROJECT or $SCRATCH is on NFS, Lustre, GPFS, BeeGFS or CephFS and read from a dozen login and
compute
nodes: there a bench on another node would read a stale index. So:

- on a networked or parallel filesystem the journal is the rollback journal (`delete`), whose
  consistency rests on POSIX byte-range locks that these filesystems carry between hosts;
- elsewhere WAL is tried, and if the shared-memory file cannot be mapped the file falls back to the
  rollback journal with a one-line notice (state.sqlitefiles sets the journal as it opens a file);
- `CARAMEL_SQLITE_JOURNAL=wal|delete|truncate|persist` overrides both.

The filesystem is told by `statfs(2)`'s `f_type` (asked through ctypes) rather than by matching the
path against /proc/self/mountinfo: statfs asks the kernel about the very folder (bind mounts,
automounts, symlinks and mount namespaces included) in one call, with no prefix matching of escaped
mount points. FUSE filesystems all share one magic number, so for them the mount's `fuse.<kind>`
type is read from mountinfo, found by the folder's device number (exact, again no prefix matching).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import tempfile
from dataclasses import dataclass

from caramel.errors import RunError
from caramel.settings import current

JOURNAL_ENV = "CARAMEL_SQLITE_JOURNAL"
JOURNALS = (
    "wal",
    "delete",
    "truncate",
    "persist",
)  # `memory`/`off` lose a run on a crash: not offered

# statfs f_type of filesystems shared between hosts (linux/magic.h and the vendors' headers).
SHARED_MAGIC: dict[int, str] = {
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",  # IBM Spectrum Scale ("GPFS")
    0x19830326: "beegfs",
    0x00C36400: "ceph",
    0x5346414F: "afs",
    0x6B414653: "afs",  # kAFS
    0x7461636F: "ocfs2",
    0x01161970: "gfs2",
    0x01021997: "9p",
    0xAAD7AAEA: "panfs",
    0x20030528: "orangefs",
    0x73757245: "coda",
}
FUSE_MAGIC = 0x65735546
# FUSE filesystems whose files live on another host (the `fuse.<name>` of /proc/self/mountinfo).
REMOTE_FUSE = frozenset(
    {
        "sshfs",
        "s3fs",
        "gcsfuse",
        "rclone",
        "glusterfs",
        "ceph",
        "ceph-fuse",
        "beegfs",
        "lustre",
        "juicefs",
        "davfs",
        "davfs2",
        "goofys",
        "blobfuse",
        "blobfuse2",
        "cvmfs",
        "mountpoint-s3",
        "geesefs",
        "seaweedfs",
        "moosefs",
        "mfs",
        "lizardfs",
        "nfs",
        "curlftpfs",
        "smbnetfs",
        "weka",
        "objectivefs",
    }
)


@dataclass(frozen=True)
class Filesystem:
    """What holds a folder: its type name (`nfs`, `fuse.sshfs`, `ext4`...) and whether several hosts
    share it."""

    name: str
    shared: bool


def _statfs_type(folder: str) -> int | None:
    """`f_type` of statfs(2) on `folder`, or None where it cannot be asked (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        # the C library already loaded into this process (dlopen(NULL)): find_library("c") would run
        # `ldconfig -p` in a child process on every run
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    buffer = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(folder), buffer) != 0:
        return None
    # f_type is the first member, a word (__fsword_t); magic numbers fit its low 32 bits.
    return ctypes.c_ulong.from_buffer(buffer).value & 0xFFFFFFFF


def _mount_type(folder: str) -> str | None:
    """The fstype column of /proc/self/mountinfo for the mount holding `folder` (by device
    number)."""
    try:
        dev = os.stat(folder).st_dev
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                fields = line.split()
                if " - " not in line or len(fields) < 3:
                    continue
                major, _, minor = fields[2].partition(":")
                if (int(major), int(minor)) == (os.major(dev), os.minor(dev)):
                    return line.split(" - ", 1)[1].split()[0]
    except (OSError, ValueError):
        return None
    return None


# shared filesystems named by the mount table where statfs gives no magic number (another libc)
_SHARED_MOUNTS = frozenset(
    {*SHARED_MAGIC.values(), "nfs4", "lustre", "gpfs", "beegfs", "ceph", "cifs"}
)


def filesystem(folder: str) -> Filesystem:
    """The filesystem holding `folder` (an existing folder; a file's folder for a file)."""
    magic = _statfs_type(folder)
    if magic in SHARED_MAGIC:
        return Filesystem(SHARED_MAGIC[magic], True)
    mount = _mount_type(folder) or ""
    if magic == FUSE_MAGIC or mount.startswith("fuse"):
        return _fuse(mount)
    if mount in _SHARED_MOUNTS:
        return Filesystem(mount, True)  # no statfs (another libc): the mount table tells
    return Filesystem(mount or _magic_name(magic), False)


def _fuse(mount: str) -> Filesystem:
    """A FUSE filesystem, shared where its kind (`fuse.KIND`) is a remote one."""
    kind = mount.partition(".")[2]
    return Filesystem(mount or "fuse", kind.lower() in REMOTE_FUSE)


def _magic_name(magic: int | None) -> str:
    return f"0x{magic:x}" if magic is not None else "unknown"


def requested_journal() -> str | None:
    """The journal `CARAMEL_SQLITE_JOURNAL` asks for, or None; anything else is an error naming
    it."""
    text = current().sqlite_journal.lower()
    if not text:
        return None
    if text not in JOURNALS:
        raise RunError(
            f"{JOURNAL_ENV}={text!r} is not a journal caramel uses",
            hint=f"give one of {', '.join(JOURNALS)}, or unset it to let caramel choose from the "
            "filesystem",
        )
    return text


def chosen_journal(path: str) -> tuple[str, str]:
    """The journal for the SQLite file `path` and why (a few words)."""
    requested = requested_journal()
    if requested:
        return requested, f"{JOURNAL_ENV}={requested}"
    found = filesystem(os.path.dirname(os.path.abspath(path)) or ".")
    if found.shared:
        return "delete", f"{found.name} is shared between hosts"
    return "wal", f"{found.name} is local"


def maps_shared(folder: str) -> bool:
    """Whether files in `folder` can be mapped shared and writable (what WAL's -shm index needs),
    tried on a page-sized temporary file; a folder where the probe cannot even be made says yes (the
    WAL attempt itself is the second net)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".caramel-mmap-", dir=folder)
    except OSError:
        return True
    try:
        os.unlink(probe)
        os.ftruncate(fd, mmap.PAGESIZE)
        mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE).close()
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
