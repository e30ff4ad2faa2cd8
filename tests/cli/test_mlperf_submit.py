"""`bench mlperf submit|check`: caramel runs whose work folders hold real LoadGen output (a trivial
system under test, tests/data/mlperf/loadgen_sut.py) written as MLCommons' submission tree, checked
as its submission checker checks it (mlcommons/inference, tools/submission/submission_checker:
constants.py's paths and required files and fields), pushed to a bare git repository and read back.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mlperf_loadgen")

from tests.run_bench import bench, isolated_env  # noqa: E402

from caramel.consumers.mlperf.check import check_tree  # noqa: E402
from caramel.consumers.mlperf.logs import LogError, loadgen_outputs, read_log  # noqa: E402
from caramel.consumers.mlperf.system import REQUIRED_FIELDS, describe  # noqa: E402
from caramel.consumers.mlperf.tree import Destination, Gathered, gather, write_tree  # noqa: E402

SUT = Path(__file__).resolve().parents[1] / "data" / "mlperf" / "loadgen_sut.py"
SCENARIOS = ("Offline", "SingleStream")  # the two the trivial SUT meets in a short test (VALID)
MODES = ("PerformanceOnly", "AccuracyOnly")
BENCHMARK = f"""
name: tiny_inference
outpath: runs
parameterset:
  - name: test
    parameter:
      - {{name: python, mode: python, _: "__import__('sys').executable"}}
      - {{name: mlperf_model, _: tiny-bert}}
      - {{name: scenario, _: "{",".join(SCENARIOS)}"}}
      - {{name: mode, _: "{",".join(MODES)}"}}
step:
  - name: infer
    use: test
    do: $python {SUT} $scenario $mode loadgen/$scenario/$mode && cat loadgen/$scenario/$mode/mlperf_log_summary.txt
patternset:
  - name: loadgen
    pattern:
      - {{name: validity, type: str, _: 'Result is : (\\w+)'}}
analyser:
  - name: analyse
    use: loadgen
    analyse: {{step: infer, file: stdout}}
result:
  use: analyse
  table: {{name: result, style: csv, column: [scenario, mode, validity]}}
"""


def loadgen(scenario: str, mode: str, out: Path) -> Path:
    subprocess.run([sys.executable, str(SUT), scenario, mode, str(out)], check=True, timeout=120)
    return out


def fabricated(tmp_path: Path) -> Gathered:
    """LoadGen's output of both modes of both scenarios in one work folder, gathered."""
    work = tmp_path / "work"
    for scenario in SCENARIOS:
        for mode in MODES:
            loadgen(scenario, mode, work / scenario / mode)
    return gather([(work, {"mlperf_model": "tiny-bert"}, "tiny_inference")])


def written(tmp_path: Path, gathered: Gathered, division: str = "open") -> Path:
    root = tmp_path / "tree"
    where = Destination(root, division, "caramel", "local")
    fingerprint = {"cpu_model": "AMD EPYC", "cpu_count": 2, "memory_gb": 24, "detected_on": "vm"}
    write_tree(gathered, where, describe(fingerprint, division, "caramel", "local", {"torch": "2"}))
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("submission")
    return written(base, fabricated(base))


def test_the_tree_has_mlcommons_layout_and_passes_the_checks(tree: Path) -> None:
    base = tree / "open" / "caramel"
    for scenario in SCENARIOS:
        # submission_checker/constants.py, PERFORMANCE_LOG_PATH / ACCURACY_LOG_PATH ("v5.1")
        results = base / "results" / "local" / "tiny-bert" / scenario
        for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt"):
            assert (results / "performance" / "run_1" / name).is_file()
            assert (results / "accuracy" / name).is_file()
        assert (results / "accuracy" / "mlperf_log_accuracy.json").is_file()
        # MEASUREMENTS_PATH "v5.1": measurements/SYSTEM/BENCHMARK/SCENARIO/{file}, a JSON named after the system
        measured = base / "measurements" / "local" / "tiny-bert" / scenario
        assert (measured / f"local_caramel_{scenario}.json").is_file()
        assert f"tiny-bert.{scenario}.min_duration = 50" in (measured / "user.conf").read_text()
    assert (base / "code" / "tiny-bert" / "README.md").is_file()  # SRC_PATH "v5.1"
    assert check_tree(tree) == []


def test_the_accuracy_log_keeps_its_hash_as_truncate_accuracy_log_does(tree: Path) -> None:
    # tools/submission/truncate_accuracy_log.py (truncate_results_dir, get_hash): the SHA-256 of the
    # whole log appended to accuracy.txt as `hash=...`; this log is under 4 KiB, so kept whole
    folder = tree / "open" / "caramel" / "results" / "local" / "tiny-bert" / "Offline" / "accuracy"
    log = (folder / "mlperf_log_accuracy.json").read_bytes()
    assert (folder / "accuracy.txt").read_text().splitlines()[-1] == f"hash={hashlib.sha256(log).hexdigest()}"


def test_the_system_description_holds_the_required_fields_and_the_fingerprint(tree: Path) -> None:
    described = json.loads((tree / "open" / "caramel" / "systems" / "local.json").read_text())
    assert set(REQUIRED_FIELDS) <= set(described)  # constants.py, SYSTEM_DESC_REQUIRED_FIELDS
    assert described["host_processor_model_name"] == "AMD EPYC" and described["host_processor_core_count"] == 2
    assert described["host_memory_capacity"] == "24 GB" and described["framework"] == "torch 2"
    assert described["status"] == "available" and described["system_type"] == "datacenter"


def test_a_malformed_tree_is_named_file_by_file(tmp_path: Path) -> None:
    root = written(tmp_path, fabricated(tmp_path))
    base = root / "open" / "caramel"
    accuracy = base / "results" / "local" / "tiny-bert" / "Offline" / "accuracy" / "mlperf_log_accuracy.json"
    accuracy.unlink()
    (base / "measurements" / "local" / "tiny-bert" / "SingleStream" / "user.conf").write_text("")
    system = base / "systems" / "local.json"
    described = json.loads(system.read_text())
    del described["cooling"]
    system.write_text(json.dumps(described))
    found = {str(problem) for problem in check_tree(root)}
    assert found == {
        f"{accuracy}: missing",
        f"{base}/measurements/local/tiny-bert/SingleStream/user.conf: empty",
        f"{system}: field cooling is missing",
    }


def test_an_invalid_performance_run_is_a_problem_with_loadgens_reason(tmp_path: Path) -> None:
    work = tmp_path / "work"
    loadgen("Server", "PerformanceOnly", work / "server")  # misses early stopping in so short a test
    root = written(tmp_path, gather([(work, {"mlperf_model": "tiny-bert"}, "tiny_inference")]))
    detail = root / "open/caramel/results/local/tiny-bert/Server/performance/run_1/mlperf_log_detail.txt"
    messages = [problem.message for problem in check_tree(root) if problem.path == detail]
    assert messages and messages[0].startswith("LoadGen's result is INVALID (")


def test_a_training_log_is_a_training_result(tmp_path: Path) -> None:
    from caramel.payloads.workloads.mlperf_log import Submission, TrainingLog

    log = TrainingLog(tmp_path / "work" / "mlperf_log.txt", 0, Submission("resnet"))
    log.start_run()
    log.evaluation(0.8, {"epoch_num": 1})
    log.stop_run(True)
    root = written(tmp_path, gather([(tmp_path / "work", {}, "mlperf_training")]))
    result = root / "open" / "caramel" / "results" / "local" / "resnet" / "result_0.txt"
    assert result.read_text() == (tmp_path / "work" / "mlperf_log.txt").read_text()
    assert check_tree(root) == []


record = st.fixed_dictionaries({"key": st.text(min_size=1, max_size=20), "value": st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))})


@settings(max_examples=60, deadline=None)
@given(records=st.lists(record, max_size=8), noise=st.lists(st.text(max_size=30), max_size=4))
def test_read_log_gives_every_marked_lines_value_by_key(tmp_path_factory, records, noise) -> None:
    path = tmp_path_factory.mktemp("log") / "mlperf_log_detail.txt"
    lines = [line for line in noise if ":::MLLOG" not in line and "\n" not in line and "\r" not in line]
    lines += [":::MLLOG " + json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected: dict = {}
    for r in records:
        expected.setdefault(r["key"], []).append(r["value"])
    assert read_log(path) == expected


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=200))
def test_a_broken_marked_line_is_an_error_naming_file_and_line(tmp_path_factory, text) -> None:
    path = tmp_path_factory.mktemp("log") / "mlperf_log_detail.txt"
    path.write_text("first line\n:::MLLOG " + text.replace("\n", " ").replace("\r", " ") + "\n", encoding="utf-8")
    try:
        read_log(path)
    except LogError as exc:
        assert str(exc).startswith(f"{path}:2: ")


def test_loadgen_outputs_read_scenario_and_mode_from_the_detail_log(tmp_path: Path) -> None:
    loadgen("SingleStream", "AccuracyOnly", tmp_path / "anywhere" / "deep")
    [found] = loadgen_outputs(tmp_path)
    assert (found.scenario, found.mode, found.folder) == ("SingleStream", "AccuracyOnly", tmp_path / "anywhere" / "deep")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
def test_submit_writes_the_tree_of_a_run_and_pushes_one_commit_per_submission(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(BENCHMARK)
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"), CARAMEL_SITE="testsite")
    ran = bench("run", "tiny.yaml", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    remote = tmp_path / "results.git"
    git("init", "--bare", "--quiet", str(remote), cwd=tmp_path)
    args = ["mlperf", "submit", "-i", "last", "--submitter", "caramel", "--division", "open",
            "--push", str(remote), "--branch", "submissions"]
    first = bench(*args, "-o", "tree", "--history", str(tmp_path / "team.db"), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "pushed " in first.stdout
    files = set(git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "submissions", cwd=tmp_path).split())
    base = "open/caramel/results/testsite/tiny-bert"
    assert {f"{base}/{s}/performance/run_1/mlperf_log_detail.txt" for s in SCENARIOS} <= files
    assert {f"{base}/{s}/accuracy/accuracy.txt" for s in SCENARIOS} <= files
    pushed = git("--git-dir", str(remote), "show", "submissions:open/caramel/systems/testsite.json", cwd=tmp_path)
    assert pushed == (tmp_path / "tree" / "open" / "caramel" / "systems" / "testsite.json").read_text()
    # a second submission (another submitter) is one more commit on top: nothing forced, nothing lost
    second = bench(*args[:5], "other", *args[6:], "-o", "tree2", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    log = git("--git-dir", str(remote), "log", "--format=%s", "submissions", cwd=tmp_path).splitlines()
    assert len(log) == 2 and "open/other" in log[0] and "open/caramel" in log[1]
    tree_now = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "submissions", cwd=tmp_path)
    assert f"{base}/Offline/accuracy/accuracy.txt" in tree_now and "open/other/systems/testsite.json" in tree_now
    # the run went to the history, as bench result adds it: with its site and fingerprint
    from caramel.consumers.history.store import History

    with History.open(str(tmp_path / "team.db")) as history:
        [recorded] = history.runs("tiny_inference")
    assert recorded.site == "testsite" and recorded.fingerprint.get("cpu_count")


@pytest.mark.slow
def test_check_names_the_missing_accuracy_log_and_exits_1(tmp_path: Path, tree: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tree, copy)
    missing = copy / "open/caramel/results/local/tiny-bert/SingleStream/accuracy/mlperf_log_accuracy.json"
    missing.unlink()
    checked = bench("mlperf", "check", str(copy), cwd=tmp_path, env=isolated_env(tmp_path))
    assert checked.returncode == 1
    assert f"{missing}: missing" in checked.stdout and "1 problem(s)" in checked.stdout


def test_submit_refuses_a_name_that_is_no_folder_name() -> None:
    from caramel.cli.mlperf import checked_name
    from caramel.errors import RunError

    with pytest.raises(RunError, match="one folder name expected"):
        checked_name("../elsewhere", "--submitter")


def test_a_broken_detail_log_in_a_run_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "work" / "x").mkdir(parents=True)
    (tmp_path / "work" / "x" / "mlperf_log_detail.txt").write_text(':::MLLOG {"key": "a"}\n:::MLLOG {oops\n')
    with pytest.raises(LogError, match=r"mlperf_log_detail.txt:2: not a JSON object after :::MLLOG"):
        gather([(tmp_path / "work", {}, "b")])


def test_an_unwritable_mllog_file_is_a_clear_error(tmp_path: Path) -> None:
    from caramel.payloads.workloads.mlperf_log import Submission, TrainingLog

    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit, match=r"--mllog-file .*file/log.txt: cannot be written"):
        TrainingLog(tmp_path / "file" / "log.txt", 0, Submission("resnet"))


@pytest.mark.slow
def test_a_tree_with_problems_is_not_pushed(tmp_path: Path) -> None:
    # a run whose accuracy test wrote no accuracy.txt: the tree lacks it, the check says so, no push
    (tmp_path / "tiny.yaml").write_text(BENCHMARK.replace("Offline,SingleStream", "Offline"))
    env = isolated_env(tmp_path, CARAMEL_SITE="testsite")
    assert bench("run", "tiny.yaml", cwd=tmp_path, env=env).returncode == 0
    for text in tmp_path.glob("runs/*/*/work/loadgen/Offline/AccuracyOnly/accuracy.txt"):
        text.unlink()
    remote = tmp_path / "results.git"
    git("init", "--bare", "--quiet", str(remote), cwd=tmp_path)
    done = bench("mlperf", "submit", "--submitter", "caramel", "--division", "open", "-o", "tree",
                 "--push", str(remote), "--no-history", cwd=tmp_path, env=env)
    assert done.returncode == 1
    missing = tmp_path / "tree/open/caramel/results/testsite/tiny-bert/Offline/accuracy/accuracy.txt"
    assert f"{missing.relative_to(tmp_path)}: missing" in done.stdout
    assert "the tree was not pushed" in done.stdout
    assert git("--git-dir", str(remote), "branch", "--list", cwd=tmp_path) == ""


def test_a_long_accuracy_log_is_cut_as_truncate_accuracy_log_cuts_it(tmp_path: Path) -> None:
    from caramel.consumers.mlperf.tree import keep_accuracy_log

    # tools/submission/truncate_accuracy_log.py, truncate_file: over VIEWABLE_SIZE (4096), the first
    # and last 4096 characters joined by "\n\n...\n\n"; get_hash: the SHA-256 of the whole file
    source = tmp_path / "mlperf_log_accuracy.json"
    text = "[" + ",\n".join(json.dumps({"seq_id": i, "qsl_idx": i, "data": "00" * 8}) for i in range(400)) + "]"
    source.write_text(text)
    (tmp_path / "kept").mkdir()
    digest = keep_accuracy_log(source, tmp_path / "kept")
    assert digest == hashlib.sha256(text.encode()).hexdigest()
    assert (tmp_path / "kept" / "mlperf_log_accuracy.json").read_text() == text[:4096] + "\n\n...\n\n" + text[-4096:]
