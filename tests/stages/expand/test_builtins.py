"""caramel's built-in parameters (stages/expand/builtins.py, docs/file-format.md): what a benchmark
file needs of caramel, named as JUBE's `$jube_benchmark_home` is, made only for a file naming
them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml
from tests.run_bench import bench, isolated_env

from caramel.stages.expand.builtins import BUILTINS, PACKAGE_HOME

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
# A python parameter that reaches into caramel: `__import__('caramel...')`, or a module by name.
REACHES_INTO_CARAMEL = re.compile(r"__import__\(\s*['\"]caramel|\bcaramel\.[a-z_]+\.")

FILE = """
name: b
outpath: out
parameterset:
  - name: p
    parameter:
      - {name: n, type: int, _: "1"}
%s
step:
  - {name: s, use: [p, system], do: "echo $n"}
"""
NAMES_THEM = """\
      - {name: procs, type: int, mode: python, _: "$caramel_gpt_cpu_processes * 1"}
      - {name: threads, type: int, _: $caramel_resnet_cpu_threads}
      - {name: choice, _: "$caramel_gpt_cpu_layout_choice"}
      - {name: home, _: $caramel_package_home}"""


def python_parameters(path: Path) -> list[str]:
    """The texts of every mode="python" parameter of a shipped file (YAML or JUBE XML)."""
    if path.suffix == ".xml":
        root = ET.parse(path).getroot()
        return [p.text or "" for p in root.iter("parameter") if p.get("mode") == "python"]
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("mode") == "python":
                out.append(str(node.get("_", "")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(path.read_text()))
    return out


def test_no_shipped_benchmark_reaches_into_caramel() -> None:
    shipped = ROOT / "benchmarks"
    files = sorted(shipped.glob("*.yaml")) + sorted(shipped.glob("*.xml"))
    assert any(f.name == "llm.yaml" for f in files) and any(f.name == "resnet50.xml" for f in files)
    reaching = [f"{f.name}: {text}" for f in files for text in python_parameters(f)
                if REACHES_INTO_CARAMEL.search(text)]
    assert reaching == []
    # what llm.yaml and resnet50.xml held before the built-ins
    assert REACHES_INTO_CARAMEL.search("__import__('caramel.payloads.workloads.layout')")
    assert REACHES_INTO_CARAMEL.search("os.path.dirname(__import__('caramel').__file__)")


def _plan(tmp_path: Path, extra: str, *tags: str, **env: str):
    (tmp_path / "b.yaml").write_text(FILE % extra)
    tag_args = [a for t in tags for a in ("--tag", t)]
    return bench("plan", "b.yaml", "--format", "json", *tag_args, cwd=tmp_path,
                 env=isolated_env(tmp_path, PYTHONPATH=str(SRC), **env))


def test_the_builtins_are_the_layout_choice_and_the_package_folder(tmp_path: Path) -> None:
    done = _plan(tmp_path, NAMES_THEM, "local", CARAMEL_CPU_LAYOUT="3x2")
    assert done.returncode == 0, done.stderr
    p = json.loads(done.stdout)["workpackages"][0]["parameters"]
    # payloads/workloads/layout.py, layout_choice: $CARAMEL_CPU_LAYOUT=PxT wins, described as
    # `PxT (CARAMEL_CPU_LAYOUT)`
    assert (p["procs"], p["threads"], p["choice"]) == (3, 2, "3x2 (CARAMEL_CPU_LAYOUT)")
    assert p["home"] == str(SRC / "caramel") == PACKAGE_HOME
    assert not set(p) & set(BUILTINS)  # shown as JUBE's jube_* are: not among the file's parameters


PROBE = """
import json, sys
from caramel.cli.main import main
code = main(sys.argv[1:])
print(json.dumps([code, "caramel.payloads.workloads.layout" in sys.modules]), file=sys.stderr)
"""


def test_a_file_that_names_no_layout_builtin_never_decides_the_layout(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(FILE % "      - {name: home, _: $caramel_package_home}")
    env = isolated_env(tmp_path, PYTHONPATH=str(SRC))
    run = [sys.executable, "-c", PROBE, "plan", "b.yaml", "--tag", "local"]
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [0, False], done.stderr
    (tmp_path / "b.yaml").write_text(FILE % NAMES_THEM)
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == [0, True], done.stderr


def test_a_layout_builtin_without_a_system_is_named_with_its_line(tmp_path: Path) -> None:
    text = FILE.replace("use: [p, system]", "use: p") % NAMES_THEM
    (tmp_path / "b.yaml").write_text(text)
    done = bench("plan", "b.yaml", cwd=tmp_path, env=isolated_env(tmp_path, PYTHONPATH=str(SRC)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = text.splitlines().index(NAMES_THEM.splitlines()[0]) + 1
    said = (f"error: {tmp_path / 'b.yaml'}:{line}: $caramel_gpt_cpu_processes is a fact of the site "
            "the plan is made for, and no tag names a system")
    assert done.stderr.startswith(said), done.stderr
    assert "hint: add a system tag (local: this machine)" in done.stderr


def test_a_parameter_named_like_a_builtin_is_refused(tmp_path: Path) -> None:
    own = "      - {name: caramel_package_home, _: /opt/caramel}"
    done = _plan(tmp_path, own, "local")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = (FILE % own).splitlines().index(own) + 1
    said = f"b.yaml:{line}: parameter 'caramel_package_home' has the name of a caramel built-in"
    assert said in done.stderr
