"""One script per workpackage run: all its `do`s in sequence, reporting through markers.

JUBE starts one `sh -c "DO && env > file"` per `do` and carries the environment from one to the
next. caramel runs each workpackage's script in a process group of its own (see
backends.launchers.local: a job-control subshell of a long-lived shell where the shell keeps job
control without a terminal, as bash; else a shell of its own, `sh -s`, that bench starts in a new
group), and keeps JUBE's semantics where they matter:

- the workpackage's environment is set at the top of the script (only what differs from the
  shell's own, so a plain workpackage costs nothing there);
- each `do`, the last too, runs in a subshell of its own, in its work folder, from its own `eval`,
  as a plain list (its status taken afterwards): `set -e`, `pipefail` and traps act in it as in
  JUBE's separate shells, and a `cd`, an `exit`, a `set -e` or a syntax error stays inside it;
  the script's shell runs no do's text, only the bookkeeping between them (one process per do);
- what a `do` exports is carried to the next one (`export -p` written by its subshell, read back);
- the script writes `@caramel <secret> ...` markers (start, exit code, waiting, break, error,
  environment, end) on the engine's channel (engine.marker: a descriptor no do inherits) and bench
  stamps their times when they arrive; the final environment goes to a file, never the channel.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from caramel.stages.engine.marker import (
    CHANNEL_FD,
    MAX_LINE,
    PREFIX,
    ChannelError,
    MarkerKind,
    parse_marker,
)
from caramel.stages.engine.tails import output_tails
from caramel.vocabulary import Role, Word

# What SIGTERM does while a do's text runs (bench stops the run; engine.runner): it ends the do,
# which has not finished, is not recorded and runs again. Wherever the signal lands: a shell cannot
# tell "after the do's last command" from "inside it" when what the signal ended was a command
# substitution (`echo "$(cat token)"`: cat dies, echo succeeds, $? is 0), and taking such a do as
# finished records as done a do that did not do its work. So a stop in the microseconds between a
# do's last command and the point where its shell stops listening runs that do once more: at least
# once, never a do counted as finished that may not have (docs/reliability.md).
ON_TERM = "exit 143"

# Every do runs with the channel closed: nothing it starts (in the background too) can write there.
CLOSE_CHANNEL = f"{CHANNEL_FD}>&-"


def env_file_of(carry_file: str) -> str:
    """Where a script writes the environment it ends with (`ENV` marker): a file, never the
    channel."""
    return f"{carry_file}.env"


def _dump_env(carry_file: str) -> str:
    env_file = shlex.quote(env_file_of(carry_file))
    return f"command export -p >{env_file} || return; __caramel_mark ENV"


@dataclass
class Command:
    """One `do` (or `prepare`) ready to run: substituted text and absolute paths."""

    op: int  # index of the do in its step (of the entry in its fileset, for a prepare)
    cycle: int
    text: str  # "" when there is nothing to run (the files are still checked)
    cwd: str
    stdout: str
    stderr: str
    role: Role = Role.DO  # what it is to its step
    done_file: str = ""
    error_file: str = ""
    break_file: str = ""
    make_cwd: bool = False


def carry_path(carry_file: str, cmd: Command) -> str:
    """Where do `cmd` leaves its exports: one file per do (and per prepare), so recovery finds the
    environment after the last one that finished (see engine.recovery)."""
    if cmd.role == Role.PREPARE:
        return f"{carry_file}.prepare.{cmd.op}"
    return f"{carry_file}.{cmd.cycle}.{cmd.op}"


def build_script(
    commands: list[Command],
    carry_file: str,
    dump_env: bool,
    env: dict[str, str] | None = None,
    base_env: dict[str, str] | None = None,
    record: tuple[str, str] | None = None,
    secret: str = "0",
) -> str:
    """The program (for `sh -s`, with the channel on CHANNEL_FD) running `commands` in order, in
    environment `env` (given as its difference from `base_env`, the shell's own); `dump_env` writes
    the final environment to `env_file_of(carry_file)`. Its markers carry `secret` (engine.marker).

    `record` (file, tag): after each do the script's shell itself appends `E tag cycle op status`
    to that file, so a do's end survives bench (see engine.recovery). SIGTERM (bench stopping the
    run) ends the running do (see ON_TERM); the script's shell notes it, records what finished and
    starts no further do. A `prepare` is recorded the same way and always keeps its exports in its
    carry file (a run that goes on after it needs them)."""
    out = [_header(secret)]
    if env is not None and base_env is not None:
        out.append(_env_changes(env, base_env))
    for i, cmd in enumerate(commands):
        if cmd.text:
            carried = _env_read_after(i, commands, dump_env)
            out.append(_run_do(i, cmd, carry_file if carried else None, record))
        out.append(_file_checks(i, cmd, dump_env, carry_file))
    if dump_env:
        out.append(_dump_env(carry_file) + "\n")
    out.append(
        "__caramel_mark END\n}\n__caramel_body\n__caramel_rc=$?\n"
        "__caramel_mark EXIT $__caramel_rc\n"
    )
    return "".join(out)


def _env_read_after(i: int, commands: list[Command], dump_env: bool) -> bool:
    """Whether the environment do `i` exports is read after it: by the next do, the final dump
    or its done-file wait; not after the last do (a prepare's always: a run going on needs it)."""
    cmd = commands[i]
    last = i == len(commands) - 1 and cmd.role != Role.PREPARE
    return not last or dump_env or bool(cmd.done_file)


def _header(secret: str) -> str:
    """The script's marker function, its stop trap, its `P` marker and the start of its body."""
    # The script's shell outlives a stop signal (it notes it, records what finished and starts no
    # further do) and always says EXIT: it runs no do's text, and `command` keeps a special builtin
    # that fails (`.` of a carry file a do removed) from ending the shell: it ends the script, with
    # its status. Its body is a function: `return` ends the script without a process of its own.
    return (
        f"__caramel_mark() {{ printf '{PREFIX} {secret} %s\\n' \"$*\" >&{CHANNEL_FD}; }}\n"
        # The script's own process (its group's id): a job of a long-lived shell (launchers.local)
        # knows its own as BASHPID (bash) or as the folder /proc/self is to it (dash: `cd -P`, a
        # builtin, resolves the link in the job's own process, and the job goes back at once;
        # `read` of /proc/self/stat takes a system call per byte), a shell of its own as $$ too.
        "trap '__caramel_stop=1' TERM\n__caramel_pid=$$\n"
        '[ -n "$BASHPID" ] || ! cd -P /proc/self 2>/dev/null || '
        '{ __caramel_pid=${PWD##*/}; cd "$OLDPWD"; }\n'
        "__caramel_mark P ${BASHPID:-$__caramel_pid}\n__caramel_body() {\n"
    )


def _env_changes(env: dict[str, str], base_env: dict[str, str]) -> str:
    """The lines that turn the shell's environment `base_env` into `env` (names a shell takes)."""
    q = shlex.quote
    unset = [
        f"command unset {name}\n" for name in base_env if name not in env and name.isidentifier()
    ]
    export = [
        f"command export {name}={q(value)}\n"
        for name, value in env.items()
        if base_env.get(name) != value and name.isidentifier()
    ]
    return "".join(unset + export)


def _run_do(i: int, cmd: Command, carry_file: str | None, record: tuple[str, str] | None) -> str:
    """Do `i` of the script between its markers: its folder made where asked, its end recorded
    (`record`), the environment it exported read back where a carry file is kept (`carry_file`),
    and the script ended with its status when it failed."""
    q = shlex.quote
    out = []
    if cmd.make_cwd:
        out.append(f"[ -d {q(cmd.cwd)} ] || mkdir -p {q(cmd.cwd)}\n")
    out.append('[ -z "$__caramel_stop" ] || return 143\n')
    out.append(f"__caramel_mark B {i}\n")
    out.append(_do(cmd, carry_file, record is not None))
    if record is not None:
        out.append(_record_end(cmd, record))
    if carry_file is not None:
        out.append(
            f"[ $__caramel_rc -ne 0 ] || command . {q(carry_path(carry_file, cmd))} || return\n"
        )
    out.append(
        f"__caramel_mark E {i} $__caramel_rc\n[ $__caramel_rc -eq 0 ] || return $__caramel_rc\n"
    )
    return "".join(out)


def _record_end(cmd: Command, record: tuple[str, str]) -> str:
    """The script's shell appends `E tag cycle op status` to the record file after the do: a do
    ended by bench's SIGTERM did not finish, it is not recorded (it runs again)."""
    q = shlex.quote
    line = q(f"E {record[1]} {cmd.cycle} {cmd.op} %d\\n")
    return (
        f'[ -n "$__caramel_stop" ] && [ $__caramel_rc -ne 0 ] || '
        f"printf {line} $__caramel_rc >>{q(record[0])}\n"
    )


def _do(cmd: Command, carry_file: str | None, recorded: bool) -> str:
    """A do in a subshell of its own, which writes what it exported to its carry file; its status
    is taken afterwards (`$?`). Its text runs there as a plain list, as in JUBE's own `sh -c`:
    `set -e`, `set -o pipefail` and traps (`trap ... EXIT` runs when the do ends, into its files)
    act as its author wrote them. Never as the left side of `||` or `&&`, where a shell ignores
    `set -e`; the last do too (its `exit` ends the do, not the script). Its stdin is /dev/null: the
    script's shell reads the script from its own. `: >` empties the carry file first: a do that
    ends with `exit 0` leaves no stale one. Recorded, SIGTERM ends the do (ON_TERM) until its text
    ended; then the subshell ignores it while it writes its carry file. `carry_file` None: nothing
    reads its environment after it (the last do), so it writes no carry file, as JUBE's last do."""
    q = shlex.quote
    on_term, off_term = (f"trap {q(ON_TERM)} TERM; ", "trap '' TERM; ") if recorded else ("", "")
    empty, keep = "", ""
    if carry_file is not None:
        carry = q(carry_path(carry_file, cmd))
        empty, keep = f"command : >{carry}\n", f"[ $__caramel_rc -ne 0 ] || export -p >{carry}; "
    return (
        f"{empty}( {on_term}cd {q(cmd.cwd)} || exit 1\neval {q(cmd.text)}\n"
        f"__caramel_rc=$?; {off_term}{keep}"
        f"exit $__caramel_rc\n"
        f") </dev/null >>{q(cmd.stdout)} 2>>{q(cmd.stderr)} {CLOSE_CHANNEL}\n__caramel_rc=$?\n"
    )


def _file_checks(i: int, cmd: Command, dump_env: bool, carry_file: str) -> str:
    """JUBE's order: note the break file, fail on the error file, wait for the done file, then
    break."""
    q = shlex.quote
    out = []
    if cmd.break_file:
        out.append(f"__caramel_b=0; [ ! -e {q(cmd.break_file)} ] || __caramel_b=1\n")
    if cmd.error_file:
        out.append(f"if [ -e {q(cmd.error_file)} ]; then __caramel_mark X {i}; return 0; fi\n")
    if cmd.done_file:
        out.append(
            f"if [ ! -e {q(cmd.done_file)} ]; then {_dump_env(carry_file)}; "
            f"__caramel_mark W {i}; return 0; fi\n"
        )
    if cmd.break_file:
        dump = _dump_env(carry_file) + "; " if dump_env else ""
        out.append(f"if [ $__caramel_b = 1 ]; then {dump}__caramel_mark K {i}; return 0; fi\n")
    return "".join(out)


@dataclass
class Ran:
    """A command that started: when, and how it ended (exit_code None: it never ended)."""

    index: int
    started: float
    ended: float | None = None
    exit_code: int | None = None


class Status(Word):
    """How a script ended (`Outcome.status`)."""

    DONE = "done"  # every command ran
    FAILED = "failed"
    WAITING = "waiting"  # a done file is missing
    BREAK = "break"  # a break file was found: the workpackage is done
    ERROR_FILE = "error_file"  # an error file was found: failed
    TIMED_OUT = "timed_out"  # killed at its time limit (engine.runner)


@dataclass
class Outcome:
    """How a script ended.

    status: done (all commands ran), failed, waiting (a done file is missing), break (a break
    file was found: the workpackage is done), error_file (an error file was found: failed).
    """

    status: Status
    index: int | None = None
    exit_code: int | None = None
    ran: list[Ran] = field(default_factory=list)
    env: dict[str, str] | None = None
    diagnostics: list[str] = field(default_factory=list)
    timed_out: float = 0.0  # the time limit (seconds) the script passed; status is then `timed_out`
    channel_error: str = ""  # what came on the engine's channel that was not a marker (then failed)


class Transcript:
    """Reads a script's markers as they arrive (bytes in any chunks, from the engine's channel) and
    tells its outcome. Anything on the channel that is not a marker of this bench is kept as
    `channel_error` (the workpackage then fails with it): nothing of it is believed."""

    def __init__(self, commands: list[Command], secret: str = "0", env_file: str = "") -> None:
        self.commands = commands
        self.secret = secret
        self.env_file = env_file
        self.ran: list[Ran] = []
        self.terminal: tuple[str, int] | None = None
        self.finished = False
        self.env: dict[str, str] | None = None
        self.diagnostics: list[str] = []
        self.exit_status: int | None = None  # the script's exit status, once its EXIT marker came
        self.pid: int | None = (
            None  # the script's process (its own process group, with the local launcher)
        )
        self.channel_error = ""
        self._rest = b""

    def feed(self, data: bytes, now: float) -> None:
        data = self._rest + data
        lines = data.split(b"\n")
        self._rest = lines.pop()
        if len(self._rest) > 4 * MAX_LINE:
            lines.append(self._rest)
            self._rest = b""
        for raw in lines:
            if self.exit_status is not None:
                break  # the script has ended; nothing after its EXIT marker belongs to it
            self._line(raw.decode(errors="replace"), now)

    def _line(self, line: str, now: float) -> None:
        try:
            marker = parse_marker(line, self.secret)
        except ChannelError as exc:
            self.channel_error = self.channel_error or exc.message
            return
        _ON_MARKER[marker.kind](self, marker.numbers, now)

    def _pid(self, numbers: tuple[int, ...], now: float) -> None:
        self.pid = numbers[0]

    def _begin(self, numbers: tuple[int, ...], now: float) -> None:
        if numbers[0] < len(self.commands):
            self.ran.append(Ran(numbers[0], now))

    def _ended(self, numbers: tuple[int, ...], now: float) -> None:
        if self.ran:
            self.ran[-1].ended = now
            self.ran[-1].exit_code = numbers[1]

    def _file_found(self, kind: MarkerKind, numbers: tuple[int, ...]) -> None:
        """A done file missing (W), a break file (K) or an error file (X) found after do N."""
        if numbers[0] < len(self.commands):
            self.terminal = (kind.value, numbers[0])

    def _env_written(self, numbers: tuple[int, ...], now: float) -> None:
        self.env = self._read_env()

    def _finished(self, numbers: tuple[int, ...], now: float) -> None:
        self.finished = True

    def _exited(self, numbers: tuple[int, ...], now: float) -> None:
        self.exit_status = numbers[0]

    def _read_env(self) -> dict[str, str] | None:
        """The environment the script wrote to its file (then removed: it does not stay on disk)."""
        if not self.env_file:
            return None
        try:
            with open(self.env_file, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
            os.unlink(self.env_file)
        except OSError:
            return None
        return parse_exports(text)

    def close(self, returncode: int, now: float) -> Outcome:
        """The outcome; `returncode` is the shell's if it died before the script's EXIT marker."""
        returncode = self._last_words(returncode, now)
        out = Outcome(Status.DONE, ran=self.ran, env=self.env, diagnostics=self.diagnostics)
        if self.channel_error:
            out.status, out.exit_code = Status.FAILED, returncode or 1
            out.channel_error = self.channel_error
        elif self.terminal:
            marker, out.index = self.terminal
            out.status = {"W": Status.WAITING, "K": Status.BREAK, "X": Status.ERROR_FILE}[marker]
        elif not self.finished or self._last_do_failed():
            self._failure(out, returncode, now)
        return out

    def _last_words(self, returncode: int, now: float) -> int:
        """Read what is left of a last line without its newline (unless the script said EXIT);
        the script's status where it said EXIT, else the shell's `returncode`."""
        if self._rest and self.exit_status is None:
            self._line(self._rest.decode(errors="replace"), now)
        self._rest = b""
        return returncode if self.exit_status is None else self.exit_status

    def _last_do_failed(self) -> bool:
        return bool(self.ran) and self.ran[-1].exit_code not in (None, 0)

    def _failure(self, out: Outcome, returncode: int, now: float) -> None:
        """`out` failed: at the last do that ran, with its status where it failed or where the
        script ended without END while it ran (its shell was killed, or what it does after the do
        failed: reading its carry file; a do's `exit` ends that do, never the script); else (no
        do, or the last one succeeded) with the shell's status."""
        out.status = Status.FAILED
        last = self.ran[-1] if self.ran else None
        if last is None or last.exit_code == 0:
            out.exit_code = returncode if returncode else 1
            return
        if last.exit_code is None:
            last.ended, last.exit_code = now, returncode
        out.index, out.exit_code = last.index, last.exit_code


# What each marker does to the transcript (Transcript._line).
_ON_MARKER: dict[MarkerKind, Callable[[Transcript, tuple[int, ...], float], None]] = {
    MarkerKind.PID: Transcript._pid,
    MarkerKind.BEGIN: Transcript._begin,
    MarkerKind.ENDED: Transcript._ended,
    MarkerKind.WAITING: lambda t, numbers, now: t._file_found(MarkerKind.WAITING, numbers),
    MarkerKind.BREAK: lambda t, numbers, now: t._file_found(MarkerKind.BREAK, numbers),
    MarkerKind.ERROR_FILE: lambda t, numbers, now: t._file_found(MarkerKind.ERROR_FILE, numbers),
    MarkerKind.ENV: Transcript._env_written,
    MarkerKind.END: Transcript._finished,
    MarkerKind.EXIT: Transcript._exited,
}


def check_files(cmd: Command, index: int, out: Outcome) -> Outcome:
    """The file checks of `_file_checks`, done by bench (for a do that ended its script)."""
    broke = bool(cmd.break_file) and os.path.exists(cmd.break_file)
    if cmd.error_file and os.path.exists(cmd.error_file):
        out.status, out.index = Status.ERROR_FILE, index
    elif cmd.done_file and not os.path.exists(cmd.done_file):
        out.status, out.index = Status.WAITING, index
    elif broke:
        out.status, out.index = Status.BREAK, index
    return out


def parse_exports(text: str) -> dict[str, str]:
    """The variables of `export -p` output (dash: `export A='x'`; bash: `declare -x A="x"`)."""
    env: dict[str, str] = {}
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        return env
    for token in tokens:
        if token in ("export", "declare") or token.startswith("-"):
            continue
        name, eq, value = token.partition("=")
        if eq and name.isidentifier():
            env[name] = value
    return env


def failure_reason(outcome: Outcome, commands: list[Command]) -> str:
    """Why a script failed, in one line (a failed do's with the ends of its output below)."""
    if outcome.status == Status.TIMED_OUT:
        return _timed_out(outcome, commands)
    if outcome.channel_error:
        return (
            "the engine's channel of this workpackage carried what is not a marker, so nothing "
            f"it said is believed: {outcome.channel_error}"
        )
    if outcome.index is None:
        detail = f": {outcome.diagnostics[-1]}" if outcome.diagnostics else ""
        return f"the shell ended unexpectedly (exit code {outcome.exit_code}){detail}"
    cmd = commands[outcome.index]
    tails = output_tails(cmd.text, cmd.cwd, cmd.stdout, cmd.stderr)
    return _failed_command(cmd, outcome.exit_code) + "".join(
        f"\n    {label}: {text}" for label, text in tails
    )


def _timed_out(outcome: Outcome, commands: list[Command]) -> str:
    """`timed out after N s`, naming the do that ran then (not a prepare's or a shared do's)."""
    last = commands[outcome.ran[-1].index] if outcome.ran else None
    where = f" (do {last.op + 1}: {last.text})" if last is not None and last.role == Role.DO else ""
    return f"timed out after {outcome.timed_out:g} s{where}"


def _failed_command(cmd: Command, code: int | None) -> str:
    """`do 2 exited with 1: TEXT` (a prepare: `prepare exited ...`; a shared do: `shared do ...`;
    a negative code: `was killed by signal N`)."""
    how = (
        f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with {code}"
    )
    if cmd.role == Role.PREPARE:
        return f"prepare {how}: {cmd.text}"
    what = (
        f"{cmd.role} do" if cmd.role == Role.SHARED else "do" if cmd.role == Role.DO else cmd.role
    )
    return f"{what} {cmd.op + 1} {how}: {cmd.text}"
