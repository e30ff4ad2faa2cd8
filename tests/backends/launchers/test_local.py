"""The local launcher: a long-lived shell on this machine that runs the scripts it is sent."""

from __future__ import annotations

import os

from caramel.backends import launchers


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
