"""`bench bisect` (issue 39) with the real `bench` in tmp folders, the local backend and a tiny
benchmark whose figure is 1 % noise from a seeded RNG around 100 s, 30 % higher from the
environment SLOWDOWN_AT=11 on: 16 environments, the bad one found in at most 5 steps with each
step's verdict printed; a step that fails once is run again by the same command, which keeps the
steps done; an undecided step says what would decide. The search itself is checked against git's:
`git bisect run` over a line of 16 commits tests the same environments in the same order and
estimates the same steps (git's bisect.c, `find_bisection`/`approx_halfway`,
`estimate_bisect_steps`). docs/cli.md, `bench bisect`, describes it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.cli.bisection import (
    Kind,
    Over,
    Step,
    Verdict,
    environment,
    estimate_steps,
    next_step,
    parse_over,
    substitute,
)
from caramel.errors import RunError

# the figure: environment index i from $SLOWDOWN_AT, repeat r from the workpackage's iteration;
# 100 s (130 s from BAD_FROM on) with 1 % noise seeded by (i, r); FAIL_ONCE_AT fails its first try
SCRIPT = """import os, random, sys
index, repeat = int(os.environ["SLOWDOWN_AT"]), int(sys.argv[1])
with open(os.environ["BISECT_CALLS"], "a") as calls:
    calls.write(f"{index}\\n")
marker = os.environ["BISECT_CALLS"] + ".failed"
if str(index) == os.environ.get("FAIL_ONCE_AT") and not os.path.exists(marker):
    open(marker, "w").close()
    sys.exit("failing once")
random.seed(1000 * index + repeat)
spread = float(os.environ.get("NOISE", "0.01"))
print("value", (130 if index >= 11 else 100) * (1 + spread * random.gauss(0, 1)))
"""
YAML = """name: b
outpath: runs
step:
  name: work
  do: python3 {script} $jube_wp_iteration
patternset: {{name: p, pattern: {{name: value, type: float, unit: s, _: "value $jube_pat_fp"}}}}
analyser: {{name: a, use: p, analyse: {{step: work, file: stdout}}}}
result: {{use: a, table: {{name: t, style: csv, column: [value]}}}}
"""
SIXTEEN = [str(i) for i in range(16)]
# a 5 % band: 1 % noise decides a 30 % step and a no-change in 3 or 4 repeats
BISECT = ["bisect", "b.yaml", "--over", "env:SLOWDOWN_AT", *SIXTEEN, "--threshold", "5"]
STEP_LINE = re.compile(
    r"^step \[(\d+)\] SLOWDOWN_AT=\d+: n (\d+), .*: (reference|regressed|not regressed)"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "figure.py"
    script.write_text(SCRIPT)
    (tmp_path / "b.yaml").write_text(YAML.format(script=script))
    return isolated_env(
        tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"), BISECT_CALLS=str(tmp_path / "calls")
    )


def steps_of(stdout: str) -> list[tuple[int, str]]:
    """(environment, verdict) of each step line, in the order printed (kept ones included)."""
    return [(int(m[1]), m[3]) for line in stdout.splitlines() if (m := STEP_LINE.match(line))]


def calls(tmp_path: Path) -> list[int]:
    return [int(line) for line in (tmp_path / "calls").read_text().split()]


@pytest.mark.slow
def test_sixteen_environments_find_the_bad_one_in_five_steps(tmp_path: Path, env: dict) -> None:
    done = bench(*BISECT, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    # the first (good), the last (bad: checked first), then halfway each time: 7, 11, 9, 10
    assert steps_of(done.stdout)[:6] == [
        (0, "reference"),
        (15, "regressed"),
        (7, "not regressed"),
        (11, "regressed"),
        (9, "not regressed"),
        (10, "not regressed"),
    ]
    assert "first bad: [11] SLOWDOWN_AT=11" in done.stdout
    assert "last good: [10] SLOWDOWN_AT=10" in done.stdout
    assert "found in 5 step(s) after the first environment's run" in done.stdout
    # every step's evidence: n, the mean with its interval, the ratio with its interval
    line = next(x for x in done.stdout.splitlines() if x.startswith("step [11]"))
    assert re.search(r"n \d+, mean 1[23]\d\.?\d* \[[\d.]+, [\d.]+\], ratio 1\.[23]\d* \[", line)
    from caramel.consumers.history.store import History

    with History.open(env["CARAMEL_HISTORY"]) as history:
        assert len(history.runs("b")) == 6  # each step's run, as bench result adds it
    again = bench(*BISECT, cwd=tmp_path, env=env)  # all done: the answer again, nothing run
    assert again.returncode == 0 and "first bad: [11]" in again.stdout
    assert "running" not in again.stdout
    repeats = [int(m[2]) for m in map(STEP_LINE.match, done.stdout.splitlines()) if m][:6]
    assert sorted(set(calls(tmp_path))) == [0, 7, 9, 10, 11, 15]
    assert len(calls(tmp_path)) == sum(repeats)  # one do per repeat, none by the second call


@pytest.mark.slow
def test_a_failed_step_runs_again_and_the_steps_done_are_kept(tmp_path: Path, env: dict) -> None:
    env = dict(env, FAIL_ONCE_AT="7")
    first = bench(*BISECT, cwd=tmp_path, env=env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "step [7] SLOWDOWN_AT=7: n 0" in first.stdout and ": failed" in first.stdout
    assert "failing once" in first.stdout
    before = calls(tmp_path)
    assert sorted(set(before)) == [0, 7, 15]
    state = json.loads(next((tmp_path / "runs" / "bisect").glob("b-*.json")).read_text())
    assert [(s["index"], s["verdict"]) for s in state["steps"]] == [
        (0, "reference"),
        (7, "failed"),
        (15, "regressed"),
    ]
    # --continue, from another folder: the state names the file and the outpath
    resumed = bench(
        "bisect", "--continue", "-o", str(tmp_path / "runs"), cwd=tmp_path / "runs", env=env
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert re.search(
        r"step \[0\] SLOWDOWN_AT=0: n \d+, .*reference \(kept from an earlier call\)",
        resumed.stdout,
    )
    assert "running [0]" not in resumed.stdout
    assert "running [15]" not in resumed.stdout
    assert "first bad: [11] SLOWDOWN_AT=11" in resumed.stdout
    after = calls(tmp_path)[len(before) :]
    assert sorted(set(after)) == [7, 9, 10, 11]  # 0 and 15 not run again


@pytest.mark.slow
def test_a_bisection_stopped_by_sigterm_goes_on_without_redoing_steps(
    tmp_path: Path, env: dict
) -> None:
    command = [sys.executable, "-m", "caramel", *BISECT]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            kept = list((tmp_path / "runs" / "bisect").glob("b-*.json"))
            if kept and len(json.loads(kept[0].read_text() or "{}").get("steps", [])) >= 2:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)  # after 2 steps, in the third
        stopped, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stopped
    before = calls(tmp_path)
    resumed = bench(*BISECT, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "running [0]" not in resumed.stdout and "running [15]" not in resumed.stdout
    assert "first bad: [11] SLOWDOWN_AT=11" in resumed.stdout
    assert {0, 15}.isdisjoint(calls(tmp_path)[len(before) :])


@pytest.mark.slow
def test_an_undecided_step_says_what_would_decide(tmp_path: Path, env: dict) -> None:
    # 30 % noise, 3 repeats at most: no interval of the ratio fits inside or outside a 2 % band
    env = dict(env, NOISE="0.3")
    done = bench(
        "bisect",
        "b.yaml",
        "--over",
        "env:SLOWDOWN_AT",
        "0",
        "3",
        "--repeat-max",
        "3",
        "--repeat-target",
        "50",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step [1] SLOWDOWN_AT=3: n 3," in done.stdout and ": undecided" in done.stdout
    assert "undecided after 3 repeats (at most 3); --repeat-max " in done.stdout
    again = bench(
        "bisect",
        "b.yaml",
        "--over",
        "env:SLOWDOWN_AT",
        "0",
        "3",
        "--repeat-max",
        "3",
        "--repeat-target",
        "50",
        cwd=tmp_path,
        env=env,
    )
    assert again.returncode == 1 and "running" not in again.stdout  # nothing more to learn


# a container image per environment, as charliecloud names them; the do reads the image parameter
IMAGES_YAML = """name: images
outpath: runs
parameterset: {{name: p, parameter: {{name: container_image, _: none}}}}
step:
  name: work
  use: p
  do: python3 -c "import random, sys; i = sys.argv[1]; random.seed(i + '$jube_wp_iteration'); print('value', (130 if i >= 'img-03' else 100) * (1 + 0.01 * random.gauss(0, 1)))" ${{container_image}}
patternset: {{name: q, pattern: {{name: value, type: float, unit: s, _: "value $jube_pat_fp"}}}}
analyser: {{name: a, use: q, analyse: {{step: work, file: stdout}}}}
result: {{use: a, table: {{name: t, style: csv, column: [value]}}}}
"""


@pytest.mark.slow
def test_images_are_bisected_through_the_image_parameter(tmp_path: Path, env: dict) -> None:
    (tmp_path / "images.yaml").write_text(IMAGES_YAML.format())
    images = [f"img-{i:02d}" for i in range(5)]
    done = bench(
        "bisect",
        "images.yaml",
        "--over",
        "image",
        *images,
        "--threshold",
        "5",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first bad: [3] container_image=img-03" in done.stdout
    assert "last good: [2] container_image=img-02" in done.stdout


def bisected(count: int, bad_from: int) -> list[tuple[int, int, int]]:
    """(environment tried, left after it, roughly steps) of each bisection step after the last
    was found bad, as `bench bisect` goes."""
    steps = {
        0: Step(0, "0", verdict=Verdict.GOOD),
        count - 1: Step(count - 1, "", verdict=Verdict.REGRESSED),
    }
    tried = []
    while (bounds := next_step(steps, count)).next is not None:
        index = bounds.next
        assert bounds.bad is not None
        tried.append((index, bounds.bad - index - 1, estimate_steps(bounds.bad - bounds.good)))
        steps[index] = Step(
            index, "", verdict=Verdict.REGRESSED if index >= bad_from else Verdict.NOT_REGRESSED
        )
    assert next_step(steps, count).bad == bad_from
    return tried


def git(repo: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        LC_ALL="C",
    )
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout


def line_of_commits(repo: Path, count: int) -> list[str]:
    git(repo, "init", "-q")
    for i in range(count):
        git(repo, "commit", "-q", "--allow-empty", "-m", str(i))
    return git(repo, "rev-list", "--reverse", "HEAD").split()


@pytest.mark.slow
@pytest.mark.parametrize("count", [16, 9])
def test_the_environments_tried_are_git_bisects(tmp_path: Path, count: int) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    commits = line_of_commits(repo, count)
    for bad_from in range(1, count):
        if bad_from > 1:
            git(repo, "bisect", "reset")
        started = git(repo, "bisect", "start", commits[-1], commits[0])
        ran = git(
            repo, "bisect", "run", "sh", "-c", f'test "$(git log -1 --format=%s)" -lt {bad_from}'
        )
        said = re.findall(
            r"(\d+) revisions? left to test after this \(roughly (\d+) steps?\)\n\[\w+\] (\d+)",
            started + ran,
        )
        by_git = [(int(subject), int(left), int(steps)) for left, steps, subject in said]
        assert bisected(count, bad_from) == by_git, bad_from
        assert f"{commits[bad_from]} is the first bad commit" in ran


def test_over_parses_each_kind_and_refuses_bad_lists(tmp_path: Path) -> None:
    assert parse_over(["env:X", "a", "b"]) == Over(Kind.ENV, "X", ("a", "b"))
    assert parse_over(["image", "a.sif", "b.sif"]).name == "container_image"
    assert parse_over(["module", "cuda/12.1", "cuda/12.4"]).name == "system_modules"
    # the state keeps --over as it spells it: read again, the same list
    for words in (["image", "a"], ["image:own", "a"], ["module", "m/1"], ["param:p", "1"]):
        over = parse_over([*words, "z"])
        assert over.spelled() == words[0]
        assert parse_over([over.spelled(), *over.values]) == over
    for words, said in (
        (["env:X", "a"], "1 value(s)"),
        (["env", "a", "b"], "expected env:NAME"),
        (["image", "a", "b", "a"], "values given twice: a"),
        (["imgae", "a", "b"], "unknown kind 'imgae'"),
        (["commit:" + str(tmp_path), "a", "b"], "git rev-parse"),
    ):
        with pytest.raises(RunError, match=re.escape(said)):
            parse_over(words)


def test_commits_of_a_range_are_the_line_from_good_to_bad(tmp_path: Path) -> None:
    commits = line_of_commits(tmp_path, 5)
    over = parse_over([f"commit:{tmp_path}", f"{commits[0][:8]}..{commits[4]}"])
    assert over.values == tuple(commits)
    with environment(over, commits[2]):
        assert os.environ["CARAMEL_COMMIT"] == commits[2]
        assert os.environ["CARAMEL_COMMIT_REPO"] == str(tmp_path)
    assert "CARAMEL_COMMIT" not in os.environ


def test_an_image_or_module_is_set_in_the_benchmark(tmp_path: Path) -> None:
    from caramel.stages.spec import model as m

    system = m.Parameterset("system", [m.Parameter("system_modules", "gcc/12,cuda/12.1,nccl")])
    own = m.Parameterset("own", [m.Parameter("container_image", "old.sif")])
    bench = m.Benchmark("b", "runs", file="b.yaml", parametersets={"system": system, "own": own})
    image = substitute(bench, parse_over(["image", "a.sif", "b$.sif"]), "b$.sif")
    assert image.parametersets["own"].parameters[0].value == "b$$.sif"  # a $ is no parameter
    module = substitute(bench, parse_over(["module", "cuda/12.1", "cuda/12.4"]), "cuda/12.4")
    assert module.parametersets["system"].parameters[0].value == "gcc/12,nccl,cuda/12.4"
    with pytest.raises(RunError, match="b.yaml: no parameter 'tag' for --over param"):
        substitute(bench, parse_over(["param:tag", "1", "2"]), "1")
