"""caramel: a JUBE-compatible benchmark-set framework for machine learning on HPC systems."""

__version__ = "0.1.0"


def results(
    run_dir: str, table: str | None = None, run_id: int | str | None = None, reanalyse: bool = False
):
    """A run's results as a pandas DataFrame (see `caramel.api.results`)."""
    from caramel.api import results as _results

    return _results(run_dir, table, run_id, reanalyse)


def sweep(function, space, system: str | None = "local", **options):
    """Run a Python function over a parameter space through submitit (see `caramel.api.sweep`)."""
    from caramel.api import sweep as _sweep

    return _sweep(function, space, system, **options)
