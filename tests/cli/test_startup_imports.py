"""What `bench --help`, `bench run --help`, `bench result --help` and `bench config --help` import:
none of the heavy libraries (each costs every call tens of milliseconds of CPU, and a run's own CPU is
held to 1 % of a short job's wall time, docs/benchmarks.md), nor caramel's analysis, tables, history,
pages or predictions. A command imports these where it uses them; a constant --help shows (the
result styles) lives in a light module (report/styles.py) instead of being copied into cli/, and
this test is what keeps that module light."""

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
# caramel's own modules that import much of the package (report.table: the analysis, ~0.1 s)
CARAMEL_HEAVY = ["caramel.stages.analyse", "caramel.stages.report.table", "caramel.stages.report.dataset", "caramel.consumers.history",
                 "caramel.consumers.pages", "caramel.consumers.predict",
                 # the engine, the expander, the model (~60 dataclasses built at import), the state, the
                 # backends and the catalog: a command imports them when it runs, not to list itself
                 # (they were 0.15 s of `bench --help`)
                 "caramel.stages.engine", "caramel.stages.expand", "caramel.stages.spec.model", "caramel.stages.state.store",
                 "caramel.adapters.backends", "caramel.adapters.containers", "caramel.consumers.catalog"]

PROBE = """
import json, sys
sys.argv = ["bench", *sys.argv[1:]]
from caramel.cli.main import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY
                        or any(m == c or m.startswith(c + ".") for c in CARAMEL_HEAVY))), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["result", "--help"], ["config", "--help"],
                                  ["continue", "--help"], ["plan", "--help"], ["info", "--help"]],
                         ids=" ".join)
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\nCARAMEL_HEAVY = {CARAMEL_HEAVY!r}\n{PROBE}", *argv], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "usage: bench" in done.stdout
    imported = json.loads(done.stderr.strip().splitlines()[-1])
    assert imported == [], f"`bench {' '.join(argv)}` imports {imported}: import them where they are used"
