"""Moving runs between two histories of either engine: `bench history copy SRC DST` and the
delivery of spooled runs (history.spool). One run at a time, each in one transaction, so a history
of any size streams and a copy stopped halfway is taken up again by running it again.

A run holding a text that some engine cannot store (a NUL: PostgreSQL's text refuses it; a lone
surrogate: no UTF-8 encodes it) is not copied, on either engine, so a copy behaves the same
whatever its destination: it is named with the field and the copy goes on with the others."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field

from caramel.consumers.history.metrics import Metric
from caramel.consumers.history.store import History, RunRecord


@dataclass
class Copied:
    runs: int = 0  # runs new to the destination
    figures: int = 0  # figures added (or changed, when replacing)
    baselines: int = 0
    # why each run not copied was not: "run KEY: FIELD ..."
    skipped: list[str] = field(default_factory=list)


def copy_runs(
    source: History,
    destination: History,
    replace: bool = False,
    after_each: Callable[[str], object] | None = None,
) -> Copied:
    """Every run of `source` (with its figures, and the baselines naming it) into `destination`.
    `replace` false keeps what the destination has (an import: the same run twice adds nothing);
    true gives the source's figures precedence (a spooled `bench result`). `after_each(run_key)` is
    called once a run is committed in the destination."""
    out = Copied()
    imported = source.imported()
    for run in source.runs():
        metrics = source.metrics(run.run_key, failed=True)  # the failed rows' reasons too
        problem = uncopyable(run, metrics)
        if problem:
            out.skipped.append(f"run {run.run_key!r}: {problem}")
            continue
        known = destination.run(run.run_key) is not None
        with destination.db:
            out.figures += destination._insert(run, metrics, replace=replace)
            if run.run_key in imported and not known:
                destination.mark_imported(run.run_key)
            _copy_made_from(source, destination, run.run_key, replace)
        out.runs += not known
        if after_each is not None:
            after_each(run.run_key)
    out.baselines = _copy_baselines(source, destination)
    return out


def _copy_made_from(source: History, destination: History, run_key: str, replace: bool) -> None:
    """The key of the tables the run's figures were made from (History.made_from), where the source
    knows it and the destination does not (`replace`: whatever it knows)."""
    made_from = source.made_from(run_key)
    if made_from and (replace or destination.made_from(run_key) is None):
        destination.set_made_from(run_key, made_from)


def _copy_baselines(source: History, destination: History) -> int:
    """The source's baselines the destination has no baseline of that name of; how many."""
    copied = 0
    for name, run_key in source.db.execute("SELECT name, run_key FROM baselines").fetchall():
        if destination.baseline(name) is None:
            destination.set_baseline(name, run_key)
            copied += 1
    return copied


def uncopyable(run: RunRecord, metrics: list[Metric]) -> str:
    """Why the run cannot be stored in every engine ('' when it can): the first text field holding
    a NUL or a lone surrogate, by name (`benchmark`, `metrics[2].row.nodes`)."""
    for where, text in _texts(run, metrics):
        if "\0" in text:
            return f"{where} holds a NUL character (U+0000), which PostgreSQL cannot store"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"{where} holds a lone surrogate (U+{ord(text[exc.start]):04X}), "
                "which no engine stores"
            )
    return ""


def _texts(run: RunRecord, metrics: list[Metric]) -> Iterator[tuple[str, str]]:
    """Every text of a run and its figures, with the name of its field."""
    for name, value in asdict(run).items():
        yield from _field_texts(name, value)
    for n, metric in enumerate(metrics):
        for name in ("table", "name", "unit", "direction"):
            yield f"metrics[{n}].{name}", getattr(metric, name)
        yield from _pairs(f"metrics[{n}].row", metric.row)


def _field_texts(name: str, value: object) -> Iterator[tuple[str, str]]:
    """The texts of a run's field: itself, the items of a list (tags, job_ids), the keys and values
    of a mapping (the fingerprint)."""
    if isinstance(value, str):
        yield name, value
    elif isinstance(value, list):
        yield from ((f"{name}[{i}]", item) for i, item in enumerate(value) if isinstance(item, str))
    elif isinstance(value, dict):
        yield from _pairs(name, value)


def _pairs(name: str, mapping: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    for key, item in mapping.items():
        yield f"{name}.{key}", str(key)
        if isinstance(item, str):
            yield f"{name}.{key}", item
