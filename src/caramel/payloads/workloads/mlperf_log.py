"""MLPerf training logs: the `:::MLLOG` lines of a run to a target quality, written through
MLCommons' own logger (mlperf_logging.mllog), so that its compliance checker reads them.

A run is what MLPerf times: init_start .. init_stop (model built, data made), run_start, epochs or
blocks of training each followed by an evaluation, run_stop with status `success` once the evaluated
quality reached the target (`aborted` when the run gave up first). Time to train is run_stop's
timestamp minus run_start's, as mlperf_logging's result summarizer computes its score
(result_summarizer.py, _query_mlperf_strong_scaling_score), here in seconds. Only rank 0 writes.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlperf_logging import mllog
from mlperf_logging.mllog import constants

DIVISIONS = ("closed", "open")


@dataclass(frozen=True)
class Submission:
    """Who submits what: the `submission_*` lines every MLPerf training log opens with."""

    benchmark: str
    division: str = "open"
    org: str = "caramel"
    platform: str = "local"

    def __post_init__(self) -> None:
        if self.division not in DIVISIONS:
            raise SystemExit(f"--mlperf-division {self.division}: expected closed or open")


def add_arguments(parser: argparse.ArgumentParser, benchmark: str) -> None:
    """The trainers' flags for an MLPerf log (the benchmark name defaults to the MLPerf one the
    trainer stands in for)."""
    parser.add_argument(
        "--mllog-file",
        type=Path,
        default=None,
        help="write MLPerf's :::MLLOG lines of a run to a target here",
    )
    parser.add_argument("--mlperf-benchmark", default=benchmark, help="submission_benchmark")
    parser.add_argument("--mlperf-division", default="open", help="closed or open")
    parser.add_argument("--mlperf-org", default="caramel", help="submission_org")
    parser.add_argument("--mlperf-platform", default="local", help="submission_platform")


def submission(args: argparse.Namespace) -> Submission:
    return Submission(
        args.mlperf_benchmark, args.mlperf_division, args.mlperf_org, args.mlperf_platform
    )


def now_ms() -> float:
    return float(round(time.time() * 1000.0))  # whole milliseconds, as mllog stamps its lines


class TrainingLog:
    """One run's MLPerf log; a no-op without a file or on ranks other than 0."""

    def __init__(self, path: Path | None, rank: int, entry: Submission) -> None:
        self.logger = None
        self.run_start_ms = 0.0
        if path is None or rank != 0:
            return
        # a logger of its own with only the file: the trainer's stdout stays its own log lines
        sink = logging.getLogger(f"caramel.mllog.{path}")
        sink.propagate = False
        sink.setLevel(logging.INFO)
        sink.handlers.clear()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            sink.addHandler(logging.FileHandler(path, mode="w"))
        except OSError as exc:
            raise SystemExit(f"--mllog-file {path}: cannot be written ({exc.strerror})") from None
        mllog.config(logger=sink)
        self.logger = mllog.get_mllogger()
        self.event(constants.CACHE_CLEAR, True)
        self.logger.start(key=constants.INIT_START, value=None)
        self.event(constants.SUBMISSION_BENCHMARK, entry.benchmark)
        self.event(constants.SUBMISSION_DIVISION, entry.division)
        self.event(constants.SUBMISSION_ORG, entry.org)
        self.event(constants.SUBMISSION_PLATFORM, entry.platform)
        self.event(constants.SUBMISSION_STATUS, "onprem")

    def event(self, key: str, value: Any, metadata: dict[str, Any] | None = None) -> None:
        if self.logger is not None:
            self.logger.event(key=key, value=value, metadata=metadata)

    def hyperparameters(self, values: dict[str, Any]) -> None:
        """One event per hyperparameter (global_batch_size, opt_base_learning_rate, ...)."""
        for key, value in values.items():
            self.event(key, value)

    def start_run(self) -> None:
        """init_stop then run_start, at the same instant: the clock of time to train starts here."""
        self.run_start_ms = now_ms()
        if self.logger is not None:
            self.logger.end(key=constants.INIT_STOP, value=None, time_ms=self.run_start_ms)
            self.logger.start(key=constants.RUN_START, value=None, time_ms=self.run_start_ms)

    def start(self, key: str, metadata: dict[str, Any]) -> None:
        if self.logger is not None:
            self.logger.start(key=key, value=None, metadata=metadata)

    def end(self, key: str, metadata: dict[str, Any]) -> None:
        if self.logger is not None:
            self.logger.end(key=key, value=None, metadata=metadata)

    def evaluation(self, quality: float, metadata: dict[str, Any]) -> None:
        """eval_start, the evaluated quality (eval_accuracy: accuracy, or a loss where the benchmark
        targets one, as MLPerf's GPT-3 does), eval_stop."""
        self.start(constants.EVAL_START, metadata)
        self.event(constants.EVAL_ACCURACY, quality, metadata)
        self.end(constants.EVAL_STOP, metadata)

    def stop_run(self, reached: bool) -> float:
        """run_stop with its status; returns time to train in seconds (run_stop - run_start)."""
        stop_ms = now_ms()
        status = constants.SUCCESS if reached else constants.ABORTED
        if self.logger is not None:
            self.logger.end(
                key=constants.RUN_STOP, value=None, metadata={"status": status}, time_ms=stop_ms
            )
            for handler in self.logger.logger.handlers:
                handler.close()  # the log is complete: flushed and its file closed
        return (stop_ms - self.run_start_ms) / 1000.0


def time_to_train_line(seconds: float, reached: bool, quality: float, target: str) -> str:
    """What the trainer prints for the benchmark file's patterns: time to train only for a run
    that reached its target (MLPerf counts no other)."""
    if reached:
        return f"> time to train: {seconds:.3f} s (reached {target}: {quality:.4f})"
    return f"> target not reached: {quality:.4f} after {seconds:.3f} s ({target})"
