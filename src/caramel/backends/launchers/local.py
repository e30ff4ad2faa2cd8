"""Scripts run on this machine by long-lived shells: /bin/sh, or `$JUBE_EXEC_SHELL` as JUBE allows.

One shell serves many workpackages: each script is a subshell `( ... )` of it, so a workpackage
costs one fork instead of starting a new shell (JUBE starts one per do). The shell has its own
process group and a watcher reading a pipe only bench holds: if bench dies, even by SIGKILL, the
watcher sees end of file and kills the group, so no do of a dead bench runs on unrecorded.
"""

from __future__ import annotations

import os
import signal
import subprocess

from caramel.backends.launchers import Launcher, Shell, register


class LocalShell:
    def __init__(self, program: str, env: dict[str, str]) -> None:
        alive_r, self._alive_w = os.pipe()
        self.process = subprocess.Popen([program, "-s"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(alive_r,),
                                        bufsize=0)
        os.close(alive_r)
        self.pid = self.process.pid
        # /dev/fd/N, not <&N: POSIX shells (dash) only take one-digit descriptors in redirections.
        # The watcher ignores SIGTERM: bench's own stop (engine.runner) must not leave the group unwatched.
        self.send(f"{{ trap '' TERM; read __caramel_x </dev/fd/{alive_r}; kill -KILL 0; }} </dev/null >/dev/null 2>&1 &\n"
                  "__caramel_watcher=$!\n")

    def send(self, script: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(script.encode())

    def fileno(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def returncode(self) -> int:
        return self.process.wait()

    def kill(self) -> None:
        """The shell and everything it started (its process group)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._release()

    def close(self) -> None:
        """End the shell; what its do's left running in the background is left alone (as JUBE does)."""
        try:
            self.send('kill "$__caramel_watcher" 2>/dev/null; exit 0\n')
            assert self.process.stdin is not None
            self.process.stdin.close()
        except (BrokenPipeError, OSError, ValueError):  # ValueError: it was killed and released already
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


@register("local")
class LocalLauncher(Launcher):
    def __init__(self, shell: str | None = None) -> None:
        self.shell = shell or os.environ.get("JUBE_EXEC_SHELL", "").strip() or "/bin/sh"

    def open_shell(self, env: dict[str, str]) -> Shell:
        return LocalShell(self.shell, env)
