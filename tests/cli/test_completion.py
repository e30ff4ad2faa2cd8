"""Shell completion (issue 37): `bench completion bash|zsh|fish` prints argcomplete's script, and
bash, driven as it completes a line, gets commands, benchmark names and a benchmark's tags from
the real `bench` (a `bench` on PATH that runs this checkout)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """bench on PATH as `python -m caramel` of the interpreter that runs the tests."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "bench").write_text(f'#!/bin/sh\nexec {sys.executable} -m caramel "$@"\n')
    (folder / "bench").chmod(0o755)
    base = isolated_env(tmp_path)
    return {**base, "PATH": f"{folder}:{base.get('PATH', '')}"}


def completed(line: str, cwd: Path, env: dict[str, str]) -> list[str]:
    """What bash offers for TAB at the end of `line`, through the script `bench completion bash`
    prints (its completion function, called as bash's `complete -F` would)."""
    words = line.split(" ")
    script = (
        "source <(bench completion bash)\n"
        f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}\n'
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        'complete -p bench >/dev/null && _python_argcomplete bench; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [word.strip() for word in done.stdout.splitlines() if word.strip()]


def test_bash_completes_a_benchmark_name_and_its_tags(tmp_path, env) -> None:
    assert completed("bench run ll", tmp_path, env) == ["llm"]
    # the llm benchmark's tags (shipped llm.yaml: 117M, 800M, ...) that start with 8
    assert completed("bench run llm --tag 8", tmp_path, env) == ["800M"]
    assert completed("bench plan llm -t 117", tmp_path, env) == ["117M"]


def test_bash_completes_commands_flags_and_files_of_the_folder(tmp_path, env) -> None:
    (tmp_path / "mine.yaml").write_text("name: mine\noutpath: runs\n")
    assert completed("bench resu", tmp_path, env) == ["result"]
    assert completed("bench run min", tmp_path, env) == ["mine.yaml"]
    assert "--select" in completed("bench result --sel", tmp_path, env)
    assert completed("bench list --tag", tmp_path, env) == ["--tag"]  # not the hidden --tags


def test_every_shell_gets_its_script(tmp_path, env) -> None:
    expected = {"bash": "complete -o nospace -o default -o bashdefault -F _python_argcomplete bench",
                "zsh": "#compdef bench", "fish": "complete --command bench"}
    for shell, line in expected.items():
        shown = bench("completion", shell, cwd=tmp_path, env=env)
        assert shown.returncode == 0 and line in shown.stdout, shell
    refused = bench("completion", "tcsh", cwd=tmp_path, env=env)
    assert refused.returncode == 2 and "invalid choice: 'tcsh'" in refused.stderr
