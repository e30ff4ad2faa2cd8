"""A passthrough FUSE filesystem whose files are opened with direct_io: the kernel refuses shared
writable mappings of them (ENODEV), as some network filesystems do; SQLite's WAL needs one for its
-shm index. Used by tests/stages/state/test_sharedfs.py through mfusepy (libfuse 3), mounted as root."""

from __future__ import annotations

import errno
import os
import sys

import mfusepy as fuse


class Passthrough(fuse.Operations):
    def __init__(self, root):
        self.root = root
    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))
    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._p(path))
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                                            "st_atime", "st_mtime", "st_ctime", "st_ino")}
    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))
    def _open(self, path, flags, fi, mode=None):
        try:
            fd = os.open(self._p(path), flags, mode) if mode is not None else os.open(self._p(path), flags)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        fi.fh = fd
        fi.direct_io = 1
        return 0
    def open(self, path, fi):
        return self._open(path, fi.flags, fi)
    def create(self, path, mode, fi):
        return self._open(path, fi.flags | os.O_CREAT, fi, mode)
    def read(self, path, size, offset, fi):
        return os.pread(fi.fh, size, offset)
    def write(self, path, data, offset, fi):
        return os.pwrite(fi.fh, data, offset)
    def truncate(self, path, length, fh=None):
        return self._call(os.truncate, path, length)
    def release(self, path, fi):
        os.close(fi.fh)
        return 0
    def flush(self, path, fi):
        return 0
    def fsync(self, path, datasync, fi):
        os.fsync(fi.fh)
        return 0
    def unlink(self, path):
        return self._call(os.unlink, path)
    def rmdir(self, path):
        return self._call(os.rmdir, path)
    def mkdir(self, path, mode):
        return self._call(os.mkdir, path, mode)
    def rename(self, old, new, flags=0):
        return self._call(os.rename, old, self._p(new))
    def chmod(self, path, mode):
        return self._call(os.chmod, path, mode)
    def chown(self, path, uid, gid):
        return 0
    def utimens(self, path, times=None):
        return self._call(os.utime, path, times)
    def symlink(self, target, source):
        try:
            os.symlink(source, self._p(target))
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return 0
    def _call(self, function, path, *args, **kwargs):
        try:
            function(self._p(path), *args, **kwargs)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from None
        return 0
    def readlink(self, path):
        return os.readlink(self._p(path))
    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0
    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                            "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

if __name__ == "__main__":  # nommapfs.py BACKING MOUNTPOINT (foreground; unmount to end)
    fuse.FUSE(Passthrough(sys.argv[1]), sys.argv[2], foreground=True, raw_fi=True, nothreads=False,
              fsname="nommapfs")
