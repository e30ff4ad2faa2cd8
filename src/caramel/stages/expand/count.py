"""Count a benchmark's workpackages before making them, and refuse a plan above a limit.

Planning 10^12 workpackages would take the login node's memory from everyone else, so the plan
is sized first from the file alone, in microseconds and without evaluating anything:

- a parameter of `mode="text"` with a separator has as many values as its text has parts;
  any other parameter (python, shell, env, no separator) counts as one value;
- parameters named in one `<zip>` count once, with the size of the largest of them;
- an `<exclude>` that refers to a single parameter whose values are plain text is applied to
  those values (the condition is evaluated per value, as planning would); other excludes and
  python parameters that yield lists cannot be counted here: `expand_space` checks the real
  sizes again while it expands, before it builds a product;
- a step makes (product of its parents' counts) x (sizes of the parameters its sets add) x
  iterations workpackages: an upper bound when several parents must agree on their values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Sized
from dataclasses import dataclass

from caramel.errors import ExpandError, Location
from caramel.stages.expand.substitute import references, substitute
from caramel.stages.spec.model import SCRIPT_MODES, Benchmark, Parameter, Parameterset, Step

DEFAULT_MAX_WORKPACKAGES = 1_000_000


@dataclass
class StepCount:
    """How many workpackages a step would make, and the parameter groups that multiply it."""

    step: str
    total: int
    factors: list[
        tuple[str, str, int]
    ]  # (owner, what, size): ("parameterset 'p'", "a", 100), ("", "iterations", 3)


def parameter_size(param: Parameter) -> int:
    """How many values a parameter definition has before anything is substituted or evaluated."""
    if param.mode in SCRIPT_MODES or param.mode != "text" or not param.separator:
        return 1
    return max(1, len(param.value.split(param.separator)))


def count_workpackages(bench: Benchmark, order: list[Step]) -> list[StepCount]:
    """The counts of every step of `bench`; `order` lists steps with parents first."""
    counts: dict[str, StepCount] = {}
    # step -> parameter names its ancestors (and itself) expand
    defined_by: dict[str, set[str]] = {}
    for step in order:
        _count_step(bench, step, counts, defined_by)
    return [counts[s.name] for s in order]


def _count_step(
    bench: Benchmark, step: Step, counts: dict[str, StepCount], defined_by: dict[str, set[str]]
) -> None:
    """A step's count (its parents counted already), and the parameter names it expands."""
    inherited, parent_total = _from_parents(step, counts, defined_by)
    params, owners, zips, excludes = _step_parameters(bench, step)
    new = {name: p for name, p in params.items() if name not in inherited}
    factors = _with_step_factors(
        _parameter_factors(new, owners, zips, excludes), step, parent_total
    )
    counts[step.name] = StepCount(step.name, math.prod(size for _, _, size in factors), factors)
    defined_by[step.name] = inherited | set(new)


def _with_step_factors(
    factors: list[tuple[str, str, int]], step: Step, parent_total: int
) -> list[tuple[str, str, int]]:
    """The parameter factors with the parents' count first and the step's iterations last."""
    if step.iterations > 1:
        factors.append(("", "iterations", step.iterations))
    if parent_total > 1:
        factors.insert(0, ("", "workpackages of " + ", ".join(step.depend), parent_total))
    return factors


def _from_parents(
    step: Step, counts: dict[str, StepCount], defined_by: dict[str, set[str]]
) -> tuple[set[str], int]:
    """The parameter names the step's parents expand, and the product of their counts."""
    inherited: set[str] = set()
    parent_total = 1
    for dep in step.depend:
        inherited |= defined_by.get(dep, set())
        parent_total *= counts[dep].total if dep in counts else 1
    return inherited, parent_total


def _parameter_factors(
    new: dict[str, Parameter], owners: dict[str, str], zips: list[list[str]], excludes: list[str]
) -> list[tuple[str, str, int]]:
    """(owner, what, size) of each parameter, or zip of them, the step expands with more than one
    value."""
    sizes = {name: _size_after_excludes(p, excludes) for name, p in new.items()}
    factors: list[tuple[str, str, int]] = []
    seen: set[str] = set()
    for name in new:
        if name in seen:
            continue
        members = _zip_members(name, zips, new)
        seen.update(members)
        factor = _factor(members, sizes, owners)
        if factor is not None:
            factors.append(factor)
    return factors


def _zip_members(name: str, zips: list[list[str]], new: dict[str, Parameter]) -> list[str]:
    """The parameters expanded with `name`: those of the last zip naming it (as expand.space),
    else itself."""
    return next(([n for n in z if n in new] for z in reversed(zips) if name in z), [name])


def _factor(
    members: list[str], sizes: dict[str, int], owners: dict[str, str]
) -> tuple[str, str, int] | None:
    """A parameter's, or a zip's, factor: the size of its largest member; None: a single value."""
    size = max(sizes[n] for n in members)
    if size <= 1:
        return None
    label = f"zip({', '.join(members)})" if len(members) > 1 else members[0]
    return owners[members[0]], label, size


def check_limit(bench: Benchmark, order: list[Step], limit: int) -> None:
    """Refuse, naming the sets, parameters and sizes, a plan of more than `limit` workpackages."""
    counts = count_workpackages(bench, order)
    total = sum(c.total for c in counts)
    if total <= limit:
        return
    worst = max(counts, key=lambda c: c.total)
    parts, owner = [], ""
    for this_owner, label, size in worst.factors:
        prefix = f"{this_owner} " if this_owner and this_owner != owner else ""
        parts.append(f"{prefix}{label} ({size:,})")
        owner = this_owner
    detail = " x ".join(parts)
    raise ExpandError(
        f"benchmark '{bench.name}' would make {total:,} workpackages, more than the limit of "
        f"{limit:,}; step '{worst.step}' alone makes {worst.total:,}: {detail}",
        bench.steps[worst.step].where,
        hint="use fewer values (or a <zip>), or raise the limit with --max-workpackages N",
    )


def _step_parameters(
    bench: Benchmark, step: Step
) -> tuple[dict[str, Parameter], dict[str, str], list[list[str]], list[str]]:
    """The parameters (by name, last definition wins), their set, zips and excludes a step uses."""
    params: dict[str, Parameter] = {}
    owners: dict[str, str] = {}
    zips: list[list[str]] = []
    excludes: list[str] = []
    for pset in _used_parametersets(bench, step):
        for param in pset.parameters:
            params[param.name] = param
            owners[param.name] = f"parameterset '{pset.name}'"
        zips += [list(z.names) for z in pset.zips]
        excludes += [e.condition for e in pset.excludes]
    return params, owners, zips, excludes


def _used_parametersets(bench: Benchmark, step: Step) -> list[Parameterset]:
    """The parametersets a step's uses name (`set$i`, a fileset, ...: nothing to count)."""
    return [
        bench.parametersets[name]
        for use in step.uses
        for name in use.names
        if name in bench.parametersets
    ]


def _size_after_excludes(param: Parameter, excludes: list[str]) -> int:
    """A parameter's size with the excludes that refer to it alone applied to its plain values."""
    size = parameter_size(param)
    if size == 1:
        return size
    own = _own_excludes(excludes, param.name)
    values = _plain_values(param)
    if not own or values is None:
        return size
    return max(1, len(_kept_values(values, own, param.name)))


def _own_excludes(excludes: list[str], name: str) -> list[str]:
    """The exclude conditions that refer to parameter `name` alone."""
    return [c for c in excludes if references(c) == frozenset({name})]


def _plain_values(param: Parameter) -> list[str] | None:
    """The parameter's values; None where one refers to another value (`$`)."""
    values = [v.strip() for v in param.value.split(param.separator)]
    return None if any("$" in v for v in values) else values


def _kept_values(values: list[str], own: list[str], name: str) -> list[str]:
    """The values of parameter `name` that none of its own excludes drops."""
    return [v for v in values if not any(_excluded(c, name, v) for c in own)]


def _excluded(condition: str, name: str, value: str) -> bool:
    try:
        # evaluated as planning evaluates it (S307 is not among the selected rules)
        return bool(
            eval(
                substitute(condition, {name: value}, final=True),
                {"__builtins__": __builtins__},
            )
        )
    except (
        Exception,
        SystemExit,
    ):  # planning reports it with its line; here it only does not reduce
        return False


def check_product(
    groups: Sequence[tuple[list[str], Sized]], limit: int, where: Location | None = None
) -> None:
    """While expanding: refuse a product of template groups larger than `limit` before building
    it."""
    total = math.prod(len(choices) for _, choices in groups)
    if total > limit:
        detail = " x ".join(
            f"{'+'.join(names)} ({len(choices):,} values)" for names, choices in groups
        )
        raise ExpandError(
            f"the parameters would make {total:,} combinations, more than the limit of {limit:,}: "
            f"{detail}",
            where,
            hint="use fewer values (or a <zip>), or raise the limit with --max-workpackages N",
        )
