"""The layout probe (caramel.payloads.workloads.layout_probe): interleaved runs of the trainer in every
candidate layout, the best median wins; one real run of a tiny shape."""

from __future__ import annotations

import pytest

from caramel.payloads.workloads import layout_probe
from caramel.payloads.workloads.layout import Layout
from caramel.payloads.workloads.layout_probe import (
    ProbeError,
    ProbePlan,
    measure,
    name_of,
    trainer_command,
)

TINY = "--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --vocab-size 64"


def test_rounds_are_interleaved_and_the_best_median_wins() -> None:
    order: list[str] = []
    speeds = {"1x1": [10.0, 30.0, 11.0], "1x2": [20.0, 21.0, 5.0], "2x1": [12.0, 13.0, 14.0]}

    def runner(plan: ProbePlan, layout: Layout) -> float:
        order.append(name_of(layout))
        return speeds[name_of(layout)].pop(0)

    plan = ProbePlan("gpt", (Layout(1, 1), Layout(1, 2), Layout(2, 1)), iterations=1, repeats=3)
    lines: list[str] = []
    result = measure(plan, lines.append, runner)
    assert order == ["1x1", "1x2", "2x1", "1x2", "2x1", "1x1", "2x1", "1x1", "1x2"]  # each round starts elsewhere
    assert result.layout == "1x2" and result.median("1x2") == 20.0  # best median, not the best single run (30)
    assert result.repeats == 3 and result.unit == "tokens/s" and len(lines) == 3


def test_a_candidate_that_fails_or_runs_too_long_is_left_out() -> None:
    def runner(plan: ProbePlan, layout: Layout) -> float:
        if layout.threads == 2:
            raise ProbeError("1x2: longer than 1 s")
        return 5.0

    lines: list[str] = []
    result = measure(ProbePlan("gpt", (Layout(1, 1), Layout(1, 2)), repeats=2), lines.append, runner)
    assert list(result.figures) == ["1x1"] and result.figures["1x1"] == [5.0, 5.0]
    assert any("1x2: longer than 1 s: 1x2 left out" in line for line in lines)
    with pytest.raises(ProbeError, match="no candidate"):
        measure(ProbePlan("gpt", (Layout(1, 2),)), lines.append, runner)


def test_candidates_run_as_the_shipped_files_start_them() -> None:
    gpt = trainer_command(ProbePlan("gpt", ()), Layout(2, 1))
    assert gpt[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    assert gpt[gpt.index("--global-batch-size") + 1] == "8" and gpt[gpt.index("--threads") + 1] == "1"
    resnet = trainer_command(ProbePlan("resnet", ()), Layout(2, 1))
    assert resnet[resnet.index("--batch_size") + 1] == "4"  # 8 images an iteration over 2 ranks
    assert trainer_command(ProbePlan("gpt", ()), Layout(1, 2))[1:3] == ["-m", "caramel.payloads.workloads.gpt"]
    assert {Layout(1, 1), Layout(1, 4), Layout(4, 1)} <= set(layout_probe.candidate_layouts({0, 1, 2, 3}))


@pytest.mark.slow
def test_the_probe_times_the_real_trainer() -> None:
    plan = ProbePlan("gpt", (Layout(1, 1),), iterations=2, repeats=1, warmup=1, shape=TINY, timeout_s=120)
    result = measure(plan, lambda line: None)
    assert result.layout == "1x1" and result.figures["1x1"][0] > 0
    assert result.shape == TINY and result.node.torch


def test_a_hopeless_candidate_runs_no_more_rounds() -> None:
    runs: list[str] = []

    def runner(plan: ProbePlan, layout: Layout) -> float:
        runs.append(name_of(layout))
        return 300.0 if layout.threads == 2 else 12000.0

    lines: list[str] = []
    result = measure(ProbePlan("gpt", (Layout(1, 1), Layout(1, 2)), repeats=3), lines.append, runner)
    assert runs.count("1x2") == 1 and runs.count("1x1") == 3
    assert result.figures["1x2"] == [300.0] and result.layout == "1x1"  # its figure is kept
    assert any("1x2: under 1/4 of the best median so far" in line for line in lines)
    assert lines[-1].startswith("round 3 of 3") and "1x2" not in lines[-1]  # a round shows what ran in it
