"""`bench export [-o FILE] [DIR -i ID ...]` and `bench import FILE`: results as JSON lines, so sites
can merge their results into one history (importing a run twice adds nothing); `bench import`
parses its arguments in cli/import_cmd.py."""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, TextIO

from caramel.errors import RunError

if TYPE_CHECKING:  # the history's modules: imported by the command, not by `bench --help`
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.store import RunRecord
    from caramel.errors import Location

COMMAND = "export"  # `bench export` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    out = sub.add_parser("export", help="write the history (or some runs) as JSON lines")
    out.add_argument(
        "-o", "--output", metavar="FILE", help="file to write (default: standard output)"
    )
    out.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    out.add_argument(
        "--history",
        metavar="FILE|URL",
        help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)",
    )
    out.add_argument(
        "--site",
        metavar="NAME",
        help="name this site in the export: replaces the site of the runs recorded on this host "
        "(default: what each run recorded: $CARAMEL_SITE, the SLURM cluster or the host)",
    )
    out.set_defaults(func=lambda args: export(ExportOptions.from_args(args), sys.stdout))


@dataclass(frozen=True)
class ExportOptions:
    output: str | None = None  # None: the stream the command is given
    benchmark: str | None = None
    history: str | None = None
    site: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExportOptions:
        return cls(
            output=args.output, benchmark=args.benchmark, history=args.history, site=args.site
        )


@dataclass(frozen=True)
class ImportOptions:
    file: str
    history: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ImportOptions:
        return cls(file=args.file, history=args.history)


def export(options: ExportOptions, stdout: TextIO) -> int:
    """Stream the history, one run a line, into the file (written whole or not at all) or
    `stdout`."""
    from caramel.cli.outputs import refuse_inputs
    from caramel.consumers.history.store import History
    from caramel.fs.writes import replacing

    if options.output:
        refuse_inputs(options.output, history=options.history)
    here, site = socket.gethostname(), options.site or ""

    with History.open(options.history) as history:
        imported = history.imported() if options.site else set()

        # imported runs keep their site, whatever host they name
        def site_of(run: RunRecord) -> str:
            return site if run.host in ("", here) and run.run_key not in imported else run.site

        with replacing(options.output) if options.output else contextlib.nullcontext(stdout) as out:
            lines = history.export_lines(options.benchmark, site_of if options.site else None)
            written = _write_lines(lines, out)
        for note in history.skipped:
            print(f"warning: {note} (bench history remove RUN drops that run)", file=sys.stderr)
    if options.output:
        print(f"{written} run(s) written to {options.output}", file=sys.stderr)
    return 0


def _write_lines(lines: Iterable[str], out: IO[str]) -> int:
    """Each line on `out`, a few runs a write (fewer system calls, memory still bounded); how many
    were written. An empty history: an empty file."""
    written, pending = 0, []
    for line in lines:
        pending.append(line + "\n")
        written += 1
        if len(pending) >= 64:
            out.write("".join(pending))
            pending.clear()
    out.write("".join(pending))  # the last runs
    return written


def import_command(options: ImportOptions, out: TextIO) -> int:
    """Read the file a line at a time, each checked (file and line in any error) and added as it is
    read, all in one transaction: a bad line anywhere leaves the history as it was."""
    from caramel.consumers.history.store import History

    with History.open(options.history) as history:
        added = history.import_records(_records(options.file))
    # a failed row's reason is no figure: counted apart, and only when the file holds any
    failed = f" and {added.failed} failed row(s)" if added.failed else ""
    out.write(
        f"{added.runs} new run(s), {added.figures} new figure(s){failed} from {options.file}\n"
    )
    return 0


def _records(path: str) -> Iterator[tuple[RunRecord, Sequence[Metric], Location]]:
    """The file's runs, one line at a time: (run, metrics, where)."""
    from caramel.consumers.history.validate import parse_line
    from caramel.errors import Location
    from caramel.stages.state import bounded

    try:
        with open(
            path, "rb", buffering=1 << 20
        ) as handle:  # lines of 200 kB: read in a few large reads
            # a line is read up to the bound, never whole: a file of one endless line cannot fill
            # the memory
            for number, raw in enumerate(
                iter(lambda: handle.readline(bounded.MAX_BYTES + 1), b""), 1
            ):
                if len(raw) > bounded.MAX_BYTES:
                    raise RunError(
                        "not a bench export: a line of more than "
                        f"{bounded.size_text(bounded.MAX_BYTES)}",
                        Location(path, number),
                        hint="bench export writes one run per line",
                    )
                parsed = parse_line(raw, Location(path, number))
                if parsed is not None:
                    yield (*parsed, Location(path, number))
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror or exc}") from None
