"""A big history on small budgets: the dashboard draws thinned series (every configuration, its
first and last points, every regression judged on the whole series) and writes every figure to a
CSV beside the page; `bench history list` counts in aggregate queries; `bench export` streams lines
that `bench import` reads back to the same history, a bad line anywhere leaving it as it was.
perf/history_scale.py measures the same at 1,000,000 figures."""

from __future__ import annotations

import csv
import json
import os
import re

import pytest
from tests.run_bench import bench

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import figures, sources, summary, thinning
from caramel.consumers.pages.render import page
from caramel.errors import CaramelError

from .conftest import bench_env

RUNS = 60


def _history(path, runs: int = RUNS, configs: int = 4) -> str:
    with History.open(str(path)) as h:
        for i in range(runs):
            slow = 0.7 if i % 20 == 13 else 1.0  # a regression every 20 runs, in every configuration
            h.add(RunRecord(f"r{i}", "llm", system="A100", started=1000.0 * (i + 1)),
                  [Metric("t", {"Nodes": str(n)}, "rate", "tok/s", "higher",
                          [slow * 100 * n + d + 0.1 * (i % 7) for d in (-1, 0, 1)]) for n in range(1, configs + 1)]
                  + [Metric("t", {"Nodes": str(n)}, "time", "s", "lower", [10.0 / n + i % 5, 10.0 / n + i % 5 + 0.1])
                     for n in range(1, configs + 1)])
    return str(path)


def _history_plot(plots: list[dict], name: str) -> dict:
    return next(p for p in plots if p["kind"] == "history" and p["metric"][1] == name)


def test_a_small_history_is_drawn_whole(tmp_path):
    coll = sources.load([_history(tmp_path / "h.db", runs=5)])
    assert not coll.thinned and len(coll.figures) == 5 * 8
    assert all(f.regressed is None for f in coll.figures)  # judged from the figures, as before


def test_a_big_history_draws_every_configuration_thinned_with_every_regression(tmp_path, monkeypatch):
    monkeypatch.setattr(thinning, "POINTS_BUDGET", 40)  # 8 series: at most 8 points each, plus regressions
    path = _history(tmp_path / "h.db")
    whole = sources.load([path])
    monkeypatch.setattr(thinning, "POINTS_BUDGET", 10_000)
    full = sources.load([path])
    assert whole.thinned and not full.thinned and len(whole.figures) < len(full.figures)
    drawn = _history_plot(figures.benchmark_plots(whole, whole.figures), "rate")
    every = _history_plot(figures.benchmark_plots(full, full.figures), "rate")
    assert [s["config"] for s in drawn["series"]] == [s["config"] for s in every["series"]]  # every configuration
    for thin, fat in zip(drawn["series"], every["series"], strict=True):
        assert len(thin["run"]) < len(fat["run"]) and thin["run"][0] == 0 and thin["run"][-1] == RUNS - 1
        assert max(thin["y"]) == max(fat["y"]) and min(thin["y"]) == min(fat["y"])  # the extremes are kept
        assert [thin["run"][k] for k in thin["bad"]] == [fat["run"][k] for k in fat["bad"]] == [13, 33, 53]
    rows = {r.metric: r for r in summary.rows(whole)}
    assert rows["rate [tok/s]"].runs == RUNS  # counted on the whole history, not the figures drawn
    text = page(whole, "t", all_points="page.csv")
    assert 'href="page.csv"' in text and "figures are too many for one page" in text


@pytest.mark.slow
def test_the_dashboard_of_a_thinned_history_writes_every_figure_beside_the_page(tmp_path):
    path = _history(tmp_path / "h.db", runs=40, configs=500)  # 1,000 series of 40: past the page's budget
    out = tmp_path / "page.html"
    done = bench("dashboard", "--history", path, "-o", str(out), cwd=tmp_path, env=bench_env(tmp_path, path))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "page.csv", newline="") as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 40 * 1000
    assert lines[0]["configuration"] == "Nodes=1" and lines[0]["metric"] == "t/rate" and lines[0]["run"] == "r0"
    assert {line["run"] for line in lines if line["regressed"] == "yes" and line["metric"] == "t/rate"} == {"r13", "r33"}
    data = re.search(r'id="caramel-data">(.*?)</script>', out.read_text(), re.S).group(1)
    drawn = sum(len(s["y"]) for p in json.loads(data)["plots"] if p["kind"] == "history" for s in p["series"])
    assert drawn < 40 * 1000  # the slices' lows and highs, the regressions and the two latest runs


def test_history_list_counts_each_runs_figures(tmp_path):
    path = _history(tmp_path / "h.db", runs=3)
    with History.open(path) as h:
        h.add(RunRecord("other", "resnet", started=5.0), [Metric("t", {}, "rate", "", "higher", [1.0])])
        listing = [(run.run_key, figures, flagged) for run, figures, flagged in h.listing()]
        assert listing == [("other", 1, False), ("r0", 8, False), ("r1", 8, False), ("r2", 8, False)]
        assert [run.run_key for run, _, _ in h.listing("resnet")] == ["other"]
    listed = bench("history", "list", "--benchmark", "llm", "--history", path, cwd=tmp_path,
                   env=bench_env(tmp_path, path))
    assert listed.stdout.count("8 figure(s)") == 3 and "other" not in listed.stdout


def test_export_streams_lines_that_import_reads_back_whole(tmp_path):
    path = _history(tmp_path / "h.db", runs=4)
    env = bench_env(tmp_path, path)
    first = bench("export", "-o", str(tmp_path / "a.jsonl"), cwd=tmp_path, env=env)
    assert first.returncode == 0 and "4 run(s) written" in first.stderr
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    with History.open(path) as h:  # the streamed lines are the records the history holds
        assert [json.loads(line) for line in lines] == list(h.export())
        assert json.loads(lines[0])["metrics"][0] == {"table": "t", "row": {"Nodes": "1"}, "name": "rate",
                                                        "unit": "tok/s", "direction": "higher",
                                                        "samples": [99.0, 100.0, 101.0]}
    copy = tmp_path / "b.db"
    assert bench("import", str(tmp_path / "a.jsonl"), "--history", str(copy), cwd=tmp_path, env=env).returncode == 0
    again = bench("export", "--history", str(copy), cwd=tmp_path, env=env)
    assert again.stdout.splitlines() == lines


def test_a_bad_line_after_many_good_ones_leaves_the_history_as_it_was(tmp_path):
    path = _history(tmp_path / "h.db", runs=5)
    env = bench_env(tmp_path, path)
    text = bench("export", cwd=tmp_path, env=env).stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text + '{"run": {"run_key": "x", "benchmark": "b"}, "metrics": [{"table": "t", "row": {}, '
                          '"name": "n", "samples": [1e999]}]}\n')
    target = tmp_path / "t.db"
    done = bench("import", str(bad), "--history", str(target), cwd=tmp_path, env=env)
    assert done.returncode == 2 and "bad.jsonl:6: not a bench export" in done.stderr
    with History.open(str(target)) as h:
        assert h.runs() == []  # the five good runs were rolled back with the bad line


def test_a_run_twice_in_a_file_with_other_figures_names_the_first_line(tmp_path):
    path = _history(tmp_path / "h.db", runs=2)
    env = bench_env(tmp_path, path)
    lines = bench("export", cwd=tmp_path, env=env).stdout.splitlines()
    changed = json.loads(lines[0])
    changed["metrics"][0]["samples"] = [1.0, 2.0]
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([lines[0], lines[1], json.dumps(changed)]) + "\n")
    done = bench("import", str(twice), "--history", str(tmp_path / "t.db"), cwd=tmp_path, env=env)
    assert done.returncode == 2 and "twice.jsonl:3: run r0 is already in line 1 of this file" in done.stderr
    same = tmp_path / "same.jsonl"
    same.write_text("\n".join([lines[0], lines[0]]) + "\n")
    done = bench("import", str(same), "--history", str(tmp_path / "u.db"), cwd=tmp_path, env=env)
    assert done.returncode == 0 and done.stdout.startswith("1 new run(s), 8 new figure(s)")


def _thinned_dashboard(tmp_path, monkeypatch) -> tuple[str, object]:
    from caramel.cli import dashboard

    monkeypatch.setattr(thinning, "POINTS_BUDGET", 40)
    return _history(tmp_path / "h.db", runs=12), dashboard


def test_a_csv_that_cannot_be_written_is_named_and_no_page_is_written(tmp_path, monkeypatch):
    path, dashboard = _thinned_dashboard(tmp_path, monkeypatch)
    (tmp_path / "page.csv").mkdir()  # a folder where the CSV belongs
    try:
        dashboard.dashboard(dashboard.DashboardOptions(str(tmp_path / "page.html"), (path,)))
    except CaramelError as exc:
        assert "page.csv" in str(exc)
    else:
        raise AssertionError("no error")
    assert not (tmp_path / "page.html").exists()


def test_the_csv_is_written_once_in_this_process_before_the_page(tmp_path, monkeypatch):
    path, dashboard = _thinned_dashboard(tmp_path, monkeypatch)
    write, writers = dashboard._write_points, tmp_path / "writers"

    def noted(target, collection):
        assert not (tmp_path / "page.html").exists()  # the page comes after the CSV it names
        with open(writers, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        write(target, collection)

    monkeypatch.setattr(dashboard, "_write_points", noted)
    assert dashboard.dashboard(dashboard.DashboardOptions(str(tmp_path / "page.html"), (path,))) == 0
    assert writers.read_text().split() == [str(os.getpid())]
    assert len((tmp_path / "page.csv").read_text().splitlines()) == 1 + 12 * 8
