"""`bench export [-o FILE] [DIR -i ID ...]` and `bench import FILE`: results as JSON lines, so sites
can merge their results into one history (importing a run twice adds nothing)."""

from __future__ import annotations

import argparse
import json
import socket
import sys

from caramel.errors import RunError


def register(sub: argparse._SubParsersAction) -> None:
    out = sub.add_parser("export", help="write the history (or some runs) as JSON lines")
    out.add_argument("-o", "--output", metavar="FILE", help="file to write (default: standard output)")
    out.add_argument("--benchmark", metavar="NAME", help="only runs of this benchmark")
    out.add_argument("--history", metavar="FILE|URL", help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)")
    out.add_argument("--site", metavar="NAME",
                     help="name this site in the export: replaces the site of the runs recorded on this host "
                          "(default: what each run recorded: $CARAMEL_SITE, the SLURM cluster or the host)")
    out.set_defaults(func=run_export)
    into = sub.add_parser("import", help="add runs exported by bench export to the history")
    into.add_argument("file", metavar="FILE")
    into.add_argument("--history", metavar="FILE|URL", help="history: a file or a postgresql:// URL (default $CARAMEL_HISTORY)")
    into.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    from caramel.cli.outputs import refuse_inputs
    from caramel.fs.writes import write_text
    from caramel.history.store import History

    if args.output:
        refuse_inputs(args.output, history=args.history)

    with History.open(args.history) as history:
        keys = [r.run_key for r in history.runs(args.benchmark)] if args.benchmark else None
        records = list(history.export(keys))
        for note in history.skipped:
            print(f"warning: {note} (bench history remove RUN drops that run)", file=sys.stderr)
    if args.site:
        here = socket.gethostname()
        for record in records:  # imported runs (recorded on another host) keep their site
            if record["run"].get("host") in ("", here):
                record["site"] = args.site
    lines = [json.dumps(record) + "\n" for record in records]
    if args.output:
        write_text(args.output, "".join(lines))
        print(f"{len(lines)} run(s) written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Check every line first (file and line in any error), then add the whole file in one transaction."""
    from caramel.errors import Location
    from caramel.history.store import History
    from caramel.history.validate import parse_line
    from caramel.state import bounded

    records = []
    try:
        with open(args.file, "rb") as handle:
            # a line is read up to the bound, never whole: a file of one endless line cannot fill the memory
            for number, raw in enumerate(iter(lambda: handle.readline(bounded.MAX_BYTES + 1), b""), 1):
                if len(raw) > bounded.MAX_BYTES:
                    raise RunError(f"not a bench export: a line of more than {bounded.size_text(bounded.MAX_BYTES)}",
                                   Location(args.file, number), hint="bench export writes one run per line")
                parsed = parse_line(raw, Location(args.file, number))
                if parsed is not None:
                    records.append((*parsed, Location(args.file, number)))
    except OSError as exc:
        raise RunError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    with History.open(args.history) as history:
        runs, metrics = history.import_records(records)
    print(f"{runs} new run(s), {metrics} new figure(s) from {args.file}")
    return 0
