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
from dataclasses import dataclass, field

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
        for use in step.uses:
            for name in use.names:
                if "$" not in name and name not in all_sets:
                    raise SpecError(
                        f"step '{step.name}' uses unknown set '{name}'",
                        use.where,
                        hint=did_you_mean(name, all_sets) or _known_sets(all_sets),
                    )
        visit(step, [])
    return order


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
        by_step: dict[str, list[Workpackage]] = {name: [] for name in self.bench.steps}
        done: set[int] = set()
        queued: set[int] = set()
        queue: collections.deque[Workpackage] = collections.deque()
        ordered: list[Workpackage] = []
        for step in self.bench.steps.values():
            if not step.depend:
                for wp in self.create(step, ()):
                    by_step[step.name].append(wp)
                    ordered.append(wp)
                    queue.append(wp)
                    queued.add(wp.id)
        while queue:
            wp = queue.popleft()
            done.add(wp.id)
            for child_step in self.bench.steps.values():
                if wp.step.name not in child_step.depend:
                    continue
                others = [
                    [p for p in by_step[name] if p.id in done]
                    for name in child_step.depend
                    if name != wp.step.name
                ]
                for combo in itertools.product(*others, [wp]):
                    for child in self.create(child_step, combo):
                        by_step[child_step.name].append(child)
                        ordered.append(child)
                        for parent in combo:
                            parent.children.append(child)
            for child in wp.children:
                if child.id not in queued and all(p.id in done for p in child.parents):
                    queued.add(child.id)
                    queue.append(child)
        return Plan(self.bench, self.run_id, self.run_dir, ordered)

    # --- one step, one parent combination -------------------------------------------------------
    def create(self, step: Step, parents: tuple[Workpackage, ...]) -> list[Workpackage]:
        glob: dict[str, Value] = {}
        incompatible: set[str] = set()
        for parent in parents:
            for name, v in parent.values.items():
                if is_builtin(v):
                    continue
                if name in glob and not glob[name].equivalent(v):
                    incompatible.add(name)
                glob[name] = v
        ordered = sorted(parents, key=lambda p: (p.step.iterations, p.step.name))
        base = 0
        for i, parent in enumerate(ordered):
            base = parent.iteration if i == 0 else parent.step.iterations * base + parent.iteration
        glob.update(self.bench_values)
        glob.update(
            {
                "jube_step_name": _builtin("jube_step_name", step.name),
                "jube_step_iterations": _builtin(
                    "jube_step_iterations", str(step.iterations), "int"
                ),
                "jube_step_cycles": _builtin("jube_step_cycles", str(step.cycles), "int"),
                "jube_wp_cycle": _builtin("jube_wp_cycle", "0", "int"),
            }
        )
        updates = {
            n: from_definition(v.definition)
            for n, v in glob.items()
            if v.update_mode in JUBE_UPDATABLE
        }
        incompatible -= set(updates)
        return self._expand(step, glob, None, frozenset(), updates, incompatible, parents, base)

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

    def _expand(
        self,
        step: Step,
        glob: dict[str, Value],
        local: dict[str, Value] | None,
        used: frozenset[str],
        updates: dict[str, Value],
        incompatible: set[str],
        parents: Sequence[Workpackage],
        base: int,
    ) -> list[Workpackage]:
        sets = self.bench.parametersets
        names = [n for n in self._use_names(step, glob) if n in sets]
        new = [n for n in names if n not in used]
        zips: list[Zip] = []
        excludes: list[Exclude] = []
        if new:
            used = used | set(new)
            local, zips, excludes = self._take_sets(step, new, dict(local or {}))
            if any(
                name in glob
                and value.update_mode not in USE_UPDATABLE
                and not value.equivalent(glob[name])
                for name, value in local.items()
            ):
                return []  # the parents chose another value: no workpackage for this combination
            for name, value in local.items():
                if value.update_mode in USE_UPDATABLE:
                    updates[name] = value
                    incompatible.discard(name)
            merged = dict(local)
            merged.update(glob)
            glob = merged
        else:
            for set_name in names:
                zips += sets[set_name].zips
                excludes += sets[set_name].excludes
        for name, value in updates.items():
            if name in glob:
                glob[name] = value
        out: list[Workpackage] = []
        for space in expand_space(glob, zips, self.tags, self.limit - self.next_id, step.where):
            wp_local = {n: space.get(n, v) for n, v in (local or {}).items()}
            if new:
                out += self._expand(
                    step, space, wp_local, used, {}, set(incompatible), parents, base
                )
                continue
            if incompatible:
                return out
            for i in range(step.iterations):
                wp = self._workpackage(step, space, parents, base * step.iterations + i, excludes)
                if wp is not None:
                    out.append(wp)
        return out

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
        consts = constants(values)
        suffix = ""
        if step.suffix:
            suffix = "_" + os.path.expandvars(
                os.path.expanduser(substitute(step.suffix, consts, final=True))
            )
        work = layout.work_folder(self.run_dir, layout.wp_dirname(wp_id, step.name, suffix))
        if step.work_dir:  # its text as written: the plan's values are not final yet
            work = os.path.join(self.bench.home, step.work_dir)
        values.update(
            {
                "jube_wp_id": _builtin("jube_wp_id", str(wp_id), "int"),
                "jube_wp_padid": _builtin("jube_wp_padid", f"{wp_id:06d}"),
                "jube_wp_iteration": _builtin("jube_wp_iteration", str(iteration), "int"),
                "jube_wp_relpath": _builtin(
                    "jube_wp_relpath", os.path.relpath(work, self.bench.home)
                ),
                "jube_wp_abspath": _builtin("jube_wp_abspath", os.path.abspath(work)),
                "jube_wp_suffix": _builtin("jube_wp_suffix", suffix),
            }
        )
        for parent in parents:
            values[f"jube_wp_parent_{parent.step.name}_id"] = _builtin(
                f"jube_wp_parent_{parent.step.name}_id", str(parent.id), "int"
            )
        exported = sorted((n for n, v in values.items() if v.definition.export), key=str.lower)
        values["jube_wp_envlist"] = _builtin("jube_wp_envlist", ",".join(exported))
        values["jube_wp_envstr"] = _builtin(
            "jube_wp_envstr", "".join(f"export {n}=${n}\n" for n in exported)
        )
        finalise(values, self.tags)
        for name, v in values.items():
            if v.definition.type in ("int", "float") and not name.startswith("jube_"):
                try:
                    (int if v.definition.type == "int" else float)(v.text.strip())
                except ValueError:
                    raise ExpandError(
                        f"parameter '{name}' is declared type=\"{v.definition.type}\" but its "
                        f"value is {v.text!r}",
                        v.definition.where,
                        hint="fix the value or drop the type",
                    ) from None
        texts = {n: v.text for n, v in values.items()}
        if not eval_bool(
            substitute(step.active, texts, final=True), f"active= of step '{step.name}'", step.where
        ):
            return None
        for exclude in excludes:
            if eval_bool(
                substitute(exclude.condition, texts, final=True), "<exclude>", exclude.where
            ):
                return None
        self.next_id += 1
        if (
            self.next_id > self.limit
        ):  # python values that became lists: sizes the count could not see
            raise ExpandError(
                f"benchmark '{self.bench.name}' makes more than {self.limit:,} workpackages "
                f"(step '{step.name}' is at {self.next_id:,})",
                step.where,
                hint="use fewer values, or raise the limit with --max-workpackages N",
            )
        return Workpackage(
            wp_id, step, iteration, list(parents), values, self._cycles(step, values)
        )

    def _cycles(self, step: Step, values: dict[str, Value]) -> tuple[dict[str, str], ...]:
        """The texts of the `update_mode="cycle"`/`"always"` values in each cycle after the first,
        evaluated here once, so the engine only reads them (JUBE evaluates them as each cycle
        starts)."""
        updated = [v.definition for v in values.values() if v.update_mode in CYCLE_UPDATABLE]
        if step.cycles <= 1 or not updated:
            return ()
        base = {n: v.text for n, v in values.items()}
        out = []
        for cycle in range(1, step.cycles):
            texts = dict(base, jube_wp_cycle=str(cycle))
            changed = {"jube_wp_cycle": str(cycle)}
            for param in updated:
                text = substitute(param.value, texts, final=True)
                if param.is_script:
                    text = evaluate(text, param.mode, param, self.tags)
                texts[param.name] = changed[param.name] = text
            out.append(changed)
        return tuple(out)


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
