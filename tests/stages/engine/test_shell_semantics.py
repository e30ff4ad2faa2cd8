"""`set -e`, `set -o pipefail`, `set +e` and traps hold in every `do`, the last one too (issue 34).

The oracle is JUBE's own way of running a do: `jube/step.py`, `Operation.execute`, starts
`[shell, "-c", "{do} && env > \"{env file}\""]` in the work folder (shell `/bin/sh`, or
`$JUBE_EXEC_SHELL`). `jube_runs` runs a do exactly that way and each test expects caramel to
report the exit status and the output that command gives, for the first, a middle and the last do.
Every script runs recorded, as bench runs it (`record=`): the recorded last do used to run as the
left side of `||`, where the shell ignores `set -e`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.adapters.backends import launchers
from caramel.stages.engine.recovery import record_file
from caramel.stages.engine.runner import Runner
from caramel.stages.engine.script import Command, Outcome, failure_reason

SHELLS = ["/bin/sh", "/bin/bash"]
POSITIONS = ["only", "middle", "last"]


def jube_runs(shell: str, text: str, folder: Path) -> tuple[int, str]:
    """(exit status, stdout) of `text` run as JUBE runs a do (jube/step.py, Operation.execute)."""
    folder.mkdir()
    done = subprocess.run([shell, "-c", f'{text} && env > "{folder / "env.log"}"'], cwd=folder,
                          capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout


Ran = tuple[Outcome, list[Command], str]


def caramel_runs(shell: str, text: str, position: str, folder: Path) -> Ran:
    """`text` as the do at `position` of a recorded script on a local shell `shell`: the outcome,
    the commands and what `text` wrote to its stdout (the others write `before` and `next`)."""
    folder.mkdir()
    texts = {"only": [text], "middle": ["echo before", text, "echo next"],
             "last": ["echo before", text]}[position]
    commands = [Command(i, 0, t, str(folder), str(folder / f"stdout{i}"),
                        str(folder / f"stderr{i}")) for i, t in enumerate(texts)]
    runner = Runner(launchers.get("local", shell=shell), dict(os.environ))
    try:
        outcome = runner.run(commands, dict(os.environ), str(folder / "carry"), dump_env=True,
                             record=(record_file(str(folder)), "1.0"))
    finally:
        runner.close()
    mine = texts.index(text)
    return outcome, commands, (folder / f"stdout{mine}").read_text()


def exit_code_of(outcome: Outcome, commands: list[Command], text: str) -> int | None:
    """The exit code the script reported for the do running `text`."""
    index = next(i for i, c in enumerate(commands) if c.text == text)
    return next(r.exit_code for r in outcome.ran if r.index == index)


FAILING = [
    "set -e; false; echo after",
    "set -e\nfalse\necho after",  # one command a line, as a YAML block writes a do
    "set -e; cd /nonexistent-caramel-folder; echo after",
    "set -e; (exit 7); echo after",
]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("text", FAILING)
def test_set_e_ends_the_do_and_fails_the_workpackage_with_the_commands_exit_code(
        tmp_path: Path, shell: str, position: str, text: str) -> None:
    expected_rc, expected_out = jube_runs(shell, text, tmp_path / "jube")
    assert expected_rc != 0 and "after" not in expected_out  # what JUBE does with it
    outcome, commands, out = caramel_runs(shell, text, position, tmp_path / "caramel")
    index = commands.index(next(c for c in commands if c.text == text))
    assert (outcome.status, outcome.index, outcome.exit_code) == ("failed", index, expected_rc)
    assert out == expected_out
    assert f"do {index + 1} exited with {expected_rc}: " in failure_reason(outcome, commands)
    records = Path(record_file(str(tmp_path / "caramel"))).read_text().splitlines()
    assert records[-1] == f"E 1.0 0 {index} {expected_rc}"  # its end, recorded failed: not done
    assert not (tmp_path / "caramel" / "stdout2").exists()  # no do after it ran


@pytest.mark.parametrize("position", POSITIONS)
def test_pipefail_with_set_e_ends_the_do_at_the_failing_pipeline(tmp_path: Path,
                                                                   position: str) -> None:
    text = "set -eo pipefail; false | cat; echo after"
    expected_rc, expected_out = jube_runs("/bin/bash", text, tmp_path / "jube")
    assert (expected_rc, expected_out) == (1, "")
    outcome, commands, out = caramel_runs("/bin/bash", text, position, tmp_path / "caramel")
    assert (outcome.status, outcome.exit_code, out) == ("failed", expected_rc, expected_out)


@pytest.mark.parametrize("position", POSITIONS)
def test_pipefail_alone_gives_the_last_commands_status(tmp_path: Path, position: str) -> None:
    """Without `-e` a failing pipeline does not end the do; a failing pipeline last fails it."""
    for name, text in (("goes_on", "set -o pipefail; false | cat; echo after"),
                       ("ends_with_it", "set -o pipefail; echo after; false | cat")):
        expected_rc, expected_out = jube_runs("/bin/bash", text, tmp_path / f"jube_{name}")
        outcome, commands, out = caramel_runs("/bin/bash", text, position, tmp_path / name)
        assert (exit_code_of(outcome, commands, text), out) == (expected_rc, expected_out)
        assert outcome.status == ("done" if expected_rc == 0 else "failed")


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("position", POSITIONS)
def test_set_plus_e_turns_it_off_again(tmp_path: Path, shell: str, position: str) -> None:
    text = "set -e; set +e; false; echo after"
    expected_rc, expected_out = jube_runs(shell, text, tmp_path / "jube")
    assert (expected_rc, expected_out) == (0, "after\n")
    outcome, _commands, out = caramel_runs(shell, text, position, tmp_path / "caramel")
    assert (outcome.status, out) == ("done", expected_out)
    assert [r.exit_code for r in outcome.ran] == [0] * len(outcome.ran)


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("position", POSITIONS)
def test_an_exit_trap_runs_at_the_end_of_its_do_into_the_dos_stdout(tmp_path: Path, shell: str,
                                                                    position: str) -> None:
    for name, text in (("ok", "trap 'echo cleanup' EXIT; echo work"),
                       ("failing", "trap 'echo cleanup' EXIT; set -e; echo work; false; echo no")):
        expected_rc, expected_out = jube_runs(shell, text, tmp_path / f"jube_{name}")
        assert expected_out == "work\ncleanup\n"
        outcome, commands, out = caramel_runs(shell, text, position, tmp_path / name)
        assert (exit_code_of(outcome, commands, text), out) == (expected_rc, expected_out)
        assert outcome.status == ("done" if expected_rc == 0 else "failed")


@pytest.mark.parametrize("position", POSITIONS)
def test_an_err_trap_runs_where_a_command_fails(tmp_path: Path, position: str) -> None:
    """bash runs no ERR trap where it ignores `set -e` (left of `||`): the last do's ran none."""
    text = "trap 'echo caught $?' ERR; false; echo after"
    expected_rc, expected_out = jube_runs("/bin/bash", text, tmp_path / "jube")
    assert (expected_rc, expected_out) == (0, "caught 1\nafter\n")
    outcome, commands, out = caramel_runs("/bin/bash", text, position, tmp_path / "caramel")
    assert (outcome.status, exit_code_of(outcome, commands, text), out) == ("done", 0, expected_out)


@pytest.mark.parametrize("status", [0, 5])
def test_an_exit_in_the_last_do_ends_that_do_and_its_shell_records_it(tmp_path: Path,
                                                                     status: int) -> None:
    """The last do's `exit` ends its subshell, not the script: its shell records its end (it was
    left to bench, and ran again when bench died at that moment)."""
    text = f"echo work; exit {status}; echo after"
    expected_rc, expected_out = jube_runs("/bin/sh", text, tmp_path / "jube")
    outcome, commands, out = caramel_runs("/bin/sh", text, "last", tmp_path / "caramel")
    assert (exit_code_of(outcome, commands, text), out) == (expected_rc, expected_out)
    assert outcome.status == ("done" if status == 0 else "failed")
    records = Path(record_file(str(tmp_path / "caramel"))).read_text().splitlines()
    assert records == ["E 1.0 0 0 0", f"E 1.0 0 1 {status}"]


@pytest.mark.parametrize("shell", SHELLS)
def test_set_e_in_one_do_does_not_leak_into_the_next(tmp_path: Path, shell: str) -> None:
    """Each do is a shell of its own under JUBE: `set -e` in the first leaves the next as it was,
    and the last do's options never reach the script's own checks."""
    folder = tmp_path / "wp"
    folder.mkdir()
    texts = ["set -e; export A=1", "false; echo second $A", "set -e; export B=2"]
    commands = [Command(i, 0, t, str(folder), str(folder / "stdout"), str(folder / "stderr"))
                for i, t in enumerate(texts)]
    commands[-1].done_file = str(folder / "missing")  # the script's own check after the last do
    runner = Runner(launchers.get("local", shell=shell), dict(os.environ))
    try:
        outcome = runner.run(commands, dict(os.environ), str(folder / "carry"), dump_env=True,
                             record=(record_file(str(folder)), "1.0"))
    finally:
        runner.close()
    assert (folder / "stdout").read_text() == "second 1\n"
    assert (outcome.status, outcome.index) == ("waiting", 2)
    assert outcome.env is not None and (outcome.env["A"], outcome.env["B"]) == ("1", "2")


STEP = """name: strict
outpath: runs
step:
  name: run
  do:
    - echo first
    - {second}
"""


@pytest.mark.parametrize("text", ["set -e; false; echo after",
                                  "set -eo pipefail; false | cat; echo after"])
@pytest.mark.slow
def test_bench_run_fails_the_workpackage_at_the_last_dos_set_e(tmp_path: Path, text: str) -> None:
    """The real `bench`, on a step whose last do stops at `false` (JUBE: exit 1, `after` not
    printed): the workpackage fails with the reason, never `done`, and `continue` leaves it so."""
    env = isolated_env(tmp_path, JUBE_EXEC_SHELL="/bin/bash")
    (tmp_path / "b.yaml").write_text(STEP.format(second=json.dumps(text)))
    assert bench("run", "b.yaml", cwd=tmp_path, env=env).returncode == 1
    for command in (["status", "--format", "json"], ["continue", "runs/000000"]):
        bench(*command, cwd=tmp_path, env=env)
        doc = json.loads(bench("status", "--format", "json", cwd=tmp_path, env=env).stdout)
        (wp,) = doc["workpackages"]
        assert wp["state"] == "failed" and wp["reason"].startswith(f"do 2 exited with 1: {text}")
    stdout = (tmp_path / "runs" / "000000" / "000000_run" / "work" / "stdout").read_text()
    assert stdout == "first\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_scripts_shell_says_exit_when_a_special_builtin_of_its_own_fails(tmp_path: Path,
                                                                            shell: str) -> None:
    """The script's shell runs the dos' bookkeeping itself: a special builtin that fails there
    (`export -p` into an env file a do made a folder) ends the script with its status, never the
    shell without its EXIT marker (bench would wait for it)."""
    folder = tmp_path / "wp"
    folder.mkdir()
    carry = folder / "carry"
    command = Command(0, 0, f"mkdir {carry}.env", str(folder), str(folder / "out"),
                      str(folder / "err"))
    runner = Runner(launchers.get("local", shell=shell), dict(os.environ))
    try:
        runner.start("wp", [command], dict(os.environ), str(carry), dump_env=True,
                     record=(record_file(str(folder)), "1.0"))
        ended = runner.wait(timeout=20)
    finally:
        runner.close()
    assert len(ended) == 1, "the script's shell never said EXIT"
    (_entry, outcome) = ended[0]
    assert outcome.ran[0].exit_code == 0 and outcome.status == "failed"
    assert "the shell ended unexpectedly" in failure_reason(outcome, [command])
