"""Runs workpackage scripts on the backend's shells and follows their markers.

The runner keeps a few long-lived shells (one per workpackage running at the same time). The
engine starts a script with `start()` and collects ended ones with `wait()`; `run()` is the
blocking form used for `prepare` entries and shared do's.
"""

from __future__ import annotations

import os
import selectors
import time
from dataclasses import dataclass

from caramel.backends import Backend, Shell
from caramel.engine.script import Command, Outcome, Transcript, build_script

# Seconds a stopped script has to end on SIGTERM (and record the do's that finished) before SIGKILL.
STOP_GRACE = float(os.environ.get("CARAMEL_STOP_GRACE", "5"))


@dataclass
class Active:
    key: object  # what the engine wants back (a workpackage id)
    commands: list[Command]
    shell: Shell
    transcript: Transcript
    started: float
    stopped: bool = False  # `Runner.stop` ended it (a second stop does nothing)


class Runner:
    def __init__(self, backend: Backend, base_env: dict[str, str]) -> None:
        self.backend = backend
        self.base_env = base_env
        self.selector = selectors.DefaultSelector()
        self.active: dict[int, Active] = {}  # by the fd the shell's markers come from
        self.idle: list[Shell] = []
        self.blocking: Shell | None = None  # the shell of a `run()` in progress

    def __len__(self) -> int:
        return len(self.active)

    def _send(self, script: str) -> Shell:
        """An idle shell (or a new one) that took `script`."""
        for _attempt in range(2):
            shell = self.idle.pop() if self.idle else self.backend.open_shell(self.base_env)
            try:
                shell.send(script)
                return shell
            except (BrokenPipeError, OSError):  # that shell had died meanwhile: take another
                shell.kill()
        raise OSError("cannot start a shell")

    def start(self, key: object, commands: list[Command], env: dict[str, str], carry_file: str,
              dump_env: bool, record: tuple[str, int] | None = None) -> Active:
        shell = self._send(build_script(commands, carry_file, dump_env, env, self.base_env, record))
        entry = Active(key, commands, shell, Transcript(commands), time.time())
        self.active[shell.fileno()] = entry
        self.selector.register(shell.fileno(), selectors.EVENT_READ)
        return entry

    def wait(self, timeout: float | None = None) -> list[tuple[Active, Outcome]]:
        """Read markers until at least one script ended (or `timeout` passed); return the ended ones."""
        done: list[tuple[Active, Outcome]] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.active and not done:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = self.selector.select(left)
            if not events and deadline is not None:
                break
            for key, _mask in events:
                entry = self.active[key.fd]
                ended = self._read(entry)
                if ended is not None:
                    self.selector.unregister(key.fd)
                    del self.active[key.fd]
                    done.append((entry, ended))
        return done

    def _read(self, entry: Active) -> Outcome | None:
        """Feed what the shell wrote; the outcome once the script ended (or the shell died)."""
        data = os.read(entry.shell.fileno(), 65536)
        if data:
            entry.transcript.feed(data, time.time())
            if entry.transcript.exit_status is None:
                return None
            self.idle.append(entry.shell)
            return entry.transcript.close(entry.transcript.exit_status, time.time())
        # End of file: the shell itself died (a do killed it, or its process group).
        returncode = entry.shell.returncode()
        entry.shell.kill()
        return entry.transcript.close(returncode, time.time())

    def run(self, commands: list[Command], env: dict[str, str], carry_file: str, dump_env: bool,
            record: tuple[str, int] | None = None) -> Outcome:
        """Run one script to its end on its own shell (other shells are not read meanwhile)."""
        shell = self._send(build_script(commands, carry_file, dump_env, env, self.base_env, record))
        entry = Active(None, commands, shell, Transcript(commands), time.time())
        self.blocking = shell
        try:
            while True:
                outcome = self._read(entry)
                if outcome is not None:
                    return outcome
        finally:
            self.blocking = None

    def stop(self, entries: list[Active], grace: float = STOP_GRACE) -> list[tuple[Active, Outcome]]:
        """End these scripts with their shells' whole process groups: SIGTERM first (a do ends, its
        script records what finished and exits), SIGKILL for what is left after `grace` seconds.
        Their markers are read to the end, so each outcome tells which do's finished. Entries already
        stopped are left out (stopping twice is harmless)."""
        entries = [entry for entry in entries if not entry.stopped]
        for entry in entries:
            entry.stopped = True
            self._forget(entry)
            entry.shell.terminate()
        pending = {entry.shell.fileno(): entry for entry in entries}
        deadline = time.monotonic() + grace
        with selectors.DefaultSelector() as selector:
            for fd in pending:
                selector.register(fd, selectors.EVENT_READ)
            while pending and time.monotonic() < deadline:
                for key, _mask in selector.select(max(0.0, deadline - time.monotonic())):
                    entry = pending[key.fd]
                    data = os.read(key.fd, 65536)
                    if data:
                        entry.transcript.feed(data, time.time())
                    else:  # every process of the script has ended
                        selector.unregister(key.fd)
                        del pending[key.fd]
        done = []
        for entry in entries:
            entry.shell.kill()  # what is left of the group (background processes, a do ignoring SIGTERM)
            done.append((entry, entry.transcript.close(entry.shell.returncode(), time.time())))
        return done

    def _forget(self, entry: Active) -> None:
        """No longer read `entry`'s shell in `wait` (idempotent: a second stop is harmless)."""
        fd = entry.shell.fileno()
        if self.active.pop(fd, None) is not None:
            self.selector.unregister(fd)

    def kill_all(self, grace: float = STOP_GRACE) -> list[tuple[Active, Outcome]]:
        """Stop every running script (bench is interrupted); see `stop`."""
        stopped = self.stop(list(self.active.values()), grace)
        if self.blocking is not None:
            self.blocking.terminate()
            self.blocking.kill()
            self.blocking = None
        return stopped

    def close(self) -> None:
        self.kill_all()
        for shell in self.idle:
            shell.close()
        self.idle.clear()
        self.selector.close()
