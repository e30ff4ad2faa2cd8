"""From a benchmark model to its workpackages: the `expand` stage's entry point.

    plan = make_plan(benchmark, run_id=0)

Workpackages are numbered as JUBE numbers them when every step finishes in order: the steps
without `depend` first (file order), then, each time a workpackage is taken from the queue, the
workpackages of the steps that depend on it. Expansion is pure: nothing is written, only
`mode="shell"` parameters run a command.
"""

from __future__ import annotations

import collections
import itertools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from caramel.errors import ExpandError, SpecError, did_you_mean
from caramel.stages.expand import layout
from caramel.stages.expand.builtins import builtin_values
from caramel.stages.expand.conditions import eval_bool
from caramel.stages.expand.count import DEFAULT_MAX_WORKPACKAGES, check_limit
from caramel.stages.expand.fit import check_system
from caramel.stages.expand.params import Params, declared_type
from caramel.stages.expand.space import expand_space
from caramel.stages.expand.substitute import substitute
from caramel.stages.expand.values import (
    ENVSTR,
    Value,
    constants,
    evaluate,
    finalise,
    from_definition,
)
from caramel.stages.spec.model import Benchmark, Exclude, Parameter, Step, Zip

JUBE_UPDATABLE = ("step", "always")
USE_UPDATABLE = ("use", "step", "always")
CYCLE_UPDATABLE = ("cycle", "always")


@dataclass(eq=False)
class Workpackage:
    """One step for one point of the parameter space (and one iteration)."""

    id: int
    step: Step
    iteration: int
    parents: list[Workpackage]
    values: dict[
        str, Value
    ]  # expansion's state of each value; `params()` is what later stages read
    cycles: tuple[
        dict[str, str], ...
    ] = ()  # per cycle after the first: the texts that change in it
    children: list[Workpackage] = field(default_factory=list)

    @property
    def dirname(self) -> str:
        suffix = self.values["jube_wp_suffix"].text if "jube_wp_suffix" in self.values else ""
        return layout.wp_dirname(self.id, self.step.name, suffix)

    def text(self, name: str) -> str:
        return self.values[name].text

    def params(self) -> Params:
        """The workpackage's parameter values with their declared types and per-cycle texts: the
        record the run stores (state.store) and every later stage reads."""
        types = {}
        for name, v in self.values.items():
            kind = declared_type(v.definition)
            if kind != "string":
                types[name] = kind
        return Params({n: v.text for n, v in self.values.items()}, types, self.cycles)


@dataclass
class Plan:
    benchmark: Benchmark
    run_id: int
    run_dir: str
    workpackages: list[Workpackage]

    def by_step(self) -> dict[str, list[Workpackage]]:
        out: dict[str, list[Workpackage]] = {name: [] for name in self.benchmark.steps}
        for wp in self.workpackages:
            out[wp.step.name].append(wp)
        return out


_BUILTIN_DEFS: dict[tuple[str, str], Parameter] = {("jube_wp_envstr", "string"): ENVSTR}


def _builtin(name: str, value: str, ptype: str = "string") -> Value:
    """A jube_* built-in value (its definition shared: only the text differs per workpackage)."""
    param = _BUILTIN_DEFS.get((name, ptype))
    if param is None:
        param = _BUILTIN_DEFS[(name, ptype)] = Parameter(name, "", separator="", type=ptype)
    return Value(param, value, "text", None, -1, False, False)


def is_builtin(value: Value) -> bool:
    """A value caramel made (jube_*), not one of the file: a child never inherits it from a
    parent."""
    return _BUILTIN_DEFS.get((value.name, value.definition.type)) is value.definition


def next_run_id(outpath: str) -> int:
    """The id a new run would get: one more than the highest numbered folder in `outpath`."""
    if not os.path.isdir(outpath):
        return 0
    ids = [int(n) for n in os.listdir(outpath) if n.isdigit()]
    return max(ids) + 1 if ids else 0


def check_steps(bench: Benchmark) -> list[Step]:
    """Validate `depend` and `use` names; return the steps in an order where parents come first."""
    order: list[Step] = []
    state: dict[str, int] = {}

    def visit(step: Step, path: list[str]) -> None:
        if state.get(step.name) == 2:
            return
        if state.get(step.name) == 1:
            cycle = path[path.index(step.name) :] + [step.name]
            raise SpecError(
                "steps depend on each other in a cycle: " + " -> ".join(cycle),
                step.where,
                hint="remove one of these depend= entries",
            )
        state[step.name] = 1
        for dep in step.depend:
            if dep not in bench.steps:
                raise SpecError(
                    f"step '{step.name}' depends on unknown step '{dep}'",
                    step.where,
                    hint=did_you_mean(dep, [n for n in bench.steps if n != step.name])
                    or "steps: " + ", ".join(bench.steps),
                )
            visit(bench.steps[dep], path + [step.name])
        state[step.name] = 2
        order.append(step)

    all_sets = (
        set(bench.parametersets)
        | set(bench.substitutesets)
        | set(bench.filesets)
        | set(bench.patternsets)
    )
    for step in bench.steps.values():
        _check_uses(step, all_sets)
        visit(step, [])
    return order


def _check_uses(step: Step, all_sets: set[str]) -> None:
    """Each set a step uses is defined (a name built from a parameter, `set$i`, is checked when it
    is known)."""
    for use in step.uses:
        for name in use.names:
            if "$" not in name and name not in all_sets:
                raise SpecError(
                    f"step '{step.name}' uses unknown set '{name}'",
                    use.where,
                    hint=did_you_mean(name, all_sets) or _known_sets(all_sets),
                )


def _known_sets(names: set[str]) -> str:
    local = sorted(n for n in names if "@" not in n)  # `name@file` are sets taken with use from=
    return "sets: " + ", ".join(local) if local else "this benchmark defines no sets"


class Planner:
    """Creates workpackages step by step, in JUBE's queue order."""

    def __init__(
        self,
        bench: Benchmark,
        run_id: int,
        start: str | None = None,
        max_workpackages: int = DEFAULT_MAX_WORKPACKAGES,
    ) -> None:
        self.bench = bench
        self.limit = max_workpackages
        self.run_id = run_id
        self.run_dir = os.path.join(bench.outpath, f"{run_id:06d}")
        self.next_id = 0
        self.tags = frozenset(bench.tags)
        self.bench_values = {
            "jube_benchmark_name": _builtin("jube_benchmark_name", bench.name),
            "jube_benchmark_id": _builtin("jube_benchmark_id", str(run_id), "int"),
            "jube_benchmark_padid": _builtin("jube_benchmark_padid", f"{run_id:06d}"),
            "jube_benchmark_home": _builtin("jube_benchmark_home", os.path.abspath(bench.home)),
            "jube_benchmark_rundir": _builtin(
                "jube_benchmark_rundir", os.path.abspath(self.run_dir)
            ),
            "jube_benchmark_start": _builtin(
                "jube_benchmark_start", start or time.strftime("%Y-%m-%dT%H:%M:%S")
            ),
            # caramel's own (expand/builtins.py), only those the file names
            **{name: _builtin(name, text, kind) for name, text, kind in builtin_values(bench)},
        }

    def plan(self) -> Plan:
        check_limit(self.bench, check_steps(self.bench), self.limit)
        order = _QueueOrder({name: [] for name in self.bench.steps})
        for step in self.bench.steps.values():
            if not step.depend:
                self._make_roots(step, order)
        while order.queue:
            wp = order.queue.popleft()
            order.done.add(wp.id)
            self._make_children(wp, order)
            order.enqueue_ready_children(wp)
        return Plan(self.bench, self.run_id, self.run_dir, order.ordered)

    def _make_roots(self, step: Step, order: _QueueOrder) -> None:
        """The workpackages of a step without depend=, each queued."""
        for wp in self.create(step, ()):
            order.add(wp, ())
            order.enqueue(wp)

    def _make_children(self, wp: Workpackage, order: _QueueOrder) -> None:
        """The workpackages of each step that depends on `wp`'s step, `wp` done."""
        for child_step in self.bench.steps.values():
            if wp.step.name in child_step.depend:
                self._make_children_of(child_step, wp, order)

    def _make_children_of(self, child_step: Step, wp: Workpackage, order: _QueueOrder) -> None:
        """`child_step`'s workpackages for `wp` with each combination of the done workpackages of
        the child's other parent steps."""
        others = [order.done_of(name) for name in child_step.depend if name != wp.step.name]
        for combo in itertools.product(*others, [wp]):
            for child in self.create(child_step, combo):
                order.add(child, combo)

    # --- one step, one parent combination -------------------------------------------------------
    def create(self, step: Step, parents: tuple[Workpackage, ...]) -> list[Workpackage]:
        glob, incompatible = _inherited(parents)
        glob.update(self.bench_values)
        glob.update(_step_builtins(step))
        updates = {
            n: from_definition(v.definition)
            for n, v in glob.items()
            if v.update_mode in JUBE_UPDATABLE
        }
        incompatible -= set(updates)
        expansion = _Expansion(
            step, parents, _parent_iteration(parents), glob, {}, frozenset(), updates, incompatible
        )
        return self._expand(expansion)

    def _use_names(self, step: Step, values: dict[str, Value]) -> list[str]:
        names: list[str] = []
        consts = constants(values)
        for use in step.uses:
            for raw in use.names:
                for name in substitute(raw, consts, final=True).split(","):
                    name = name.strip()
                    if name and name not in names:
                        names.append(name)
        return names

    def _expand(self, expansion: _Expansion) -> list[Workpackage]:
        """The workpackages of one step for one combination of parents: the sets the step uses
        for the first time are taken, their values expanded, and the step's uses read again with
        each point (a use may name a set through a parameter); then the workpackages."""
        names = self._used_sets(expansion.step, expansion.glob)
        new = [n for n in names if n not in expansion.used]
        if new:
            return self._take_new_sets(expansion, new)
        return self._workpackages(expansion, names)

    def _used_sets(self, step: Step, values: dict[str, Value]) -> list[str]:
        """The parametersets the step's uses name with these values."""
        return [n for n in self._use_names(step, values) if n in self.bench.parametersets]

    def _take_new_sets(self, expansion: _Expansion, new: list[str]) -> list[Workpackage]:
        """Expansion goes on at each point of the new sets' values; none where a parent chose
        another value for one of them."""
        local, zips, _excludes = self._take_sets(expansion.step, new, dict(expansion.local))
        if _parents_disagree(local, expansion.glob):
            return []  # the parents chose another value: no workpackage for this combination
        _take_use_updates(local, expansion.updates, expansion.incompatible)
        glob = {**local, **expansion.glob}
        _apply_updates(glob, expansion.updates)
        used = expansion.used | set(new)
        out: list[Workpackage] = []
        for space in expand_space(
            glob, zips, self.tags, self.limit - self.next_id, expansion.step.where
        ):
            point = replace(
                expansion,
                glob=space,
                local={n: space.get(n, v) for n, v in local.items()},
                used=used,
                updates={},
                incompatible=set(expansion.incompatible),
            )
            out += self._expand(point)
        return out

    def _workpackages(self, expansion: _Expansion, names: list[str]) -> list[Workpackage]:
        """Every set taken: a workpackage per point of the values and iteration (none where the
        parents disagree on a value no update settles)."""
        zips, excludes = self._zips_and_excludes(names)
        _apply_updates(expansion.glob, expansion.updates)
        step = expansion.step
        out: list[Workpackage] = []
        for space in expand_space(
            expansion.glob, zips, self.tags, self.limit - self.next_id, step.where
        ):
            if expansion.incompatible:
                return out
            for i in range(step.iterations):
                iteration = expansion.base * step.iterations + i
                wp = self._workpackage(step, space, expansion.parents, iteration, excludes)
                if wp is not None:
                    out.append(wp)
        return out

    def _zips_and_excludes(self, names: list[str]) -> tuple[list[Zip], list[Exclude]]:
        zips: list[Zip] = []
        excludes: list[Exclude] = []
        for set_name in names:
            zips += self.bench.parametersets[set_name].zips
            excludes += self.bench.parametersets[set_name].excludes
        return zips, excludes

    def _take_sets(
        self, step: Step, new: list[str], local: dict[str, Value]
    ) -> tuple[dict[str, Value], list[Zip], list[Exclude]]:
        """The parameters of the sets `step` uses for the first time added to `local` (one name
        defined twice is an error), with the sets' zips and excludes."""
        zips: list[Zip] = []
        excludes: list[Exclude] = []
        for set_name in new:
            pset = self.bench.parametersets[set_name]
            zips += pset.zips
            excludes += pset.excludes
            for param in pset.parameters:
                value = from_definition(param)
                if param.name in local and not local[param.name].equivalent(value):
                    raise SpecError(
                        f"step '{step.name}' cannot use parameterset '{set_name}': parameter "
                        f"'{param.name}' is already defined by another set it uses",
                        param.where,
                        hint="rename one of them, or give them tags that exclude each other",
                    )
                local[param.name] = value
        return local, zips, excludes

    def _workpackage(
        self,
        step: Step,
        space: dict[str, Value],
        parents: Sequence[Workpackage],
        iteration: int,
        excludes: list[Exclude],
    ) -> Workpackage | None:
        wp_id = self.next_id
        values = dict(space)
        suffix = _suffix(step, constants(values))
        values.update(self._wp_builtins(step, wp_id, iteration, suffix))
        values.update(_parent_ids(parents))
        _add_environment(values)
        finalise(values, self.tags)
        _check_types(values)
        if not _active(step, _texts(values), excludes):
            return None
        self._count(step)
        return Workpackage(
            wp_id, step, iteration, list(parents), values, self._cycles(step, values)
        )

    def _wp_builtins(self, step: Step, wp_id: int, iteration: int, suffix: str) -> dict[str, Value]:
        """The workpackage's jube_wp_* values: id, iteration, folders, suffix."""
        work = layout.work_folder(self.run_dir, layout.wp_dirname(wp_id, step.name, suffix))
        if step.work_dir:  # its text as written: the plan's values are not final yet
            work = os.path.join(self.bench.home, step.work_dir)
        return {
            "jube_wp_id": _builtin("jube_wp_id", str(wp_id), "int"),
            "jube_wp_padid": _builtin("jube_wp_padid", f"{wp_id:06d}"),
            "jube_wp_iteration": _builtin("jube_wp_iteration", str(iteration), "int"),
            "jube_wp_relpath": _builtin("jube_wp_relpath", os.path.relpath(work, self.bench.home)),
            "jube_wp_abspath": _builtin("jube_wp_abspath", os.path.abspath(work)),
            "jube_wp_suffix": _builtin("jube_wp_suffix", suffix),
        }

    def _count(self, step: Step) -> None:
        """One more workpackage; beyond the limit is an error (python values that became lists:
        sizes the count could not see)."""
        self.next_id += 1
        if self.next_id > self.limit:
            raise ExpandError(
                f"benchmark '{self.bench.name}' makes more than {self.limit:,} workpackages "
                f"(step '{step.name}' is at {self.next_id:,})",
                step.where,
                hint="use fewer values, or raise the limit with --max-workpackages N",
            )

    def _cycles(self, step: Step, values: dict[str, Value]) -> tuple[dict[str, str], ...]:
        """The texts of the `update_mode="cycle"`/`"always"` values in each cycle after the first,
        evaluated here once, so the engine only reads them (JUBE evaluates them as each cycle
        starts)."""
        updated = _cycle_updated(values)
        if step.cycles <= 1 or not updated:
            return ()
        base = _texts(values)
        return tuple(self._cycle(cycle, base, updated) for cycle in range(1, step.cycles))

    def _cycle(self, cycle: int, base: dict[str, str], updated: list[Parameter]) -> dict[str, str]:
        """The texts that change in one cycle."""
        texts = dict(base, jube_wp_cycle=str(cycle))
        changed = {"jube_wp_cycle": str(cycle)}
        for param in updated:
            text = substitute(param.value, texts, final=True)
            if param.is_script:
                text = evaluate(text, param.mode, param, self.tags)
            texts[param.name] = changed[param.name] = text
        return changed


def make_plan(
    bench: Benchmark, run_id: int | None = None, max_workpackages: int | None = None
) -> Plan:
    """Expand `bench` into its workpackages (run id: the next free one in its outpath); more than
    `max_workpackages` (default DEFAULT_MAX_WORKPACKAGES) is refused before they are made."""
    if run_id is None:
        run_id = next_run_id(bench.outpath)
    plan = Planner(
        bench, run_id, max_workpackages=max_workpackages or DEFAULT_MAX_WORKPACKAGES
    ).plan()
    check_system(plan)
    return plan


@dataclass
class _QueueOrder:
    """JUBE's queue: the workpackages made (per step and in order), those done (a child may be made
    with them), and those queued."""

    by_step: dict[str, list[Workpackage]]
    ordered: list[Workpackage] = field(default_factory=list)
    done: set[int] = field(default_factory=set)
    queued: set[int] = field(default_factory=set)
    queue: collections.deque[Workpackage] = field(default_factory=collections.deque)

    def add(self, wp: Workpackage, parents: Sequence[Workpackage]) -> None:
        """A workpackage made, the child of each of `parents`."""
        self.by_step[wp.step.name].append(wp)
        self.ordered.append(wp)
        for parent in parents:
            parent.children.append(wp)

    def enqueue(self, wp: Workpackage) -> None:
        self.queued.add(wp.id)
        self.queue.append(wp)

    def done_of(self, step_name: str) -> list[Workpackage]:
        return [p for p in self.by_step[step_name] if p.id in self.done]

    def enqueue_ready_children(self, wp: Workpackage) -> None:
        """The children of `wp` whose parents are all done, queued once."""
        for child in wp.children:
            if child.id not in self.queued and all(p.id in self.done for p in child.parents):
                self.enqueue(child)


@dataclass
class _Expansion:
    """One step for one combination of parents, part way expanded: the values so far (`glob`),
    those of the sets the step uses (`local`), the sets taken, the values a use updates, and the
    names whose values the parents disagree on."""

    step: Step
    parents: Sequence[Workpackage]
    base: int  # the parents' iteration, which the step's iterations multiply
    glob: dict[str, Value]
    local: dict[str, Value]
    used: frozenset[str]
    updates: dict[str, Value]
    incompatible: set[str]


def _inherited(parents: Sequence[Workpackage]) -> tuple[dict[str, Value], set[str]]:
    """The parents' values (not their built-ins), and the names whose values differ between
    parents."""
    glob: dict[str, Value] = {}
    incompatible: set[str] = set()
    for parent in parents:
        for name, v in _own_values(parent).items():
            if name in glob and not glob[name].equivalent(v):
                incompatible.add(name)
            glob[name] = v
    return glob, incompatible


def _own_values(wp: Workpackage) -> dict[str, Value]:
    """A workpackage's values but those caramel made: a child never inherits them."""
    return {name: v for name, v in wp.values.items() if not is_builtin(v)}


def _parent_iteration(parents: Sequence[Workpackage]) -> int:
    """The parents' iterations as one number, fewest iterations first: what a child's iteration
    builds on."""
    base = 0
    ordered = sorted(parents, key=lambda p: (p.step.iterations, p.step.name))
    for i, parent in enumerate(ordered):
        base = parent.iteration if i == 0 else parent.step.iterations * base + parent.iteration
    return base


def _step_builtins(step: Step) -> dict[str, Value]:
    return {
        "jube_step_name": _builtin("jube_step_name", step.name),
        "jube_step_iterations": _builtin("jube_step_iterations", str(step.iterations), "int"),
        "jube_step_cycles": _builtin("jube_step_cycles", str(step.cycles), "int"),
        "jube_wp_cycle": _builtin("jube_wp_cycle", "0", "int"),
    }


def _parents_disagree(local: dict[str, Value], glob: dict[str, Value]) -> bool:
    """A value of the new sets that a parent set otherwise, and no use may update."""
    return any(
        name in glob and value.update_mode not in USE_UPDATABLE and not value.equivalent(glob[name])
        for name, value in local.items()
    )


def _take_use_updates(
    local: dict[str, Value], updates: dict[str, Value], incompatible: set[str]
) -> None:
    """The new sets' values updated on use (`update_mode="use"`...) replace the parents'."""
    for name, value in local.items():
        if value.update_mode in USE_UPDATABLE:
            updates[name] = value
            incompatible.discard(name)


def _apply_updates(glob: dict[str, Value], updates: dict[str, Value]) -> None:
    for name, value in updates.items():
        if name in glob:
            glob[name] = value


def _texts(values: dict[str, Value]) -> dict[str, str]:
    return {n: v.text for n, v in values.items()}


def _suffix(step: Step, consts: dict[str, str]) -> str:
    """The workpackage folder's suffix: `_` and the step's suffix= substituted."""
    if not step.suffix:
        return ""
    return "_" + os.path.expandvars(os.path.expanduser(substitute(step.suffix, consts, final=True)))


def _parent_ids(parents: Sequence[Workpackage]) -> dict[str, Value]:
    """jube_wp_parent_STEP_id: each parent's id."""
    ids = {}
    for parent in parents:
        name = f"jube_wp_parent_{parent.step.name}_id"
        ids[name] = _builtin(name, str(parent.id), "int")
    return ids


def _add_environment(values: dict[str, Value]) -> None:
    """jube_wp_envlist and jube_wp_envstr: the exported values' names and export lines."""
    exported = sorted((n for n, v in values.items() if v.definition.export), key=str.lower)
    values["jube_wp_envlist"] = _builtin("jube_wp_envlist", ",".join(exported))
    values["jube_wp_envstr"] = _builtin(
        "jube_wp_envstr", "".join(f"export {n}=${n}\n" for n in exported)
    )


def _check_types(values: dict[str, Value]) -> None:
    """A file's value declared int or float reads as one."""
    for name, v in values.items():
        if v.definition.type in ("int", "float") and not name.startswith("jube_"):
            _check_number(name, v)


def _check_number(name: str, v: Value) -> None:
    try:
        (int if v.definition.type == "int" else float)(v.text.strip())
    except ValueError:
        raise ExpandError(
            f"parameter '{name}' is declared type=\"{v.definition.type}\" but its "
            f"value is {v.text!r}",
            v.definition.where,
            hint="fix the value or drop the type",
        ) from None


def _active(step: Step, texts: dict[str, str], excludes: list[Exclude]) -> bool:
    """The step's active= holds for these values, and none of its sets' excludes does."""
    if not eval_bool(
        substitute(step.active, texts, final=True), f"active= of step '{step.name}'", step.where
    ):
        return False
    return not any(
        eval_bool(substitute(exclude.condition, texts, final=True), "<exclude>", exclude.where)
        for exclude in excludes
    )


def _cycle_updated(values: dict[str, Value]) -> list[Parameter]:
    """The definitions of the values a cycle updates."""
    return [v.definition for v in values.values() if v.update_mode in CYCLE_UPDATABLE]
