"""The dashboard of a fresh install, corrected: every listed figure drawn, units on `performance`
rows, a copies table's aggregate never the best configuration, arrows only from the stored direction,
one sample never a regression, ISO 8601 dates."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord
from caramel.consumers.pages import summary
from caramel.consumers.pages.render import page
from caramel.consumers.pages.sources import load

STARTED = time.mktime((2026, 11, 24, 19, 46, 0, 0, 0, -1))


def _add(history: Path, runs: list[tuple[str, str, float, list[Metric]]]) -> None:
    with History.open(str(history)) as h:
        for key, benchmark, started, metrics in runs:
            h.add(RunRecord(key, benchmark, system="local", started=started, site="here", tags=["local"]), metrics)


def _performance(model: str, value: float, unit: str, copy: str | None = None, n: int = 1) -> Metric:
    row = {"model": model} | ({"caramel_copy": copy} if copy is not None else {})
    direction = "lower" if unit == "ms" else "higher"
    return Metric("performance", row, "performance", unit, direction, [value * (1 + 0.01 * i) for i in range(n)])


def _data(html: str) -> dict:
    return json.loads(re.search(r'id="caramel-data">(.*?)</script>', html, re.S).group(1))


def _summary_cells(html: str) -> list[list[str]]:
    body = html.split('<tbody>', 1)[1].split('</tbody>', 1)[0]
    rows = re.findall(r"<tr .*?</tr>", body, re.S)
    return [[re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]


def test_a_copies_aggregate_is_its_own_metric_never_the_best_configuration(tmp_path: Path) -> None:
    copies = [_performance("matmul", 21.3, "GFLOP/s", "0"), _performance("matmul", 25.5, "GFLOP/s", "1"),
              _performance("matmul", 46.8, "GFLOP/s", "sum"), _performance("matmul", 2.98, "GFLOP/s", "sd"),
              _performance("matmul", 2.1, "GFLOP/s", "sem")]
    _add(tmp_path / "h.db", [("r0", "matmul_users", STARTED, copies)])
    coll = load([str(tmp_path / "h.db")])
    rows = {r.metric: r for r in summary.rows(coll)}
    assert set(rows) == {"performance [GFLOP/s]", "performance [GFLOP/s] · sum of copies"}
    per_copy = rows["performance [GFLOP/s]"]
    assert per_copy.latest.row["caramel_copy"] == "1" and per_copy.configs == 2  # the best copy, of two
    assert rows["performance [GFLOP/s] · sum of copies"].latest.mean == 46.8
    assert all(f.row.get("caramel_copy") not in ("sd", "sem") for f in coll.figures)  # spreads: no figures
    plots = _data(page(coll, "t"))["plots"]
    assert not [p for p in plots if p.get("param") == "caramel_copy"]  # copies are no swept size


def test_performance_rows_carry_their_units_and_every_listed_figure_is_shown(tmp_path: Path) -> None:
    """One run, nothing swept (a fresh install): no "no numeric figures", each metric of one
    configuration a row of the benchmark's compact table (issue 37: not a card with one point each);
    each unit of a `performance` table is its own row, named with its unit."""
    _add(tmp_path / "h.db", [("r0", "zoo", STARTED, [_performance("gpt", 6189.6, "tokens/s"),
                                                      _performance("bert", 12.5, "ms")])])
    coll = load([str(tmp_path / "h.db")])
    html = page(coll, "t")
    assert "no numeric figures" not in html
    metrics = [cells[2] for cells in _summary_cells(html)]
    assert metrics == ["performance [ms] ↓", "performance [tokens/s] ↑"]
    assert _data(html)["plots"] == []
    compact = html.split('class="sortable compact"', 1)[1].split("</table>", 1)[0]
    assert "performance [ms]" in compact and "performance [tokens/s]" in compact
    assert "6,190" in compact and "12.5" in compact  # rounded as the page rounds (num)


def test_arrows_come_from_the_stored_direction_only(tmp_path: Path) -> None:
    """A name that looks like a time stored as `higher` gets ↑; an unknown direction gets no arrow."""
    metrics = [Metric("t", {"n": "1"}, "time", "", "higher", [1.0]), Metric("t", {"n": "1"}, "score", "", "unknown", [2.0])]
    _add(tmp_path / "h.db", [("r0", "b", STARTED, metrics)])
    cells = {c[2].split(" ")[0]: c[2] for c in _summary_cells(page(load([str(tmp_path / "h.db")]), "t"))}
    assert cells == {"time": "time ↑", "score": "score"}


def test_one_sample_runs_on_a_loaded_node_are_not_regressions(tmp_path: Path) -> None:
    _add(tmp_path / "h.db", [("r0", "resnet", STARTED, [_performance("resnet", 138.3, "images/s")]),
                             ("r1", "resnet", STARTED + 60, [_performance("resnet", 109.3, "images/s")])])
    coll = load([str(tmp_path / "h.db")])
    [row] = summary.rows(coll)
    assert (row.verdict, row.regressed, round(row.previous_pct)) == ("cannot judge", 0, -21)  # compare's word
    [plot] = _data(page(coll, "t"))["plots"]
    assert plot["kind"] == "history" and all(not s["bad"] for s in plot["series"])
    # with repeats on both sides the same drop is judged, and marked
    _add(tmp_path / "r.db", [("r0", "resnet", STARTED, [_performance("resnet", 138.3, "images/s", n=3)]),
                             ("r1", "resnet", STARTED + 60, [_performance("resnet", 109.3, "images/s", n=3)])])
    coll = load([str(tmp_path / "r.db")])
    assert summary.rows(coll)[0].verdict == "regressed"
    assert _data(page(coll, "t"))["plots"][0]["series"][0]["bad"] == [1]


def test_dates_are_iso_8601(tmp_path: Path) -> None:
    _add(tmp_path / "h.db", [("r0", "b", STARTED, [_performance("m", 1.0, "s")])])
    html = page(load([str(tmp_path / "h.db")]), "t")
    day = time.strftime("%Y-%m-%d %H:%M", time.gmtime(STARTED))
    assert _summary_cells(html)[0][-1] == day and f"{day} UTC" in html
    assert not re.search(r"\b\d{2}-\d{2}-\d{2} \d{2}:\d{2}", html.replace(day, ""))  # no `26-11-24 19:46`


def test_the_regressions_of_a_series_at_once_match_the_verdict_of_each_pair() -> None:
    """pages.figures.regressions (numpy, for a million figures) says what judged() says pair by pair."""
    import random

    from caramel.consumers.pages.figures import regressions
    from caramel.consumers.pages.judging import judged
    from caramel.consumers.pages.sources import Figure

    rng = random.Random(24)
    for trial in range(300):
        way = ("higher", "lower", "unknown")[trial % 3]
        items = []
        for _ in range(rng.randint(0, 12)):
            n = rng.choice([1, 2, 3, 5, 40])
            mean = rng.choice([0.0, 100.0, 100.0 * rng.uniform(0.7, 1.3), 100.5])
            sd = rng.choice([0.0, 0.5, 3.0, 20.0]) if n > 1 else 0.0
            items.append(Figure(0, "t", "c", {}, "m", "", way, n, mean, sd))
        expected = [i for i in range(1, len(items)) if judged(items[i], items[i - 1])[0] == "regressed"]
        assert regressions(items) == expected, items
