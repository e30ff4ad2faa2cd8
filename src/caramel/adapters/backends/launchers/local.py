"""Scripts run on this machine by long-lived shells: /bin/sh, or `$JUBE_EXEC_SHELL` as JUBE allows.

One shell serves many workpackages: it starts each script as a shell of its own (`sh -s`, the
script in a here-document) in a process group of its own, so a time limit or a stop ends exactly
that workpackage's processes, never what an earlier workpackage left running in the background
(which lives on, as under JUBE). The group comes from the long-lived shell's job control where
`bash` is installed: bash is then the long-lived shell (it only starts scripts and runs the
watcher; every script, with its do's, runs in the configured shell), and with `set -m` each
script it starts in the background is a group of its own, without starting a program for it
(dash, Debian's /bin/sh, turns job control off without a terminal). Without bash each script is
started through `setsid` (a session, so a group, of its own: one more `exec`); with neither, the
scripts share their shell's group. The script's markers go to descriptor 9 (engine.marker), the
shell's stdout, which only bench reads; the shells' own complaints (stderr, and the script's
stdout) go to a file bench reads when a script fails.

Each shell has one watcher, started with its first script, reading a pipe only bench holds. If
bench dies, even by SIGKILL, the watcher sees end of file and stops the script running then (its
shell's child: /proc lists it) as bench would (SIGTERM to its group again and again for
CARAMEL_KILL_GRACE seconds, so a do between two commands ends at the next and the script records
what finished; then SIGKILL), and ends its shell, so no do of a dead bench runs on unrecorded.
What an ended script left in the background is not watched. A shell that bench closes ends its
watcher first. One watcher per shell, not one per script: a workpackage costs the processes of its
script and its do's only.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shlex
import shutil
import signal
import subprocess
import tempfile

from caramel.adapters.backends.launchers import Launcher, Shell, register
from caramel.settings import current
from caramel.vocabulary import Word

CHANNEL_FD = 9  # engine.marker.CHANNEL_FD (a backend does not import the engine)
COMPLAINT_BYTES = 2048  # the end of the shell's complaints read for a failed script
STOP_LOOK = 0.1  # seconds between the watcher's signals to a dead bench's script


class Grouping(Word):
    """How the long-lived shell gives each script a process group of its own."""

    JOBS = "jobs"  # its job control: the script a background subshell, a group of its own
    SETSID = "setsid"  # the script a shell of its own started through the `setsid` program
    NONE = "none"  # no way here: the scripts share their shell's group


# Asked of the shell once per bench: job control without a terminal (`set -m` takes: bash; dash
# turns it off) and the subshell's own process id (BASHPID), which the script's `P` marker names.
JOBS_PROBE = 'set -m 2>/dev/null; case $- in *m*) [ -n "$BASHPID" ];; *) false;; esac'


@functools.cache
def _grouping(program: str, path: str) -> tuple[Grouping, str]:
    """The cheapest way to a group per script for `program` (its `setsid` program's path with
    SETSID, else "")."""
    try:
        probe = subprocess.run(
            [program, "-c", JOBS_PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,  # no terminal, as the long-lived shell
            timeout=10,
        )
        if probe.returncode == 0:
            return Grouping.JOBS, ""
    except (OSError, subprocess.TimeoutExpired):
        pass  # the shell cannot start: the first script says so, as before
    setsid = shutil.which("setsid", path=path)
    return (Grouping.SETSID, setsid) if setsid else (Grouping.NONE, "")


class LocalShell:
    def __init__(self, program: str, env: dict[str, str]) -> None:
        self.program = program
        self._grouping, self._setsid = _grouping(program, env.get("PATH") or os.defpath)
        low_r, alive_w = os.pipe()
        self._alive_w: int | None = alive_w
        # Above every descriptor a script redirects (its channel is CHANNEL_FD): a pipe that landed
        # on 9 (bench holding a few more files open) would be the channel in the shell, and every
        # watcher would read end of file at once and stop its script.
        alive_r = fcntl.fcntl(low_r, fcntl.F_DUPFD, CHANNEL_FD + 1)
        os.close(low_r)
        self._alive_r = alive_r  # its number in the shell too (pass_fds keeps it)
        self._complaints = tempfile.TemporaryFile()
        self._watched = False  # the watcher starts with the first script
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
        its own; the shell's watcher starts with the first. The here-document's end carries the
        secret: no do's text can end it."""
        watcher = "" if self._watched else self._watcher(grace)
        if watcher and self._grouping is Grouping.JOBS:
            watcher += "set -m\n"  # after the watcher, which stays in the shell's group
        self._watched = True
        self.send(watcher + self._launch(script, secret))

    def _launch(self, script: str, secret: str) -> str:
        """The shell's command that runs `script` in a group of its own and waits for it. With job
        control a background subshell (no program started; it waits for it all the same, the
        next script comes after this one's EXIT marker); else a shell of its own (`setsid` where
        there is one) reading the script from a here-document whose end carries the secret, so
        no do's text can end it."""
        channel = f"{CHANNEL_FD}>&1 >&2"
        if self._grouping is Grouping.JOBS:
            return f"(\n{script}) {channel} </dev/null &\nwait $!\n"
        end = f"__caramel_script_{secret}"
        session = f"{shlex.quote(self._setsid)} " if self._setsid else ""
        return f"{session}{shlex.quote(self.program)} -s {channel} <<'{end}'\n{script}{end}\n"

    def _watcher(self, grace: float) -> str:
        """The shell's watcher: once bench's pipe ends, SIGTERM every STOP_LOOK seconds for `grace`
        seconds to the group of each script its shell runs (its children but itself: each a
        group leader, looked up again at each look, as a script may start meanwhile), then
        SIGKILL to them, then the shell itself (it starts no further script)."""
        # /dev/fd/N, not <&N: POSIX shells (dash) only take one-digit descriptors in redirections.
        looks = max(0, int(grace / STOP_LOOK))
        if self._grouping is not Grouping.NONE:
            # Linux lists a process's children in /proc; pgrep elsewhere. The watcher is a child
            # too: it leads no group, so the signal to "its group" finds none.
            children = (
                "for __caramel_k in $(cat /proc/$$/task/$$/children 2>/dev/null || pgrep -P $$); "
                'do case " $__caramel_g " in *" $__caramel_k "*) ;; '
                '*) __caramel_g="$__caramel_g $__caramel_k";; esac; done; '
            )
            signal_all = "for __caramel_p in $__caramel_g; do kill -{} -$__caramel_p; done; "
        else:  # the scripts share the shell's process group, the watcher's too
            children, signal_all = "", "kill -{} 0; "
        return (
            f"{{ trap '' TERM; read __caramel_x </dev/fd/{self._alive_r}; __caramel_g=; "
            f"__caramel_i=0; while [ $__caramel_i -le {looks} ]; do {children}"
            f"{signal_all.format('TERM')}sleep {STOP_LOOK}; "
            f"__caramel_i=$((__caramel_i + 1)); done; {signal_all.format('KILL')}kill -KILL $$; }} "
            f"</dev/null >/dev/null 2>&1 {CHANNEL_FD}>&- &\n__caramel_watcher=$!\n"
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
        """The shell (its process group: the shell and its watcher, its scripts have groups of
        their own)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._release()

    def close(self) -> None:
        """End the shell; what its do's left running in the background is left alone (as JUBE
        does)."""
        try:
            # its watcher first: the end of bench's pipe is then no reason to stop anything
            self.send('[ -z "$__caramel_watcher" ] || kill -KILL "$__caramel_watcher"; exit 0\n')
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
