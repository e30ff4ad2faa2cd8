"""The local launcher: each script a process group of its own, a job of a long-lived shell with job
control (bash; dash given a terminal) or started by bench; one watcher per launcher."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from caramel.adapters.backends import launchers
from caramel.adapters.backends.launchers import local
from caramel.adapters.backends.launchers.local import CHANNEL_FD, TAG, Grouping, _grouping

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]


def _channel(shell) -> bytes:
    out = b""
    while chunk := os.read(shell.fileno(), 4096):
        out += chunk
        if b"end\n" in out:
            break
    return out


@pytest.mark.parametrize("program", SHELLS)
def test_a_local_shell_runs_scripts_in_its_environment_each_in_a_group_of_its_own(program) -> None:
    launcher = launchers.get("local", shell=shutil.which(program))
    shell = launcher.open_shell(dict(os.environ, CARAMEL_TEST_WORD="hello"))
    try:
        groups = []
        for _script in range(2):
            # a subshell's own process and group: /proc/self is the `cut` it starts, field 5 its
            # group (the script's), and $1 is empty (the launcher's tag is no do's parameter)
            shell.start(
                f'echo "$CARAMEL_TEST_WORD [$1] $(cut -d" " -f5 /proc/self/stat)" >&{CHANNEL_FD}; '
                f"echo end >&{CHANNEL_FD}\n"
            )
            word, empty, group, _end = _channel(shell).decode().split()
            assert (word, empty) == ("hello", "[]")
            groups.append(int(group))
        assert len(set(groups)) == 2 and os.getpgid(0) not in groups
    finally:
        shell.close()
        launcher.close()


def test_jube_exec_shell_chooses_the_program(monkeypatch) -> None:
    monkeypatch.setenv("JUBE_EXEC_SHELL", "/bin/bash")
    assert launchers.get("local").shell == "/bin/bash"
    assert launchers.get("local", shell="/bin/dash").shell == "/bin/dash"


LOW_DESCRIPTORS = """
import os
from caramel.adapters.backends import launchers
from caramel.adapters.backends.launchers.local import CHANNEL_FD
while True:  # hold every descriptor below 9 but one, as bench with its run locks open does
    fd = os.open(os.devnull, os.O_RDONLY)
    if fd >= CHANNEL_FD - 1:
        os.close(fd)
        break
launcher = launchers.get("local", shell="/bin/sh")
shell = launcher.open_shell(dict(os.environ))
shell.start(f"echo fine >&{CHANNEL_FD}\\n")
print(os.read(shell.fileno(), 100).decode().strip())
shell.close()
launcher.close()
"""


def test_a_script_gets_its_channel_whatever_descriptors_bench_holds() -> None:
    """bench holding more files open (a run lock on the folder and on its lock file) made the pipes
    of a script land on 8 and 9: placing its stdin must not overwrite its channel."""
    done = subprocess.run(
        [sys.executable, "-c", LOW_DESCRIPTORS], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["fine"]


def test_a_group_per_script_from_job_control_with_a_terminal_if_need_be() -> None:
    """bash keeps job control without a terminal (each background job a group); dash turns it on
    only with a terminal, which bench gives it and hangs up; a shell that cannot start gets SPAWN
    (backends.launchers.local._grouping)."""
    assert _grouping(shutil.which("bash")) is Grouping.JOBS
    assert _grouping(shutil.which("dash")) is Grouping.TERMINAL
    assert _grouping("/nonexistent/sh") is Grouping.SPAWN  # the first script says it cannot start


@pytest.mark.parametrize("grouping", [Grouping.TERMINAL, Grouping.SPAWN])
def test_a_dash_script_leads_its_group_and_has_no_terminal(grouping, monkeypatch) -> None:
    """Given a terminal for job control, dash's jobs lead groups of their own and, the terminal
    hung up, none can open /dev/tty (as in a batch job); SPAWN (where no terminal can be had) makes
    the same groups by starting each script's shell. The script names its own process (`P`)."""
    monkeypatch.setattr(local, "_grouping", lambda _program: grouping)
    launcher = launchers.get("local", shell=shutil.which("dash"))
    shell = launcher.open_shell(dict(os.environ))
    try:
        seen = []
        for _script in range(2):
            shell.start(
                "read -r me _ </proc/self/stat; set -- $(cut -d' ' -f4-6 /proc/self/stat); "
                "sh -c ': </dev/tty' 2>/dev/null && tty=yes || tty=no; "
                f'echo "$me $2 $tty" >&{CHANNEL_FD}; '
                f"echo end >&{CHANNEL_FD}\n"
            )
            me, group, tty, _end = _channel(shell).decode().split()
            seen.append((me, group, tty))
        assert all(me == group and tty == "no" for me, group, tty in seen), seen
        assert seen[0][1] != seen[1][1] and str(os.getpgid(0)) not in (seen[0][1], seen[1][1])
    finally:
        shell.close()
        launcher.close()


def test_without_a_pseudo_terminal_left_bench_starts_the_dash_script(monkeypatch) -> None:
    """A long-lived dash needs a pseudo-terminal; where none can be opened (the system's limit
    reached, a container without /dev/pts) each script's shell is started by bench instead."""

    def no_terminal() -> tuple[int, int]:
        raise OSError(5, "out of pseudo-terminals")

    monkeypatch.setattr(local, "_grouping", lambda _program: Grouping.TERMINAL)
    monkeypatch.setattr(local.os, "openpty", no_terminal)
    launcher = launchers.get("local", shell=shutil.which("dash"))
    shell = launcher.open_shell(dict(os.environ))
    try:
        assert isinstance(shell, local.SpawnedShell)
        shell.start(f"echo fine >&{CHANNEL_FD}; echo end >&{CHANNEL_FD}\n")
        assert _channel(shell).split() == [b"fine", b"end"]
    finally:
        shell.close()
        launcher.close()


def test_the_watcher_is_one_per_launcher_and_ends_with_it() -> None:
    """One watcher for every shell of a launcher, started with the first, ended by close() (no
    stop: its pipe's end is then no reason to stop anything)."""
    launcher = launchers.get("local", shell="/bin/sh")
    first = launcher.open_shell(dict(os.environ))
    watcher = launcher._watcher
    second = launcher.open_shell(dict(os.environ))
    assert watcher is not None and launcher._watcher is watcher and launcher.tag.startswith(TAG)
    for shell in (first, second):
        shell.close()
    launcher.close()
    assert launcher._watcher is None
    with pytest.raises(ProcessLookupError):
        os.kill(watcher.pid, 0)


@pytest.mark.parametrize("program", SHELLS)
def test_a_script_gets_the_signals_python_ignores_back_at_their_defaults(program) -> None:
    """Python ignores SIGPIPE and SIGXFSZ, and an `exec` keeps what is ignored: a started shell gets
    them back at their defaults, as subprocess's restore_signals does (else `yes | head -1` prints
    "Broken pipe" and a do's programs ignore what they should die of)."""
    import signal

    launcher = launchers.get("local", shell=shutil.which(program))
    shell = launcher.open_shell(dict(os.environ))
    try:
        shell.start(
            f"yes | head -1 >/dev/null 2>&1; grep SigIgn /proc/self/status >&{CHANNEL_FD}; "
            f"echo end >&{CHANNEL_FD}\n"
        )
        ignored = int(_channel(shell).decode().split()[1], 16)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            assert not ignored & (1 << (signum - 1)), signal.Signals(signum).name
    finally:
        shell.close()
        launcher.close()
