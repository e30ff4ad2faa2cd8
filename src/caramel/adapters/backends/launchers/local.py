"""Scripts run on this machine by /bin/sh, or `$JUBE_EXEC_SHELL` as JUBE allows.

Each script runs in a process group of its own, so a time limit or a stop ends exactly that
workpackage's processes, never what an earlier workpackage left running in the background (which
lives on, as under JUBE). Two ways to that group, the cheapest the shell allows (`_grouping`):

- SPAWN (dash, Debian's /bin/sh, which turns job control off without a terminal): bench starts
  each script's shell itself, `sh -s` in a group of its own (posix_spawn: one `exec`, no `setsid`
  program), the script on its stdin;
- JOBS (bash keeps job control without a terminal): one long-lived shell per script running at the
  same time; with `set -m` each script it starts in the background is a group of its own, without
  starting a program for it.

The script's markers go to descriptor 9 (engine.marker), a pipe only bench reads; the shells' own
complaints (stderr, and the script's stdout) go to a file bench reads when a script fails.

One watcher per launcher (per bench), started with the first script, reads a pipe only bench
holds. If bench dies, even by SIGKILL, the watcher sees end of file and stops every script still
running as bench would (SIGTERM to its group again and again for CARAMEL_KILL_GRACE seconds, so a
do between two commands ends at the next and the script records what finished; then SIGKILL), so
no do of a dead bench runs on unrecorded. It finds them by their command line: every script's
shell (and the long-lived shell) carries the launcher's tag as its argument, and leads its group;
a do's processes lead none, and what an ended script left in the background has no leader with
the tag any more: it is not watched. Nothing is told to the watcher per script.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import signal
import subprocess
import tempfile

from caramel.adapters.backends.launchers import Launcher, Shell, register
from caramel.settings import current
from caramel.vocabulary import Word

CHANNEL_FD = 9  # engine.marker.CHANNEL_FD (a backend does not import the engine)
COMPLAINT_BYTES = 2048  # the end of the shell's complaints read for a failed script
STOP_LOOK = 0.1  # seconds between the watcher's signals to a dead bench's scripts
TAG = "caramel-watched-"  # + the launcher's own hex: the argument that marks its scripts' shells
# What Python ignores and an `exec` keeps ignored: back to their defaults in a started shell, as
# subprocess's restore_signals does (else `yes | head -1` complains of a broken pipe).
RESTORED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


class Grouping(Word):
    """How each script gets a process group of its own."""

    JOBS = "jobs"  # the long-lived shell's job control: the script a background subshell
    SPAWN = "spawn"  # bench starts the script's shell in a group of its own


# Asked of the shell once per bench: job control without a terminal (`set -m` takes: bash; dash
# turns it off) and the subshell's own process id (BASHPID), which the script's `P` marker names.
JOBS_PROBE = 'set -m 2>/dev/null; case $- in *m*) [ -n "$BASHPID" ];; *) false;; esac'


@functools.cache
def _grouping(program: str) -> Grouping:
    """JOBS where `program` keeps job control without a terminal, else SPAWN."""
    try:
        probe = subprocess.run(
            [program, "-c", JOBS_PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,  # no terminal, as the long-lived shell
            timeout=10,
        )
        if probe.returncode == 0:
            return Grouping.JOBS
    except (OSError, subprocess.TimeoutExpired):
        pass  # the shell cannot start: the first script says so
    return Grouping.SPAWN


def _above_channel(fd: int) -> int:
    """`fd`, moved above every descriptor a script's shell is given (0-2 and CHANNEL_FD), so that
    placing one cannot overwrite another (bench holding few files gets low numbers)."""
    if fd > CHANNEL_FD:
        return fd
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, CHANNEL_FD + 1)
    os.close(fd)
    return high


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _watcher_program(tag: str, grace: float) -> str:
    """The watcher's shell program: once its stdin (bench's pipe) ends, SIGTERM every STOP_LOOK
    seconds for `grace` seconds to each group led by a process carrying `tag` (TAG and a hex;
    looked up again at each look), then SIGKILL to them."""
    looks = max(0, int(grace / STOP_LOOK))
    # The pattern `caramel[-]watched-...` does not match the command line of grep itself. Linux
    # lists command lines in /proc (field 5 of /proc/PID/stat is the group); pgrep elsewhere.
    pattern = tag.replace("-", "[-]", 1)
    return (
        "trap '' TERM INT HUP; read __caramel_x\n"
        "__caramel_leaders() { if [ -d /proc ]; then "
        f"grep -l -a -e '{pattern}' /proc/[0-9]*/cmdline 2>/dev/null | "
        "while IFS=/ read -r _ _ p _; do { read -r s </proc/$p/stat; } 2>/dev/null || continue; "
        'set -- ${s##*") "}; [ "$3" != "$p" ] || echo "$p"; done; '
        f"else for p in $(pgrep -f '{pattern}'); do "
        '[ "$(ps -o pgid= -p "$p" | tr -d " ")" != "$p" ] || echo "$p"; done; fi; }\n'
        f"__caramel_i=0; while [ $__caramel_i -le {looks} ]; do "
        "for g in $(__caramel_leaders); do kill -TERM -$g; done; "
        f"sleep {STOP_LOOK}; __caramel_i=$((__caramel_i + 1)); done\n"
        "for g in $(__caramel_leaders); do kill -KILL -$g; done\n"
    )


class Watcher:
    """The watcher of one launcher's scripts (see the module's docstring): a small shell in a
    session of its own, its stdin a pipe whose other end only bench holds."""

    def __init__(self, tag: str, grace: float) -> None:
        alive_r, self._alive_w = os.pipe()
        alive_r = _above_channel(alive_r)  # never 0-2: bench's own may be closed
        try:
            self.pid = os.posix_spawn(
                "/bin/sh",
                ["/bin/sh", "-c", _watcher_program(tag, grace)],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, alive_r, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                ],
                setsid=True,  # no terminal's signal reaches it
                setsigdef=RESTORED_SIGNALS,
            )
        finally:
            os.close(alive_r)

    def close(self) -> None:
        """End the watcher first: the end of bench's pipe is then no reason to stop anything."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self._alive_w)


class _Complaints:
    """Where a shell writes outside the do's files: its last lines are read when a script fails."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self.fd = self.file.fileno()
        self._seen = 0

    def lines(self) -> list[str]:
        """The last lines written since the last call."""
        try:
            size = os.fstat(self.fd).st_size
            start = max(self._seen, size - COMPLAINT_BYTES)
            text = os.pread(self.fd, size - start, start).decode(errors="replace")
        except (OSError, ValueError):
            return []
        self._seen = size
        return [line for line in text.splitlines() if line.strip()][-5:]


class SpawnedShell:
    """Starts each script as a shell of its own (`program -s TAG`), bench's child in a group of its
    own: `pid` is the running (or last) script's, which is also its group's id."""

    def __init__(self, program: str, env: dict[str, str], tag: str) -> None:
        self.program = program
        self.env = env
        self.tag = tag
        self.pid = 0
        self._channel = -1
        self._status: int | None = None  # the last script's exit status, once reaped
        self._complaints = _Complaints()
        self._complaints_fd = _above_channel(os.dup(self._complaints.fd))

    def start(self, script: str, cpus: set[int] | None = None) -> None:
        """Start `script` (a program for `sh -s` writing its markers to descriptor 9), bound to
        `cpus` if given (else where bench may run). It reads the script from a pipe, so it runs
        nothing before it is bound; `set --`: the tag is no positional parameter of a do."""
        self._reap()
        self._close_channel()
        script_r, script_w = os.pipe()
        channel_r, channel_w = os.pipe()
        script_r, channel_w = _above_channel(script_r), _above_channel(channel_w)
        try:
            # spawnp: a program named without a folder (JUBE_EXEC_SHELL=bash) is found on PATH,
            # as subprocess and JUBE find it
            self.pid = os.posix_spawnp(
                self.program,
                [self.program, "-s", self.tag],
                self.env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, script_r, 0),
                    (os.POSIX_SPAWN_DUP2, self._complaints_fd, 1),
                    (os.POSIX_SPAWN_DUP2, self._complaints_fd, 2),
                    (os.POSIX_SPAWN_DUP2, channel_w, CHANNEL_FD),
                ],
                setpgroup=0,
                setsigdef=RESTORED_SIGNALS,
            )
        except OSError:
            for fd in (script_r, script_w, channel_r, channel_w):
                os.close(fd)
            raise
        os.close(script_r)
        os.close(channel_w)
        self._channel, self._status = channel_r, None
        try:
            if cpus:
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(self.pid, cpus)
            _write_all(script_w, b"set --\n" + script.encode())
        finally:
            os.close(script_w)

    def fileno(self) -> int:
        if self._channel < 0:
            raise ValueError("no script's channel is open")  # as a closed file's fileno()
        return self._channel

    def complaints(self) -> list[str]:
        return self._complaints.lines()

    def returncode(self) -> int:
        self._reap()
        return self._status if self._status is not None else -1

    def _reap(self) -> None:
        if self.pid and self._status is None:
            self._status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])

    def _close_channel(self) -> None:
        if self._channel >= 0:
            os.close(self._channel)
            self._channel = -1

    def kill(self) -> None:
        """The script's shell, while it is not reaped (only then is the id its own); its group is
        the runner's to stop (a time limit, a stop), as with a long-lived shell."""
        if self.pid and self._status is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)
        self.close()

    def close(self) -> None:
        """Release the last script's process and files; what its do's left running in the
        background is left alone (as JUBE does)."""
        self._reap()
        self._close_channel()
        if self._complaints_fd >= 0:
            os.close(self._complaints_fd)
            self._complaints_fd = -1
            self._complaints.file.close()


class JobsShell:
    """A long-lived shell with job control (`program -s TAG`) that runs each script it is sent as a
    background subshell, a group of its own; its stdout is the scripts' channel."""

    def __init__(self, program: str, env: dict[str, str], tag: str) -> None:
        self.program = program
        self._complaints = _Complaints()
        self._bound = False  # bound to some cores for an earlier script
        self.process = subprocess.Popen(
            [program, "-s", tag],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._complaints.file,
            start_new_session=True,
            bufsize=0,
        )
        self.pid = self.process.pid
        self._send("set --; set -m\n")

    def _send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())

    def start(self, script: str, cpus: set[int] | None = None) -> None:
        """Run `script` in a background subshell (no program started) and wait for it: the next
        script comes after this one's EXIT marker. Bound to `cpus` (the shell, so the subshell it
        forks next), or again to every core bench may use after a bound one."""
        if cpus or self._bound:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self.pid, cpus or os.sched_getaffinity(0))
            self._bound = bool(cpus)
        self._send(f"(\n{script}) {CHANNEL_FD}>&1 >&2 </dev/null &\nwait $!\n")

    def fileno(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def complaints(self) -> list[str]:
        return self._complaints.lines()

    def returncode(self) -> int:
        return self.process.wait()

    def kill(self) -> None:
        """The shell (its process group: its scripts have groups of their own)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self._release()

    def close(self) -> None:
        """End the shell; what its do's left running in the background is left alone (as JUBE
        does)."""
        # ValueError: it was killed and released already
        with contextlib.suppress(OSError, ValueError):
            self._send("exit 0\n")
            assert self.process.stdin is not None
            self.process.stdin.close()
        self._release()

    def _release(self) -> None:
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        self._complaints.file.close()


@register("local")
class LocalLauncher(Launcher):
    def __init__(self, shell: str | None = None) -> None:
        self.shell = shell or current().shell.strip() or "/bin/sh"
        self.tag = TAG + os.urandom(8).hex()
        self._watcher: Watcher | None = None

    def open_shell(self, env: dict[str, str]) -> Shell:
        if self._watcher is None:
            self._watcher = Watcher(self.tag, current().kill_grace)
        if _grouping(self.shell) is Grouping.JOBS:
            return JobsShell(self.shell, env, self.tag)
        return SpawnedShell(self.shell, env, self.tag)

    def close(self) -> None:
        """Stop the watcher (every shell is closed: bench ends, or its run does)."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
