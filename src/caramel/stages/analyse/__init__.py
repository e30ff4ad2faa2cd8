"""The `analyse` stage: log files of a run → analysed values per workpackage (statistics, derived).

    inp = from_run(run_dir)                    # or from_plan(plan) for work folders laid out by a
    plan results = analyse_all(inp, ["analyse"])    # analyser name -> AnalyserResult

Modules: `inputs` (what the stage reads of a run), `patterns` (built-ins, substitution, compiling),
`scan` (one pass per file, bounded memory), `stats` (running statistics), `derived` (python-mode
patterns), `analyser` (one <analyser> over a run), `cache` (analysed values kept in analyse.db).
"""

from __future__ import annotations

from caramel.stages.analyse.analyser import AnalyserResult, Group, analyse
from caramel.stages.analyse.cache import AnalysisCache
from caramel.stages.analyse.inputs import AnalyseError, AnalysisInput, WPRecord, from_plan, from_run

__all__ = [
    "AnalyseError",
    "AnalyserResult",
    "AnalysisInput",
    "Group",
    "WPRecord",
    "analyse",
    "analyse_all",
    "from_plan",
    "from_run",
]


def analyse_all(
    inp: AnalysisInput, names: list[str] | None = None, use_cache: bool = True
) -> dict[str, AnalyserResult]:
    """Run the analysers `names` (default: all of the benchmark), reusing cached values when
    allowed."""
    from caramel.errors import did_you_mean

    bench = inp.benchmark
    wanted = list(bench.analysers) if names is None else names
    cache = AnalysisCache(inp.cache_path if use_cache else None)
    try:
        out: dict[str, AnalyserResult] = {}
        for name in wanted:
            if name in out:
                continue
            if name not in bench.analysers:
                raise AnalyseError(
                    f"analyser '{name}' is not defined",
                    bench.where,
                    hint=did_you_mean(name, bench.analysers)
                    or "analysers: " + (", ".join(bench.analysers) or "none"),
                )
            out[name] = analyse(inp, bench.analysers[name], cache)
        return out
    finally:
        cache.close()
