"""The dashboard and predict meet one figure printed in `s` by one run and in `ms` by another in
one unit (issue 34): a `bench import` of a small export, then the page's figures and predict's
points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.run_bench import bench

from caramel.consumers.pages.sources import load, shown_unit
from caramel.consumers.predict.points import PredictError, load_points


def _export(path: Path, *printed: tuple[float, str]) -> Path:
    """An export of one run per (value, unit) of benchmark `timed` on system `local`."""
    lines = []
    for i, (value, unit) in enumerate(printed):
        run = {
            "run_key": f"run{i}",
            "benchmark": "timed",
            "system": "local",
            "run_dir": f"runs/00000{i}",
            "started": 1000.0 + i,
            "ended": 1000.5 + i,
        }
        metric = {
            "table": "performance",
            "row": {"model": "timed"},
            "name": "performance",
            "unit": unit,
            "direction": "lower",
            "samples": [value, value * 1.01],
        }
        lines.append(json.dumps({"run": run, "metrics": [metric]}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _history(tmp_path: Path, env: dict[str, str], *printed: tuple[float, str]) -> str:
    done = bench("import", str(_export(tmp_path / "export.jsonl", *printed)), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return env["CARAMEL_HISTORY"]


def test_the_page_shows_one_metric_in_the_first_unit(tmp_path, env):
    history = _history(tmp_path, env, (0.013, "s"), (12.0, "ms"), (1000.0, "tokens/s"))
    figures = load([history]).figures
    assert sorted({(f.name, f.unit) for f in figures}) == [
        ("performance", "s"),
        ("performance", "tokens/s"),
    ]
    seconds = sorted((f.run, f.mean, f.sd) for f in figures if f.unit == "s")
    assert [round(mean, 6) for _run, mean, _sd in seconds] == [
        round(0.013 * 1.005, 6),
        round(0.012 * 1.005, 6),
    ]
    assert seconds[1][2] == pytest.approx(0.012 * 0.01 / 2**0.5)  # the sd converted too


def test_shown_unit_keeps_a_figure_without_unit_and_unknown_units_apart():
    units: list[str] = []
    assert shown_unit(units, "ms") == ("ms", 1.0)
    assert shown_unit(units, "s") == ("ms", 1000.0)
    assert shown_unit(units, "") == ("", 1.0) and shown_unit(units, "widgets") == ("widgets", 1.0)
    assert units == ["ms", "", "widgets"]


def test_predict_learns_in_the_first_runs_unit_and_refuses_two_quantities(tmp_path, env):
    history = _history(tmp_path, env, (0.013, "s"), (12.0, "ms"))
    [data] = load_points(history, "timed", "local")
    assert data.unit == "s"
    assert sorted(data.points[0].samples) == pytest.approx(sorted([0.013, 0.01313, 0.012, 0.01212]))
    other = tmp_path / "other"
    other.mkdir()
    history = _history(
        other, dict(env, CARAMEL_HISTORY=str(other / "h.db")), (0.013, "s"), (1000.0, "tokens/s")
    )
    with pytest.raises(PredictError) as refused:
        load_points(history, "timed", "local")
    assert (
        "'tokens/s'" in str(refused.value)
        and "'s'" in str(refused.value)
        and "runs/000001" in str(refused.value)
    )
