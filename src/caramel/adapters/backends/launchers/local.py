"""Scripts run on this machine by long-lived shells: /bin/sh, or `$JUBE_EXEC_SHELL` as JUBE allows.

One shell serves many workpackages: it starts each script as a shell of its own (`sh -s`, the
script in a here-document), in a new session (`setsid`, where there is one), so every workpackage's
processes form one process group: a time limit or a stop ends exactly those, never what an earlier
workpackage left running in the background (which lives on, as under JUBE). The script's markers
go to descriptor 9 (engine.marker), the shell's stdout, which only bench reads; the shells' own
complaints (stderr, and the script's stdout) go to a file bench reads when a script fails.

Each script starts a watcher in its session, reading a pipe only bench holds: if bench dies, even
by SIGKILL, the watcher sees end of file and stops the script's group as bench would (SIGTERM again
and again for CARAMEL_KILL_GRACE seconds, so a do between two commands ends at the next and the
script records what finished; then SIGKILL), so no do of a dead bench runs on unrecorded. A script
that ended ends its watcher: what it left in the background is no longer watched.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import signal
import subprocess
import tempfile

from caramel.adapters.backends.launchers import Launcher, Shell, register
from caramel.settings import current

CHANNEL_FD = 9  # engine.marker.CHANNEL_FD (a backend does not import the engine)
COMPLAINT_BYTES = 2048  # the end of the shell's complaints read for a failed script
STOP_LOOK = 0.1  # seconds between the watcher's signals to a dead bench's script


class LocalShell:
    def __init__(self, program: str, env: dict[str, str]) -> None:
        self.program = program
        self._setsid = shutil.which("setsid", path=env.get("PATH") or os.defpath)
        low_r, alive_w = os.pipe()
        self._alive_w: int | None = alive_w
        # Above every descriptor a script redirects (its channel is CHANNEL_FD): a pipe that landed
        # on 9 (bench holding a few more files open) would be the channel in the shell, and every
        # watcher would read end of file at once and stop its script.
        alive_r = fcntl.fcntl(low_r, fcntl.F_DUPFD, CHANNEL_FD + 1)
        os.close(low_r)
        self._alive_r = alive_r  # its number in the shell too (pass_fds keeps it)
        self._complaints = tempfile.TemporaryFile()
        self._complaints_seen = 0
        self.process = subprocess.Popen(
            [program, "-s"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._complaints,
            start_new_session=True,
            pass_fds=(alive_r,),
            bufsize=0,
        )
        os.close(alive_r)
        self.pid = self.process.pid

    def send(self, script: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(script.encode())

    def start(self, script: str, secret: str, grace: float) -> None:
        """Run `script` (a program for `sh -s` writing its markers to descriptor 9) in a session of
        its own, with its watcher. The here-document's end carries the secret: no do's text can end
        it."""
        end = f"__caramel_script_{secret}"
        # /dev/fd/N, not <&N: POSIX shells (dash) only take one-digit descriptors in redirections.
        looks = max(0, int(grace / STOP_LOOK))
        watcher = (
            f"{{ trap '' TERM; read __caramel_x </dev/fd/{self._alive_r}; kill -TERM 0; __caramel_i=0; "
            f"while [ $__caramel_i -lt {looks} ]; do sleep {STOP_LOOK}; kill -TERM 0; "
            f"__caramel_i=$((__caramel_i + 1)); done; kill -KILL 0; }} </dev/null >/dev/null 2>&1 "
            f"{CHANNEL_FD}>&- &\n__caramel_watcher=$!\n"
        )
        session = f"{shlex.quote(self._setsid)} " if self._setsid else ""
        self.send(
            f"{session}{shlex.quote(self.program)} -s {CHANNEL_FD}>&1 >&2 <<'{end}'\n{watcher}{script}{end}\n"
        )

    def fileno(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def complaints(self) -> list[str]:
        """The last lines the shell (or a script outside its do's) wrote since the last call."""
        try:
            size = os.fstat(self._complaints.fileno()).st_size
            start = max(self._complaints_seen, size - COMPLAINT_BYTES)
            text = os.pread(self._complaints.fileno(), size - start, start).decode(errors="replace")
        except (OSError, ValueError):
            return []
        self._complaints_seen = size
        return [line for line in text.splitlines() if line.strip()][-5:]

    def returncode(self) -> int:
        return self.process.wait()

    def kill(self) -> None:
        """The shell (its process group: the shell alone, its scripts have sessions of their own)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._release()

    def close(self) -> None:
        """End the shell; what its do's left running in the background is left alone (as JUBE
        does)."""
        try:
            self.send("exit 0\n")
            assert self.process.stdin is not None
            self.process.stdin.close()
        except (
            BrokenPipeError,
            OSError,
            ValueError,
        ):  # ValueError: it was killed and released already
            pass
        self._release()

    def _release(self) -> None:
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        if self._alive_w is not None:
            os.close(self._alive_w)
            self._alive_w = None
        self._complaints.close()


@register("local")
class LocalLauncher(Launcher):
    def __init__(self, shell: str | None = None) -> None:
        self.shell = shell or current().shell.strip() or "/bin/sh"

    def open_shell(self, env: dict[str, str]) -> Shell:
        return LocalShell(self.shell, env)
