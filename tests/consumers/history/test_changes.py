"""Change points in the history (consumers/history/changes.py) on a seeded synthetic history with
known truth (tests/consumers/history/synthetic_changes.py): the injected steps found within +-2 runs,
clean series left alone, the injected fingerprint change named as the cause, an event counted once.

The bound on recall: with noise of 2-5 % and steps of 4-10 %, even the least-squares location of a
single step known to exist lands within +-2 runs of the truth for about 90 % of them (89.6 % over
seeds 1-12, perf/change_points.py prints it); the detector is held to 85 % here."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.consumers.history.synthetic_changes import generate

from caramel.consumers.history import changes as ch
from caramel.vocabulary import Direction


def detect(truth):
    found = {}
    for name, values in truth.values.items():
        points = [ch.Point(f"t{i:04d}", truth.runs[i], v) for i, v in enumerate(values)]
        found[name] = ch.series_changes(name, points, "items/s", Direction.HIGHER)
    return found


def best_possible(truth) -> float:
    """The share of steps whose least-squares location, knowing there is exactly one, is within +-2
    runs: what no detector can beat on this history."""
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
        found = detect(truth)
        hit = sum(any(abs(c.index - s) <= 2 for c in found[n]) for n, s in truth.steps.items())
        flagged = sum(bool(found[n]) for n in truth.clean)
        assert hit / len(truth.steps) >= best_possible(truth) - 0.1, (seed, hit)
        assert flagged / len(truth.clean) <= 0.05, (seed, flagged, len(truth.clean))
        hits, steps = hits + hit, steps + len(truth.steps)
    assert hits / steps >= 0.85


def test_the_cause_is_the_fingerprint_item_that_changed_and_an_event_is_counted_once():
    truth = generate(1)
    found = [c for cs in detect(truth).values() for c in cs]
    found = ch.with_causes(found, truth.provenance, truth.runs)
    order = {run: i for i, run in enumerate(truth.runs)}
    events = ch.group_events(found, order)
    stepped_events = [e for e in events if len(e.changes) >= 3]
    assert len(stepped_events) == len(truth.events)  # each injected driver update once
    for event in stepped_events:
        assert any(c.startswith("driver: ") for c in event.causes), event.causes
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
    assert np.allclose(ch.welch_p_values(logs, cuts), want, rtol=1e-6, atol=1e-12)


def test_welch_is_scipys_ttest_ind():
    # changes.welch_p_values tests all neighbouring segments at once (speed); scipy's ttest_ind is the
    # oracle, pair by pair; two constant segments: 0 when they differ, else 1
    from scipy import stats

    rng = np.random.default_rng(7)
    for lengths in ((3, 3), (4, 9, 3), (30, 5, 12, 200), (200, 40)):
        segments = [rng.lognormal(rng.uniform(0, 0.1), 0.08, n) for n in lengths]
        edges = np.cumsum([0, *lengths]).tolist()
        found = ch.welch_p_values(np.log(np.concatenate(segments)), edges[1:-1])
        for k, p in enumerate(found):
            before, after = np.log(segments[k]), np.log(segments[k + 1])
            expected = stats.ttest_ind(after, before, equal_var=False).pvalue
            assert abs(p - expected) <= 1e-6 * expected + 1e-12, (lengths, k)
    flat = np.array([2.0] * 3 + [2.0] * 4 + [3.0] * 3)
    assert np.allclose(ch.welch_p_values(np.log(flat), [3, 7]), [1.0, 0.0])
