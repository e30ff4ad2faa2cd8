"""Change points in the history (consumers/history/changes.py) on a seeded synthetic history with
known truth (tests/consumers/history/synthetic_changes.py): the injected steps found within +-2 runs,
clean series left alone, the injected fingerprint change named as the cause, an event counted once.

Searching each series alone, a step's least-squares location lands within +-2 runs of the truth for
about 90 % of these steps (best_possible); changes.find also uses what the runs' fingerprints say:
a step is placed at the driver update the data cannot tell from its fitted place, and each driver
update is tested in every series. perf/change_points.py prints the figures over more seeds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.consumers.history.synthetic_changes import Truth, generate

from caramel.consumers.history import changes as ch
from caramel.consumers.history import changes_search as search
from caramel.vocabulary import Direction


def detect(
    truth: Truth, fingerprints: bool = True
) -> tuple[dict[tuple[str, ...], list[ch.ChangePoint]], list[ch.Event]]:
    """changes.find over the synthetic history, with its runs' fingerprints (or none recorded):
    per series, its change points; and the events."""
    at = np.arange(len(truth.runs))
    series = [ch.Series(name, np.asarray(v), at, "items/s", Direction.HIGHER)
              for name, v in truth.values.items()]  # fmt: skip
    times = [f"t{i:04d}" for i in at]
    found, events = ch.find(series, truth.runs, times, truth.provenance if fingerprints else {})
    by_series: dict[tuple[str, ...], list[ch.ChangePoint]] = {name: [] for name in truth.values}
    for change in found:
        by_series[change.series].append(change)
    return by_series, events


def best_possible(truth: Truth) -> float:
    """The share of steps whose least-squares location, knowing there is exactly one and nothing
    else, is within +-2 runs: what no detector that looks at one series alone beats."""
    hits = 0
    for name, step in truth.steps.items():
        x = np.log(truth.values[name])
        left, k = np.cumsum(x), np.arange(3, len(x) - 2)
        gain = left[k - 1] ** 2 / k + (left[-1] - left[k - 1]) ** 2 / (len(x) - k)
        hits += abs(int(k[np.argmax(gain)]) - step) <= 2
    return hits / len(truth.steps)


def test_injected_steps_are_found_and_clean_series_left_alone():
    hits = steps = 0
    for seed in (1, 2, 3):
        truth = generate(seed)
        found, _ = detect(truth)
        hit = sum(any(abs(c.index - s) <= 2 for c in found[n]) for n, s in truth.steps.items())
        flagged = sum(bool(found[n]) for n in truth.clean)
        assert flagged / len(truth.clean) <= 0.05, (seed, flagged, len(truth.clean))
        hits, steps = hits + hit, steps + len(truth.steps)
    assert hits / steps >= 0.9, hits / steps


def test_a_step_at_a_driver_update_is_placed_there_and_a_small_one_found_by_its_test():
    """Two runs of noise apart, the data cannot tell a step's place from the driver update's:
    the update is its place. A step too small for the search's penalty is found by the test at
    the update. Without the runs' fingerprints (series_changes) neither happens."""
    rng = np.random.default_rng(6)
    n, update = 40, 20
    noise = 1 + 0.03 * rng.standard_normal((2, n))
    big = 1000 * noise[0] * np.where(np.arange(n) >= update, 1.12, 1.0)
    small = 500 * noise[1] * np.where(np.arange(n) >= update, 1.035, 1.0)
    runs = [f"r{i:02d}" for i in range(n)]
    provenance = {r: {"driver": "550" if i < update else "560"} for i, r in enumerate(runs)}
    series = [ch.Series(("b", "s", c, "rate"), v, np.arange(n), "1/s", Direction.HIGHER)
              for c, v in (("big", big), ("small", small))]  # fmt: skip
    found, events = ch.find(series, runs, runs, provenance)
    assert sorted((c.series[2], c.index) for c in found) == [("big", update), ("small", update)]
    assert len(events) == 1 and events[0].causes == ("driver: 550 -> 560",)
    alone = ch.array_changes(("b",), small, runs, runs)
    assert all(c.index != update for c in alone)


def test_the_cause_is_the_fingerprint_item_that_changed_and_an_event_is_counted_once():
    truth = generate(1)
    _, events = detect(truth)
    updates = [e for e in events if any(c.startswith("driver: ") for c in e.causes)]
    # each injected driver update is one event, at its run, naming that update alone
    assert sorted(truth.runs.index(e.run_after) for e in updates) == sorted(truth.events)
    for event in updates:
        assert len(event.causes) == 1 and len(event.changes) >= 3, event.causes
        assert "driver" in event.describe() and "series of" in event.describe()


def test_direction_decides_regression_or_improvement_and_too_few_runs_find_nothing():
    values = [100.0] * 10 + [90.0] * 10
    points = [ch.Point(f"t{i}", f"r{i}", v * (1 + 0.001 * (i % 3))) for i, v in enumerate(values)]
    higher = ch.series_changes(("b", "s", "c", "rate"), points, "items/s", Direction.HIGHER)
    lower = ch.series_changes(("b", "s", "c", "time"), points, "s", Direction.LOWER)
    unknown = ch.series_changes(("b", "s", "c", "x"), points, "", Direction.UNKNOWN)
    assert [c.kind for c in higher] == [ch.ChangeKind.REGRESSION]
    assert [c.kind for c in lower] == [ch.ChangeKind.IMPROVEMENT]
    assert [c.kind for c in unknown] == [ch.ChangeKind.CHANGED]
    change = higher[0]
    assert change.index == 10 and change.run_before == "r9" and change.run_after == "r10"
    assert change.low < change.ratio < change.high < 1 and abs(change.ratio - 0.9) < 0.01
    assert ch.series_changes(("b",), points[: ch.MIN_RUNS - 1]) == []


def test_causes_list_what_differs():
    assert ch.causes({"driver": "550", "python": "3.11"}, {"driver": "560", "python": "3.11",
                                                            "module": "x"}) == (
        "driver: 550 -> 560", "module: (none) -> x")


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=12, max_value=200))
def test_the_boundaries_p_values_are_scipys_welch_test(seed, n):
    """welch_p_values (all boundaries at once, from cumulative sums) gives scipy.stats.ttest_ind's
    p-value (equal_var=False) of each boundary between its neighbouring segments."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    logs = np.log(rng.uniform(50, 150, n)) + np.where(np.arange(n) > n // 2, 0.05, 0.0)
    cuts = sorted({int(c) for c in rng.integers(3, n - 3, size=3)})
    cuts = [c for i, c in enumerate(cuts) if i == 0 or c - cuts[i - 1] >= 3]
    edges = [0, *cuts, n]
    want = [stats.ttest_ind(logs[edges[k]:edges[k + 1]], logs[edges[k - 1]:edges[k]],
                            equal_var=False).pvalue for k in range(1, len(edges) - 1)]
    assert np.allclose(search.welch_p_values(logs, cuts), want, rtol=1e-6, atol=1e-12)


def test_welch_is_scipys_ttest_ind():
    # welch_p_values tests all neighbouring segments at once (speed); scipy's ttest_ind is the
    # oracle, pair by pair; two constant segments: 0 when they differ, else 1
    from scipy import stats

    rng = np.random.default_rng(7)
    for lengths in ((3, 3), (4, 9, 3), (30, 5, 12, 200), (200, 40)):
        segments = [rng.lognormal(rng.uniform(0, 0.1), 0.08, n) for n in lengths]
        edges = np.cumsum([0, *lengths]).tolist()
        found = search.welch_p_values(np.log(np.concatenate(segments)), edges[1:-1])
        for k, p in enumerate(found):
            before, after = np.log(segments[k]), np.log(segments[k + 1])
            expected = stats.ttest_ind(after, before, equal_var=False).pvalue
            assert abs(p - expected) <= 1e-6 * expected + 1e-12, (lengths, k)
    flat = np.array([2.0] * 3 + [2.0] * 4 + [3.0] * 3)
    assert np.allclose(search.welch_p_values(np.log(flat), [3, 7]), [1.0, 0.0])


def test_a_change_within_compares_band_of_no_change_is_none_and_an_outlier_no_change():
    """A 1 % step in 0.1 % noise is significant, but within bench compare's band of no change
    (2 %): none; with a band of 0.5 % it is one. A run slowed by 20 % among quiet runs is an
    outlier, not two changes (changes_search.without_outliers_of)."""
    rng = np.random.default_rng(11)
    n = 60
    runs = [f"r{i:02d}" for i in range(n)]
    small = 1000 * (1 + 0.001 * rng.standard_normal(n)) * np.where(np.arange(n) >= 30, 1.01, 1.0)
    outlier = 1000 * (1 + 0.003 * rng.standard_normal(n))
    outlier[20] *= 0.8
    series = [ch.Series(("b", "s", c, "rate"), v, np.arange(n), "1/s", Direction.HIGHER)
              for c, v in (("small", small), ("outlier", outlier))]  # fmt: skip
    found, _ = ch.find(series, runs, runs, {})
    assert found == []
    narrow, _ = ch.find(series, runs, runs, {}, threshold=0.5)
    assert [(c.series[2], c.index) for c in narrow] == [("small", 30)]
