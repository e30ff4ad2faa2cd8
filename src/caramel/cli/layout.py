"""`bench layout [--measure]`: the CPU layout caramel's trainers take on this node, and why; measure
it."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TextIO

from caramel.cli.common import BenchmarkOptions, add_benchmark_args
from caramel.cli.spellings import add_old_spelling
from caramel.errors import CaramelError

if TYPE_CHECKING:  # the trainers' layout: imported by the command, not by `bench --help`
    from caramel.payloads.workloads.layout_store import Measurement

WORKLOADS = ("gpt", "resnet")


COMMAND = "layout"  # `bench layout` (cli/main.py finds this module by it)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "layout",
        help="the CPU layout (processes x threads) of caramel's trainers here, and "
        "why; --measure: time the candidates and keep the node's favourite",
    )
    parser.add_argument(
        "--measure",
        action="store_true",
        help="run the trainer in every candidate layout (interleaved repeats) and store the winner "
        "in caramel's data folder (about a minute on a quiet 2-core node)",
    )
    parser.add_argument(
        "--workload",
        choices=[*WORKLOADS, "all"],
        default=None,
        help="the trainer (default: all; with --measure: gpt)",
    )
    parser.add_argument(
        "--iters", type=int, default=30, metavar="N", help="timed iterations a run (--measure)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, metavar="N", help="runs of each candidate (--measure)"
    )
    parser.add_argument(
        "--layouts",
        default="",
        metavar="PxT,...",
        help="the candidates (--measure; default: 1x1, 1xN, Nx1 and the rule's for N usable cores)",
    )
    parser.add_argument(
        "--shape",
        default="",
        metavar="ARGS",
        help="the trainer's shape arguments (--measure; default: the shipped benchmark file's)",
    )
    parser.add_argument(
        "--time-limit",
        dest="timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="a run longer than this drops its candidate (--measure)",
    )
    add_old_spelling(parser, "--timeout", "--time-limit")
    add_benchmark_args(
        parser, file_optional=True
    )  # --measure FILE|NAME --tag ...: that benchmark's trainer shape
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
    benchmark: BenchmarkOptions | None = None  # --measure FILE|NAME --tag ...: its trainer's shape

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LayoutOptions:
        if args.iters < 1 or args.repeats < 1:
            raise CaramelError(
                f"--iters {args.iters} --repeats {args.repeats}: both must be at least 1"
            )
        if args.file and not args.measure:
            raise CaramelError(
                f"{args.file}: a benchmark is measured with --measure (bench layout --measure "
                f"{args.file} --tag ...)"
            )
        return cls(
            args.measure,
            _workloads(args.workload, args.measure),
            args.iters,
            args.repeats,
            args.layouts,
            args.shape,
            args.timeout,
            BenchmarkOptions.from_args(args) if args.file else None,
        )


def _workloads(workload: str | None, measure: bool) -> tuple[str, ...]:
    """--workload's trainers: all, or one (by default all, and gpt with --measure)."""
    chosen = workload or ("gpt" if measure else "all")
    return WORKLOADS if chosen == "all" else (chosen,)


def run(args: argparse.Namespace) -> int:
    return layout_command(LayoutOptions.from_args(args), sys.stdout)


def layout_command(options: LayoutOptions, out: TextIO) -> int:
    from caramel.payloads.workloads import layout

    if options.measure and options.benchmark is not None:
        workload, shape = trainer_of(options.benchmark)
        print(f"{options.benchmark.file}: caramel's {workload} trainer, shape {shape}", file=out)
        options = replace(options, workloads=(workload,), shape=options.shape or shape)
    if options.measure:
        for workload in options.workloads:
            measure(options, workload, out)
        layout.forget_choice()
    show(options.workloads, out)
    return 0


TRAINER = re.compile(r"-m caramel\.payloads\.workloads\.(gpt|resnet) (.*)")
# what the probe sets itself (iterations, batch, layout, device, data): never taken from the
# benchmark
PROBE_OPTIONS = {
    "--train-iters",
    "--warmup-iters",
    "--threads",
    "--layout-choice",
    "--global-batch-size",
    "--data-path",
    "--device",
    "--log-interval",
    "--exit-duration-in-mins",
    "--batch_size",
    "--num_batches",
    "--num_warmup_batches",
}


def trainer_of(source: BenchmarkOptions) -> tuple[str, str]:
    """(workload, shape arguments) of the first workpackage of the benchmark, planned for its tags,
    that starts one of caramel's trainers; an error where none does."""
    from caramel.cli.common import load_named
    from caramel.stages.expand.plan import make_plan

    for bench in load_named(source).benchmarks:
        for wp in make_plan(bench, max_workpackages=source.max_workpackages).workpackages:
            for value in wp.params().typed_values().values():
                found = TRAINER.search(value) if isinstance(value, str) else None
                if found:
                    return found.group(1), " ".join(shape_arguments(shlex.split(found.group(2))))
    raise CaramelError(
        f"{source.file} with tags {' '.join(source.tags) or '(none)'} starts none of caramel's "
        "trainers (caramel.payloads.workloads.gpt or .resnet)",
        hint="give the tags of its CPU run, e.g. bench layout --measure llm --tag 117M local",
    )


def shape_arguments(words: list[str]) -> list[str]:
    """The trainer's arguments less those the probe sets (each such option with its value)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.split("=")[0] in PROBE_OPTIONS:
            skip = "=" not in word
        else:
            kept.append(word)
    return kept


def measure(options: LayoutOptions, workload: str, out: TextIO) -> None:
    from caramel.payloads.workloads import layout, layout_probe, layout_store

    try:
        candidates = tuple(
            layout.parse_layout(t) for t in options.layouts.split(",") if t.strip()
        ) or layout_probe.candidate_layouts(workload=workload)
    except ValueError as exc:
        raise CaramelError(f"--layouts {options.layouts!r}: {exc}") from None
    plan = layout_probe.ProbePlan(
        workload,
        candidates,
        options.iterations,
        options.repeats,
        shape=options.shape,
        timeout_s=options.timeout_s,
    )
    busy = layout.running_elsewhere()
    print(
        f"measuring {workload}: {', '.join(map(layout_probe.name_of, candidates))}, "
        f"{options.repeats} run(s) "
        f"each of {options.iterations} timed iterations ({layout_probe.load()})",
        file=out,
        flush=True,
    )
    if busy >= 0.5:
        print(
            f"warning: {busy:.0f} other task(s) running now: "
            "the figures measure this load too; measure on a quiet node",
            file=out,
        )
    try:
        measurement = layout_probe.measure(plan, lambda line: print(line, file=out, flush=True))
    except layout_probe.ProbeError as exc:
        raise CaramelError(f"the layout probe failed: {exc}") from None
    path = layout_store.save(layout.store_file(), measurement)
    print(
        f"{workload}: {measurement.layout} wins ({measurement.summary()}); "
        f"{measurement.seconds:.0f} s; stored in {path}",
        file=out,
    )


def measure_first_use(workload: str) -> None:
    """What `bench run` does where a shipped CPU trainer has no layout stored for this node: measure
    it once, as `bench layout --measure` does, and keep it; a probe that fails leaves the rule."""
    from caramel.payloads.workloads import layout

    print(
        f"caramel: measuring the CPU layout of its {workload} trainer on this node once (about a "
        f"minute; kept in {layout.store_file()}; CARAMEL_LAYOUT_MEASURE=never skips it)",
        file=sys.stderr,
        flush=True,
    )
    try:
        measure(LayoutOptions(measure=True, workloads=(workload,)), workload, sys.stderr)
    except CaramelError as exc:
        print(f"caramel: {exc}; the rule decides the layout", file=sys.stderr)


def show(workloads: tuple[str, ...], out: TextIO) -> None:
    """Each trainer's layout now and why, the rule's, and what is stored."""
    from caramel.payloads.workloads import layout, layout_store

    for workload in workloads:
        print(f"{workload}: {layout.layout_choice(workload).describe()}", file=out)
    cpus = layout.usable_cpus()
    busy = layout.running_elsewhere()
    numa = layout.numa_nodes_holding(cpus)
    rules = ", ".join(_rule_now(w, len(cpus), numa, busy) for w in workloads)
    print(
        f"the rule now: {rules} ({len(cpus)} usable cores, {numa} NUMA node(s), "
        f"{round(busy)} busy)",
        file=out,
    )
    path = layout.store_file()
    stored = layout_store.read(path)
    if not stored:
        print(f"measured: none ({path}; `bench layout --measure` measures this node)", file=out)
    here = layout_store.NodeIdentity.here(cpus)
    for m in stored:
        print(f"{_measured_line(m, path)}{_unused(m.matches(here))}", file=out)


def _rule_now(workload: str, cpus: int, numa: int, busy: float) -> str:
    """The rule's layout of a trainer here now: `gpt 2x4`."""
    from caramel.payloads.workloads import layout

    rule = layout.cpu_layout(cpus, numa, busy, layout.RULE_RANKS[workload])
    return f"{workload} {rule.processes}x{rule.threads}"


def _measured_line(m: Measurement, path: str) -> str:
    """A stored measurement: the layout it chose, when, where, on what and its medians."""
    figures = ", ".join(f"{name} {m.median(name):.0f}" for name in m.figures)
    return (
        f"measured {m.workload}: {m.layout} on {m.date.isoformat()}, "
        f"host {m.node.host}, CPUs {m.node.cpus}, "
        f"torch {m.node.torch or '-'}; shape {m.shape}; "
        f"{m.iterations} iterations x {m.repeats} runs, "
        f"{m.seconds:.0f} s; medians {figures} {m.unit} ({path})"
    )


def _unused(stale: str) -> str:
    """Why a measurement is not used here (it was made on another node or software)."""
    return f"; not used: {stale}" if stale else ""
