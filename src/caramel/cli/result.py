"""`bench result [DIR] [-i ID ...] [--format S] [--output FILE] [-o NAME]`: the run's result tables.

Analyses what changed since the last call (analysed values are kept per workpackage in the run's
analyse.db), then prints every `<table>` of the benchmark and writes every `<database>`, as
`jube result` does; each table is also written to `<run dir>/result/<name>.dat`. `-a` (JUBE's
"analyse first") is accepted: caramel always analyses what is not analysed yet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import (
    UpdateOptions,
    add_no_eval,
    add_run_args,
    add_update,
    analysis_input_of,
    positive_int,
)
from caramel.cli.spellings import add_old_spelling
from caramel.stages.report.styles import STYLES, Style

if TYPE_CHECKING:  # the tables' modules are imported by the command, not by `bench --help`
    from caramel.stages.analyse.inputs import AnalysisInput
    from caramel.stages.report.results import Produced
    from caramel.stages.report.table import Made, Shown, TableData


@dataclass(frozen=True)
class ResultOptions:
    """`bench result`'s arguments for one run (a campaign's `-c` is cli.campaign's)."""

    dir: str | None = None
    id: str | None = None
    source: UpdateOptions = UpdateOptions()
    style: Style | None = None
    output: str | None = None
    only: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()  # JUBE's -t: only a run made with any of these tags
    select: tuple[str, ...] | None = None  # JUBE's --select: only these columns
    exclude: tuple[str, ...] | None = None  # JUBE's --exclude: all columns but these
    reanalyse: bool = False
    no_files: bool = False
    history: str | None = None
    no_history: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ResultOptions:
        return cls(
            dir=args.dir,
            id=args.id,
            source=UpdateOptions.from_args(args),
            style=args.style,
            output=args.output,
            only=tuple(args.only) if args.only else None,
            tags=tuple(args.tag),
            select=tuple(args.select) if args.select else None,
            exclude=tuple(args.exclude) if args.exclude else None,
            reanalyse=args.reanalyse,
            no_files=args.no_files,
            history=args.history,
            no_history=args.no_history,
        )


COMMAND = "result"  # `bench result` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("result", help="analyse the run's logs and print its result tables")
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_args(parser)
    add_no_eval(parser)
    add_update(parser)
    parser.add_argument(
        "--format",
        dest="style",
        choices=STYLES,
        default=None,
        help="output format of every table (default: each table's own style)",
    )
    add_old_spelling(parser, "--style", "--format")
    add_old_spelling(parser, "-s", "--format")  # JUBE's -s/--style
    parser.add_argument("--output", metavar="FILE", default=None, help="write the tables to FILE")
    parser.add_argument(
        "-o",
        "--only",
        "--table",
        nargs="+",
        action="extend",
        default=None,
        metavar="NAME",
        help="only these tables or databases (JUBE's -o)",
    )
    parser.add_argument(
        "--select",
        nargs="+",
        action="extend",
        default=None,
        metavar="COLUMN",
        help="only these columns (parameter or pattern names) of each table, as JUBE's --select",
    )
    parser.add_argument(
        "--exclude",
        nargs="+",
        action="extend",
        default=None,
        metavar="COLUMN",
        help="every column but these, as JUBE's --exclude",
    )
    parser.add_argument(
        "-n",
        "--num",
        type=positive_int,
        default=None,
        metavar="N",
        help="only the N most recent of the runs -i names (JUBE's -n; -i all -n 3: the last 3)",
    )
    parser.add_argument(
        "-t",
        "--tag",
        nargs="+",
        action="extend",
        default=[],
        metavar="TAG",
        help="only runs made with any of these tags (JUBE's -t; with -i all: a selection)",
    )
    parser.add_argument(
        "-r",
        "--reverse",
        action="store_true",
        help="with several runs: the newest first (JUBE's -r)",
    )
    parser.add_argument(
        "-a",
        "--analyse",
        action="store_true",
        help="accepted for JUBE users: the analysis always runs on what changed",
    )
    parser.add_argument(
        "--reanalyse", action="store_true", help="ignore analysed values kept from earlier calls"
    )
    parser.add_argument(
        "--no-files", action="store_true", help="do not write result/<table>.dat files"
    )
    parser.add_argument(
        "--history",
        metavar="FILE",
        default=None,
        help="history database to add the run to (default $CARAMEL_HISTORY or the data folder)",
    )
    parser.add_argument(
        "--no-history", action="store_true", help="do not add the run to the history"
    )
    parser.add_argument(
        "--perf-csv",
        metavar="FILE",
        default=None,
        help="with -c: where to write the campaign's MAD-style perf.csv (default ./perf.csv)",
    )


def run(args: argparse.Namespace) -> int:
    return result(ResultOptions.from_args(args), sys.stdout)


def result(options: ResultOptions, out: TextIO) -> int:
    """The run's tables on `out` (or -o FILE), its databases written, the run added to the
    history."""
    from caramel.consumers.history.record import run_snapshot
    from caramel.stages.state.registry import resolve

    run_dir = resolve(options.dir, options.id)
    if options.tags and not _has_any_tag(run_dir, options.tags):
        return 0  # JUBE's -t leaves such a run out without a word (jube/main.py, _benchmark_result)
    inp = _analysis_input(options, run_dir)
    before = run_snapshot(run_dir)
    produced = _produce(inp, options)
    for line in produced.warnings:
        print(f"warning: {line}", file=sys.stderr)
    if not produced.made:
        print(f"benchmark '{inp.benchmark.name}' defines no result table", file=sys.stderr)
        return 0
    _show(options, _tables(options, inp, produced.made, run_dir, _for_a_person(options, out)), out)
    _add_to_history(options, inp, produced, run_dir, before)
    return 0


def _analysis_input(options: ResultOptions, run_dir: str) -> AnalysisInput:
    """What the run's analysis reads, once -o FILE is known to overwrite none of the run's inputs
    and --no-eval found nothing to evaluate."""
    if options.output:
        from caramel.cli.outputs import refuse_inputs

        refuse_inputs(options.output, run_dir=run_dir, history=options.history)
    inp = analysis_input_of(options.source, run_dir)
    if options.source.no_eval:
        from caramel.stages.spec.evaluation import refuse_evaluation

        refuse_evaluation(inp.benchmark, analysis_only=True)
    return inp


def _for_a_person(options: ResultOptions, out: TextIO) -> bool:
    """Whether the tables go to a person: a terminal, without --style or -o FILE."""
    return options.style is None and not options.output and _is_terminal(out)


def _show(options: ResultOptions, output: str, out: TextIO) -> None:
    """The tables' text to -o FILE, else on `out`."""
    if options.output:
        from caramel.fs.writes import write_text

        write_text(options.output, output)
    elif output:
        out.write(output)


def _add_to_history(
    options: ResultOptions,
    inp: AnalysisInput,
    produced: Produced,
    run_dir: str,
    before: tuple[tuple[int, int], set[str]] | None,
) -> None:
    """The run added to the history, unless --no-history or -o NAME (some tables only) say not;
    the run folder must not have changed since `before`, taken before its tables were made
    (history.record checks it where figures are written)."""
    if options.no_history or options.only:
        return
    from caramel.consumers.history.record import add_quietly
    from caramel.stages.report.results import history_change, history_tables

    add_quietly(
        options.history,
        inp,
        lambda: history_tables(inp, produced.made),
        produced.from_cache,
        history_change(inp, produced),
        before,
    )


def _has_any_tag(run_dir: str, tags: tuple[str, ...]) -> bool:
    from caramel.cli.common import read_run

    with read_run(run_dir, None) as (_run_dir, store):
        return bool(set(store.info().tags) & set(tags))


def _produce(inp: AnalysisInput, options: ResultOptions) -> Produced:
    """The run's tables (report.results.produce); a table name `-o` does not know may be a file
    a user of caramel's former `-o FILE` meant: the hint says how to write one."""
    from caramel.stages.analyse.inputs import AnalyseError
    from caramel.stages.report.results import produce

    try:
        return produce(
            inp, list(options.only) if options.only else None, use_cache=not options.reanalyse
        )
    except AnalyseError as exc:
        if options.only and exc.message.startswith("no table or database named"):
            exc.hint = (
                f"{exc.hint}; -o NAME is JUBE's --only (tables by name): "
                "to write the tables to a file, --output FILE"
            )
        raise


def _columns(options: ResultOptions, item: Made) -> Made:
    """`item` with the columns --select and --exclude keep (JUBE's, in the printed table and its
    result file; the history keeps every column)."""
    from caramel.stages.report.columns import select_columns
    from caramel.stages.report.table import Made

    if options.select is None and options.exclude is None:
        return item
    data, warnings = select_columns(
        item.data,
        list(options.select) if options.select else None,
        list(options.exclude) if options.exclude else None,
    )
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return Made(item.result, item.table, data)


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _tables(
    options: ResultOptions, inp: AnalysisInput, made: list[Made], run_dir: str, people: bool = False
) -> str:
    """The text of every table (each also written to its result file) and every database written.
    `people`: what is shown is each table for a person (report.readable: rounded, empty columns
    left out, folded to the terminal's width); the result files keep the table's own style."""
    tables = _Tables(options, inp, run_dir, people, _foreign(options.source.no_eval, run_dir))
    for item in made:
        tables.add(_columns(options, item))
    return tables.text()


@dataclass
class _Tables:
    """The text `bench result` shows, gathered table by table: the JSON documents of json
    tables, else each table's text."""

    options: ResultOptions
    inp: AnalysisInput
    run_dir: str
    people: bool
    foreign: bool  # a run read as someone else's (_foreign)
    chunks: list[str] = field(default_factory=list)
    documents: list[dict[str, object]] = field(default_factory=list)

    def add(self, item: Made) -> None:
        """A database table's rows written, or a table shown and written to its result file."""
        from caramel.consumers.history.store import default_path

        dat = os.path.join(self._folder(item), f"{item.table.name}.dat")
        if item.table.output == "database":
            history = self.options.history or default_path()
            _database(item, dat, self.run_dir, self.foreign, history)
            return
        text = self._shown(item)
        if not self.options.no_files:
            _write_quietly(dat, text, self.run_dir)

    def _folder(self, item: Made) -> str:
        """The table's result folder; the run's own `result` when a stored result_dir= of a
        foreign run leads out of it (a reader's writes never do)."""
        from caramel.fs.paths import is_within
        from caramel.stages.report.results import result_dir

        folder = result_dir(self.inp, item.result)
        if self.foreign and not is_within(self.run_dir, folder):
            return os.path.join(self.run_dir, "result")
        return folder

    def _shown(self, item: Made) -> str:
        """The table in its style (its result file's text), kept for what is shown."""
        from caramel.stages.report.table import render, table_dict

        style = self.options.style or item.style
        if style == "json":
            self.documents.append(table_dict(item.data))
            return json.dumps(table_dict(item.data), indent=1) + "\n"
        # a table shown in its own style as it showed when made (an unchanged run's: rows unread)
        kept = item.shown if item.shown is not None and item.shown.style == style else None
        text = kept.text if kept is not None else render(item.data, style)
        self.chunks.append(_for_people(item.data) if self.people else text)
        if style in ("csv", "aligned"):
            self._note_separated(item, kept)
        return text

    def _note_separated(self, item: Made, kept: Shown | None) -> None:
        """A csv or aligned table's caption as a note (a person's table shows it), and a warning
        for cells holding the separator (as `kept` says, where the table shows as kept)."""
        from caramel.stages.report.table import clashes

        caption = kept.caption if kept is not None else item.data.caption
        if caption and not self.people:
            print(f"note: table '{item.table.name}': {caption}", file=sys.stderr)
        bad = kept.clashes if kept is not None else clashes(item.data)
        if bad:
            print(
                f"warning: table '{item.table.name}': cells of {', '.join(bad)} "
                "contain the separator "
                f"{item.data.separator or ','!r} and are written unquoted, as JUBE does; "
                "read the table with --style json, or give the table another separator=",
                file=sys.stderr,
            )

    def text(self) -> str:
        docs = self.documents
        if docs:
            return json.dumps(docs if len(docs) > 1 else docs[0], indent=1) + "\n"
        return "".join(text + "\n" for text in self.chunks)  # a blank line after each, as JUBE


def _for_people(data: TableData) -> str:
    import shutil

    from caramel.stages.report.readable import folded, for_people

    return folded(for_people(data), shutil.get_terminal_size().columns)


def _database(item: Made, dat: str, run_dir: str, foreign: bool, history: str) -> None:
    """Write the rows of a `<database>` table (report.database), or say in a note why not: a run
    folder the reader may not write (another user's, a read-only mount) keeps the owner's file."""
    from caramel.fs.paths import may_write
    from caramel.stages.report.database import write_database

    run = os.path.basename(run_dir)
    if not may_write(dat):
        print(
            f"note: database {item.table.name} of run {run} not written: {dat} is read-only to you",
            file=sys.stderr,
        )
        return
    path = write_database(item.table, item.data, dat, run_dir, foreign=foreign, history=history)
    print(f"database {item.table.name} of run {run}: {path}", file=sys.stderr)


def _foreign(no_eval: bool, run_dir: str) -> bool:
    """A run read as someone else's: `--no-eval`, or a run folder another user owns
    (docs/security.md)."""
    try:
        owner = os.stat(run_dir).st_uid
    except OSError:
        return True
    return no_eval or owner != os.getuid()


def _write_quietly(path: str, text: str, run_dir: str) -> None:
    """Result files are a convenience (JUBE writes them too): a read-only run folder is no error,
    any other failure a warning. Inside the run folder no link is followed (the run may be someone
    else's)."""
    import errno

    from caramel.fs.oserrors import FileError
    from caramel.fs.paths import is_within
    from caramel.fs.writes import write_text

    try:
        write_text(path, text, root=run_dir if is_within(run_dir, path) else None)
    except FileError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            print(f"warning: result file not written: {exc.message}", file=sys.stderr)
