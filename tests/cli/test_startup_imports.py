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


# What `bench run NAME` and `bench result` of a finished run leave out, each one once on their path and
# each about 2 to 20 ms of CPU a command (docs/benchmarks.md, "bench's and the energy wrapper's own CPU"):
# socket (uname gives the host name), secrets/hashlib for random names (os.urandom), urllib.request
# (http.client, ssl, email: only where a history sink is set), lxml (a YAML file), `bench predict`'s module,
# and the ldconfig child of ctypes.util.find_library.
NOT_ON_THE_RUN_PATH = ["socket", "secrets", "urllib.request", "http.client", "ssl", "lxml", "ctypes.util",
                       "caramel.cli.predict"]
COMMAND_PROBE = """
import json, sys
sys.argv = ["bench", *sys.argv[1:]]
from caramel.cli.main import main
code = main()
print(json.dumps([code, sorted(m for m in sys.modules if m in NOT_ON_THE_RUN_PATH or m.split(".")[0] == "lxml")]),
      file=sys.stderr)
"""


@pytest.mark.slow
def test_run_and_result_import_only_what_they_use(tmp_path: Path) -> None:
    from tests.run_bench import isolated_env

    env = {**isolated_env(tmp_path), "PYTHONPATH": str(SRC)}
    (tmp_path / "benchmarks").mkdir()
    quickstart = (SRC.parent / "benchmarks" / "quickstart.yaml").read_text().replace('"32,64,96"', "8")
    (tmp_path / "benchmarks" / "quick.yaml").write_text(quickstart)
    for argv in (["run", "quick", "--benchmarks", "benchmarks", "--tag", "local", "-q"],
                 ["result", "-i", "last", "quickstart_run"], ["continue", "quickstart_run", "-i", "last"]):
        done = subprocess.run([sys.executable, "-c", f"NOT_ON_THE_RUN_PATH = {NOT_ON_THE_RUN_PATH!r}\n{COMMAND_PROBE}",
                               *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        code, imported = json.loads(done.stderr.strip().splitlines()[-1])
        assert code == 0, done.stdout + done.stderr
        assert imported == [], f"`bench {' '.join(argv)}` imports {imported}: import them where they are used"


# What `bench result` on a run where nothing changed since the last call leaves out: it reads the kept
# tables (report.results.produce) and scans nothing, so neither the regex module (patterns compile
# where a file is scanned), the MAD-style and repeat modules (where tables are made), the schedulers
# and the fingerprint probe (where a run record is made) nor the sinks (none configured).
NOT_ON_THE_UNCHANGED_PATH = ["regex", "caramel.stages.analyse.performance", "caramel.stages.spec.mad",
                             "caramel.stages.report.performance", "caramel.stages.report.repeats",
                             "caramel.adapters.backends", "caramel.consumers.history.fingerprint",
                             "caramel.consumers.history.sinks"]


@pytest.mark.slow
def test_result_of_an_unchanged_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    from tests.run_bench import isolated_env

    env = {**isolated_env(tmp_path), "PYTHONPATH": str(SRC)}
    (tmp_path / "benchmarks").mkdir()
    quickstart = (SRC.parent / "benchmarks" / "quickstart.yaml").read_text().replace('"32,64,96"', "8")
    (tmp_path / "benchmarks" / "quick.yaml").write_text(quickstart)
    probe = f"NOT_ON_THE_RUN_PATH = {NOT_ON_THE_UNCHANGED_PATH!r}\n{COMMAND_PROBE}"
    found = []
    for argv in (["run", "quick", "--benchmarks", "benchmarks", "--tag", "local", "-q"],
                 ["result", "-i", "last", "quickstart_run"], ["result", "-i", "last", "quickstart_run"]):
        done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        code, imported = json.loads(done.stderr.strip().splitlines()[-1])
        assert code == 0, done.stdout + done.stderr
        found.append(imported)
    assert "regex" in found[1]  # the first result scans the logs
    assert found[2] == [], f"`bench result` of an unchanged run imports {found[2]}: import them where used"
