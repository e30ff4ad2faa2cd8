"""What in a benchmark would be evaluated as code, for `--no-eval` (see docs/security.md).

As in JUBE, caramel evaluates: parameters of mode python (Python `eval`), shell and perl (run by
the shell), `<exclude>` conditions, `active=` of steps, dos and file entries unless plainly true
or false, table `filter=`, and patterns of mode python, shell or perl (after `$` substitution,
so text read from logs and parameter values becomes code). This module only finds them: each
with its file and line, in the order caramel would evaluate them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from caramel.errors import Location, SpecError
from caramel.stages.spec.model import (
    Analyser,
    Benchmark,
    Fileset,
    Parameterset,
    Patternset,
    Step,
)

EVALUATED_MODES = ("python", "shell", "perl")


def _plain(condition: str) -> bool:
    return condition.strip().lower() in ("true", "false", "")


_Set = TypeVar("_Set")


def _used(names: list[str], pool: dict[str, _Set]) -> list[_Set]:
    """The sets a list of `<use>` names takes; a name built from a parameter (`set$i`) may take
    any."""
    if any("$" in n for n in names):
        return list(pool.values())
    return [pool[n] for n in dict.fromkeys(names) if n in pool]


def evaluated(bench: Benchmark, analysis_only: bool = False) -> list[tuple[Location, str]]:
    """Everything of `bench` that would be evaluated: (where, what), in evaluation order;
    `analysis_only`: what `bench result`/`analyse` evaluate (patterns and filters; the plan was
    made)."""
    found = [] if analysis_only else list(_planning(bench))
    found += _evaluated_patterns(_used(_pattern_set_names(bench), bench.patternsets))
    found += _evaluated_filters(bench)
    return found


def _pattern_set_names(bench: Benchmark) -> list[str]:
    """The pattern sets the analysers, their files and the results use, in that order."""
    analysers = list(bench.analysers.values())
    return (
        [n for a in analysers for n in a.uses]
        + _analysed_file_uses(analysers)
        + [n for r in bench.results for n in r.uses]
    )


def _analysed_file_uses(analysers: list[Analyser]) -> list[str]:
    return [n for a in analysers for an in a.analyses for f in an.files for n in f.uses]


def _evaluated_patterns(psets: list[Patternset]) -> Iterator[tuple[Location, str]]:
    for pset in psets:
        for pattern in pset.patterns:
            if pattern.mode in EVALUATED_MODES:
                yield pattern.where, f"pattern '{pattern.name}' is mode=\"{pattern.mode}\""


def _evaluated_filters(bench: Benchmark) -> Iterator[tuple[Location, str]]:
    for result in bench.results:
        for table in result.tables:
            if table.filter.strip():
                yield (
                    table.where,
                    f"filter={table.filter!r} of {table.output} '{table.name}' is a Python "
                    "condition",
                )


def _planning(bench: Benchmark) -> Iterator[tuple[Location, str]]:
    """What planning and running evaluate: script parameters, excludes and active= conditions."""
    step_sets = _step_set_names(bench)
    for pset in _used(step_sets, bench.parametersets):
        yield from _evaluated_in_parameterset(pset)
    for step in bench.steps.values():
        yield from _evaluated_in_step(step)
    yield from _evaluated_file_entries(_used(step_sets, bench.filesets))


def _step_set_names(bench: Benchmark) -> list[str]:
    return [n for step in bench.steps.values() for use in step.uses for n in use.names]


def _evaluated_in_parameterset(pset: Parameterset) -> Iterator[tuple[Location, str]]:
    """Its script parameters, then its excludes."""
    for param in pset.parameters:
        if param.mode in EVALUATED_MODES:
            yield param.where, f"parameter '{param.name}' is mode=\"{param.mode}\""
    for exclude in pset.excludes:
        if not _plain(exclude.condition):
            yield exclude.where, f"<exclude> {exclude.condition!r} is a Python condition"


def _evaluated_in_step(step: Step) -> Iterator[tuple[Location, str]]:
    """The step's active= condition, then its dos'."""
    if not _plain(step.active):
        yield step.where, f"active={step.active!r} of step '{step.name}' is a Python condition"
    for do in step.dos:
        if not _plain(do.active):
            yield do.where, f"active={do.active!r} of a <do> is a Python condition"


def _evaluated_file_entries(fsets: list[Fileset]) -> Iterator[tuple[Location, str]]:
    for fset in fsets:
        for entry in fset.entries:
            if not _plain(entry.active):
                yield (
                    entry.where,
                    f"active={entry.active!r} of a <{entry.action}> is a Python condition",
                )


def refuse_evaluation(bench: Benchmark, analysis_only: bool = False) -> None:
    """`--no-eval`: a SpecError naming the first thing of `bench` that would be evaluated."""
    found = evaluated(bench, analysis_only)
    if not found:
        return
    where, what = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise SpecError(
        f"--no-eval: {what}; it would be evaluated as code{more}",
        where,
        hint="caramel evaluates what JUBE evaluates (docs/security.md); drop --no-eval only for a "
        "file you trust",
    )
