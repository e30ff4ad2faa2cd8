"""`bench run` on caramel's own benchmark files: the work folders hold exactly the expected files.

Each file under tests/e2e/data/ was run side by side with JUBE 2.7.1 (shared/tools/jube-parity
run FILE): the work folders agree. The expected snapshots (every file of the outpath, the scratch
root written <ROOT>, links as `-> target`) were written from bench after that check. Regenerate with
`python tests/e2e/test_workfolders.py` after checking a change of behaviour against JUBE.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent.parent))
from tests.e2e.conftest import DATA, snapshot  # noqa: E402
from tests.run_bench import bench, isolated_env

CASES = ["basics.xml", "files.yaml", "env.xml", "shared_cycle.xml", "workdir.xml", "parallel.yaml"]


def normalise(snap: dict[str, str]) -> dict[str, str]:
    """Values that differ from run to run: the home folder in do logs' environment lines."""
    out = {}
    for name, text in snap.items():
        if name.endswith("do_log"):
            text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("export "))
        out[name] = re.sub(r"/tmp/[^/\s]+/", "/tmp/X/", text) if name.endswith("do_log") else text
    return out


def run_case(name: str, folder: Path, env: dict[str, str]) -> dict[str, str]:
    proc = bench("run", name, cwd=folder, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return normalise(snapshot(folder / "runs"))


@pytest.mark.parametrize("name", CASES)
def test_work_folders_match_expected(name: str, workdir: Path, env: dict[str, str]) -> None:
    expected = json.loads((DATA / "expected" / f"{name.replace('.', '_')}.json").read_text())
    assert run_case(name, workdir, env) == expected


if __name__ == "__main__":
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "bench"
            shutil.copytree(DATA, folder, ignore=shutil.ignore_patterns("expected", "runs"))
            environ = isolated_env(Path(tmp))
            path = DATA / "expected" / f"{case.replace('.', '_')}.json"
            path.write_text(json.dumps(run_case(case, folder, environ), indent=1) + "\n")
            print("wrote", path)
