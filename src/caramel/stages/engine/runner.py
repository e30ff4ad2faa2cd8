"""Runs workpackage scripts on the launcher's shells and follows their markers.

The runner keeps a few of the launcher's shells (one per workpackage running at the same time).
The engine starts a script with `start()` and collects ended ones with `wait()`; `run()` is the
blocking form used for `prepare` entries and shared do's.

A script may have a time limit: when it passes it, `kill_process_group` ends the script's process
group (the workpackage's processes, not what earlier ones left in the background: each script runs
in a process group of its own) with SIGTERM, then SIGKILL after a grace period, and the script's
outcome is `timed_out`. A script may be bound to some cores (copies of a workpackage run side by
side); one asked to run nowhere in particular costs no affinity call.

Limits count monotonic time (time.monotonic: an NTP step or a clock set by hand changes nothing),
and only time bench could see: when a wait for markers returns much later than asked (bench was
paused by SIGSTOP, the machine suspended), the overshoot is added to every running script's
deadline, and what the scripts said meanwhile is read before any deadline is checked. The times
stamped on commands (`Ran`) are wall-clock, for display and records only.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import time
from dataclasses import dataclass

from caramel.adapters.backends.launchers import Launcher, Shell
from caramel.settings import current
from caramel.stages.engine.script import (
    Command,
    Outcome,
    Status,
    Transcript,
    build_script,
    env_file_of,
)


@dataclass
class Active:
    # what the engine wants back (a workpackage id; -1: a script `Runner.run` runs on its own)
    key: int
    commands: list[Command]
    shell: Shell
    transcript: Transcript
    started: float  # time.monotonic() at its start
    limit: float = 0.0  # seconds the script may run (0: no limit)
    stopped: bool = False  # `Runner.stop` ended it (a second stop does nothing)
    fd: int = (
        -1
    )  # where its markers come from (kept: the shell's pipe may be closed when it is stopped)
    unseen: float = 0.0  # seconds bench could not see (paused) while it ran: they do not count

    @property
    def deadline(self) -> float | None:
        return self.started + self.unseen + self.limit if self.limit > 0 else None

    @property
    def pgid(self) -> int | None:
        """The script's process group (from its `P` marker), or None before it said it."""
        if self.transcript.pid is None:
            return None
        try:
            return os.getpgid(self.transcript.pid)
        except OSError:
            return None

    def groups(self) -> list[int]:
        """The process groups that stop this script: its own, and its shell's."""
        return [self.shell.pid] + [g for g in [self.pgid] if g is not None and g != self.shell.pid]


KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL ($CARAMEL_KILL_GRACE)
NUDGE = 0.05  # seconds between looks for processes a stopped do started after the signal
UNSEEN_SLACK = 1.0  # a wait returning this much later than asked: bench was paused meanwhile


def kill_grace() -> float:
    return current().kill_grace


class GroupStop:
    """SIGTERM to process groups, and to each process that starts in them afterwards.

    A do's shell ends its do on the signal (engine.script ON_TERM) once the command running then has
    ended; a process started after the signal (a do's next command, started before its shell saw
    it) is signalled by `nudge` with its parent. Other processes are signalled once: a program
    shutting down cleanly is not interrupted by a second SIGTERM."""

    def __init__(self, pgids: list[int]) -> None:
        self.seen: dict[int, set[int]] = {}
        self.pgids: list[int] = []
        for pgid in pgids:
            self.add(pgid)

    def add(self, pgid: int) -> None:
        """Stop one more group (a script that told its group after the stop began)."""
        if pgid in self.seen:
            return
        self.seen[pgid] = set(group_members([pgid])[pgid])
        try:
            os.killpg(pgid, signal.SIGTERM)
            self.pgids.append(pgid)
        except (ProcessLookupError, PermissionError):
            pass

    def nudge(self) -> bool:
        """Signal the groups' processes started since; whether any process of the groups still
        runs."""
        alive = False
        for pgid, pids in group_members(self.pgids).items():
            alive = alive or bool(pids)
            seen = self.seen[pgid]
            new = set(pids) - seen
            for pid in new | {pids[pid] for pid in new if pids[pid] in pids}:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
            seen.update(new)
        return alive


def kill_process_group(pgid: int, grace: float | None = None) -> None:
    """End a do's process group: SIGTERM, then SIGKILL for whatever is left after `grace`
    seconds."""
    if grace is None:
        grace = kill_grace()
    stopping = GroupStop([pgid])
    if not stopping.pgids:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if not stopping.nudge():
            return
        time.sleep(NUDGE)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def group_members(pgids: list[int]) -> dict[int, dict[int, int]]:
    """The processes (not zombies) of each of these process groups with their parents' ids, from
    /proc (none without it)."""
    members: dict[int, dict[int, int]] = {pgid: {} for pgid in pgids}
    if not pgids or not os.path.isdir("/proc"):
        return members
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        group = members.get(int(fields[2]))
        if group is not None and fields[0] != "Z":
            group[int(entry)] = int(fields[1])
    return members


def _drain(pending: dict[int, Active], deadline: float, stopping: GroupStop) -> None:
    """Read these shells' output (markers into their transcripts) until each ends or `deadline`,
    signalling what their groups start meanwhile (`GroupStop.nudge`)."""
    with selectors.DefaultSelector() as selector:
        for fd in pending:
            selector.register(fd, selectors.EVENT_READ)
        nudged = 0.0
        while pending and time.monotonic() < deadline:
            if (
                time.monotonic() - nudged >= NUDGE
            ):  # a look at /proc costs a few ms: not on every read
                stopping.nudge()
                nudged = time.monotonic()
            for key, _mask in selector.select(min(NUDGE, max(0.0, deadline - time.monotonic()))):
                try:
                    data = os.read(key.fd, 65536)
                except OSError:
                    data = b""
                entry = pending[key.fd]
                if data:
                    entry.transcript.feed(data, time.time())
                    if entry.pgid is not None:
                        stopping.add(entry.pgid)  # it told its group after the stop began
                elif not data:  # every process of the script has ended
                    selector.unregister(key.fd)
                    del pending[key.fd]


class Runner:
    def __init__(self, launcher: Launcher, base_env: dict[str, str]) -> None:
        self.launcher = launcher
        self.base_env = base_env
        self.secret = os.urandom(16).hex()  # what this bench's markers carry (engine.marker)
        self.selector = selectors.DefaultSelector()
        self.active: dict[int, Active] = {}  # by the fd the shell's markers come from
        self.idle: list[Shell] = []
        self.blocking: Active | None = None  # the script of a `run()` in progress
        self.closed = False  # close() ran: no shell starts here any more

    def __len__(self) -> int:
        return len(self.active)

    def _send(self, script: str, cpus: set[int] | None = None) -> Shell:
        """An idle shell (or a new one) that took `script` (to run on `cpus`, default all); the
        error of the last try where none could (a shell program that does not exist)."""
        error = OSError("cannot start a shell")
        for _attempt in range(2):
            shell = self.idle.pop() if self.idle else self.launcher.open_shell(self.base_env)
            try:
                shell.start(script, cpus)
                return shell
            except OSError as exc:  # that shell had died meanwhile (a broken pipe): take another
                shell.kill()
                error = exc
        raise error

    def _entry(
        self,
        key: int,
        commands: list[Command],
        env: dict[str, str],
        carry_file: str,
        dump_env: bool,
        limit: float,
        cpus: set[int] | None,
        record: tuple[str, str] | None,
    ) -> Active:
        script = build_script(
            commands, carry_file, dump_env, env, self.base_env, record, self.secret
        )
        shell = self._send(script, cpus)
        transcript = Transcript(commands, self.secret, env_file_of(carry_file))
        return Active(key, commands, shell, transcript, time.monotonic(), limit, fd=shell.fileno())

    def start(
        self,
        key: int,
        commands: list[Command],
        env: dict[str, str],
        carry_file: str,
        dump_env: bool,
        limit: float = 0.0,
        cpus: set[int] | None = None,
        record: tuple[str, str] | None = None,
    ) -> Active:
        entry = self._entry(key, commands, env, carry_file, dump_env, limit, cpus, record)
        self.active[entry.fd] = entry
        self.selector.register(entry.fd, selectors.EVENT_READ)
        return entry

    def wait(self, timeout: float | None = None) -> list[tuple[Active, Outcome]]:
        """Read markers until at least one script ended (or `timeout` passed); return the ended
        ones."""
        done: list[tuple[Active, Outcome]] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.active and not done:
            events = self._select(self._time_left(deadline))
            done += self._take(events)  # what the scripts said comes before any deadline
            done += self._expire()
            if not events and deadline is not None and time.monotonic() >= deadline:
                break
        return done

    def _time_left(self, deadline: float | None) -> float | None:
        """Seconds to wait for markers: until `deadline` or the nearest time limit of a running
        script (None: no end)."""
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        limits = [e.deadline for e in self.active.values() if e.deadline is not None]
        if limits:
            to_limit = max(0.0, min(limits) - time.monotonic())
            left = to_limit if left is None else min(left, to_limit)
        return left

    def _select(self, left: float | None) -> list[tuple[selectors.SelectorKey, int]]:
        """The shells that wrote, waiting at most `left` seconds (a wait that came back late: bench
        was paused, see _discount)."""
        asked = time.monotonic()
        events = self.selector.select(left)
        if left is not None:
            self._discount(time.monotonic() - asked - left)
        if not events:  # a wait cut short by a signal (SIGCONT) past its end reports nothing
            events = self.selector.select(0)  # so look again
        return events

    def _take(
        self, events: list[tuple[selectors.SelectorKey, int]]
    ) -> list[tuple[Active, Outcome]]:
        """Read the shells that wrote; the scripts that ended, with their outcomes."""
        done = []
        for key, _mask in events:
            entry = self.active.get(key.fd)
            if entry is None:
                continue
            ended = self._read(entry)
            if ended is not None:
                self.selector.unregister(key.fd)
                del self.active[key.fd]
                done.append((entry, ended))
        return done

    def _discount(self, overshoot: float) -> None:
        """A wait that came back `overshoot` seconds late: bench was paused; that time does not
        count."""
        if overshoot > UNSEEN_SLACK:
            for entry in self.active.values():
                entry.unseen += overshoot

    def _expire(self) -> list[tuple[Active, Outcome]]:
        """Kill the scripts past their time limit; their outcome is `timed_out`."""
        now = time.monotonic()
        out = []
        for fd, entry in list(self.active.items()):
            if entry.deadline is None or now < entry.deadline:
                continue
            self._await_pid(entry)
            for group in reversed(entry.groups()):  # the script's own group first
                kill_process_group(group)
            self.selector.unregister(fd)
            del self.active[fd]
            entry.shell.kill()
            outcome = entry.transcript.close(-9, time.time())
            outcome.status = Status.TIMED_OUT
            outcome.timed_out = entry.limit
            out.append((entry, outcome))
        return out

    def _await_pid(self, entry: Active, wait: float = 1.0) -> None:
        """Read the script's first markers if its process group is not known yet (it says it
        first)."""
        end = time.monotonic() + wait
        while entry.transcript.pid is None and time.monotonic() < end:
            with selectors.DefaultSelector() as selector:
                selector.register(entry.fd, selectors.EVENT_READ)
                if not selector.select(max(0.0, end - time.monotonic())):
                    return
            data = os.read(entry.fd, 65536)
            if not data:
                return
            entry.transcript.feed(data, time.time())

    def _read(self, entry: Active) -> Outcome | None:
        """Feed what the shell wrote; the outcome once the script ended (or the shell died)."""
        data = os.read(entry.shell.fileno(), 65536)
        if data:
            entry.transcript.feed(data, time.time())
            if entry.transcript.exit_status is None:
                return None
            entry.transcript.diagnostics = entry.shell.complaints()
            self.idle.append(entry.shell)
            return entry.transcript.close(entry.transcript.exit_status, time.time())
        # End of file: the shell itself died (a do killed it, or its process group).
        returncode = entry.shell.returncode()
        entry.transcript.diagnostics = entry.shell.complaints()
        entry.shell.kill()
        return entry.transcript.close(returncode, time.time())

    def run(
        self,
        commands: list[Command],
        env: dict[str, str],
        carry_file: str,
        dump_env: bool,
        record: tuple[str, str] | None = None,
    ) -> Outcome:
        """Run one script to its end on its own shell (other shells are not read meanwhile)."""
        entry = self._entry(-1, commands, env, carry_file, dump_env, 0.0, None, record)
        self.blocking = entry
        try:
            while True:
                outcome = self._read(entry)
                if outcome is not None:
                    return outcome
        finally:
            self.blocking = None

    def stop(
        self, entries: list[Active], grace: float | None = None
    ) -> list[tuple[Active, Outcome]]:
        """End these scripts with their whole process groups: SIGTERM first (a do ends, its
        script records what finished and exits), SIGKILL for what is left after `grace` seconds.
        Their markers are read to the end, so each outcome tells which do's finished. Entries
        already stopped are left out (stopping twice is harmless)."""
        if grace is None:
            grace = kill_grace()
        entries = [entry for entry in entries if not entry.stopped]
        for entry in entries:
            entry.stopped = True
            self._forget(entry)
            if entry.shell in self.idle:  # an interruption right after its script ended
                self.idle.remove(entry.shell)
        stopping = GroupStop([group for entry in entries for group in entry.groups()])
        pending = {}
        for entry in entries:
            with contextlib.suppress(
                ValueError
            ):  # a shell already released (it had died) has nothing to read
                pending[entry.shell.fileno()] = entry
        _drain(pending, time.monotonic() + grace, stopping)
        _kill_groups(stopping.pgids)  # what is left (background processes, a do ignoring SIGTERM)
        done = []
        for entry in entries:
            entry.shell.kill()
            entry.transcript.diagnostics = []
            done.append((entry, entry.transcript.close(entry.shell.returncode(), time.time())))
        return done

    def _forget(self, entry: Active) -> None:
        """No longer read `entry`'s shell in `wait` (idempotent: a second stop is harmless)."""
        if self.active.get(entry.fd) is entry:
            del self.active[entry.fd]
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(entry.fd)

    def kill_all(self, grace: float | None = None) -> list[tuple[Active, Outcome]]:
        """Stop every running script (bench is interrupted); see `stop`. A blocking `run()` in
        progress (a prepare or a shared do) is stopped the same way."""
        if grace is None:
            grace = kill_grace()
        stopped = self.stop(list(self.active.values()), grace)
        if self.blocking is not None:
            entry, self.blocking = self.blocking, None
            self.stop([entry], grace)
        return stopped

    def close(self) -> None:
        self.kill_all()
        for shell in self.idle:
            shell.close()
        self.idle.clear()
        self.launcher.close()
        self.selector.close()
        self.closed = True


def _kill_groups(pgids: list[int]) -> None:
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
