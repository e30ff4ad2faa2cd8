"""What the analysis stage needs to know about a run: a small interface, independent of the engine.

    inp = from_plan(plan)          # a plan and work folders (tests, JUBE run folders)
    inp = from_run(run_dir)        # a run made by `bench run` (its caramel.db)

Each workpackage is a `WPRecord`: id, step, iteration, parents, params (the run's record), work
folder and state. The analysis reads files below `work_dir` and nothing else of the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caramel.errors import CaramelError
from caramel.stages.expand import layout
from caramel.stages.expand.params import Params
from caramel.stages.spec.model import Benchmark

if TYPE_CHECKING:
    from caramel.stages.expand.plan import Plan
    from caramel.stages.state.store import Store


class AnalyseError(CaramelError):
    """A pattern, analyser or result definition cannot be used on this run."""


class WPRecord:
    """One workpackage as the analysis sees it. Its params may come from a `ParamsSource` (the run's
    record): they are read only when needed, which an unchanged run rarely does."""

    __slots__ = (
        "id",
        "step",
        "iteration",
        "parents",
        "work_dir",
        "state",
        "reason",
        "_params",
        "_source",
    )

    def __init__(
        self,
        id: int,
        step: str,
        iteration: int,
        parents: tuple[int, ...],  # noqa: A002
        params: Params | None,
        work_dir: str,
        state: str = "done",
        reason: str = "",
        source: ParamsSource | None = None,
    ) -> None:
        self.id = id
        self.step = step
        self.iteration = iteration
        self.parents = parents
        self.work_dir = work_dir  # absolute <run dir>/<id>_<step>/work
        self.state = state  # open | running | waiting | done | failed | cancelled
        self.reason = reason
        self._params = params if params is None or isinstance(params, Params) else Params(params)
        self._source = source

    @property
    def params(self) -> Params:
        """The workpackage's params as the analysis sees them (Params.stripped), jube_* built-ins
        included."""
        if self._params is None:
            self._params = self._source.get(self.id) if self._source is not None else Params()
        return self._params

    @property
    def started(self) -> bool:
        """JUBE analyses a workpackage once its folder exists, whatever its state."""
        return self.state != "open" or os.path.isdir(os.path.dirname(self.work_dir))

    def __repr__(self) -> str:
        return f"WPRecord({self.id}, {self.step!r}, state={self.state!r})"


class ParamsSource:
    """The params of a run's workpackages, read from its record when first needed, so a call that
    finds nothing changed never reads them: the first few one by one (a call that makes a few rows
    again reads only theirs), then all in one query."""

    SINGLY = 64  # workpackages read one by one before all are read

    def __init__(self, db_file: str) -> None:
        self.db_file = db_file
        self.params: dict[int, Params] | None = None
        self._some: dict[int, Params] = {}
        self._store: Store | None = None

    def get(self, wp_id: int) -> Params:
        if self.params is None:
            found = self._some.get(wp_id)
            if found is not None:
                return found
            from caramel.stages.state.store import Store

            if self._store is None:
                self._store = Store(self.db_file, readonly=True)
            if len(self._some) < self.SINGLY:
                found = self._some[wp_id] = self._store.params(wp_id).stripped()
                return found
            try:
                self.params = {
                    wp_id: params.stripped() for wp_id, params in self._store.all_params().items()
                }
            finally:
                self._store.close()
                self._store = None
        return self.params.get(wp_id) or Params()


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

    def param_names(self) -> set[str]:
        """The names of the parameters the benchmark defines (built-ins not included)."""
        return {
            param.name
            for pset in self.benchmark.parametersets.values()
            for param in pset.parameters
        }

    def param_units(self) -> dict[str, str]:
        units: dict[str, str] = {}
        for pset in self.benchmark.parametersets.values():
            for param in pset.parameters:
                if param.unit:
                    units[param.name] = param.unit
        return units


def from_plan(
    plan: Plan, states: dict[int, str] | None = None, cache_path: str | None = None
) -> AnalysisInput:
    """An input from `make_plan(...)`: work folders as the plan places them (JUBE's layout)."""
    run_dir = os.path.abspath(plan.run_dir)
    records = []
    for wp in plan.workpackages:
        state = (states or {}).get(wp.id)
        work = layout.work_folder(run_dir, wp.dirname)
        if state is None:
            state = "done" if os.path.isdir(work) else "open"
        records.append(
            WPRecord(
                wp.id,
                wp.step.name,
                wp.iteration,
                tuple(p.id for p in wp.parents),
                wp.params().stripped(),
                work,
                state,
            )
        )
    return AnalysisInput(plan.benchmark, run_dir, records, cache_path)


CACHE_NAME = layout.ANALYSIS_CACHE


def uses_performance_lines(inp: AnalysisInput) -> bool:
    """No pattern anywhere in the benchmark: its figures are its `performance:` lines (MAD's,
    analyse.performance)."""
    return not any(pset.patterns for pset in inp.benchmark.patternsets.values())


def repeat_count(inp: AnalysisInput) -> int:
    """N of `bench run --repeat N` (1: not repeated)."""
    return max((step.repeats for step in inp.benchmark.steps.values()), default=1)


def from_run(run_dir: str, benchmark: Benchmark | None = None) -> AnalysisInput:
    """An input from a run folder made by `bench run` (its state database is the truth);
    `benchmark`: the model to analyse with instead of the stored one (an update that could not be
    stored)."""
    from caramel.stages.state.store import Store, db_path, is_run_dir

    if not is_run_dir(run_dir):
        raise AnalyseError(
            f"{run_dir} is not a caramel run folder (no caramel.db)",
            hint="give the folder bench run printed, or its outpath",
        )
    store = Store(db_path(run_dir), readonly=True)
    try:
        bench = store.model() if benchmark is None else benchmark
        rows = store.analysis_rows()  # params are read when first needed (ParamsSource)
    finally:
        store.close()
    run_dir = os.path.abspath(run_dir)
    source = ParamsSource(db_path(run_dir))
    folders = layout.work_folders(run_dir, [row[4] for row in rows])
    records = [
        WPRecord(wp_id, step, it, parents, None, work, state, reason, source)
        for (wp_id, step, it, parents, _dirname, state, reason), work in zip(
            rows, folders, strict=True
        )
    ]
    return AnalysisInput(bench, run_dir, records, os.path.join(run_dir, CACHE_NAME))
