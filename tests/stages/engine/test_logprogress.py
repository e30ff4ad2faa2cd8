"""A running workpackage's own progress, read from its log where the benchmark declares a progress
pattern (issue 37): iteration i/N, the last rate, an ETA; its time so far elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel.consumers.catalog import read_entry
from caramel.errors import SpecError
from caramel.resources import shipped
from caramel.stages.engine.logprogress import LogProgress
from caramel.stages.spec.loader import load_one
from caramel.stages.spec.model import BenchmarkMeta


# caramel's trainer prints Megatron-LM's iteration line (payloads/workloads/gpt.py, train: the
# format of Megatron's training_log): the line the shipped llm.yaml and gpt_smoke.yaml declare
def shipped_meta(name: str) -> BenchmarkMeta:
    """The meta block of a shipped benchmark, read as `bench benchmarks` reads it (no tags)."""
    return read_entry(next(shipped("benchmarks").glob(f"{name}.*")), "shipped").meta


GPT_LINE = (
    " iteration {i:8d}/{n:8d} | consumed samples: {s:12d} | elapsed time per iteration (s): {t}"
    " | learning rate: 1.000E-04 | global batch size:     8 | lm loss: 6.2E+00 | TFLOPs: 0.01 |\n"
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _log(folder: Path, *lines: str) -> None:
    with open(folder / "job.out", "a") as handle:
        handle.writelines(lines)


def test_iterations_rate_and_eta_of_the_shipped_llm_pattern(tmp_path: Path) -> None:
    meta = shipped_meta("llm")
    clock = Clock()
    logs = LogProgress(meta, clock=clock)
    logs.watch("000000_benchmark", str(tmp_path))
    assert logs.lines() == ["000000_benchmark: 0:00:00"]  # no log yet: the time so far
    _log(tmp_path, GPT_LINE.format(i=100, n=1500, s=800, t="0.0481"))
    clock.now += 5
    assert logs.lines() == ["000000_benchmark: 100/1500 iterations, 0.0481 s/iteration"]
    _log(tmp_path, GPT_LINE.format(i=200, n=1500, s=1600, t="0.0512"))
    clock.now += 10  # 100 iterations in 10 s: 1300 left take 130 s
    assert logs.lines() == [
        "000000_benchmark: 200/1500 iterations, 0.0512 s/iteration, ETA 0:02:10"
    ]


def test_a_log_is_read_at_most_once_a_second(tmp_path: Path) -> None:
    clock = Clock()
    logs = LogProgress(shipped_meta("llm"), clock=clock)
    logs.watch("w", str(tmp_path))
    _log(tmp_path, GPT_LINE.format(i=1, n=10, s=8, t="0.1"))
    first = logs.lines()
    _log(tmp_path, GPT_LINE.format(i=2, n=10, s=16, t="0.1"))
    clock.now += 0.5
    assert logs.lines() == first
    clock.now += 0.5
    assert logs.lines() != first


def test_without_a_pattern_the_time_so_far(tmp_path: Path) -> None:
    clock = Clock()
    logs = LogProgress(BenchmarkMeta(), clock=clock)
    logs.watch("000003_matmul", str(tmp_path))
    clock.now += 75
    assert logs.lines() == ["000003_matmul: 0:01:15"]
    logs.forget("000003_matmul")
    assert logs.lines() == []


def test_a_count_without_a_total_shows_the_iteration_and_rate(tmp_path: Path) -> None:
    meta = shipped_meta("resnet_smoke")
    (tmp_path / "train.log").write_text(
        # caramel's ResNet prints tf_cnn_benchmarks' step line (payloads/workloads/resnet.py)
        "Step\tImg/sec\ttotal_loss\n10\timages/sec: 52.1 +/- 0.0 (jitter = 0.0)\t6.900\n"
    )
    logs = LogProgress(meta, clock=Clock())
    logs.watch("w", str(tmp_path))
    assert logs.lines() == ["w: iteration 10, 52.1 images/s"]


def test_a_log_outside_the_work_folder_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.out"
    outside.write_text(GPT_LINE.format(i=5, n=10, s=40, t="0.1"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.out").symlink_to(outside)
    logs = LogProgress(shipped_meta("llm"), clock=Clock())
    assert logs.read(str(work)) is None


@pytest.mark.parametrize(
    "line, message",
    [
        ("progress: 'iteration ($jube_pat_int'", "is no regular expression"),
        ("progress: 'iteration $jube_pat_nint'", "captures nothing"),
    ],
)
def test_a_bad_progress_pattern_names_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(
        "name: b\noutpath: out\nmeta:\n  description: d\n  " + line + "\n"
        "step: {name: s, do: echo}\n"
    )
    with pytest.raises(SpecError) as raised:
        load_one(str(path))
    assert message in str(raised.value)
    assert "b.yaml" in str(raised.value.where) and raised.value.where.line > 0


@given(
    done=st.integers(min_value=0, max_value=10**7),
    total=st.integers(min_value=1, max_value=10**7),
    noise=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200),
)
def test_any_log_gives_the_last_iteration_line_or_nothing(
    tmp_path_factory: pytest.TempPathFactory, done: int, total: int, noise: str
) -> None:
    folder = tmp_path_factory.mktemp("log")
    (folder / "job.out").write_text(
        noise + "\n" + GPT_LINE.format(i=done, n=total, s=done, t="0.5") + noise
    )
    reading = LogProgress(shipped_meta("llm")).read(str(folder))
    assert reading is not None
    if "iteration" not in noise:  # noise may hold an iteration line of its own, later
        assert (reading.done, reading.total) == (done, total)


def test_quiet_or_a_pipe_shows_no_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from caramel.stages.engine.progress import Progress, RichProgress, make_progress

    assert type(make_progress(quiet=True)) is Progress
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # not a terminal
    assert type(make_progress()) is Progress
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert isinstance(make_progress(), RichProgress)
    assert type(make_progress(quiet=True)) is Progress


def test_a_waiting_job_shows_its_progress_once_its_log_has_some(tmp_path: Path) -> None:
    # `bench continue --wait`: a SLURM job writes job.out in its work folder while bench polls
    clock = Clock()
    logs = LogProgress(shipped_meta("llm"), clock=clock)
    folders = {"000000_benchmark": str(tmp_path)}
    assert logs.follow(folders) == []  # pending in the queue: no line, no made-up time
    _log(tmp_path, GPT_LINE.format(i=10, n=110, s=80, t="0.2"))
    clock.now += 60
    assert logs.follow(folders) == ["000000_benchmark: 10/110 iterations, 0.2 s/iteration"]
    _log(tmp_path, GPT_LINE.format(i=60, n=110, s=480, t="0.2"))
    clock.now += 10  # 50 iterations in 10 s: 50 left take 10 s
    assert logs.follow(folders) == [
        "000000_benchmark: 60/110 iterations, 0.2 s/iteration, ETA 0:00:10"
    ]
    assert logs.follow({}) == [] and logs.lines() == []  # ended: forgotten


def test_continue_wait_prints_the_jobs_progress_under_each_poll(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from caramel.stages.engine.follow import Pace, follow
    from caramel.stages.engine.settings import Summary

    waiting = Summary("r", 0, "llm", {"benchmark": {"wait": 1}}, waiting=[(0, "benchmark", "x")])
    done = Summary("r", 0, "llm", {"benchmark": {"done": 1}})
    polls = iter([waiting, done])
    seen: list[Summary] = []

    def logs(summary: Summary) -> list[str]:
        seen.append(summary)
        return ["000000_benchmark: 5/10 iterations"]

    follow(lambda: next(polls), Pace(fixed=1), sleep=lambda _s: None, logs=logs)
    assert "\n  000000_benchmark: 5/10 iterations\n" in capsys.readouterr().err
    assert seen == [waiting]
