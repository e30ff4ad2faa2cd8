"""A plan as `bench plan` prints it: a table of the workpackages, or JSON. Apart from cli.plan
because `bench plan --predict` (cli.predict, which cli.plan imports) prints the same table."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO, TypedDict

from caramel.cli.tables import print_table

if TYPE_CHECKING:
    from caramel.stages.expand.plan import Plan, Workpackage


class _PlanCost(TypedDict, total=False):
    cost: object  # `bench plan --predict --format json`: the campaign's predicted cost


class PlanJSON(_PlanCost):
    """A plan as `bench plan --format json` writes it."""

    benchmark: str
    workpackages: list[dict[str, object]]


def plan_json(plan: Plan) -> PlanJSON:
    return {
        "benchmark": plan.benchmark.name,
        "workpackages": [
            {
                "id": wp.id,
                "step": wp.step.name,
                "iteration": wp.iteration,
                "parents": [p.id for p in wp.parents],
                "parameters": wp.params().typed_values(),
            }
            for wp in plan.workpackages
        ],
    }


def write_json(doc: PlanJSON | list[PlanJSON], out: TextIO) -> None:
    """One workpackage per line: readable, and fast (the C encoder, not the indenting one)."""
    if isinstance(doc, list):
        out.write("[\n")
        for i, item in enumerate(doc):
            write_json(item, out)
            out.write(",\n" if i < len(doc) - 1 else "\n")
        out.write("]\n")
        return
    out.write('{"benchmark": ' + json.dumps(doc["benchmark"]) + ', "workpackages": [\n')
    wps = doc["workpackages"]
    for i, wp in enumerate(wps):
        out.write("  " + json.dumps(wp) + (",\n" if i < len(wps) - 1 else "\n"))
    out.write("]}\n")


def print_plan(plan: Plan, out: TextIO) -> None:
    """One line per workpackage: id, step, iteration, parents and the values that vary."""
    wps = plan.workpackages
    print(f"benchmark {plan.benchmark.name}: {len(wps)} workpackages", file=out)
    by_step: dict[str, list[Workpackage]] = {}
    for wp in wps:
        by_step.setdefault(wp.step.name, []).append(wp)
    varying: list[str] = []
    for group in by_step.values():
        varying += [name for name in _varying(group) if name not in varying]
    header = ["id", "step", "iter", "parents"] + varying
    print_table(out, header, [_plan_row(wp, varying) for wp in wps])


def _varying(group: list[Workpackage]) -> list[str]:
    """The parameters whose value differs within a step's workpackages, in the first one's
    order."""
    first = group[0].params().typed_values()
    return [
        name
        for name in first
        if any(wp.params().typed_values().get(name) != first[name] for wp in group[1:])
    ]


def _plan_row(wp: Workpackage, varying: list[str]) -> list[str]:
    parents = ",".join(str(p.id) for p in wp.parents)
    values = wp.params().typed_values()
    return [str(wp.id), wp.step.name, str(wp.iteration), parents] + [
        str(values.get(n, "")).strip()[:30] for n in varying
    ]
