"""What the tables and rows `bench result` keeps are keyed by (report.results, report.incremental).

The finished tables are kept under a key of everything they depend on (report.results._key: these
definitions, every file's signature, every state); the rows they were made from under the run's
shape only (`shape_key`), so a call after a few logs changed finds them.
"""

from __future__ import annotations

import hashlib

from caramel import __version__
from caramel.stages.analyse.analyser import Prepared
from caramel.stages.analyse.inputs import AnalysisInput


def definitions(inp: AnalysisInput, prepared: list[Prepared], only: list[str] | None) -> bytes:
    """What every kept table or row depends on besides the files and states: caramel's version,
    the run, the selected results, the analysers' configuration, the parameters' units and the
    steps' sanity checks (a `performance:` table has no analyser to carry them)."""
    sanity = [(name, step.sanity) for name, step in inp.benchmark.steps.items() if step.sanity]
    return repr(
        (
            __version__,
            inp.run_dir,
            only,
            inp.benchmark.results,
            [p.config for p in prepared],
            sorted(inp.param_units().items()),
            sanity,
        )
    ).encode()


def shape_key(inp: AnalysisInput, prepared: list[Prepared], only: list[str] | None) -> str:
    """What the kept rows' positions and meaning depend on (not the files nor the states)."""
    digest = hashlib.sha1(definitions(inp, prepared, only))
    for p in prepared:
        digest.update(
            repr((p.name, [[m.id for m in members] for members, _s, _r in p.plans])).encode()
        )
    digest.update(
        repr([(wp.id, wp.step, wp.iteration, wp.parents) for wp in inp.workpackages]).encode()
    )
    return digest.hexdigest()
