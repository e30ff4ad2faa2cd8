"""A failed do's reason carries the last lines it wrote: its stderr, its stdout, and the files its
text redirects to inside the work folder (`cmd > job.out 2>&1`), never a file outside (issue 21)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.run_bench import bench, isolated_env

from caramel.stages.engine.tails import TAIL_BYTES, TAIL_LINES, output_tails, redirect_targets, tail


def test_redirect_targets_of_the_common_forms() -> None:
    assert redirect_targets("python train.py > job.out 2>&1") == ["job.out"]
    assert redirect_targets("a >>log.txt; b &> all.log; c 2> err.txt 1>out.txt") == [
        "log.txt", "all.log", "err.txt", "out.txt"]
    assert redirect_targets("echo x >&2; cmd 2>&1 | tee t.log") == []  # descriptors only; tee is not a redirect
    assert redirect_targets("cmd > $HOME/x > /dev/null > 'q w' > `date`") == []  # unresolvable: skipped
    assert redirect_targets("[ $a -gt 2 ] && echo 'a>b'") == []  # `>` inside a word is no redirect


name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.-", min_size=1, max_size=12).filter(
    lambda n: not n.startswith("-"))


@settings(max_examples=200, deadline=None)
@given(command=st.text(max_size=40), target=name, op=st.sampled_from([">", ">>", "1>", "2>", "&>", "&>>", ">|"]),
       space=st.sampled_from(["", " "]))
def test_a_plain_redirect_is_found_and_nothing_unsafe_ever_is(command: str, target: str, op: str, space: str) -> None:
    # a command ending in an operator makes the whole line a syntax error (bash: `echo > 1>0`)
    assume(not command.rstrip().endswith(("<", ">", "|", "&")))
    found = redirect_targets(f"{command} {op}{space}{target}")
    assert target in found or any(c in command for c in "'\"\\`$")
    for each in redirect_targets(command + " " + op + space + target):
        assert not any(c in each for c in "$`*?'\"") and not each.startswith(("&", "/dev/"))


def test_tail_is_bounded_in_lines_and_bytes(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_text("".join(f"line {i}\n" for i in range(1000)) + "x" * (3 * TAIL_BYTES) + "\nlast\n")
    text = tail(str(log))
    assert text.endswith("last") and len(text) <= TAIL_BYTES + 3 * TAIL_LINES
    log.write_text("".join(f"line {i}\n" for i in range(20)))
    assert tail(str(log)) == " | ".join(f"line {i}" for i in range(20 - TAIL_LINES, 20))


def test_a_target_outside_the_work_folder_is_never_read(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("do not show\n")
    os.symlink(secret, work / "link.out")
    (work / "job.out").write_text("the error\n")
    tails = output_tails("a > link.out; b > ../secret.txt; c > job.out", str(work), "", "")
    assert tails == [("job.out", "the error")]


FAILING = """name: failing
outpath: runs
step:
  name: train
  do: "echo starting; python3 -c 'import sys; print(\\"loss: nan\\"); sys.exit(\\"diverged at step 7\\")' > job.out 2>&1"
"""


def test_a_failed_do_that_redirects_shows_its_last_lines(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    (tmp_path / "b.yaml").write_text(FAILING)
    assert bench("run", "b.yaml", cwd=tmp_path, env=env).returncode == 1
    status = bench("status", cwd=tmp_path, env=env).stdout
    assert "do 1 exited with 1" in status
    assert "job.out: loss: nan | diverged at step 7" in status
    assert "stdout: starting" in status
    doc = json.loads(bench("status", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert "diverged at step 7" in doc["workpackages"][0]["reason"]
