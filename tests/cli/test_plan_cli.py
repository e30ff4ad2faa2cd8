"""`bench plan` as users run it: the real command on real files."""

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent.parent / "data" / "plan"


def bench(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, cwd=cwd)


def test_json_is_typed_and_writes_nothing(tmp_path):
    source = (DATA / "space.xml").read_text()
    (tmp_path / "space.xml").write_text(source)
    proc = bench("plan", "space.xml", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["benchmark"] == "space"
    first = doc["workpackages"][0]
    assert first == {"id": 0, "step": "train", "iteration": 0, "parents": [],
                     "parameters": {"nodes": 1, "precision": "fp16", "tasks": 8,
                                    "label": "fp16-n1 (8 tasks; cost $5)"}}
    assert len(doc["workpackages"]) == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.xml"]  # no run folder


def test_table_lists_varying_values():
    proc = bench("plan", str(DATA / "chain.yaml"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "benchmark chain: 38 workpackages"
    assert lines[1].split() == ["id", "step", "iter", "parents", "dataset", "batch"]


def test_tags_select_parameters():
    proc = bench("plan", str(DATA / "tags.yaml"), "--tag", "MI250", "container", "--format", "json")
    params = json.loads(proc.stdout)["workpackages"][0]["parameters"]
    assert params == {"system": "MI250", "gpus": 1, "comm": "none", "comm_late": "later wins"}


def test_module_and_console_script_agree():
    assert bench("--version").stdout.startswith("caramel ")
