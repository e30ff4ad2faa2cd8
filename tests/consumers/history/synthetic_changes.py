"""A seeded synthetic history with known truth, for change-point detection (issue 24): `series`
series of `runs` runs each, noise of 2-5 % (relative sd), steps of 4-10 % injected at known runs
into `stepped` of them (grouped into events that share a run and a fingerprint change: a driver
update), a slow drift in `drifting`, the rest clean. perf/change_points.py runs it at full size and
with other seeds; tests/consumers/history/test_changes.py at a small one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Truth:
    values: dict[tuple[str, ...], list[float]]  # series -> its figures, run by run
    steps: dict[tuple[str, ...], int]  # series -> the index of the first run after its step
    drifting: set[tuple[str, ...]]
    clean: set[tuple[str, ...]]
    events: dict[int, str]  # run index -> the fingerprint item that changed there
    runs: list[str]  # run keys in order
    provenance: dict[str, dict[str, object]]  # run key -> its fingerprint items


def generate(
    seed: int = 1, series: int = 200, runs: int = 60, stepped: int = 40, drifting: int = 5,
    events: int = 4,
) -> Truth:  # fmt: skip
    rng = np.random.default_rng(seed)
    names = [(f"bench{i % 7}", f"sys{i % 3}", f"cfg{i}", "rate") for i in range(series)]
    order = rng.permutation(series)
    stepped_names = [names[i] for i in order[:stepped]]
    drift_names = {names[i] for i in order[stepped : stepped + drifting]}
    # events: a run where a driver changed, each shared by a group of the stepped series
    event_runs = sorted(rng.choice(np.arange(10, runs - 10), size=events, replace=False).tolist())
    steps: dict[tuple[str, ...], int] = {}
    for k, name in enumerate(stepped_names):
        steps[name] = int(event_runs[k % events])
    values: dict[tuple[str, ...], list[float]] = {}
    for name in names:
        noise = rng.uniform(0.02, 0.05)
        level = rng.uniform(100, 10000)
        x = level * (1 + noise * rng.standard_normal(runs))
        if name in steps:
            size = rng.uniform(0.04, 0.10) * rng.choice([-1, 1])
            x[steps[name] :] *= 1 + size
        if name in drift_names:
            x *= np.linspace(1, 1 + rng.uniform(0.08, 0.15), runs)
        values[name] = x.tolist()
    keys = [f"run{i:04d}" for i in range(runs)]
    driver, provenance = 550, {}
    for i, key in enumerate(keys):
        if i in event_runs:
            driver += 10
        provenance[key] = {"driver": str(driver), "python": "3.11.7", "node": f"n{i % 4}"}
    clean = set(names) - set(steps) - drift_names
    return Truth(values, steps, drift_names, clean, {r: "driver" for r in event_runs}, keys, provenance)
