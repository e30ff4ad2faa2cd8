"""Result rows: one per chain of dependent workpackages ending in an analysed leaf, as JUBE makes
them.

For each analyser a result uses: the analysed workpackages (result groups) without an analysed
descendant are the leaves; a row is the leaf with all its ancestors. Its values are the analysed
values merged along the chain, every parameter of every workpackage of the chain as
`<name>_<step>`, the leaf's parameters under their own names (typed by the type each workpackage's
record declares, as JUBE's convert_type does) and `jube_res_analyser`. caramel adds the row's
status: the worst state along the chain, with the reason of a failed one, plus the files that were
missing in a finished workpackage.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from caramel.errors import Location
from caramel.stages.analyse.analyser import AnalyserResult, Group
from caramel.stages.analyse.inputs import AnalysisInput, WPRecord
from caramel.stages.analyse.sanity import MISSING as SANITY_MISSING
from caramel.stages.analyse.sanity import row_failure
from caramel.stages.expand.params import Params
from caramel.stages.expand.substitute import references, substitute
from caramel.stages.spec.model import Pattern
from caramel.vocabulary import UNIT_STATISTICS, WpState

# Worst first: a chain is as good as its worst workpackage.
STATE_RANK = {"failed": 0, "cancelled": 1, "running": 2, "waiting": 3, "open": 4, "done": 5}
MISSING = object()
STATUS = "status"


@dataclass
class Row:
    """One result row before columns are chosen: resolves any name as JUBE's merged dict would."""

    analyser: str
    chain: list[WPRecord]  # ancestors first, the leaf last
    values: dict[str, object]  # analysed values merged along the chain
    status: str
    reason: str
    extra: dict[str, object] = field(default_factory=dict)  # sort keys JUBE adds as None
    _params: list[Params] | None = field(default=None, repr=False)  # the chain's params

    @property
    def leaf(self) -> WPRecord:
        return self.chain[-1]

    def get(self, name: str, default: object = MISSING) -> object:
        if name == "jube_res_analyser":
            return self.analyser
        params = self._chain_params()
        if name in params[-1]:
            return params[-1].typed(name)
        found = self._step_param(name, params)
        if found is not MISSING:
            return found
        value = self.values.get(name, MISSING)
        return value if value is not MISSING else self.extra.get(name, default)

    def _chain_params(self) -> list[Params]:
        if self._params is None:
            self._params = [wp.params for wp in self.chain]
        return self._params

    def _step_param(self, name: str, params: list[Params]) -> object:
        """`NAME_STEP`: the parameter NAME of the chain's workpackage of step STEP, the nearest to
        the leaf first; MISSING where none has it."""
        for wp, wp_params in zip(reversed(self.chain), reversed(params), strict=True):
            base = _without_step(name, wp.step)
            if base is not None and base in wp_params:
                return wp_params.typed(base)
        return MISSING

    def has(self, name: str) -> bool:
        return self.get(name) is not MISSING

    def as_dict(self) -> dict[str, object]:
        """Every name of the row (JUBE's analyse_dict), for the notebook API."""
        out: dict[str, object] = dict(self.values)
        for wp in self.chain:
            params = wp.params
            for name in params:
                out[f"{name}_{wp.step}"] = params.typed(name)
        leaf = self.leaf.params
        for name in leaf:
            out[name] = leaf.typed(name)
        out["jube_res_analyser"] = self.analyser
        return out


def _without_step(name: str, step: str) -> str | None:
    """NAME of `NAME_STEP`; None where the name does not end in `_STEP`."""
    if name.endswith(step) and name[-len(step) - 1 : -len(step)] == "_":
        return name[: -len(step) - 1]
    return None


def build_rows(
    inp: AnalysisInput,
    analysed: dict[str, AnalyserResult],
    uses: list[str],
    row_filter: str = "",
    where: Location | None = None,
) -> list[Row]:
    """The rows of a result that uses the analysers `uses` (in that order), leaves in id order."""
    roots = {name: analysed[name].groups.keys() for name in uses}
    rows = [
        make_row(inp, analysed[name].groups, name, root)
        for name, root in row_leaves(inp, roots, uses)
    ]
    if row_filter:
        rows = [row for row in rows if keep(row, row_filter, where)]
    return rows


def row_leaves(
    inp: AnalysisInput, roots: Mapping[str, Collection[int]], uses: list[str]
) -> list[tuple[str, int]]:
    """(analyser, leaf root) of each row of a result, in row order: per analyser of `uses`, its
    result groups (`roots[name]`: their root ids) that have no analysed descendant, in id order."""
    children: dict[int, list[int]] = {}
    for wp in inp.workpackages:
        for parent in wp.parents:
            children.setdefault(parent, []).append(wp.id)
    out: list[tuple[str, int]] = []
    for name in uses:
        groups = roots[name]
        below: dict[int, bool] = {}
        out += [
            (name, root)
            for root in sorted(groups)
            if not _has_analysed_descendant(root, children, groups, below)
        ]
    return out


def make_row(inp: AnalysisInput, groups: Mapping[int, Group], name: str, root: int) -> Row:
    """The row ending in result group `root` of analyser `name` (`groups`: at least the groups of
    its chain)."""
    chain = _chain(inp, root)
    values: dict[str, object] = {}
    missing: list[str] = []
    for wp, group in _groups_along(chain, groups):
        values.update(group.values)
        if _finished(inp, wp, group):
            missing += [m for m in group.missing if m not in missing]
    status, reason = _status(inp, chain, groups, missing)
    row = Row(name, chain, values, status, reason)
    if status.startswith("done"):
        _check_sanity(inp, row, groups)
    return row


def _groups_along(
    chain: list[WPRecord], groups: Mapping[int, Group]
) -> list[tuple[WPRecord, Group]]:
    """The chain's workpackages that are roots of result groups, with their groups."""
    return [(wp, groups[wp.id]) for wp in chain if wp.id in groups]


def _finished(inp: AnalysisInput, wp: WPRecord, group: Group) -> bool:
    """Whether the group's workpackage, or every member, is done: its missing files count."""
    return wp.state == WpState.DONE or all(inp.wp(m).state == "done" for m in group.members)


def _check_sanity(inp: AnalysisInput, row: Row, groups: Mapping[int, Group]) -> None:
    """A done row that fails a sanity check of its step becomes a failed row: its figures never
    enter the history (history.metrics takes done rows)."""
    chain = row.chain
    failure = row_failure(
        inp, row.analyser, chain, groups, lambda key: row.get(key, SANITY_MISSING)
    )
    if failure:
        row.reason = f"{chain[-1].id}_{chain[-1].step}: {failure}"
        row.status = f"failed ({cell_text(failure)})"


def row_depends(row: Row, roots: dict[int, list[int]]) -> list[int]:
    """The workpackages whose state or result group the row depends on: its chain and the members
    of the result groups along it (`roots`: root id -> member ids)."""
    out: list[int] = []
    for wp in row.chain:
        out.append(wp.id)
        members = roots.get(wp.id)
        if members is not None:
            out += [m for m in members if m != wp.id]
    return out


def _has_analysed_descendant(
    wp_id: int, children: dict[int, list[int]], groups: Collection[int], below: dict[int, bool]
) -> bool:
    """Whether a descendant of `wp_id` has analysed values (memoised in `below`; iterative, as
    chains of dependent steps can be long)."""
    stack: list[tuple[int, bool]] = [(wp_id, False)]
    while stack:  # post-order: a node is decided after all its children
        node, children_done = stack.pop()
        if node in below:
            continue
        if children_done:
            below[node] = any(c in groups or below[c] for c in children.get(node, ()))
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children.get(node, ()) if c not in below)
    return below[wp_id]


def _chain(inp: AnalysisInput, leaf_id: int) -> list[WPRecord]:
    """JUBE's parent history (parents' histories first, then the parents), without repeats, then the
    leaf."""
    order: list[int] = []

    def history(wp_id: int) -> list[int]:
        out: list[int] = []
        parents = inp.wp(wp_id).parents
        for parent in parents:
            out += history(parent)
        return out + list(parents)

    for wp_id in history(leaf_id) + [leaf_id]:
        if wp_id not in order:
            order.append(wp_id)
    return [inp.wp(i) for i in order]


def _status(
    inp: AnalysisInput, chain: list[WPRecord], groups: Mapping[int, Group], missing: list[str]
) -> tuple[str, str]:
    members = list(chain)
    for wp, group in _groups_along(chain, groups):
        members += [inp.wp(m) for m in group.members if m != wp.id]
    worst = min(members, key=lambda wp: STATE_RANK.get(wp.state, 0))
    return _status_text(worst, missing), _reason(worst)


def _reason(worst: WPRecord) -> str:
    """Why the chain is not done: its worst workpackage's reason, named by it."""
    if worst.reason and worst.state != "done":
        return f"{worst.id}_{worst.step}: {worst.reason}"
    return ""


def _status_text(worst: WPRecord, missing: list[str]) -> str:
    """The worst state along the chain, a failure's reason (issue 37: in every table, JSON and
    CSV) or a done row's missing files with it; no comma: csv cells are not quoted."""
    if worst.state == WpState.FAILED and worst.reason:
        return f"failed ({cell_text(worst.reason)})"
    if missing and worst.state == "done":
        return "done (missing " + " ".join(missing) + ")"
    return worst.state


def cell_text(reason: str) -> str:
    """A failure's reason as a table cell shows it: its first line (the lines after it are the
    output's tails `bench status` shows), with no comma (csv cells are not quoted)."""
    return reason.strip().splitlines()[0].replace(",", ";") if reason.strip() else ""


def keep(row: Row, condition: str, where: Location | None = None) -> bool:
    """A table's filter= for one row: `$name` substituted with the row's values, then evaluated."""
    from caramel.stages.analyse.inputs import AnalyseError
    from caramel.stages.expand.conditions import eval_bool

    values = {}
    for name in references(condition):
        value = row.get(name)
        if value is not MISSING:
            values[name] = text_of(value)
    try:
        return eval_bool(substitute(condition, values, final=True), "filter=", where)
    except Exception as exc:
        raise AnalyseError(
            f"filter={condition!r} cannot be evaluated for the row of workpackage "
            f"{row.leaf.id}: {exc}",
            where,
            hint="write a Python condition; $name is replaced by the row's value",
        ) from None


def text_of(value: object) -> str:
    """How JUBE turns a value into text (str(); None is empty)."""
    if value is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)


def units(
    inp: AnalysisInput, analysed: dict[str, AnalyserResult], uses: list[str], names: list[str]
) -> dict[str, str]:
    """Units of the columns `names`: a pattern's unit for it and its statistics, a parameter's unit
    (parameters win, as in JUBE)."""
    patterns = _patterns_used(analysed, uses)
    param_units = inp.param_units()
    out: dict[str, str] = {}
    for name in names:
        pattern = patterns.get(name) or patterns.get(_statistic_of(name, patterns))
        if pattern is not None and pattern.unit:
            out[name] = pattern.unit
        if name in param_units:
            out[name] = param_units[name]
    return out


def _patterns_used(analysed: dict[str, AnalyserResult], uses: list[str]) -> dict[str, Pattern]:
    """The patterns of the analysers used, a later analyser's winning."""
    patterns: dict[str, Pattern] = {}
    for name in uses:
        if name in analysed:
            patterns.update(analysed[name].patterns)
    return patterns


def _statistic_of(name: str, patterns: Mapping[str, object]) -> str:
    """The pattern NAME a column `NAME_STAT` is a statistic of (`time_avg`: `time`), unless the
    column is a pattern itself; else the column's name."""
    if name in patterns:
        return name
    for stat in UNIT_STATISTICS:
        if name.endswith("_" + stat):
            return name[: -len(stat) - 1]
    return name
