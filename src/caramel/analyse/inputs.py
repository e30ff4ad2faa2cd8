"""What the analysis stage needs to know about a run: a small interface, independent of the engine.

    inp = from_plan(plan)          # a plan and work folders (tests, JUBE run folders)
    inp = from_run(run_dir)        # a run made by `bench run` (its caramel.db)

Each workpackage is a `WPRecord`: id, step, iteration, parents, final parameter texts, work folder
and state. The analysis reads files below `work_dir` and nothing else of the run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from caramel.errors import CaramelError
from caramel.expand import layout
from caramel.spec.model import Benchmark

# JUBE's built-in parameters that are typed int (everything else built in is a string).
_INT_BUILTINS = {"jube_benchmark_id", "jube_step_iterations", "jube_step_cycles", "jube_wp_cycle",
                 "jube_wp_id", "jube_wp_iteration"}


class AnalyseError(CaramelError):
    """A pattern, analyser or result definition cannot be used on this run."""


class WPRecord:
    """One workpackage as the analysis sees it. Parameter texts may be given as the run store's
    JSON text (`raw`): they are decoded only when needed, which an unchanged run rarely does."""

    __slots__ = ("id", "step", "iteration", "parents", "work_dir", "state", "reason", "_params", "_raw")

    def __init__(self, id: int, step: str, iteration: int, parents: tuple[int, ...],  # noqa: A002
                 params: dict[str, str] | None, work_dir: str, state: str = "done", reason: str = "",
                 raw: str | ParamSource | None = None) -> None:
        self.id = id
        self.step = step
        self.iteration = iteration
        self.parents = parents
        self.work_dir = work_dir  # absolute <run dir>/<id>_<step>/work
        self.state = state  # open | running | waiting | done | failed | cancelled
        self.reason = reason
        self._params = params
        self._raw = raw

    @property
    def params(self) -> dict[str, str]:
        """Final parameter texts, stripped (see `stripped`), jube_* built-ins included."""
        if self._params is None:
            raw = self._raw.get(self.id) if isinstance(self._raw, ParamSource) else self._raw
            self._params = stripped(json.loads(raw)) if raw else {}
        return self._params

    @property
    def started(self) -> bool:
        """JUBE analyses a workpackage once its folder exists, whatever its state."""
        return self.state != "open" or os.path.isdir(os.path.dirname(self.work_dir))

    def __repr__(self) -> str:
        return f"WPRecord({self.id}, {self.step!r}, state={self.state!r})"

    def __getstate__(self):
        return (self.id, self.step, self.iteration, self.parents, self.work_dir, self.state, self.reason,
                self.params, None)

    def __setstate__(self, state) -> None:
        (self.id, self.step, self.iteration, self.parents, self.work_dir, self.state, self.reason,
         self._params, self._raw) = state


class ParamSource:
    """The parameter texts of a run's workpackages, read from its database on first use (one query),
    so a call that finds nothing changed never reads them."""

    def __init__(self, db_file: str) -> None:
        self.db_file = db_file
        self.texts: dict[int, str] | None = None

    def get(self, wp_id: int) -> str | None:
        if self.texts is None:
            from caramel.state.store import Store

            store = Store(self.db_file, readonly=True)
            try:
                self.texts = dict(store.db.execute("SELECT id, params FROM workpackages"))
            finally:
                store.close()
        return self.texts.get(wp_id)


@dataclass
class AnalysisInput:
    benchmark: Benchmark
    run_dir: str
    workpackages: list[WPRecord]
    cache_path: str | None = None  # SQLite file for analysed values; None: no cache
    _by_id: dict[int, WPRecord] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {wp.id: wp for wp in self.workpackages}

    def wp(self, wp_id: int) -> WPRecord:
        return self._by_id[wp_id]

    def param_types(self) -> dict[str, str]:
        """Declared type of each parameter name (the last definition wins), built-ins included."""
        types: dict[str, str] = {}
        for pset in self.benchmark.parametersets.values():
            for param in pset.parameters:
                types[param.name] = "string" if param.type == "str" else param.type
        for name in _INT_BUILTINS:
            types[name] = "int"
        return types

    def param_units(self) -> dict[str, str]:
        units: dict[str, str] = {}
        for pset in self.benchmark.parametersets.values():
            for param in pset.parameters:
                if param.unit:
                    units[param.name] = param.unit
        return units


def stripped(texts: dict[str, str]) -> dict[str, str]:
    """Parameter texts as JUBE's analysis sees them: `jube result` reloads the workpackages from
    workpackages.xml, which strips every value (a shell parameter's trailing newline is gone)."""
    return {name: text.strip() for name, text in texts.items()}


def param_type(types: dict[str, str], name: str) -> str:
    if name.startswith("jube_wp_parent_") and name.endswith("_id"):
        return "int"
    return types.get(name, "string")


def from_plan(plan, states: dict[int, str] | None = None, cache_path: str | None = None) -> AnalysisInput:
    """An input from `make_plan(...)`: work folders as the plan places them (JUBE's layout)."""
    run_dir = os.path.abspath(plan.run_dir)
    records = []
    for wp in plan.workpackages:
        state = (states or {}).get(wp.id)
        work = layout.work_folder(run_dir, wp.dirname)
        if state is None:
            state = "done" if os.path.isdir(work) else "open"
        records.append(WPRecord(wp.id, wp.step.name, wp.iteration, tuple(p.id for p in wp.parents),
                                stripped(wp.texts()), work, state))
    return AnalysisInput(plan.benchmark, run_dir, records, cache_path)


CACHE_NAME = layout.ANALYSIS_CACHE


def from_run(run_dir: str) -> AnalysisInput:
    """An input from a run folder made by `bench run` (its state database is the truth)."""
    from caramel.state.store import Store, db_path, is_run_dir

    if not is_run_dir(run_dir):
        raise AnalyseError(f"{run_dir} is not a caramel run folder (no caramel.db)",
                           hint="give the folder bench run printed, or its outpath")
    store = Store(db_path(run_dir), readonly=True)
    try:
        bench = store.model()
        # One query for what the analysis needs; parameter texts are read when first needed (decoding
        # them all costs more than the rest of an unchanged run's result).
        rows = store.db.execute("SELECT id, step, iteration, parents, dirname, state, reason "
                                "FROM workpackages ORDER BY id").fetchall()
    finally:
        store.close()
    run_dir = os.path.abspath(run_dir)
    source = ParamSource(db_path(run_dir))
    work_folder = layout.work_folder
    records = [WPRecord(wp_id, step, it, tuple(int(p) for p in parents.split(",")) if parents else (), None,
                        work_folder(run_dir, dirname), state, reason, source)
               for wp_id, step, it, parents, dirname, state, reason in rows]
    return AnalysisInput(bench, run_dir, records, os.path.join(run_dir, CACHE_NAME))
