"""caramel: a JUBE-compatible benchmark-set framework for machine learning on HPC systems."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported when a frame is asked for, not with caramel
    from pandas import DataFrame

__version__ = "0.1.0"


def results(
    run_dir: str, table: str | None = None, run_id: int | str | None = None, reanalyse: bool = False
) -> DataFrame:
    """A run's results as a pandas DataFrame (see `caramel.api.results`)."""
    from caramel.api import results as _results

    return _results(run_dir, table, run_id, reanalyse)


def sweep(
    function: Callable[..., object] | str,
    space: Mapping[str, object],
    system: str | None = "local",
    figures: Mapping[str, object] | None = None,
    name: str | None = None,
    outpath: str = "sweep_run",
    systems: list[str] | None = None,
    history: str | None = None,
    record: bool = True,
) -> DataFrame:
    """Run a Python function over a parameter space through submitit (see `caramel.api.sweep`)."""
    from caramel.api import sweep as _sweep

    return _sweep(function, space, system, figures, name, outpath, systems, history, record)
