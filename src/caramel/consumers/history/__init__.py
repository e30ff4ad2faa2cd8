"""Run history: every `bench result` adds its figures, with provenance, to one SQLite file;
`bench compare` tells a regression from noise; `bench export` / `bench import` move results.

    samples = collect(inp, history_tables(inp))   # per table row and metric: the repeats' values
    (report.results) with History.open(path) as h: h.add(run, samples)
"""

from caramel.consumers.history.metrics import Metric, collect
from caramel.consumers.history.store import History, default_path
from caramel.stages.spec.units import direction

__all__ = ["History", "Metric", "collect", "default_path", "direction"]
