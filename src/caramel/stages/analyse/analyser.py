"""Running one `<analyser>` over a run: files per step, patterns, statistics, defaults, derived
values.

    result = analyse(inp, bench.analysers["analyse"])
    result.groups[root_id].values   # {"number_pat": 4, "number_pat_avg": 4.0, ...}

JUBE's rules: the files of each `<analyse step=...>` are read in each workpackage's work folder
(globs allowed, `$` substituted); matches accumulate over the files of a workpackage and, when
`reduce` is true, over its iterations (one result per group of iteration siblings, keyed by the
first of them). A pattern set named by `<file use=...>` joins the analysis only when such a file
is read. Patterns that matched nothing get their `default`; derived patterns are computed last.
A workpackage that never started gives an empty result; a missing file is recorded, not an error.
"""

from __future__ import annotations

import glob
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from caramel import __version__
from caramel.errors import did_you_mean
from caramel.settings import current
from caramel.stages.analyse import scan as scanning
from caramel.stages.analyse.cache import AnalysisCache, Damaged, decode_group, encode_group
from caramel.stages.analyse.derived import Problem, evaluate_derived
from caramel.stages.analyse.inputs import AnalyseError, AnalysisInput, WPRecord
from caramel.stages.analyse.patterns import Compiler, Probe, combine, is_derived, kind
from caramel.stages.analyse.stats import Accumulator, default_values
from caramel.stages.expand import layout
from caramel.stages.expand.substitute import substitute
from caramel.stages.spec.model import Analyse, AnalyseFile, Analyser, Benchmark, Pattern, Step


@dataclass
class Group:
    """One result of an analyser: a workpackage, or a workpackage and its iteration siblings."""

    root: int
    members: list[int]
    values: dict[str, object] = field(default_factory=dict)
    missing: list[str] = field(
        default_factory=list
    )  # files that were not there in a started workpackage
    started: bool = True
    problems: list[Problem] = field(
        default_factory=list
    )  # derived patterns that failed with all inputs
    dropped: dict[str, tuple[int, str]] = field(
        default_factory=dict
    )  # pattern -> (matches not converted, first)


@dataclass
class AnalyserResult:
    name: str
    steps: list[str]
    groups: dict[int, Group]  # root id -> group
    patterns: dict[str, Pattern]  # every pattern the analyser may use (units, types)
    scanned: int = 0  # groups analysed now
    reused: int = 0  # groups taken from the cache


@dataclass
class _Spec:
    """One `<file>` of an `<analyse>`: its path, its own pattern sets, and their compilers."""

    file: AnalyseFile
    compiler: Compiler
    extra: list[Pattern]  # the patterns its use= adds
    names: set[str]  # every pattern name it uses (scanned and derived)
    literal: bool = False  # a plain file name: no $, ~ or glob characters
    absolute: bool = False
    sanity_only: bool = False  # a file only a sanity check reads: in the signature, not scanned

    def __post_init__(self) -> None:
        self.literal = not any(c in self.file.path for c in "$~*?[")
        self.absolute = os.path.isabs(self.file.path)


# per member of a result group, the paths found of each file spec (None: a member that never
# started); tuples of texts, which the garbage collector stops walking: 10,000 groups are kept
# on every call, and only the few analysed again read them (`_reads`)
Found = tuple[tuple[tuple[str, ...], ...] | None, ...]
Plan = tuple[list[WPRecord], str, Found]  # a result group's members, files' signature, paths


@dataclass
class Prepared:
    """An analyser ready to run: its file specs, its definition's hash, and for every result group
    the files it would read now (taken without reading them, so an unchanged run costs only
    stats)."""

    name: str
    base: dict[str, Pattern]
    every: dict[str, Pattern]
    config: str
    plans: list[Plan]
    specs: dict[str, list[_Spec]]  # per analysed step, its files (what a group's Found is of)


def prepare(inp: AnalysisInput, analyser: Analyser) -> Prepared:
    bench = inp.benchmark
    base: dict[str, Pattern] = {}
    combine(bench, analyser.uses, base, f"analyser '{analyser.name}'", analyser.where)
    every = dict(base)
    specs: dict[str, list[_Spec]] = {}
    for entry in analyser.analyses:
        _check_step(analyser, entry, bench)
        files = specs.setdefault(entry.step, [])
        for file in entry.files:
            if any(s.file.path == file.path and s.file.uses == file.uses for s in files):
                continue  # the same file with the same pattern sets, read once
            spec = _file_spec(bench, analyser, base, file)
            every.update((p.name, p) for p in spec.extra)
            files.append(spec)
    _add_sanity_files(specs, analyser, bench)
    config = _config(analyser, every, bench.steps)
    return Prepared(analyser.name, base, every, config, _plans(inp, analyser, specs), specs)


def _check_step(analyser: Analyser, entry: Analyse, bench: Benchmark) -> None:
    if entry.step not in bench.steps:
        raise AnalyseError(
            f"analyser '{analyser.name}' analyses step '{entry.step}', which is not defined "
            "(or its tag does not hold)",
            entry.where,
            hint=did_you_mean(entry.step, bench.steps) or "steps: " + ", ".join(bench.steps),
        )


def _file_spec(
    bench: Benchmark, analyser: Analyser, base: dict[str, Pattern], file: AnalyseFile
) -> _Spec:
    """A `<file>`'s spec: the analyser's patterns and those its use= adds."""
    local = dict(base)
    combine(bench, file.uses, local, f"<file use=...> of analyser '{analyser.name}'", file.where)
    extra = [p for n, p in local.items() if n not in base]
    return _Spec(file, Compiler(list(local.values())), extra, set(local))


def _plans(inp: AnalysisInput, analyser: Analyser, specs: dict[str, list[_Spec]]) -> list[Plan]:
    """Per result group of each analysed step: its members, its files' signature and the paths
    found."""
    plans = []
    for step_name, wps in _by_step(inp, specs).items():
        step = inp.benchmark.steps[step_name]
        for members in _groups(wps, step.iterations, analyser.reduce):
            signature, found = _signature(inp, members, specs[step_name], step.work_dir)
            plans.append((members, signature, found))
    return plans


def _by_step(inp: AnalysisInput, steps: Iterable[str]) -> dict[str, list[WPRecord]]:
    """The workpackages of each step, in order."""
    by_step: dict[str, list[WPRecord]] = {name: [] for name in steps}
    for wp in inp.workpackages:
        if wp.step in by_step:
            by_step[wp.step].append(wp)
    return by_step


def run(
    prepared: Prepared, cache: AnalysisCache | None = None, roots: set[int] | None = None
) -> AnalyserResult:
    """Analyse the groups whose files changed since they were cached; take the others from the
    cache. `roots`: only these result groups (the others are not read at all)."""
    cached = cache.load(prepared.name, prepared.config, roots) if cache else {}
    result = AnalyserResult(prepared.name, [], {}, prepared.every)
    fresh: list[tuple[int, str, str]] = []
    for members, signature, found in _selected(prepared, roots):
        root = members[0]
        group = _cached_group(cached.get(root.id), signature, prepared.every)
        if group is not None:
            result.reused += 1
        else:
            reads = _reads(members, prepared.specs[root.step], found)
            group = _analyse_group(root, members, prepared.base, reads)
            fresh.append((root.id, signature, encode_group(group)))
            result.scanned += 1
        result.groups[root.id] = group
    if cache and fresh:
        cache.store(prepared.name, prepared.config, fresh)
    return result


def _selected(prepared: Prepared, roots: set[int] | None) -> list[Plan]:
    if roots is None:
        return prepared.plans
    return [plan for plan in prepared.plans if plan[0][0].id in roots]


def _cached_group(
    hit: tuple[str, str] | None, signature: str, every: dict[str, Pattern]
) -> Group | None:
    """The cached group where its files' signature is today's; None where it must be analysed."""
    if hit is None or hit[0] != signature:
        return None
    try:
        return decode_group(hit[1], Group, every)
    except Damaged:  # written by something else, or damaged: analysed again
        return None


def analyse(
    inp: AnalysisInput, analyser: Analyser, cache: AnalysisCache | None = None
) -> AnalyserResult:
    return run(prepare(inp, analyser), cache)


def _add_sanity_files(specs: dict[str, list[_Spec]], analyser: Analyser, bench: Benchmark) -> None:
    """The files the sanity checks of the analysed steps and of the analyser read join each group's
    signature, so a row is checked again when one of them changes (analyse/sanity.py)."""
    for step_name, files in specs.items():
        for check in bench.steps[step_name].sanity + analyser.sanity:
            if check.kind != "expr" and not any(s.file.path == check.file for s in files):
                files.append(
                    _Spec(
                        AnalyseFile(check.file, [], check.where),
                        Compiler([]),
                        [],
                        set(),
                        sanity_only=True,
                    )
                )


def _config(analyser: Analyser, patterns: dict[str, Pattern], steps: dict[str, Step]) -> str:
    """What the cached values depend on besides the files: the definitions, caramel's version and
    the patterns' time bound (a value stopped at it is found with a larger one)."""
    text = repr(
        (
            __version__,
            scanning.CHUNK,
            scanning.OVERLAP,
            current().pattern_timeout,
            analyser,
            sorted(patterns.items()),
            sorted((n, s.work_dir, s.iterations, repr(s.sanity)) for n, s in steps.items()),
        )
    )
    return hashlib.sha1(text.encode()).hexdigest()


def _groups(wps: list[WPRecord], iterations: int, reduce: bool) -> list[list[WPRecord]]:
    """Iteration siblings are created together: consecutive ids, same parents, iterations counting
    up."""
    if not reduce or iterations <= 1:
        return [[wp] for wp in wps]
    out: list[list[WPRecord]] = []
    for wp in wps:
        if out and _next_sibling(out[-1][-1], wp, iterations):
            out[-1].append(wp)
        else:
            out.append([wp])
    return out


def _next_sibling(prev: WPRecord, wp: WPRecord, iterations: int) -> bool:
    """Whether `wp` is the next iteration of `prev`'s group."""
    return (
        wp.id == prev.id + 1
        and wp.parents == prev.parents
        and wp.iteration == prev.iteration + 1
        and wp.iteration % iterations != 0
    )


def _base_dir(inp: AnalysisInput, wp: WPRecord, work_dir: str) -> str:
    if not work_dir:
        return wp.work_dir
    return layout.step_work_dir(
        inp.benchmark.home, layout.resolve_path_text(substitute(work_dir, wp.params, final=True))
    )


Read = tuple[WPRecord, _Spec, tuple[str, ...]]  # a member, a file spec, the paths found for it


def _reads(members: list[WPRecord], specs: list[_Spec], found: Found) -> list[Read]:
    """What a result group reads, member by member and file by file (JUBE's order)."""
    return [
        (wp, spec, paths)
        for wp, per_spec in zip(members, found, strict=True)
        if per_spec is not None
        for spec, paths in zip(specs, per_spec, strict=True)
    ]


def _signature(
    inp: AnalysisInput, members: list[WPRecord], specs: list[_Spec], work_dir: str
) -> tuple[str, Found]:
    """The files each member would read now, with size, mtime, inode and ctime (in JUBE's reading
    order), and the paths found."""
    parts: list[str] = []
    found: list[tuple[tuple[str, ...], ...] | None] = []
    for wp in members:
        if not wp.started:
            parts.append(f"{wp.id} -")
            found.append(None)
            continue
        base = (_base_dir(inp, wp, work_dir) if work_dir else wp.work_dir) + os.sep
        found.append(tuple([_regular_files(spec, wp, base, parts) for spec in specs]))
    return "\n".join(parts), tuple(found)


def _candidates(spec: _Spec, wp: WPRecord, base: str) -> Iterable[str]:
    """The paths a file spec names in a workpackage's folder (`base`): `$` substituted, `~` and
    `$VAR` expanded, a glob's matches."""
    if spec.literal:  # the common case, kept cheap: 10,000 workpackages are stat-ed on every call
        return (spec.file.path if spec.absolute else base + spec.file.path,)
    name = spec.file.path
    if "$" in name:
        name = substitute(name, wp.params, final=True)
    path = os.path.join(base, os.path.expandvars(os.path.expanduser(name)))
    return glob.glob(path) if glob.has_magic(path) else (path,)


def _regular_files(spec: _Spec, wp: WPRecord, base: str, parts: list[str]) -> tuple[str, ...]:
    """The paths of `spec` that are regular files (JUBE reads only those, os.path.isfile), each
    added to the signature's `parts` with its size, mtime, inode and ctime; none found: the spec's
    path marked missing. One stat a file, no helper call between: the stat pass is what an
    unchanged run of 10,000 workpackages costs."""
    if spec.literal:  # one path: no list of candidates made
        path = spec.file.path if spec.absolute else base + spec.file.path
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            parts.append(
                f"{wp.id} {st.st_size} {st.st_mtime_ns} {st.st_ino} {st.st_ctime_ns} {path}"
            )
            return (path,)
        parts.append(f"{wp.id} -1 {spec.file.path}")
        return ()
    found = []
    for path in _candidates(spec, wp, base):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append(path)
            # inode and ctime too: a copy that keeps size and mtime (cp -p, rsync -t) still
            # changes the ctime, which no tool sets back, and a file renamed over has a new inode
            parts.append(
                f"{wp.id} {st.st_size} {st.st_mtime_ns} {st.st_ino} {st.st_ctime_ns} {path}"
            )
    if not found:
        parts.append(f"{wp.id} -1 {spec.file.path}")
    return tuple(found)


def _overrun(
    wp: WPRecord, path: str, name: str, bound: float, active: dict[str, Pattern], group: Group
) -> str:
    """Record, on the group, a pattern stopped at its time bound on one file: a problem (the
    warning, naming the pattern, the file and the bound) and a missing entry (the row's status says
    why)."""
    file = os.path.relpath(path, wp.work_dir)
    why = f"did not finish within {bound:g} s on {file} (pattern_timeout)"
    pattern = active[name]
    group.problems.append(Problem(pattern, pattern.regex, wp.id, why))
    group.missing.append(f"{name}: over {bound:g} s on {file}")
    return why


def _analyse_group(
    root: WPRecord, members: list[WPRecord], base: dict[str, Pattern], reads: list[Read]
) -> Group:
    group = Group(root.id, [m.id for m in members], started=any(m.started for m in members))
    if not group.started:
        return group  # never ran: empty metrics (JUBE would show defaults and nan here)
    reading = _GroupReading(group, base, {}, dict(base), {})
    for wp, spec, paths in reads:
        if not spec.sanity_only:
            reading.read(wp, spec, paths)
    values = reading.values()
    values.update(evaluate_derived(reading.derived(), root.params, values, root.id, group.problems))
    group.values = values
    return group


@dataclass
class _GroupReading:
    """A result group's files being read into accumulators, one per pattern."""

    group: Group
    base: dict[str, Pattern]
    accs: dict[str, Accumulator]
    # JUBE's "global patternset": grows with the use= of files actually read
    active: dict[str, Pattern]
    overrun: dict[str, str]  # pattern stopped at its time bound -> why its value is missing

    def read(self, wp: WPRecord, spec: _Spec, paths: tuple[str, ...]) -> None:
        """The files a spec found for a member; a file that is not there is recorded missing."""
        if not paths:
            if spec.file.path not in self.group.missing:
                self.group.missing.append(spec.file.path)
            return
        _refuse_parameter_names(wp, spec, self.base)
        probes = spec.compiler.probes(wp.params)
        for probe in probes:
            self.accs.setdefault(probe.name, Accumulator(probe.kind))
        self.active.update((p.name, p) for p in spec.extra)
        self._scan(wp, paths, probes)

    def _scan(self, wp: WPRecord, paths: tuple[str, ...], probes: list[Probe]) -> None:
        """Each file through the probes into their accumulators, under the pattern time bound."""
        bound = current().pattern_timeout

        def sink(name: str, texts: list[str]) -> None:
            self.accs[name].add(texts)

        for path in paths:
            try:
                stopped = scanning.scan_file(path, probes, sink, bound=bound)
            except OSError as exc:  # vanished or unreadable since the signature was taken
                self.group.missing.append(f"{os.path.relpath(path, wp.work_dir)} ({exc.strerror})")
                continue
            for name in stopped:
                self.overrun[name] = _overrun(wp, path, name, bound, self.active, self.group)

    def values(self) -> dict[str, object]:
        """The accumulated values, then the defaults of patterns that matched nothing."""
        values: dict[str, object] = {}
        for name, acc in self.accs.items():
            if name in self.overrun:
                continue  # what it matched before it was stopped is not its value
            values.update(acc.values(name))
            if acc.dropped:
                self.group.dropped[name] = (acc.dropped, acc.bad)
        for p in self.active.values():
            if p.default is not None and self._unmatched(p, values):
                values.update(default_values(p.name, kind(p), p.default, p.where))
        return values

    def _unmatched(self, p: Pattern, values: dict[str, object]) -> bool:
        """A scanned pattern that matched nothing (and was not stopped): its default applies."""
        return not is_derived(p) and p.name not in values and p.name not in self.overrun

    def derived(self) -> list[Pattern]:
        """The derived patterns of the files read, computed last."""
        return [p for p in self.active.values() if is_derived(p)]


def _refuse_parameter_names(wp: WPRecord, spec: _Spec, base: dict[str, Pattern]) -> None:
    """JUBE does not allow a pattern and a parameter of one name."""
    if spec.names.isdisjoint(wp.params):
        return
    name = sorted(spec.names & wp.params.keys())[0]
    pattern = next(p for p in list(base.values()) + spec.extra if p.name == name)
    raise AnalyseError(
        f"pattern '{name}' has the name of a parameter of workpackage {wp.id}",
        pattern.where,
        hint="rename the pattern: JUBE does not allow a pattern and a parameter of one name",
    )
