"""The corpus of bad benchmark files: each must fail `bench plan` with exactly its expected message.

Every case in `bad_inputs/` is a benchmark file `NN_description.xml|yaml` with a sibling
`NN_description.expected` holding the whole stderr `bench plan FILE` must print. In the expected
text `{file}` is the case file's absolute path, `{dir}` the corpus folder and `{platform}` caramel's
shipped platform folder, so the corpus is location independent. A `.expected` without a benchmark
file is run on `NN_description.xml`, which does not exist. A case with a `NN_description.args` runs
`bench plan ARGS FILE` (e.g. `--no-eval`, `--max-workpackages 20`). Files in `bad_inputs/include/`
are only read by cases (init_with=, use from=, !include), never run themselves.

After an intended change of a message, rewrite the expected files and review the diff:

    python tests/stages/spec/test_bad_inputs.py --regenerate
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "bad_inputs"
FORMATS = (".xml", ".yaml")


def cases() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.expected"))


def bench_file(case: str) -> Path:
    for ext in FORMATS:
        path = CORPUS / (case + ext)
        if path.exists():
            return path
    return CORPUS / (case + ".xml")  # a case about a missing file


def plan_args(case: str) -> list[str]:
    extra = CORPUS / f"{case}.args"
    return ["plan", *(extra.read_text().split() if extra.exists() else []), str(bench_file(case))]


def placeholders(case: str) -> dict[str, str]:
    from caramel.stages.spec.sources import templates_dir

    return {"{file}": str(bench_file(case)), "{dir}": str(CORPUS), "{platform}": str(templates_dir() / "platform")}


def run_bench(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JUBE_INCLUDE_PATH", "CARAMEL_INCLUDE_PATH")}
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, env=env,
                          cwd=CORPUS, timeout=60)


def expected_stderr(case: str) -> str:
    text = (CORPUS / f"{case}.expected").read_text(encoding="utf-8")
    for key, value in placeholders(case).items():
        text = text.replace(key, value)
    return text


def test_corpus_is_complete() -> None:
    names = cases()
    assert len(names) >= 30
    assert sum(bench_file(c).suffix == ".xml" for c in names) >= 10
    assert sum(bench_file(c).suffix == ".yaml" for c in names) >= 10
    stems = {p.stem for p in CORPUS.iterdir() if p.suffix in FORMATS}
    assert stems <= set(names), f"benchmark files without an .expected: {sorted(stems - set(names))}"


# a case over 5 s in a full run here (a python parameter's list that explodes): the slow tier
SLOW_CASES = {"71_explosion_python_list"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_CASES else c
                                  for c in cases()])
def test_bad_input(case: str) -> None:
    proc = run_bench(*plan_args(case))
    assert "Traceback" not in proc.stderr
    assert proc.stderr == expected_stderr(case)
    assert proc.returncode == 2
    assert proc.stdout == ""


def test_debug_shows_the_traceback() -> None:
    proc = run_bench("--debug", "plan", str(bench_file("31_python_zero_division")))
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr
    assert "caramel.errors.ExpandError" in proc.stderr
    assert "parameter 'per_node'" in proc.stderr


def regenerate() -> None:
    """Rewrite every .expected from what `bench plan` prints now (review the diff before keeping it)."""
    for case in cases() + sorted(p.stem for p in CORPUS.iterdir()
                                 if p.suffix in FORMATS and not (CORPUS / f"{p.stem}.expected").exists()):
        text = run_bench(*plan_args(case)).stderr
        for key, value in sorted(placeholders(case).items(), key=lambda kv: -len(kv[1])):
            text = text.replace(value, key)
        (CORPUS / f"{case}.expected").write_text(text, encoding="utf-8")
        print(f"{case}: {text.splitlines()[0] if text else '(no error!)'}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate"]:
        regenerate()
    else:
        print(__doc__)
