"""The corpus of benchmarks whose results go wrong: `bench run` then `bench result` on each must print
exactly what its `.expected` file holds (exit code, stdout, stderr; `{dir}` is the scratch folder).

Each case shows that a fault of the analysis names the pattern or column with file and line, and
that a missing log is a status on the row rather than a crash. After an intended change:

    python tests/stages/report/test_bad_results.py --regenerate
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "bad_results"


def cases() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.suffix in (".xml", ".yaml"))


def outcome(case: Path) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(case, scratch)
        run = subprocess.run([sys.executable, "-m", "caramel", "run", case.name], cwd=scratch,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        got = subprocess.run([sys.executable, "-m", "caramel", "result", "-i", "last"], cwd=scratch,
                             capture_output=True, text=True, timeout=60)
        text = f"exit {got.returncode}\n--- stdout\n{got.stdout}--- stderr\n{got.stderr}"
        return text.replace(str(Path(scratch).resolve()), "{dir}").replace(scratch, "{dir}")


@pytest.mark.parametrize("case", cases(), ids=lambda p: p.stem)
def test_bad_result(case: Path) -> None:
    got = outcome(case)
    assert "Traceback" not in got
    assert got == case.with_suffix(".expected").read_text()


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    for case in cases():
        case.with_suffix(".expected").write_text(outcome(case))
        print("wrote", case.with_suffix(".expected").name)
