"""What `bench --help`, `bench run --help` and `bench result --help` import: none of the heavy
libraries (each costs every call tens of milliseconds of CPU, and a run's own CPU is held to 1 % of
a short job's wall time, docs/benchmarks.md). A command imports these where it uses them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
# Not needed to parse arguments or print help: XML and YAML readers, templates, data frames,
# numerics, plots, machine learning, terminal styling, process inspection.
HEAVY = ["lxml", "yaml", "jinja2", "pandas", "numpy", "scipy", "sklearn", "plotly", "matplotlib", "torch",
         "rich", "psutil", "jpwr", "hypothesis"]

PROBE = """
import json, sys
sys.argv = ["bench", *sys.argv[1:]]
from caramel.cli.main import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["result", "--help"]], ids=" ".join)
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}", *argv], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "usage: bench" in done.stdout
    imported = json.loads(done.stderr.strip().splitlines()[-1])
    assert imported == [], f"`bench {' '.join(argv)}` imports {imported}: import them where they are used"
