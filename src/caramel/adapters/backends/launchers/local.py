"""Scripts run on this machine by /bin/sh, or `$JUBE_EXEC_SHELL` as JUBE allows.

Each script runs in a process group of its own, so a time limit or a stop ends exactly that
workpackage's processes, never what an earlier workpackage left running in the background (which
lives on, as under JUBE). Three ways to that group, the cheapest the shell allows (`_grouping`):

- JOBS (bash keeps job control without a terminal): one long-lived shell per script running at the
  same time; with `set -m` each script it starts in the background is a group of its own, without
  starting a program for it;
- TERMINAL (dash, Debian's /bin/sh, turns job control on only with a controlling terminal): the
  same long-lived shell, given a terminal for `set -m` and hung up at once (bench closes the
  terminal's other end), so it keeps job control while no do ever has a terminal: /dev/tty cannot
  be opened (ENXIO), as in a batch job;
- SPAWN (a shell without job control, or a system without pseudo-terminals or /proc): bench starts
  each script's shell itself, `sh -s` in a group of its own (posix_spawn: one `exec`, no `setsid`
  program), the script on its stdin.

The script's markers go to descriptor 9 (engine.marker), a pipe only bench reads; the shells' own
complaints (stderr, and the script's stdout) go to a file bench reads when a script fails (a
long-lived shell's own reports of its jobs go nowhere).

One watcher per launcher (per bench), started with the first script, reads a pipe only bench
holds. If bench dies, even by SIGKILL, the watcher sees end of file and stops every script still
running as bench would (SIGTERM to its group again and again for CARAMEL_KILL_GRACE seconds, so a
do between two commands ends at the next and the script records what finished; then SIGKILL), so
no do of a dead bench runs on unrecorded. It finds them by their command line: every script's
shell (and the long-lived shell, whose jobs share its command line) carries the launcher's tag as
its argument, and leads its group; a do's processes lead none, and what an ended script left in
the background has no leader with the tag any more: it is not watched. Nothing is told to the
watcher per script.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import selectors
import signal
import subprocess
import tempfile
import time

from caramel.adapters.backends.launchers import Launcher, Shell, register
from caramel.settings import current
from caramel.vocabulary import Word

CHANNEL_FD = 9  # engine.marker.CHANNEL_FD (a backend does not import the engine)
COMPLAINT_BYTES = 2048  # the end of the shell's complaints read for a failed script
STOP_LOOK = 0.1  # seconds between the watcher's signals to a dead bench's scripts
COMPLAINTS_FD = 8  # a long-lived shell's file for its jobs' complaints (its own stderr: nowhere)
PROBE_SECONDS = 10.0  # the longest a shell may take to answer a probe
TAG = "caramel-watched-"  # + the launcher's own hex: the argument that marks its scripts' shells
# What Python ignores and an `exec` keeps ignored: back to their defaults in a started shell, as
# subprocess's restore_signals does (else `yes | head -1` complains of a broken pipe).
RESTORED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


class Grouping(Word):
    """How each script gets a process group of its own."""

    JOBS = "jobs"  # the long-lived shell's job control: the script a background subshell
    TERMINAL = "terminal"  # the same, job control from a terminal hung up once it is on
    SPAWN = "spawn"  # bench starts the script's shell in a group of its own


# Asked of the shell once per bench: job control without a terminal (`set -m` takes: bash; dash
# turns it off) and the subshell's own process id (BASHPID), which the script's `P` marker names.
JOBS_PROBE = 'set -m 2>/dev/null; case $- in *m*) [ -n "$BASHPID" ];; *) false;; esac'


# Asked of a job of a long-lived shell given a terminal: whether it leads a group of its own (fields
# 1 and 5 of /proc/self/stat, read by the job itself: `read` runs in its process).
TERMINAL_PROBE = (
    f'read -r s </proc/self/stat; set -- $s; [ "$1" = "$5" ] && echo yes >&{CHANNEL_FD} || '
    f"echo no >&{CHANNEL_FD}\n"
)


@functools.cache
def _grouping(program: str) -> Grouping:
    """JOBS where `program` keeps job control without a terminal, TERMINAL where it needs one,
    else SPAWN."""
    if _keeps_job_control(program):
        return Grouping.JOBS
    if _jobs_with_a_terminal(program):
        return Grouping.TERMINAL
    return Grouping.SPAWN


def _keeps_job_control(program: str) -> bool:
    try:
        probe = subprocess.run(
            [program, "-c", JOBS_PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,  # no terminal, as the long-lived shell
            timeout=10,
        )
        return probe.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False  # the shell cannot start: the first script says so


def _jobs_with_a_terminal(program: str) -> bool:
    """Whether a job of `program` given a terminal (JobsShell) leads a group of its own."""
    if not os.path.exists("/proc/self/stat"):
        return False  # a job could not name its own process (script.py's `P` marker)
    try:
        shell = JobsShell(program, dict(os.environ), TAG + "probe", terminal=True)
    except OSError:
        return False  # no pseudo-terminal, or the shell cannot start
    try:
        shell.start(TERMINAL_PROBE)
        return _read_line(shell.fileno(), PROBE_SECONDS) == b"yes"
    finally:
        shell.kill()


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


def _read_line(fd: int, seconds: float) -> bytes:
    """The first line read from `fd` (without its newline); b"" at its end or after `seconds`."""
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        end = time.monotonic() + seconds
        while b"\n" not in data and selector.select(max(0.0, end - time.monotonic())):
            chunk = os.read(fd, 256)
            if not chunk:
                break
            data += chunk
    return data.split(b"\n", 1)[0] if b"\n" in data else b""


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


class _ChannelShell:
    """What both kinds of shell share: the process bench started (`pid`, reaped once), the pipe the
    scripts' markers come from and the file of the shells' complaints."""

    def __init__(self) -> None:
        self.pid = 0
        self._status: int | None = None  # the process's exit status, once reaped
        self._channel = -1
        self._complaints = _Complaints()

    def fileno(self) -> int:
        if self._channel < 0:
            raise ValueError("no script's channel is open")  # as a closed file's fileno()
        return self._channel

    def complaints(self) -> list[str]:
        return self._complaints.lines()

    def returncode(self) -> int:
        """The process's exit status (waited for); -1 where none was started."""
        self._reap()
        return self._status if self._status is not None else -1

    def _reap(self) -> None:
        if self.pid and self._status is None:
            self._status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


class SpawnedShell(_ChannelShell):
    """Starts each script as a shell of its own (`program -s TAG`), bench's child in a group of its
    own: `pid` is the running (or last) script's, which is also its group's id."""

    def __init__(self, program: str, env: dict[str, str], tag: str) -> None:
        super().__init__()  # `pid` and `_status`: the running (or last) script's
        self.program = program
        self.env = env
        self.tag = tag
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


class JobsShell(_ChannelShell):
    """A long-lived shell with job control (`program -s TAG`) that runs each script it is sent as a
    background job, a group of its own; the scripts' channel is its descriptor 9 (its stdout and
    stderr, which a do may reach as /proc/$$/fd/1, go nowhere). `terminal`: the shell
    turns job control on with a terminal bench gives it (its controlling terminal: opened after the
    new session), which bench hangs up as soon as `set -m` took (Grouping.TERMINAL)."""

    def __init__(self, program: str, env: dict[str, str], tag: str, terminal: bool) -> None:
        super().__init__()  # `pid` and `_status`: the long-lived shell's
        self.program = program
        self._bound = False  # bound to some cores for an earlier script
        script_r, self._script_w = os.pipe()
        self._channel, channel_w = os.pipe()
        script_r, channel_w = _above_channel(script_r), _above_channel(channel_w)
        complaints = _above_channel(os.dup(self._complaints.fd))
        child_ends = [script_r, channel_w, complaints]
        actions: list[tuple[object, ...]] = [
            (os.POSIX_SPAWN_DUP2, script_r, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
            (os.POSIX_SPAWN_DUP2, complaints, COMPLAINTS_FD),
            (os.POSIX_SPAWN_DUP2, channel_w, CHANNEL_FD),
        ]
        master = -1
        try:
            if terminal:
                master, slave = os.openpty()  # neither is inherited (PEP 446)
                child_ends.append(slave)
                actions += [(os.POSIX_SPAWN_OPEN, 3, os.ttyname(slave), os.O_RDWR, 0)]
                actions += [(os.POSIX_SPAWN_CLOSE, 3)]
            self.pid = os.posix_spawnp(
                program,
                [program, "-s", tag],
                env,
                file_actions=actions,
                setsid=True,  # no terminal's signal reaches it; a terminal opened is its own
                setsigdef=RESTORED_SIGNALS,
            )
        except OSError:
            for fd in [self._script_w, self._channel, master]:
                if fd >= 0:
                    os.close(fd)
            raise
        finally:
            for fd in child_ends:
                os.close(fd)
        if terminal:
            self._hang_up(master)
        self._send("set --; set -m\n")

    def _hang_up(self, master: int) -> None:
        """Job control on with the terminal, then the terminal hung up: its SIGHUP (to the
        shell, its session's leader) ignored, then back at its default for the jobs."""
        try:
            self._send(f"trap '' HUP; set -m; echo \"$-\" >&{CHANNEL_FD}\n")
            flags = _read_line(self._channel, PROBE_SECONDS)
        finally:
            os.close(master)
        if b"m" not in flags:  # never a shell whose scripts would share its group
            self.kill()
            raise OSError(f"{self.program} did not turn job control on")
        self._send("trap - HUP\n")

    def _send(self, text: str) -> None:
        _write_all(self._script_w, text.encode())

    def start(self, script: str, cpus: set[int] | None = None) -> None:
        """Run `script` in a background subshell (no program started) and wait for it: the next
        script comes after this one's EXIT marker. Bound to `cpus` (the shell, so the subshell it
        forks next), or again to every core bench may use after a bound one."""
        if cpus or self._bound:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self.pid, cpus or os.sched_getaffinity(0))
            self._bound = bool(cpus)
        self._send(
            f"(\n{script}) >&{COMPLAINTS_FD} 2>&{COMPLAINTS_FD} {COMPLAINTS_FD}>&- </dev/null &\n"
            "wait $!\n"
        )

    def kill(self) -> None:
        """The shell (its process group: its scripts have groups of their own)."""
        if self._status is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self._release()

    def close(self) -> None:
        """End the shell; what its do's left running in the background is left alone (as JUBE
        does)."""
        if self._script_w >= 0:
            with contextlib.suppress(OSError):
                self._send("exit 0\n")
        self._release()

    def _release(self) -> None:
        if self._script_w >= 0:
            os.close(self._script_w)
            self._script_w = -1
        self.returncode()
        if self._channel >= 0:
            os.close(self._channel)
            self._channel = -1
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
        grouping = _grouping(self.shell)
        if grouping is Grouping.JOBS:
            return JobsShell(self.shell, env, self.tag, terminal=False)
        if grouping is Grouping.TERMINAL:
            with contextlib.suppress(OSError):  # no pseudo-terminal left: bench starts the script
                return JobsShell(self.shell, env, self.tag, terminal=True)
        return SpawnedShell(self.shell, env, self.tag)

    def close(self) -> None:
        """Stop the watcher (every shell is closed: bench ends, or its run does)."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
