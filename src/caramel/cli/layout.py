"""`bench layout [--measure]`: the CPU layout caramel's trainers take on this node, and why; measure it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from caramel.errors import CaramelError

WORKLOADS = ("gpt", "resnet")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("layout", help="the CPU layout (processes x threads) of caramel's trainers here, and "
                                           "why; --measure: time the candidates and keep the node's favourite")
    parser.add_argument("--measure", action="store_true",
                        help="run the trainer in every candidate layout (interleaved repeats) and store the winner "
                             "in caramel's data folder (about a minute on a quiet 2-core node)")
    parser.add_argument("--workload", choices=[*WORKLOADS, "all"], default=None,
                        help="the trainer (default: all; with --measure: gpt)")
    parser.add_argument("--iters", type=int, default=30, metavar="N", help="timed iterations a run (--measure)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N", help="runs of each candidate (--measure)")
    parser.add_argument("--layouts", default="", metavar="PxT,...",
                        help="the candidates (--measure; default: 1x1, 1xN, Nx1 and the rule's for N usable cores)")
    parser.add_argument("--shape", default="", metavar="ARGS",
                        help="the trainer's shape arguments (--measure; default: the shipped benchmark file's)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="a run longer than this drops its candidate (--measure)")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class LayoutOptions:
    measure: bool = False
    workloads: tuple[str, ...] = WORKLOADS
    iterations: int = 30
    repeats: int = 3
    layouts: str = ""
    shape: str = ""
    timeout_s: float = 300.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LayoutOptions:
        if args.iters < 1 or args.repeats < 1:
            raise CaramelError(f"--iters {args.iters} --repeats {args.repeats}: both must be at least 1")
        workload = args.workload or ("gpt" if args.measure else "all")
        workloads = WORKLOADS if workload == "all" else (workload,)
        return cls(args.measure, workloads, args.iters, args.repeats, args.layouts, args.shape, args.timeout)


def run(args: argparse.Namespace) -> int:
    return layout_command(LayoutOptions.from_args(args), sys.stdout)


def layout_command(options: LayoutOptions, out: TextIO) -> int:
    from caramel.payloads.workloads import layout
    if options.measure:
        for workload in options.workloads:
            measure(options, workload, out)
        layout.layout_choice.cache_clear()
    show(options.workloads, out)
    return 0


def measure(options: LayoutOptions, workload: str, out: TextIO) -> None:
    from caramel.payloads.workloads import layout, layout_probe, layout_store
    try:
        candidates = (tuple(layout.parse_layout(t) for t in options.layouts.split(",") if t.strip())
                      or layout_probe.candidate_layouts())
    except ValueError as exc:
        raise CaramelError(f"--layouts {options.layouts!r}: {exc}") from None
    plan = layout_probe.ProbePlan(workload, candidates, options.iterations, options.repeats, shape=options.shape,
                                  timeout_s=options.timeout_s)
    busy = layout.running_elsewhere()
    print(f"measuring {workload}: {', '.join(map(layout_probe.name_of, candidates))}, {options.repeats} run(s) "
          f"each of {options.iterations} timed iterations ({layout_probe.load()})", file=out, flush=True)
    if busy >= 0.5:
        print(f"warning: {busy:.0f} other task(s) running now: the figures measure this load too; measure on a "
              "quiet node", file=out)
    try:
        measurement = layout_probe.measure(plan, lambda line: print(line, file=out, flush=True))
    except layout_probe.ProbeError as exc:
        raise CaramelError(f"the layout probe failed: {exc}") from None
    path = layout_store.save(layout.store_file(), measurement)
    print(f"{workload}: {measurement.layout} wins ({measurement.summary()}); {measurement.seconds:.0f} s; "
          f"stored in {path}", file=out)


def show(workloads: tuple[str, ...], out: TextIO) -> None:
    """Each trainer's layout now and why, the rule's, and what is stored."""
    from caramel.payloads.workloads import layout, layout_store
    for workload in workloads:
        print(f"{workload}: {layout.layout_choice(workload).describe()}", file=out)
    cpus = layout.usable_cpus()
    busy = layout.running_elsewhere()
    rule = layout.cpu_layout(len(cpus), layout.numa_nodes_holding(cpus), busy)
    print(f"the rule now: {rule.processes}x{rule.threads} ({len(cpus)} usable cores, "
          f"{layout.numa_nodes_holding(cpus)} NUMA node(s), {round(busy)} busy)", file=out)
    path = layout.store_file()
    stored = layout_store.read(path)
    if not stored:
        print(f"measured: none ({path}; `bench layout --measure` measures this node)", file=out)
    here = layout_store.NodeIdentity.here(cpus)
    for m in stored:
        stale = m.matches(here)
        figures = ", ".join(f"{name} {m.median(name):.0f}" for name in m.figures)
        print(f"measured {m.workload}: {m.layout} on {m.date.isoformat()}, host {m.node.host}, CPUs {m.node.cpus}, "
              f"torch {m.node.torch or '-'}; shape {m.shape}; {m.iterations} iterations x {m.repeats} runs, "
              f"{m.seconds:.0f} s; medians {figures} {m.unit} ({path})" + (f"; not used: {stale}" if stale else ""),
              file=out)
