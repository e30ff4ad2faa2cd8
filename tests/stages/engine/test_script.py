"""Workpackage scripts on a real shell: JUBE's per-do semantics, markers, environment dumps."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from caramel.adapters.backends import launchers
from caramel.stages.engine.runner import Runner
from caramel.stages.engine.script import (
    Command,
    Transcript,
    build_script,
    failure_reason,
    parse_exports,
)


@pytest.fixture
def runner():
    r = Runner(launchers.get("local"), dict(os.environ))
    yield r
    r.close()


def cmds(folder: Path, *texts: str, **files: str) -> list[Command]:
    out = [Command(i, 0, t, str(folder), str(folder / "stdout"), str(folder / "stderr")) for i, t in enumerate(texts)]
    for name, value in files.items():
        setattr(out[-1], name, str(folder / value))
    return out


def test_exports_carry_but_cd_variables_and_exit_stay_in_their_do(tmp_path: Path, runner: Runner) -> None:
    c = cmds(tmp_path, "export A=1; B=2; mkdir -p sub; cd sub; set -e", "echo A=$A B=${B:-unset} dir=${PWD##*/}",
             "export C=3; exit 0", "false || true; echo C=${C:-lost}")
    outcome = runner.run(c, dict(os.environ), str(tmp_path / "carry"), dump_env=True)
    assert outcome.status == "done", outcome
    assert (tmp_path / "stdout").read_text() == f"A=1 B=unset dir={tmp_path.name}\nC=lost\n"
    assert outcome.env is not None and outcome.env["A"] == "1" and "C" not in outcome.env
    assert [r.exit_code for r in outcome.ran] == [0, 0, 0, 0]


def test_a_failing_do_stops_its_workpackage(tmp_path: Path, runner: Runner) -> None:
    outcome = runner.run(cmds(tmp_path, "echo one", "echo two >&2; exit 3", "echo never"), dict(os.environ),
                         str(tmp_path / "carry"), dump_env=False)
    assert (outcome.status, outcome.index, outcome.exit_code) == ("failed", 1, 3)
    assert (tmp_path / "stdout").read_text() == "one\n" and (tmp_path / "stderr").read_text() == "two\n"


def test_syntax_error_and_exit_in_the_last_do(tmp_path: Path, runner: Runner) -> None:
    outcome = runner.run(cmds(tmp_path, "echo ok", "if then fi"), dict(os.environ), str(tmp_path / "c"), False)
    assert (outcome.status, outcome.index, outcome.exit_code) == ("failed", 1, 2)
    outcome = runner.run(cmds(tmp_path, "echo ok", "exit 5"), dict(os.environ), str(tmp_path / "c"), False)
    assert (outcome.status, outcome.index, outcome.exit_code) == ("failed", 1, 5)
    outcome = runner.run(cmds(tmp_path, "exit 0"), dict(os.environ), str(tmp_path / "c"), False)
    assert outcome.status == "done"
    # the shells survive all of that: the next script runs on one of them
    outcome = runner.run(cmds(tmp_path, "echo again"), dict(os.environ), str(tmp_path / "c"), False)
    assert outcome.status == "done"


def test_done_error_and_break_files(tmp_path: Path, runner: Runner) -> None:
    env = dict(os.environ)
    outcome = runner.run(cmds(tmp_path, "export JOB=42", "echo submit", done_file="ready"), env,
                         str(tmp_path / "c"), False)
    assert (outcome.status, outcome.index) == ("waiting", 1)
    assert outcome.env is not None and outcome.env["JOB"] == "42"  # kept for the rest, after the job
    outcome = runner.run(cmds(tmp_path, "touch ready failed", done_file="ready", error_file="failed"), env,
                         str(tmp_path / "c"), False)
    assert outcome.status == "error_file"
    outcome = runner.run(cmds(tmp_path, "touch stop", "echo last", break_file="stop"), env,
                         str(tmp_path / "c"), False)
    assert (outcome.status, outcome.index) == ("break", 1)  # checked after the do it belongs to
    c = cmds(tmp_path, "touch stop2")
    c[0].break_file = str(tmp_path / "stop2")
    c += cmds(tmp_path, "echo after break")
    outcome = runner.run(c, env, str(tmp_path / "c"), False)
    assert (outcome.status, outcome.index) == ("break", 0)
    assert "after break" not in (tmp_path / "stdout").read_text()


def test_environment_differences_are_set_for_the_workpackage(tmp_path: Path, runner: Runner) -> None:
    env = dict(os.environ, ODD="it's \"quoted\"\nand $dollar", NEW="x")
    env.pop("HOME", None)
    outcome = runner.run(cmds(tmp_path, 'printf "%s|%s|%s" "$ODD" "$NEW" "${HOME:-nohome}"'), env,
                         str(tmp_path / "c"), dump_env=True)
    assert (tmp_path / "stdout").read_text() == "it's \"quoted\"\nand $dollar|x|nohome"
    assert outcome.env is not None and outcome.env["ODD"] == env["ODD"]


def test_parallel_scripts_and_kill(tmp_path: Path, runner: Runner) -> None:
    env = dict(os.environ)
    for i in range(3):
        (tmp_path / str(i)).mkdir()
        runner.start(i, cmds(tmp_path / str(i), f"sleep 0.3; echo {i}"), env, str(tmp_path / f"c{i}"), False)
    ended = []
    while len(ended) < 3:
        ended += [(active.key, outcome) for active, outcome in runner.wait()]
    assert sorted(key for key, _ in ended) == [0, 1, 2]
    runs = [outcome.ran[0] for _, outcome in ended]
    assert max(r.started for r in runs) < min(r.ended for r in runs)  # all three ran at the same time
    runner.start("slow", cmds(tmp_path, f"sleep 30; touch {tmp_path}/late"), env, str(tmp_path / "c"), False)
    time.sleep(0.2)
    runner.kill_all()
    time.sleep(0.1)
    assert not (tmp_path / "late").exists() and len(runner) == 0


def test_transcript_reads_markers_in_any_chunks(tmp_path: Path) -> None:
    c = cmds(tmp_path, "a", "b")
    t = Transcript(c, "s3cret")
    data = b"@caramel s3cret B 0\n@caramel s3cret E 0 0\n@caramel s3cret B 1\n@caramel s3cret E 1 4\n" \
           b"@caramel s3cret EXIT 4\n"
    for i in range(0, len(data), 5):
        t.feed(data[i:i + 5], 1.0)
    outcome = t.close(0, 2.0)
    assert (outcome.status, outcome.index, outcome.exit_code) == ("failed", 1, 4)


def test_anything_but_a_marker_on_the_channel_fails_the_script_and_is_not_believed(tmp_path: Path) -> None:
    for noise in (b"noise\n", b"@caramel B 0\n", b"@caramel wrong EXIT 0\n", b"@caramel s3cret E 0\n"):
        t = Transcript(cmds(tmp_path, "a"), "s3cret")
        t.feed(b"@caramel s3cret B 0\n" + noise + b"@caramel s3cret E 0 0\n@caramel s3cret END\n"
               b"@caramel s3cret EXIT 0\n", 1.0)
        outcome = t.close(0, 2.0)
        assert outcome.status == "failed" and outcome.channel_error, noise
        assert "not a marker" in failure_reason(outcome, t.commands)


def test_parse_exports_of_dash_and_bash() -> None:
    assert parse_exports("export A='x y'\nexport B='it'\\''s'\nexport EMPTY\nexport M='l1\nl2'\n") == \
        {"A": "x y", "B": "it's", "M": "l1\nl2"}
    assert parse_exports('declare -x A="x y"\ndeclare -x B="q\\"q"\n') == {"A": "x y", "B": 'q"q'}


def test_script_shape_has_one_subshell_for_a_single_do(tmp_path: Path) -> None:
    """One process per do, as before issue 34: the do's own subshell, where its text runs as a plain
    list (`set -e` holds: never the left side of `||` or `&&`); the script's shell needs none."""
    for record in (None, ("ended", "0.1")):
        script = build_script(cmds(tmp_path, "echo hi"), str(tmp_path / "c"), dump_env=False,
                              env={}, base_env={}, record=record)
        lines = script.splitlines()
        assert sum(line.startswith("(") for line in lines) == 1
        assert "eval 'echo hi'" in lines  # a line of its own
