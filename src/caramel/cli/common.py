"""Arguments shared by several subcommands."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from caramel.errors import RunError

if TYPE_CHECKING:
    from caramel.adapters.systems.model import System
    from caramel.stages.analyse.inputs import AnalysisInput
    from caramel.stages.spec.model import Benchmark
    from caramel.stages.state.store import Store


def add_benchmark_args(parser: argparse.ArgumentParser, file_optional: bool = False) -> None:
    """FILE, --tag and --include-path, as `jube run` takes them."""
    file = parser.add_argument(
        "file",
        metavar="FILE|NAME",
        nargs="?" if file_optional else None,
        help="benchmark file (JUBE XML or YAML), or the name of a shipped or user benchmark "
        "(bench benchmarks lists them)",
    )
    file.completer = _complete_names  # type: ignore[attr-defined]  # argcomplete reads it
    tag = parser.add_argument(
        "--tag",
        "-t",
        nargs="+",
        action="extend",
        default=[],
        metavar="TAG",
        help="tags selecting parameters, steps and the system",
    )
    tag.completer = _complete_tags  # type: ignore[attr-defined]
    parser.add_argument(
        "--include-path",
        action="append",
        default=[],
        metavar="DIR",
        help="folder searched for init_with/use from= files (repeatable)",
    )
    parser.add_argument(
        "--only-bench",
        action="append",
        default=[],
        metavar="NAME",
        help="only the benchmark of this name (a file may hold several)",
    )
    parser.add_argument(
        "--not-bench",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME",
        help="not the benchmarks of these names (JUBE's --not-bench)",
    )
    parser.add_argument(
        "--systems",
        action="append",
        default=[],
        metavar="DIR",
        help="folder of system files searched before $CARAMEL_SYSTEMS_PATH and caramel's systems/",
    )
    parser.add_argument(
        "--benchmarks",
        action="append",
        default=[],
        metavar="DIR",
        help="folder of benchmark files searched by name before $CARAMEL_BENCHMARKS_PATH",
    )
    parser.add_argument(
        "--max-workpackages",
        type=positive_int,
        default=None,
        metavar="N",
        help="refuse a plan of more than N workpackages before making them (default 1,000,000)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse a key or attribute the file grammar does not know (default: a warning, "
        "as JUBE ignores it)",
    )
    add_no_eval(parser)


def _complete_names(prefix: str, **kwargs: Any) -> list[str]:
    from caramel.cli.completion import benchmark_names  # only while completing (a TAB)

    return benchmark_names(prefix, **kwargs)


def _complete_tags(prefix: str, **kwargs: Any) -> list[str]:
    from caramel.cli.completion import benchmark_tags

    return benchmark_tags(prefix, **kwargs)


def add_predict_args(parser: argparse.ArgumentParser) -> None:
    """--history, --from and --method: where predictions learn from (`bench predict`, `bench plan`,
    `bench run`:
    here, not in cli.predict, so that `bench run` parses them without importing it)."""
    parser.add_argument(
        "--history",
        metavar="FILE",
        help="history database (default $CARAMEL_HISTORY or the data folder)",
    )
    parser.add_argument(
        "--from",
        dest="learn_from",
        metavar="SYSTEM",
        help="learn from this system's history, scaled by the systems' peak rates (peak_tflops)",
    )
    parser.add_argument(
        "--method",
        choices=["auto", "history", "kernels"],
        default="auto",
        help="history: the benchmark's own runs; kernels: the system's microbenchmarks summed over "
        "the declared execution profile; auto (default): history where the system has runs, "
        "kernels where it has none but has microbenchmarks (docs/microbench.md)",
    )


def add_no_eval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-eval",
        action="store_true",
        help="refuse a file that needs anything evaluated as code (python/shell parameters, "
        "exclude, active=, filter=, python patterns); see docs/security.md",
    )


def positive_int(text: str) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


@dataclass(frozen=True)
class BenchmarkOptions:
    """What `add_benchmark_args` reads: the benchmark file or name and how to load it."""

    file: str | None
    tags: tuple[str, ...] = ()
    include_path: tuple[str, ...] = ()
    only_bench: tuple[str, ...] = ()
    not_bench: tuple[str, ...] = ()  # JUBE's --not-bench: benchmarks of the file left out
    systems: tuple[str, ...] = ()
    benchmarks: tuple[str, ...] = ()
    max_workpackages: int | None = None
    no_eval: bool = False
    strict: bool = False  # an unknown key is an error, not a warning (spec/keycheck.py)
    # a tag that selects nothing is an error (spec/tagscan.py; a suite checks its own)
    check_tags: bool = True

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> BenchmarkOptions:
        return cls(
            file=args.file,
            tags=tuple(args.tag),
            include_path=tuple(args.include_path),
            only_bench=tuple(args.only_bench),
            not_bench=tuple(args.not_bench),
            systems=tuple(args.systems),
            benchmarks=tuple(args.benchmarks),
            max_workpackages=args.max_workpackages,
            no_eval=args.no_eval,
            strict=args.strict,
        )


@dataclass
class LoadedBenchmarks:
    benchmarks: list[Benchmark]
    by_name: (
        bool  # FILE was a name, not a path: runs go under the current folder, never beside the file
    )


def load_named(options: BenchmarkOptions) -> LoadedBenchmarks:
    """The benchmarks of FILE for the tags, each knowing the system a tag names (if one does)."""
    from caramel.adapters.systems import find_system, system_names
    from caramel.consumers.catalog import resolve_benchmark
    from caramel.stages.spec.loader import load

    if options.file is None:
        raise RunError("no benchmark file or name given")
    path = resolve_benchmark(options.file, list(options.benchmarks))
    by_name = path != options.file
    system = find_system(set(options.tags), list(options.systems))
    benchmarks = load(
        path,
        set(options.tags),
        list(options.include_path),
        only=_only(options.only_bench, options.file, path) or None,
        strict=options.strict,
        no_eval=options.no_eval,
        system_tags=(system_names(list(options.systems)) if options.check_tags else None),
    )
    benchmarks = _on_system(benchmarks, options.not_bench, system)
    if options.no_eval:
        from caramel.stages.spec.evaluation import refuse_evaluation

        for bench in benchmarks:
            refuse_evaluation(bench)
    return LoadedBenchmarks(benchmarks, by_name)


def _only(only_bench: tuple[str, ...], file: str, path: str) -> list[str]:
    """--only-bench's benchmarks; a MAD model given by name (FILE is no path): that entry of its
    models.json."""
    from caramel.stages.spec.mad import is_models_json

    if path != file and is_models_json(path) and not only_bench:
        return [file]
    return list(only_bench)


def _on_system(
    benchmarks: list[Benchmark], not_bench: tuple[str, ...], system: System | None
) -> list[Benchmark]:
    """The benchmarks --not-bench leaves, each knowing its system (and its container there)."""
    from caramel.adapters.systems import with_system
    from caramel.stages.spec.mad import in_container

    return [
        in_container(with_system(bench, system), system)
        for bench in benchmarks
        if bench.name not in not_bench
    ]


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """DIR and -i ID|last: which run a command works on (as `jube continue DIR -i ID` takes them).

    DIR is a run folder or the outpath holding runs; without DIR, the runs started from the current
    folder (remembered by bench run) are meant."""
    parser.add_argument(
        "dir",
        nargs="?",
        action=_RunFolder,
        metavar="DIR",
        help="run folder, or the outpath holding runs",
    )
    parser.add_argument(
        "-i",
        "--id",
        nargs="+",
        action=RunIds,
        default=None,
        metavar="ID",
        help="run ids, last (the default), all, or a negative position (-1 the last run, -2 the "
        "one before); several ids run the command on each run in turn",
    )
    parser.add_argument(
        "-c",
        "--campaign",
        default=None,
        metavar="ID|last",
        help="every run of a campaign (bench run --suite): its id, or last",
    )


class _RunFolder(argparse._StoreAction):
    """DIR, unless absent where RunIds took it from the end of `-i` (argparse sets an absent
    optional positional to its default after the flags, which would drop it)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values is not None or getattr(namespace, self.dest, None) is None:
            setattr(namespace, self.dest, values)


class RunIds(argparse.Action):
    """JUBE's `-i ID ...`: one run id or `last` is kept as its text (what every command reads);
    several ids, `all` or a negative position as the list cli/main.py visits run by run."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        ids = [str(value) for value in values]
        if len(ids) > 1 and not _is_run_id(ids[-1]) and getattr(namespace, "dir", None) is None:
            # `-i last DIR` (caramel's order before -i took several ids): DIR is no id
            namespace.dir = ids.pop()
        one = len(ids) == 1 and ids[0] != "all" and not ids[0].startswith("-")
        setattr(namespace, self.dest, ids[0] if one else ids)


def _is_run_id(text: str) -> bool:
    return text in ("all", "last") or text.lstrip("-").isdigit()


def runs_to_visit(
    directory: str | None, ids: str | list[str] | None, num: int | None = None
) -> list[str] | None:
    """The run folders of several `-i` ids (`-i all`, `-i -1`, `-i 0 1`, see RunIds) or of
    `result -n N` (the N most recent of them), visited one after another as JUBE loops over its
    benchmarks (jube/main.py, search_for_benchmarks); None where `-i` names one run."""
    from caramel.stages.state.registry import resolve_all

    if not isinstance(ids, list) and num is None:
        return None
    runs = resolve_all(directory, ids if isinstance(ids, list) else [ids or "last"])
    if num is not None:  # JUBE's result -n: the N most recent of those chosen
        runs = runs[-num:]
    return runs


def add_update(parser: argparse.ArgumentParser) -> None:
    """-u FILE (JUBE's update): the run's patterns, analysers, results and sanity checks from
    FILE."""
    parser.add_argument(
        "-u",
        "--update",
        metavar="FILE",
        default=None,
        help="take patterns, analysers, results and sanity checks from this edited file "
        "(kept for later calls, as JUBE does); a change of the run itself is refused",
    )
    parser.add_argument(
        "--include-path",
        nargs="+",
        action="extend",
        default=None,
        metavar="DIR",
        help="with -u: folders searched for files the edited file includes",
    )


@dataclass(frozen=True)
class UpdateOptions:
    """-u FILE, its --include-path, and --no-eval: how a run's analysis definitions are taken."""

    update: str | None = None
    include_path: tuple[str, ...] | None = None
    no_eval: bool = False
    strict: bool = False  # an unknown key is an error, not a warning (spec/keycheck.py)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> UpdateOptions:
        # no command that takes -u has --strict (add_update adds none): `strict` stays False from
        # the command line
        return cls(
            update=args.update,
            include_path=None if args.include_path is None else tuple(args.include_path),
            no_eval=args.no_eval,
        )


def analysis_input_of(options: UpdateOptions, run_dir: str) -> AnalysisInput:
    """The run's analysis input, with the edited definitions of `options.update` taken first."""
    from caramel.stages.analyse import from_run

    if options.update:
        from caramel.stages.analyse.update import update_run

        def no_eval(model: Benchmark) -> None:
            if options.no_eval:
                from caramel.stages.spec.evaluation import refuse_evaluation

                refuse_evaluation(model, analysis_only=True)

        include = None if options.include_path is None else list(options.include_path)
        return from_run(
            run_dir,
            update_run(run_dir, options.update, include, no_eval if options.no_eval else None),
        )
    return from_run(run_dir)


def add_run_reader(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    formats: tuple[str, ...],
) -> argparse.ArgumentParser:
    """A subcommand that reads one run: DIR, -i, -c and `--format` (the first of `formats` by
    default)."""
    parser = sub.add_parser(name, help=help)
    add_run_args(parser)
    parser.add_argument("--format", choices=list(formats), default=formats[0])
    return parser


@contextlib.contextmanager
def read_run(folder: str | None, run_id: str | None) -> Iterator[tuple[str, Store]]:
    """The run folder DIR and -i name (state.registry.resolve), and its store read-only (closed
    afterwards)."""
    from caramel.stages.state.registry import resolve
    from caramel.stages.state.store import Store, db_path

    run_dir = resolve(folder, run_id)
    store = Store(db_path(run_dir), readonly=True)
    try:
        yield run_dir, store
    finally:
        store.close()
