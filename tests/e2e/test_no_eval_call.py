"""`--no-eval` imports nothing of the file's: a `call:` step's module is found by name and its
function looked up in its source, never imported (docs/security.md, "Running a file you do not
trust": "planning
ran no code of the file")."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

FUNCTIONS = """
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("module-level code ran")


def train(size: int):
    return {"loss": 1.0 / size}
"""

BENCH = """
name: fit
outpath: runs
parameterset:
  - name: p
    parameter:
      - {{name: size, type: int, _: "1,2"}}
step:
  - name: fit
    use: p
    call: {target}
{figures}
"""
DECLARED = "    figure:\n      - {name: loss, direction: lower}\n"


def _folder(
    tmp_path: Path,
    target: str = "functions:train",
    figures: str = DECLARED,
    functions: str = FUNCTIONS,
) -> Path:
    (tmp_path / "functions.py").write_text(functions)
    (tmp_path / "bench.yaml").write_text(BENCH.format(target=target, figures=figures))
    return tmp_path


@pytest.mark.parametrize("command", [["plan", "--no-eval"], ["run", "--dry-run", "--no-eval"]])
def test_no_eval_never_imports_the_module_beside_the_file(
    tmp_path: Path, command: list[str]
) -> None:
    """docs/security.md, "Running a file you do not trust": with --no-eval planning runs no code of
    the file; functions.py writes a marker when imported, and no marker appears."""
    folder = _folder(tmp_path)
    done = bench(*command, "bench.yaml", cwd=folder, env=isolated_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "fit" in done.stdout
    assert not (folder / "IMPORTED").exists(), "--no-eval imported functions.py"


@pytest.mark.parametrize("command", [["plan", "--no-eval"], ["run", "--dry-run", "--no-eval"]])
def test_no_eval_names_a_missing_function_without_importing(
    tmp_path: Path, command: list[str]
) -> None:
    """docs/security.md, "Running a file you do not trust": a misspelt function is named (file,
    line,
    did-you-mean) from the module's source alone."""
    folder = _folder(tmp_path, target="functions:trian")
    done = bench(*command, "bench.yaml", cwd=folder, env=isolated_env(tmp_path))
    assert done.returncode == 2
    assert "bench.yaml:11: call 'functions:trian': functions has no 'trian'" in done.stderr
    assert "did you mean 'train'?" in done.stderr
    assert not (folder / "IMPORTED").exists()


def test_no_eval_names_a_missing_module(tmp_path: Path) -> None:
    """docs/security.md, "Running a file you do not trust": a module that is nowhere is named."""
    folder = _folder(tmp_path, target="functoins:train")
    done = bench("plan", "--no-eval", "bench.yaml", cwd=folder, env=isolated_env(tmp_path))
    assert done.returncode == 2 and "no module named 'functoins'" in done.stderr, done.stderr


def test_no_eval_reads_literal_caramel_figures_and_refuses_others(tmp_path: Path) -> None:
    """docs/functions.md: a function's own `caramel_figures` is read from a literal assignment in
    the
    source under --no-eval; one that only importing would give is refused, naming the step."""
    literal = FUNCTIONS + 'train.caramel_figures = {"loss": ("", "lower")}\n'
    folder = _folder(tmp_path, figures="", functions=literal)
    done = bench("plan", "--no-eval", "bench.yaml", cwd=folder, env=isolated_env(tmp_path))
    assert done.returncode == 0, done.stderr
    computed = FUNCTIONS + 'train.caramel_figures = dict(loss="")\n'
    (folder / "functions.py").write_text(computed)
    done = bench("plan", "--no-eval", "bench.yaml", cwd=folder, env=isolated_env(tmp_path))
    assert done.returncode == 2 and "known only by importing it" in done.stderr, done.stderr
    assert not (folder / "IMPORTED").exists()
