"""caramel.sweep: a function and a parameter space run as a call: benchmark from Python (docs/functions.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from caramel.errors import SpecError
from caramel.sweep import benchmark_text, run_sweep

SCRIPT = textwrap.dedent('''
    import caramel, json, sys
    sys.path.insert(0, ".")
    import functions
    frame = caramel.sweep(functions.rate, {"size": [1, 2, 3], "scale": [1.0, 2.0], "tag": "a,b"},
                          figures={"rate": "items/s", "ms": ("ms", "lower")}, outpath="sweeps")
    print(json.dumps({"rows": frame[["size", "scale", "rate"]].values.tolist(), "units": frame.attrs["units"],
                      "dtypes": [str(frame[c].dtype) for c in ("size", "scale", "rate")]}))
''')
FUNCTIONS = '''
def rate(size: int, scale: float, tag: str):
    assert tag == "a,b", tag
    return {"rate": size * scale, "ms": 1.0 / size}
'''


@pytest.mark.slow
def test_a_sweep_runs_every_point_and_returns_its_typed_table(tmp_path):
    import json
    import os

    (tmp_path / "functions.py").write_text(FUNCTIONS)
    env = dict(os.environ, CARAMEL_DATA_DIR=str(tmp_path / "data"), CARAMEL_HISTORY=str(tmp_path / "h.db"))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["rows"] == [[s, c, s * c] for s in (1, 2, 3) for c in (1.0, 2.0)]
    assert out["units"] == {"rate": "items/s", "ms": "ms", "energy_wh": "Wh"} and out["dtypes"] == ["Int64", "float64", "float64"]
    assert (tmp_path / "sweeps" / "rate.yaml").is_file() and (tmp_path / "h.db").is_file()


def test_a_value_holding_the_separator_is_written_with_another_one():
    text = benchmark_text("f", "m:f", {"n": [1, 2], "words": ["a,b", "c"], "one": 0.5}, None)
    params = {p["name"]: p for p in text["parameterset"][0]["parameter"]}
    assert params["n"] == {"name": "n", "type": "int", "_": "1,2"}
    assert params["words"] == {"name": "words", "type": "string", "_": "a,b;c", "separator": ";"}
    assert params["one"] == {"name": "one", "type": "float", "_": "0.5"}


def test_a_function_not_importable_by_name_is_refused_with_a_hint():
    def local_function(size: int):
        return {"rate": size}

    with pytest.raises(SpecError, match="not importable by name") as caught:
        run_sweep(local_function, {"size": [1]})
    assert "define the function in a module" in caught.value.hint


NO_CLI_SCRIPT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, ".")
    import caramel.api, caramel.sweep, functions
    imported = sorted(m for m in sys.modules if m == "caramel.cli" or m.startswith("caramel.cli."))
    caramel.api.sweep(functions.rate, {"size": [1], "scale": [1.0], "tag": "a,b"},
                      figures={"rate": "items/s"}, outpath="sweeps")
    after = sorted(m for m in sys.modules if m == "caramel.cli" or m.startswith("caramel.cli."))
    print(json.dumps([imported, after]))
''')


@pytest.mark.slow
def test_the_notebook_api_imports_no_cli_module(tmp_path):
    """caramel.api and caramel.sweep sit beside the CLI, not on it: importing them, and running a
    sweep through them, imports no caramel.cli module (the run's scheduler is the engine's:
    session.scheduler_for)."""
    import json
    import os

    (tmp_path / "functions.py").write_text(FUNCTIONS)
    env = dict(os.environ, CARAMEL_DATA_DIR=str(tmp_path / "data"),
               CARAMEL_HISTORY=str(tmp_path / "h.db"))
    done = subprocess.run([sys.executable, "-c", NO_CLI_SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after_import, after_sweep = json.loads(done.stdout.strip().splitlines()[-1])
    assert after_import == [] and after_sweep == []
