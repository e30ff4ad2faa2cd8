"""The local launcher: a long-lived shell on this machine that runs the scripts it is sent."""

from __future__ import annotations

import os

from caramel.adapters.backends import launchers


def test_a_local_shell_runs_scripts_in_its_environment() -> None:
    shell = launchers.get("local").open_shell(dict(os.environ, CARAMEL_TEST_WORD="hello"))
    try:
        shell.send('echo "$CARAMEL_TEST_WORD"; exit 3\n')
        out = b""
        while chunk := os.read(shell.fileno(), 4096):
            out += chunk
        assert out.decode().strip() == "hello" and shell.returncode() == 3
    finally:
        shell.close()


def test_jube_exec_shell_chooses_the_program(monkeypatch) -> None:
    monkeypatch.setenv("JUBE_EXEC_SHELL", "/bin/bash")
    assert launchers.get("local").shell == "/bin/bash"
    assert launchers.get("local", shell="/bin/dash").shell == "/bin/dash"


PIPE_ON_NINE = """
import os
from caramel.adapters.backends.launchers.local import CHANNEL_FD, LocalShell
while True:  # hold every descriptor below 9, as bench with its run locks open does
    fd = os.open(os.devnull, os.O_RDONLY)
    if fd >= CHANNEL_FD:
        os.close(fd)
        break
shell = LocalShell("/bin/sh", dict(os.environ))
print(shell._alive_r)
shell.close()
"""


def test_the_watchers_pipe_is_never_the_scripts_channel_descriptor() -> None:
    """bench holding more files open (a run lock on the folder and on its lock file) put the pipe the
    watchers read on descriptor 9, the scripts' channel: every do was stopped as it started."""
    import subprocess
    import sys

    from caramel.adapters.backends.launchers.local import CHANNEL_FD

    done = subprocess.run([sys.executable, "-c", PIPE_ON_NINE], capture_output=True, text=True, check=True)
    assert int(done.stdout) > CHANNEL_FD


def test_a_group_per_script_from_bash_job_control_else_from_setsid() -> None:
    """bash keeps job control without a terminal (each background job a group); dash turns it off,
    so a dash shell starts each script through `setsid` (backends.launchers.local._grouping)."""
    import shutil

    from caramel.adapters.backends.launchers.local import Grouping, _grouping

    path = os.environ.get("PATH", os.defpath)
    assert _grouping(shutil.which("bash"), path) == (Grouping.JOBS, "")
    assert _grouping(shutil.which("dash"), path) == (Grouping.SETSID, shutil.which("setsid", path=path))
    assert _grouping(shutil.which("dash"), "/nonexistent") == (Grouping.NONE, "")
