"""Expansion of caramel's own benchmark files against expected plans.

Each expected plan under tests/data/plan/expected/ was checked against JUBE 2.7.1 on the same
file (shared/tools/jube-parity plan): same workpackages, ids, parents, iterations and values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caramel.stages.expand.plan import make_plan
from caramel.stages.spec.loader import load_one

DATA = Path(__file__).parents[2] / "data" / "plan"


def cases() -> list[tuple[str, list[str]]]:
    out = []
    for line in (DATA / "cases.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, *tags = line.split()
            out.append((name, tags))
    return out


def case_id(name: str, tags: list[str]) -> str:
    return "_".join([name.replace(".", "_")] + tags)


def plan_doc(name: str, tags: list[str]) -> list[dict]:
    plan = make_plan(load_one(str(DATA / name), set(tags)), run_id=0)
    return [{"id": wp.id, "step": wp.step.name, "iteration": wp.iteration,
             "parents": [p.id for p in wp.parents], "parameters": wp.params().typed_values()}
            for wp in plan.workpackages]


@pytest.mark.parametrize(("name", "tags"), cases(), ids=[case_id(n, t) for n, t in cases()])
def test_plan_matches_expected(name: str, tags: list[str]) -> None:
    expected = json.loads((DATA / "expected" / f"{case_id(name, tags)}.json").read_text())
    assert plan_doc(name, tags) == expected


if __name__ == "__main__":  # regenerate after checking the new behaviour against JUBE
    for name, tags in cases():
        path = DATA / "expected" / f"{case_id(name, tags)}.json"
        path.write_text(json.dumps(plan_doc(name, tags), indent=1) + "\n")
        print("wrote", path)
