"""Every name a user types is checked, with a did-you-mean, by the real `bench` (issue 37): commands,
flags (the command's own usage, the flag meant or the commands that take it), choices, and tags.
A tag that selects nothing (no system file is named so, no tag expression of the file, nor of a
file it reads, uses it, the file declares it in no `<tags>`) is refused before anything is made.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def made(tmp_path: Path) -> list[str]:
    """What bench left in the test's folder (the run registry, campaigns, run folders included)."""
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


def test_a_misspelt_tag_is_refused_before_a_run_is_made(tmp_path, env):
    ran = bench("run", "quickstart", "--tag", "lokal", cwd=tmp_path, env=env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "tag 'lokal' selects nothing" in ran.stderr
    assert "did you mean 'local'?" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert made(tmp_path) == []  # no run folder, no registry entry, no history


def test_a_tag_near_a_system_name_suggests_it(tmp_path, env):
    planned = bench("plan", "llm", "--tag", "117M", "A10", cwd=tmp_path, env=env)
    assert planned.returncode == 2
    assert "'A10': did you mean 'A100'?" in planned.stderr


def test_a_tag_in_the_wrong_case_is_named_as_such(tmp_path, env):
    planned = bench("plan", "llm", "--tag", "117m", "local", cwd=tmp_path, env=env)
    assert planned.returncode == 2
    assert "tags are case-sensitive: did you mean '117M'?" in planned.stderr
    assert "needs tags matching" not in planned.stderr  # the typo, not its consequence


def test_a_tag_only_a_tag_expression_uses_is_known(tmp_path, env):
    # `smoke` names no system: llm.yaml's train_iters reads it (tag="smoke" and tag="!smoke")
    planned = bench("plan", "llm", "--tag", "117M", "local", "smoke", cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr


DECLARED = """
name: declared
outpath: runs
{tags}
step:
  - {{name: s, do: echo hi}}
"""


@pytest.mark.parametrize(("tags", "code"), [
    ("", 2),
    # JUBE's own way to name a tag (jube/jubeio.py, Parser._extract_tags: <tags><tag name=...>text</tag>)
    ("tags:\n  tag:\n    - {name: nightly, _: the nightly run's copy of this benchmark}", 0),
])
def test_a_tag_the_file_declares_in_tags_is_a_known_optional_tag(tmp_path, env, tags, code):
    (tmp_path / "declared.yaml").write_text(DECLARED.format(tags=tags))
    planned = bench("plan", "declared.yaml", "--tag", "local", "nightly", cwd=tmp_path, env=env)
    assert planned.returncode == code, planned.stderr


BASE = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <parameterset name="platform">
    <parameter name="runner" tag="container">apptainer exec img</parameter>
    <parameter name="runner" tag="!container"></parameter>
  </parameterset>
</jube>
"""

MAIN = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="uses_base" outpath="runs">
    <parameterset name="platform" init_with="base.xml"/>
    <step name="s"><use>platform</use><do>echo $runner</do></step>
  </benchmark>
</jube>
"""


def test_a_tag_of_a_file_read_by_init_with_is_known(tmp_path, env):
    # CARAML's files select a container by tags of the platform file they start from (`--tag container`)
    (tmp_path / "base.xml").write_text(BASE)
    (tmp_path / "main.xml").write_text(MAIN)
    planned = bench("plan", "main.xml", "--tag", "container", cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr
    typo = bench("plan", "main.xml", "--tag", "contianer", cwd=tmp_path, env=env)
    assert typo.returncode == 2 and "did you mean 'container'?" in typo.stderr


def test_a_suite_refuses_a_tag_no_member_uses_before_the_campaign(tmp_path, env):
    ran = bench("run", "--suite", "cpu-smoke", "--tag", "lokal", cwd=tmp_path, env=env)
    assert ran.returncode == 2
    assert "no tag expression of the suite's benchmarks uses it" in ran.stderr
    assert "did you mean 'local'?" in ran.stderr
    assert "campaign" not in ran.stdout and made(tmp_path) == []


def test_a_misspelt_command_suggests_the_command(tmp_path, env):
    shown = bench("reslt", cwd=tmp_path, env=env)
    assert shown.returncode == 2
    assert "invalid choice: 'reslt'" in shown.stderr and "did you mean 'result'?" in shown.stderr


def test_a_misspelt_flag_gets_the_commands_usage_and_the_flag(tmp_path, env):
    ran = bench("run", "quickstart", "--tags", "local", cwd=tmp_path, env=env)
    assert ran.returncode == 2
    assert ran.stderr.startswith("usage: bench run ")  # run's own usage, not bench's
    assert "bench run: error: unrecognized arguments: --tags local" in ran.stderr
    assert "'--tags': did you mean '--tag'?" in ran.stderr
    assert made(tmp_path) == []


def test_a_flag_of_other_commands_names_them(tmp_path, env):
    # (was --format, which result takes since --style became --format: one vocabulary)
    shown = bench("result", "runs", "--lock-wait", "5", cwd=tmp_path, env=env)
    assert shown.returncode == 2
    assert shown.stderr.startswith("usage: bench result ")
    assert "'--lock-wait': it is a flag of bench cancel, bench continue, not of bench result" in shown.stderr
    assert "not of bench result" in shown.stderr


def test_a_misspelt_flag_of_bench_itself_and_a_misspelt_choice(tmp_path, env):
    debug = bench("--debg", "status", cwd=tmp_path, env=env)
    assert debug.returncode == 2 and "'--debg': did you mean '--debug'?" in debug.stderr
    style = bench("result", "--style", "jsn", cwd=tmp_path, env=env)
    assert style.returncode == 2 and "did you mean 'json'?" in style.stderr
    action = bench("history", "lst", cwd=tmp_path, env=env)
    assert action.returncode == 2 and "did you mean 'list'?" in action.stderr
