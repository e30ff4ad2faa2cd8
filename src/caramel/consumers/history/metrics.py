"""From a run's tables to metrics with their repeats: one sample per iteration of a workpackage.

A table row (with `reduce`, JUBE's default) merges the iterations of a workpackage; the history
wants each iteration's value to know the spread. So the caller gives the tables built with `reduce`
off when a step repeats (report.results.history_tables: the report stage makes tables, the history
only reads them), and the rows are grouped by the table's parameter columns: each group is one
configuration, each of its rows one repeat.

Figures are declared, not guessed (docs/history.md): a column enters the history only when it is a
pattern with a unit or a declared direction (or one of its statistics
`_first/_last/_min/_max/_avg/_sum`; `_cnt` is a count and `_std` a spread, never a figure), or the
`performance` column of the table of `performance:` lines, whose `metric` column is the figure's
unit. Job ids, iteration counts, parameters and patterns without unit or direction stay out. Each
figure carries its unit and its direction (spec.units), decided here once and stored; compare, pages
and predict read it.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Protocol, overload

from caramel.stages.spec.model import Pattern, Table
from caramel.stages.spec.units import direction, readable_unit, unit_in_name
from caramel.vocabulary import COPY_SPREADS, SAME_TYPE_STATISTICS, STATISTICS, Direction

if (
    TYPE_CHECKING
):  # caramel.stages.analyse takes 0.4 s to import: `bench history list` and the pages never need it
    from caramel.stages.analyse.inputs import AnalysisInput, WPRecord


# The report stage's tables as the history reads them (report.table's Made, TableData and Key;
# report.incremental's Delta): the report stage sits above the history, so they are described here,
# not imported.
class ColumnKey(Protocol):
    """A column's name, title and unit (report.table.Key)."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str | None: ...

    @property
    def unit(self) -> str: ...


class TableRows(Protocol):
    """A filled table's rows (report.table.TableData): typed values, each row's status and last
    workpackage, and the columns naming a configuration that are no parameters."""

    @property
    def keys(self) -> Sequence[ColumnKey]: ...

    @property
    def values(self) -> Sequence[Sequence[object]]: ...

    @property
    def statuses(self) -> Sequence[str]: ...

    @property
    def leaves(self) -> Sequence[int]: ...

    @property
    def config_columns(self) -> Sequence[str]: ...


class MadeTable(Protocol):
    """A table `bench result` made (report.table.Made): its declaration and its rows."""

    @property
    def table(self) -> Table: ...

    @property
    def data(self) -> TableRows: ...


class RowsMadeAgain(Protocol):
    """How a table changed since the kept one (report.incremental.Delta): the rows made again,
    before (typed values and status) and after (their places in the new table)."""

    @property
    def before(self) -> Sequence[tuple[Sequence[object], str]]: ...

    @property
    def after(self) -> Sequence[int]: ...


# a configuration as `collect` names it: its (column label, value text) pairs in column order
Configuration = tuple[tuple[str, str], ...]

# the name of a failed row's figure: one per (table, configuration) with no samples, a NULL mean and
# the row's reason (no figure of a table is named "": a column always has a name)
FAILED_ROW = ""
FAILED = "failed"  # how a failed row's status starts (report.dataset: `failed (its reason)`)
UNSTABLE_CV = 0.05  # a spread above 5 % of the mean marks a figure unstable
PERFORMANCE_TABLE = "performance"  # the table of `performance:` lines (report.performance.TABLE)
PERFORMANCE_COLUMN, UNIT_COLUMN = "performance", "metric"  # its figure and that figure's unit
COPY_COLUMN = (
    "caramel_copy"  # a copies table's copy column (engine.copies): a number, or an aggregate's name
)
FIGURE_STATISTICS = (*SAME_TYPE_STATISTICS, "avg")  # statistics of a figure that are figures too


def fmean(values: Sequence[float]) -> float:
    """statistics.fmean's mean (math.fsum, then one division); where the sum is beyond a double
    (two samples of 1.7e308), the sum of the values divided first, so that finite samples have a
    finite mean (fsum and fmean raise OverflowError there)."""
    try:
        return math.fsum(values) / len(values)
    except OverflowError:
        count = len(values)
        return math.fsum([value / count for value in values])


def fsum_or_inf(values: Iterable[float]) -> float:
    """math.fsum of values of one sign (squares); infinity where the sum is beyond a double."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


@dataclass
class Metric:
    table: str
    row: dict[str, str]  # the configuration: the table's parameter columns
    name: str
    unit: str = ""
    direction: str = (
        Direction.UNKNOWN.value
    )  # a Direction's value (a history of an older caramel: as it was stored)
    samples: list[float] = field(default_factory=list)
    # why the row failed (a failed row's figure: no samples, name "", FAILED_ROW), else ""
    reason: str = ""
    # a copies aggregate's lines, per copy over every repeat (report/copies.py pooled_lines): what
    # `bench compare --targets` and the suite's score pool as milabench does; never stored
    copies: list[list[float]] = field(default_factory=list, compare=False, repr=False)

    @property
    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.row.items())

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def mean(self) -> float:
        if len(self.samples) == 1:
            return self.samples[0]
        return fmean(self.samples) if self.samples else math.nan

    @property
    def sd(self) -> float:
        """The sample standard deviation (ddof 1); NaN with one sample: no spread to judge by."""
        import statistics  # here: most commands read no sd

        return statistics.stdev(self.samples) if len(self.samples) > 1 else math.nan

    @property
    def sd_pct(self) -> float:
        return 100.0 * self.sd / abs(self.mean) if self.n > 1 and self.mean else math.nan

    @property
    def unstable(self) -> bool:
        return self.n > 1 and self.sd_pct > 100 * UNSTABLE_CV


class MetricColumns(Sequence[Metric]):
    """A run's metrics held a column at a time: what an import's line of a thousand figures is once
    checked (history.validate), from which history.rows makes the metrics view's rows in a few
    passes in C, with no Metric made only to be taken apart. Read as a sequence (a repeated run's
    figures compared, a test), it gives each figure as a Metric, equal to the one made directly."""

    __slots__ = (
        "tables",
        "rows",
        "names",
        "units",
        "directions",
        "samples",
        "checked",
        "configs_json",
        "reasons",
    )

    def __init__(
        self,
        tables: Sequence[str],
        rows: Sequence[dict[str, str]],
        names: Sequence[str],
        units: Sequence[str],
        directions: Sequence[str],
        samples: Sequence[list[float]],
        checked: bool = False,
        configs_json: bytes | None = None,
        reasons: Sequence[str] | None = None,
    ) -> None:
        self.tables, self.rows, self.names = tables, rows, names
        self.units, self.directions, self.samples = units, directions, samples
        # as history.validate checks a line: every table, name, unit and direction a text ("higher",
        # "lower" or "unknown"), every row a dict of texts, every sample a float (none a subclass of
        # either)
        self.checked = checked
        self.configs_json = (
            configs_json  # the rows' text by history.rows.texts_json, where the checks made it
        )
        self.reasons = reasons  # each figure's reason (Metric.reason); None: every one ""

    @classmethod
    def of(cls, metrics: Iterable[Metric]) -> MetricColumns:
        """The columns of Metric objects (bench result's)."""
        if isinstance(metrics, MetricColumns):
            return metrics
        columns = tuple(zip(*map(_FIELDS, metrics), strict=True))
        if not columns:
            return cls((), (), (), (), (), ())
        tables, rows, names, units, directions, samples, reasons = columns
        return cls(
            tables,
            rows,
            names,
            units,
            directions,
            samples,
            reasons=reasons if any(reasons) else None,
        )

    def __len__(self) -> int:
        return len(self.tables)

    @overload
    def __getitem__(self, index: int) -> Metric: ...

    @overload
    def __getitem__(self, index: slice) -> list[Metric]: ...

    def __getitem__(self, index: int | slice) -> Metric | list[Metric]:
        if isinstance(index, slice):
            return list(self)[index]
        return Metric(
            self.tables[index],
            self.rows[index],
            self.names[index],
            self.units[index],
            self.directions[index],
            self.samples[index],
            self.reasons[index] if self.reasons else "",
        )

    def __iter__(self) -> Iterator[Metric]:
        reasons = self.reasons if self.reasons else repeat("")
        return map(
            Metric,
            self.tables,
            self.rows,
            self.names,
            self.units,
            self.directions,
            self.samples,
            reasons,
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MetricColumns):
            other = list(other)
        return list(self) == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal to one, and as changeable

    def __repr__(self) -> str:
        return repr(list(self))


_FIELDS = operator.attrgetter("table", "row", "name", "unit", "direction", "samples", "reason")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(float(value)) else None
    return None


def _label(key: ColumnKey) -> str:
    return key.title if key.title is not None else key.name


def collect(
    inp: AnalysisInput,
    made: Sequence[MadeTable],
    configs: dict[int, set[Configuration]] | None = None,
    failed: bool = False,
) -> list[Metric]:
    """Every figure column of every table (the module's doc says which are figures), per
    configuration, with one sample per repeat. `made`: the run's tables, one row per repeat
    (report.results.history_tables). `configs`: only these tables (by index) and configurations.
    `failed`: with one Metric of no samples per table and configuration of a failed row, named
    FAILED_ROW, holding the row's reason (what the history records; no figure)."""
    from caramel.stages.analyse.inputs import uses_performance_lines

    kinds = ("done", FAILED) if failed else ("done",)
    collecting = _Collecting(
        inp, inp.param_names(), _patterns(inp), uses_performance_lines(inp), kinds
    )
    for index, item in enumerate(made):
        if item.table.output != "table" or (configs is not None and index not in configs):
            continue
        collecting.add_table(item, None if configs is None else configs[index])
    return _distinct_names(list(collecting.metrics.values()))


@dataclass
class _Collecting:
    """`collect`'s metrics as the tables' rows are read: what every table shares (the run, its
    parameters and patterns, whether it prints `performance:` lines, the row statuses taken), the
    metrics by (table, configuration, column, unit), and one row dict per configuration, shared by
    its metrics."""

    inp: AnalysisInput
    params: set[str]
    patterns: dict[str, Pattern]
    lines: bool
    kinds: tuple[str, ...]
    metrics: dict[tuple[str, Configuration, int | None, str], Metric] = field(default_factory=dict)
    shared: dict[Configuration, dict[str, str]] = field(default_factory=dict)

    def add_table(self, item: MadeTable, wanted: set[Configuration] | None) -> None:
        """The figures of a table's rows (`wanted`: of these configurations only)."""
        layout = _layout(item, self.params, self.patterns, self.lines)
        table = item.table.name
        leaves: Sequence[int | None] = item.data.leaves or [None] * len(item.data.values)
        rows: Iterable[tuple[Sequence[object], str, int | None]]
        rows = zip(item.data.values, item.data.statuses, leaves, strict=True)
        if wanted is not None:
            rows = _maybe_wanted(layout, item.data.values, rows, wanted)
        for values, status, leaf in rows:
            config = self._config(layout, values, status, wanted)
            if config is None:
                continue
            row = self.shared.get(config)
            if row is None:
                row = self.shared[config] = dict(config)
            if status.startswith(FAILED):  # no figure (docs/file-format.md): its reason, once
                self._add_failed(table, config, row, leaf, status)
            else:
                self._add_figures(table, config, row, layout, values)

    def _config(
        self,
        layout: _Layout,
        values: Sequence[object],
        status: str,
        wanted: set[Configuration] | None,
    ) -> Configuration | None:
        """A row's configuration; None for a row not taken (its status, a spread over copies, a
        configuration not wanted)."""
        if not status.startswith(self.kinds) or layout.spread_row(values):
            return None
        config = tuple((layout.labels[i], str(values[i])) for i in layout.param_cols)
        if wanted is not None and tuple(dict(config).items()) not in wanted:
            return None
        return config

    def _add_failed(
        self, table: str, config: Configuration, row: dict[str, str], leaf: int | None, status: str
    ) -> None:
        """A failed row's Metric (no samples, FAILED_ROW, its reason), once per configuration."""
        key = (table, config, None, "")
        if key not in self.metrics:
            reason = row_reason(self.inp, leaf, status)
            self.metrics[key] = Metric(
                table, row, FAILED_ROW, "", Direction.UNKNOWN.value, [], reason
            )

    def _add_figures(
        self,
        table: str,
        config: Configuration,
        row: dict[str, str],
        layout: _Layout,
        values: Sequence[object],
    ) -> None:
        """A row's numbers, each a sample of its figure."""
        for i in layout.figures:
            number = _number(values[i])
            if number is None:
                continue
            unit, way = layout.unit_of(i, values)
            entry = self.metrics.get((table, config, i, unit))
            if entry is None:
                entry = self.metrics[(table, config, i, unit)] = Metric(
                    table, row, layout.labels[i], unit, way.value
                )
            entry.samples.append(number)


def _maybe_wanted(
    layout: _Layout,
    values: Sequence[Sequence[object]],
    rows: Iterable[tuple[Sequence[object], str, int | None]],
    wanted: set[Configuration],
) -> Iterator[tuple[Sequence[object], str, int | None]]:
    """The rows whose configuration's texts are those of a wanted configuration (`_config` checks
    each whole), found a column at a time: after one log of 10,000 changed, a row or two are
    wanted of 10,000."""
    shown: dict[str, int] = {}  # as dict(config): labels in first place, a label's last column
    for i in layout.param_cols:
        shown[layout.labels[i]] = i
    if not shown:  # no configuration columns: every row's configuration is the same
        return iter(rows)
    labels = tuple(shown)
    texts = {
        tuple(text for _label, text in config)
        for config in wanted
        if tuple(label for label, _text in config) == labels
    }
    columns = [map(str, map(operator.itemgetter(i), values)) for i in shown.values()]
    found = (text in texts for text in zip(*columns, strict=True))
    return itertools.compress(rows, found)


def row_reason(inp: AnalysisInput, leaf: int | None, status: str) -> str:
    """Why a failed row failed, whole: the reason of the failed workpackage of its chain whose
    first line the status shows (`do 1 exited with 3: ...` with the last lines of its output, a
    `call:`'s exception), else what the status says (a sanity check's verdict)."""
    opened = FAILED + " ("
    shown = (
        status[len(opened) : -1] if status.startswith(opened) and status.endswith(")") else status
    )
    for wp in _chain(inp, leaf):
        reason = (wp.reason or "").strip()
        # the status shows the first line, commas as semicolons (csv cells are not quoted)
        if reason and reason.splitlines()[0].replace(",", ";") == shown:
            return reason
    return shown


def _chain(inp: AnalysisInput, leaf: int | None) -> Iterator[WPRecord]:
    """The workpackages of a row's chain: its last one (`leaf`), then up through their parents,
    each once."""
    seen: set[int] = set()
    todo = [] if leaf is None else [leaf]
    while todo:
        wp_id = todo.pop()
        if wp_id not in seen:
            seen.add(wp_id)
            wp = inp.wp(wp_id)
            yield wp
            todo.extend(wp.parents)


@dataclass
class _Layout:
    """Which columns of a table name its configuration and which are figures, with their unit and
    direction."""

    labels: list[str]
    param_cols: list[int]
    figures: dict[int, tuple[str, Direction]]
    unit_col: int | None = None  # the table of `performance:` lines: the column of each row's unit
    copy_col: int | None = None  # a copies table: the column naming the copy (or the aggregate)

    def unit_of(self, i: int, values: Sequence[object]) -> tuple[str, Direction]:
        """Column `i`'s unit and direction in a row: the layout's, or in the table of
        `performance:` lines, the row's own unit."""
        if self.unit_col is None:
            return self.figures[i]
        unit = readable_unit(str(values[self.unit_col] or ""))
        return unit, direction(self.labels[i], unit)

    def spread_row(self, values: Sequence[object]) -> bool:
        """A row of the spread over copies (sd, sem): never a figure."""
        return self.copy_col is not None and str(values[self.copy_col]) in COPY_SPREADS


def _patterns(inp: AnalysisInput) -> dict[str, Pattern]:
    """The benchmark's patterns by name; where two sets name one, the one declared a figure."""
    out: dict[str, Pattern] = {}
    for pset in inp.benchmark.patternsets.values():
        for pattern in pset.patterns:
            if pattern.name not in out or pattern.unit or pattern.direction:
                out[pattern.name] = pattern
    return out


def _figure_pattern(name: str, patterns: dict[str, Pattern]) -> Pattern | None:
    """The pattern a column shows when it is a figure: declared (unit or direction), itself or one
    of its statistics that are figures."""
    base = _pattern_base(name, patterns)
    if not base or (base != name and name[len(base) + 1 :] not in FIGURE_STATISTICS):
        return None
    pattern = patterns[base]
    return pattern if pattern.unit or pattern.direction else None


def _layout(
    item: MadeTable, params: set[str], patterns: dict[str, Pattern], lines: bool
) -> _Layout:
    """A table's labels, the columns that name its configuration and its figures (unit,
    direction)."""
    keys = item.data.keys
    columns = item.table.columns
    labels = [_label(keys[i]) for i in range(len(columns))]
    performance = lines and item.table.name == PERFORMANCE_TABLE
    param_cols = _config_columns(item, params, performance)
    figures = _figure_columns(item, labels, param_cols, patterns, performance)
    names = [c.name for c in columns]
    return _Layout(
        labels,
        param_cols,
        figures,
        names.index(UNIT_COLUMN) if performance and UNIT_COLUMN in names else None,
        names.index(COPY_COLUMN) if COPY_COLUMN in names else None,
    )


def _config_columns(item: MadeTable, params: set[str], performance: bool) -> list[int]:
    """The columns naming a table's configuration: the benchmark's parameters (JUBE's own too) and
    the columns the table says name it; in the table of `performance:` lines, not its unit column
    (each row's figure's unit)."""
    config = (params | set(item.data.config_columns)) - ({UNIT_COLUMN} if performance else set())
    return [
        i
        for i, column in enumerate(item.table.columns)
        if column.name in config or column.name.startswith("jube_")
    ]


def _figure_columns(
    item: MadeTable,
    labels: list[str],
    param_cols: list[int],
    patterns: dict[str, Pattern],
    performance: bool,
) -> dict[int, tuple[str, Direction]]:
    """A table's figure columns (none of its configuration's), with their unit and direction: a
    declared pattern's (the module's doc), or in the table of `performance:` lines, its
    `performance` column (unit and direction: each row's own)."""
    columns = item.table.columns
    if performance:
        return {
            i: ("", Direction.UNKNOWN)
            for i, column in enumerate(columns)
            if i not in param_cols and column.name == PERFORMANCE_COLUMN
        }
    figures: dict[int, tuple[str, Direction]] = {}
    for i, column in enumerate(columns):
        pattern = None if i in param_cols else _figure_pattern(column.name, patterns)
        if pattern is not None:
            figures[i] = _unit_and_direction(column.name, item.data.keys[i], labels[i], pattern)
    return figures


def _unit_and_direction(
    name: str, key: ColumnKey, label: str, pattern: Pattern
) -> tuple[str, Direction]:
    """A figure column's unit (its key's, else one its title names) and direction (by its title,
    else by its pattern's own name)."""
    unit = readable_unit(key.unit or "") or unit_in_name(label)
    way = direction(label, unit, pattern.direction)
    if way is Direction.UNKNOWN:  # the title says nothing: maybe the pattern's own name does
        way = direction(name, unit, pattern.direction)
    return unit, way


def non_figures(inp: AnalysisInput, made: Sequence[MadeTable]) -> dict[str, str]:
    """Each column of the run's tables that is not a figure (by its title and its name, also as
    TABLE/NAME), with why not and how to make it one: what a targets file naming it is told."""
    params = inp.param_names()
    patterns = _patterns(inp)
    from caramel.stages.analyse.inputs import uses_performance_lines

    lines = uses_performance_lines(inp)
    out: dict[str, str] = {}
    for item in made:
        if item.table.output == "table":
            _add_non_figures(out, item, _layout(item, params, patterns, lines), patterns)
    return out


def _add_non_figures(
    out: dict[str, str], item: MadeTable, layout: _Layout, patterns: dict[str, Pattern]
) -> None:
    """Each column of a table that is no figure, with why, into `out` (the first reason given for a
    name holds)."""
    numeric = {
        i for values in item.data.values for i in layout.figures if _number(values[i]) is not None
    }
    for i, column in enumerate(item.table.columns):
        why = _not_a_figure(column.name, i, layout, numeric, patterns)
        for name in dict.fromkeys((layout.labels[i], column.name)) if why else ():
            out.setdefault(name, why)
            out.setdefault(f"{item.table.name}/{name}", why)


def _not_a_figure(
    name: str, i: int, layout: _Layout, numeric: set[int], patterns: dict[str, Pattern]
) -> str:
    """Why column `i` (pattern or parameter `name`) is not a figure, with the fix; '' when it is."""
    if i in layout.figures:
        return (
            ""
            if i in numeric
            else (
                f"column '{name}' holds no number in any row; give its "
                'pattern a numeric type (type="float" or "int")'
            )
        )
    if i in layout.param_cols:
        return f"column '{name}' is a parameter: it names the configuration, it is never a figure"
    return _undeclared(name, patterns)


def _pattern_base(name: str, patterns: dict[str, Pattern]) -> str:
    """The pattern a column shows: itself, or the one it is a statistic of ("": none)."""
    if name in patterns:
        return name
    stripped = (name[: -len(s) - 1] for s in STATISTICS if name.endswith("_" + s))
    return next((base for base in stripped if base in patterns), "")


def _undeclared(name: str, patterns: dict[str, Pattern]) -> str:
    """Why a column that is no parameter is no figure (no pattern, a count or a spread, or a
    pattern of no unit and no direction), with the fix."""
    base = _pattern_base(name, patterns)
    if not base:
        return f"column '{name}' is not a pattern of the benchmark; only patterns are figures"
    if base != name and name[len(base) + 1 :] not in FIGURE_STATISTICS:
        return f"column '{name}' is a count or a spread of pattern '{base}', never a figure"
    return (
        f"column '{name}' is not a figure: pattern '{base}' has no unit and no direction; "
        'declare it with unit="..." (unit: s, unit: tokens/s) or direction="lower|higher" '
        "on the pattern"
    )


def _distinct_names(metrics: list[Metric]) -> list[Metric]:
    """One name per figure of a configuration: a model printing lines in two units keeps both, as
    `performance[ms]` and `performance[samples/s]` (the history keys a figure by its name)."""
    units: dict[tuple[str, int, str], set[str]] = {}
    for m in metrics:
        units.setdefault((m.table, id(m.row), m.name), set()).add(m.unit)
    for m in metrics:
        if len(units[(m.table, id(m.row), m.name)]) > 1:
            m.name = f"{m.name}[{m.unit}]"
    return metrics


def changed_configurations(
    inp: AnalysisInput, made: Sequence[MadeTable], deltas: Sequence[RowsMadeAgain | None]
) -> dict[int, set[Configuration]] | None:
    """The configurations (as `collect` names them, per table index) of the rows made again, before
    and after (report.incremental.Delta); None when a table's change is not known row by row."""
    params = inp.param_names()
    from caramel.stages.analyse.inputs import uses_performance_lines

    lines = uses_performance_lines(inp)
    if not _known_row_by_row(made, deltas):
        return None
    out: dict[int, set[Configuration]] = {}
    for index, (item, delta) in enumerate(zip(made, deltas, strict=True)):
        # a database or syslog output is no table (every table's delta is there: checked above)
        if item.table.output != "table" or delta is None:
            continue
        found = _configurations_made_again(item, delta, _layout(item, params, {}, lines))
        if found:
            out[index] = found
    return out


def _configurations_made_again(
    item: MadeTable, delta: RowsMadeAgain, layout: _Layout
) -> set[Configuration]:
    """The configurations of a table's rows made again, before and after."""
    rows = [values for values, _status in delta.before] + [item.data.values[k] for k in delta.after]
    labels, param_cols = layout.labels, layout.param_cols
    return {tuple(dict((labels[i], str(values[i])) for i in param_cols).items()) for values in rows}


def _known_row_by_row(made: Sequence[MadeTable], deltas: Sequence[RowsMadeAgain | None]) -> bool:
    """Whether each table's change is known row by row: a change per table made, every table named
    once, none of them made again whole (no Delta)."""
    names = [item.table.name for item in made if item.table.output == "table"]
    return (
        len(set(names)) == len(names)
        and len(deltas) == len(made)
        and all(
            d is not None for m, d in zip(made, deltas, strict=True) if m.table.output == "table"
        )
    )
