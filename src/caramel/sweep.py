"""`caramel.sweep(function, space, system=...)` (api.py): a `call:` benchmark written from Python
and run.

    def train(hidden_size: int, lr: float) -> dict: ...
    train.caramel_figures = {"tokens_per_s": "tokens/s", "loss": ("", "lower")}
    frame = caramel.sweep(train, {"hidden_size": [32, 64], "lr": [1e-3, 1e-2]}, system="local")

The sweep is an ordinary benchmark file (`<outpath>/<name>.yaml`, kept beside the runs so `bench
continue`, `status`, `result` and `remove` work on it) with one parameter set (the space: a list is
the values of a parameter, anything else one value) and one step that calls the function. It is
read, checked and run as `bench run FILE --tag SYSTEM` would; the run's figures are added to the
history as `bench result` adds them; api.sweep returns `caramel.results(run, table=NAME)`: one row
per point, its parameters, figures and status (on a batch system, the rows of jobs still queued have
their state as status: `bench continue --wait OUTPATH`, then `caramel.results`).
"""

from __future__ import annotations

import contextlib
import os
import reprlib
import sys
from collections.abc import Callable, Iterator, Mapping

import yaml

from caramel.errors import SpecError

TYPES = {bool: "string", int: "int", float: "float", str: "string"}


def run_sweep(
    function: Callable[..., object] | str,
    space: Mapping[str, object],
    system: str | None = "local",
    figures: Mapping[str, object] | None = None,
    name: str | None = None,
    outpath: str = "sweep_run",
    systems: list[str] | None = None,
    history: str | None = None,
    record: bool = True,
) -> tuple[str, str]:
    """Run `function` (or "package.module:function") once per point of `space` on `system`; the run
    folder and the name of its table (the step's)."""
    from caramel.adapters.systems import find_system, with_system
    from caramel.stages.engine.session import scheduler_for, start_run
    from caramel.stages.engine.settings import Settings
    from caramel.stages.spec.loader import load

    target = _target(function)
    name = name or target.rpartition(":")[2].replace(".", "_")
    os.makedirs(outpath, exist_ok=True)
    path = os.path.abspath(os.path.join(outpath, f"{name}.yaml"))
    with open(path, "w") as handle:
        yaml.safe_dump(benchmark_text(name, target, space, figures), handle, sort_keys=False)
    tags = {system} if system else set()
    found = find_system(tags, systems)
    (bench,) = [with_system(b, found) for b in load(path, tags)]
    bench.outpath = os.path.abspath(outpath)
    with _importable(function):
        summary = start_run(bench, Settings(), quiet=True, scheduler=scheduler_for(bench))
    if record:
        _add_to_history(summary.run_dir, history)
    return summary.run_dir, name


def benchmark_text(
    name: str, target: str, space: Mapping[str, object], figures: Mapping[str, object] | None
) -> dict[str, object]:
    """The benchmark file (as YAML's data) of a sweep."""
    parameters = [_parameter(key, values) for key, values in space.items()]
    step: dict[str, object] = {"name": name, "use": "space", "call": target}
    if figures and not isinstance(figures, Mapping):
        raise SpecError(
            f"caramel.sweep: figures is a {type(figures).__name__}, not a mapping of figure "
            "names to units",
            hint='write {"tokens_per_s": "tokens/s", "loss": ("", "lower")}',
        )
    if figures:
        step["figure"] = [_figure(key, spec) for key, spec in figures.items()]
    return {
        "name": name,
        "outpath": ".",
        "parameterset": [{"name": "space", "parameter": parameters}],
        "step": [step],
    }


def _target(function: Callable[..., object] | str) -> str:
    if isinstance(function, str):
        return function
    module, qualname = getattr(function, "__module__", ""), getattr(function, "__qualname__", "")
    if not module or not qualname or module == "__main__" or "<" in qualname:
        raise SpecError(
            f"caramel.sweep: {qualname or function!r} is not importable by name",
            hint="define the function in a module (a .py file the job can import), not in the "
            "notebook or inside another function; or pass 'package.module:function'",
        )
    return f"{module}:{qualname}"


@contextlib.contextmanager
def _importable(function: Callable[..., object] | str) -> Iterator[None]:
    """The folder the function's module is imported from on the jobs' PYTHONPATH while the run
    starts: this process found it on its own sys.path (a notebook's folder), the job's Python must
    too."""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    if module is None or not path:
        yield
        return
    root = os.path.dirname(os.path.abspath(path))
    for _part in range(module.__name__.count(".") + (os.path.basename(path) == "__init__.py")):
        root = os.path.dirname(root)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + ([before] if before else []))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def _parameter(key: str, values: object) -> dict[str, str]:
    listed = list(values) if isinstance(values, (list, tuple, range)) else [values]
    if not listed:
        raise SpecError(f"caramel.sweep: parameter {key!r} has no value")
    texts = [str(v) for v in listed]
    separator = _separator(texts)
    out = {"name": key, "type": _shared_type(listed), "_": separator.join(texts)}
    if separator != ",":
        out["separator"] = separator
    return out


def _shared_type(values: list[object]) -> str:
    """The parameter type of the values where they share one; else string."""
    kinds = {TYPES.get(type(v), "string") for v in values}
    return kinds.pop() if len(kinds) == 1 else "string"


def _separator(texts: list[str]) -> str:
    """The first of `,`, `;`, `|` and the unit separator that no value holds (else `,`)."""
    return next((s for s in (",", ";", "|", "\x1f") if not any(s in t for t in texts)), ",")


def _figure(key: object, spec: object) -> dict[str, str]:
    """One figure of `figures` as a step's `figure:` entry; a shape `caramel_figures` does not
    take (a number, a mapping, three items) is an error, as it is there."""
    from caramel.stages.spec.call import unit_and_direction

    pair = unit_and_direction(spec)
    if not isinstance(key, str) or pair is None:
        raise SpecError(
            f"caramel.sweep: figures: {reprlib.repr(key)}: {reprlib.repr(spec)} is not a unit "
            "or (unit, direction)",
            hint='write {"tokens_per_s": "tokens/s", "loss": ("", "lower")}',
        )
    unit, direction = pair
    out = {"name": key}
    if unit:
        out["unit"] = unit
    if direction:
        out["direction"] = direction
    return out


def _add_to_history(run_dir: str, history: str | None) -> None:
    from caramel.consumers.history.record import add_quietly
    from caramel.stages.analyse.inputs import from_run
    from caramel.stages.report.results import history_change, history_tables, produce
    from caramel.stages.state.registry import resolve

    inp = from_run(resolve(run_dir, None))
    produced = produce(inp)
    add_quietly(
        history,
        inp,
        lambda: history_tables(inp, produced.made),
        produced.from_cache,
        history_change(inp, produced),
    )
