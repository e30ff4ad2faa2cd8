"""JUBE's command line where a JUBE user reaches for it (issue 37), by the real `bench`.

Every expected value comes from JUBE 2.7's own parser and its functions (jube/main.py of
FZJ-JSC/JUBE): `-i` takes several ids, `all`, `last` and negative positions
(`search_for_benchmarks`: `all_benchmarks[benchmark_id]` for a negative id, every folder for
`all`, sorted); `result -o` is `--only` (result names, `gen_subparser_conf`), `-n` the N most
recent (`benchmarks_results`), `--select/--exclude` columns by name, in the table's order, a
name in both an error (jube/result_types/genericresult.py, `create_result_data`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.e2e.tiny import TINY
from tests.run_bench import bench, isolated_env


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Runs 0, 1 and 2 of the tiny benchmark in `runs/`."""
    here = tmp_path_factory.mktemp("jube_cli")
    env = isolated_env(here, CARAMEL_HISTORY=str(here / "history.db"))
    (here / "tiny.xml").write_text(TINY)
    for _ in range(3):
        ran = bench("run", "tiny.xml", "-q", cwd=here, env=env)
        assert ran.returncode == 0, ran.stderr
    return here, env


def run_ids(here: Path, env: dict[str, str], *ids: str) -> list[int]:
    """The runs `bench status runs -i IDS` visits, in order."""
    shown = bench("status", "runs", "--format", "json", "-i", *ids, cwd=here, env=env)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line)["run"] for line in shown.stdout.splitlines()]


def test_i_takes_all_negative_positions_and_several_ids_as_jube(three_runs) -> None:
    here, env = three_runs
    assert run_ids(here, env, "all") == [0, 1, 2]
    assert run_ids(here, env, "-1") == [2]  # all_benchmarks[-1]: the highest id
    assert run_ids(here, env, "-3") == [0]
    assert run_ids(here, env, "2", "0") == [0, 2]  # found_benchmarks.sort()
    assert run_ids(here, env, "last", "-1", "1") == [1, 2]  # each once
    assert run_ids(here, env, "1") == [1]


def test_i_names_a_run_folder_after_the_ids_and_refuses_a_position_too_far(three_runs) -> None:
    here, env = three_runs
    shown = bench("status", "--format", "json", "-i", "0", "1", "runs", cwd=here, env=env)
    assert [json.loads(line)["run"] for line in shown.stdout.splitlines()] == [0, 1]
    refused = bench("status", "runs", "-i", "-4", cwd=here, env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "runs holds only 3 runs" in refused.stderr and "-3 the first" in refused.stderr


def test_result_n_shows_the_most_recent_runs(three_runs) -> None:
    here, env = three_runs
    shown = bench("result", "runs", "-i", "all", "-n", "2", "-o", "t", "--no-history", cwd=here, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("n,rate[items/s]") == 2


def test_result_r_shows_the_newest_run_first(three_runs) -> None:
    """jube/result_types/keyvaluesresult.py, `add_id_information`: -r sorts by run id, highest first."""
    here, env = three_runs
    shown = bench("result", "runs", "-i", "all", "-r", "--no-history", cwd=here, env=env)
    assert shown.returncode == 0, shown.stderr
    written = [line.split()[4] for line in shown.stderr.splitlines() if line.startswith("database d of run")]
    assert written == ["000002:", "000001:", "000000:"]


def test_result_t_keeps_the_runs_made_with_any_of_the_tags(tmp_path) -> None:
    """jube/main.py, `_benchmark_result`: a run whose tags share none with -t is left out, silently."""
    env = isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    (tmp_path / "t.xml").write_text(TINY.replace('<step name="work">', '<step name="work" tag="x|y">'))
    for tag in ("x", "y"):
        assert bench("run", "t.xml", "-q", "-t", tag, cwd=tmp_path, env=env).returncode == 0

    def tables(*tags: str) -> int:
        shown = bench("result", "runs", "-i", "all", "-o", "t", "--no-history", "-t", *tags, cwd=tmp_path, env=env)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout.count("n,rate[items/s]")

    assert (tables("y"), tables("x", "y"), tables("z")) == (1, 2, 0)


def test_result_o_is_jubes_only_and_a_file_name_there_gets_a_hint(three_runs, tmp_path) -> None:
    here, env = three_runs
    only = bench("result", "runs", "-o", "t", "--no-history", "--no-files", cwd=here, env=env)
    assert only.returncode == 0, only.stderr
    assert only.stdout == "n,rate[items/s]\n1,1.0\n2,2.0\n\n"
    assert "database d" not in only.stderr  # the database is another result: not made
    refused = bench("result", "runs", "-o", "result.csv", "--no-history", cwd=here, env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "-o NAME is JUBE's --only" in refused.stderr and "--output FILE" in refused.stderr
    assert not (here / "result.csv").exists()
    target = tmp_path / "tables.csv"
    wrote = bench("result", "runs", "-o", "t", "--output", str(target), "--no-history", cwd=here, env=env)
    assert wrote.returncode == 0 and target.read_text() == "n,rate[items/s]\n1,1.0\n2,2.0\n\n"


def test_result_select_and_exclude_take_columns_by_name(three_runs) -> None:
    here, env = three_runs

    def table(*flags: str) -> subprocess.CompletedProcess:
        return bench("result", "runs", "-o", "t", "--no-history", "--no-files", *flags, cwd=here, env=env)

    assert table("--select", "rate").stdout == "rate[items/s]\n1.0\n2.0\n\n"
    assert table("--select", "rate", "n").stdout.startswith("n,rate[items/s]\n")  # the table's order
    assert table("--exclude", "rate").stdout == "n\n1\n2\n\n"
    unknown = table("--exclude", "rte")
    assert unknown.returncode == 0 and "table 't' has no column 'rte'; ignored" in unknown.stderr
    assert "did you mean 'rate'?" in unknown.stderr
    both = table("--select", "n", "--exclude", "n")
    assert both.returncode == 2 and "n both selected and excluded" in both.stderr



def test_old_spellings_work_hidden_with_a_note(three_runs, tmp_path) -> None:
    here, env = three_runs
    listed = bench("list", "--tags", "quickstart", "--format", "json", cwd=here, env=env)
    assert listed.returncode == 0 and "note: --tags is spelt --tag in bench" in listed.stderr
    assert [b["name"] for b in json.loads(listed.stdout)] == ["quickstart"]
    helped = bench("list", "--help", cwd=here, env=env).stdout
    assert "--tag" in helped and "--tags" not in helped
    styled = bench("result", "runs", "-o", "t", "--style", "json", "--no-history", cwd=here, env=env)
    assert styled.returncode == 0 and "note: --style is spelt --format in bench" in styled.stderr
    assert json.loads(styled.stdout)["name"] == "t"
    page = tmp_path / "r.html"
    reported = bench("report", "runs", "--html", str(page), cwd=here, env=env)
    assert reported.returncode == 0 and "note: --html is spelt --output in bench" in reported.stderr
    assert "<html" in page.read_text()[:500].lower()
    missing = bench("report", "runs", cwd=here, env=env)
    assert missing.returncode == 2 and "required: -o/--output" in missing.stderr
    dry = bench("run", "tiny.xml", "--timeout", "5", "--dry-run", cwd=here, env=env)
    assert dry.returncode == 0 and "note: --timeout is spelt --wait-limit in bench" in dry.stderr
    assert "--timeout" not in bench("run", "--help", cwd=here, env=env).stdout


def test_output_lists_the_do_files_sorted_and_d_shows_them(three_runs) -> None:
    """jube/main.py, `output`: every do's stdout and stderr file of the chosen workpackages (-s
    steps, -w ids), each once, sorted; -o stdout|stderr one kind; -d each file's content after it."""
    here, env = three_runs
    run = here / "runs" / "000001"
    listed = bench("output", "runs", "-i", "1", cwd=here, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        str(run / f"00000{wp}_work" / "work" / stream) for wp in (0, 1) for stream in ("stderr", "stdout")
    ]
    shown = bench("output", "runs", "-i", "1", "-w", "1", "-o", "stdout", "-d", cwd=here, env=env)
    assert shown.stdout == f"{run / '000001_work' / 'work' / 'stdout'}\nrate 2\n\n"
    by_step = bench("output", "runs", "-i", "1", "-s", "work", "-o", "stderr", cwd=here, env=env)
    assert len(by_step.stdout.splitlines()) == 2
    wrong = bench("output", "runs", "-s", "wrk", cwd=here, env=env)
    assert wrong.returncode == 2 and "did you mean 'work'?" in wrong.stderr
    missing = bench("output", "runs", "-w", "7", cwd=here, env=env)
    assert missing.returncode == 2 and "no workpackage 7" in missing.stderr


def test_comment_sets_and_appends_as_jube(three_runs) -> None:
    """jube/main.py, `_manipulate_comment`: -a appends the text as it is; whitespace runs become one
    space (re.sub(r"\\s+", " ", ...))."""
    here, env = three_runs
    assert bench("comment", "first\n  try", "runs", "-i", "0", cwd=here, env=env).returncode == 0
    assert bench("comment", " and more", "runs", "-i", "0", "-a", cwd=here, env=env).returncode == 0
    info = json.loads(bench("info", "runs", "-i", "0", "--format", "json", cwd=here, env=env).stdout)
    assert info["comment"] == "first try and more"
    assert "comment    first try and more" in bench("info", "runs", "-i", "0", cwd=here, env=env).stdout


def test_info_s_shows_the_steps_only(three_runs) -> None:
    """jube/main.py, `info` with -s: print_step_info for each step named, not the benchmark's."""
    here, env = three_runs
    shown = bench("info", "runs", "-i", "2", "-s", "work", cwd=here, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[1] == "step work: 2 workpackages" and "benchmark" not in shown.stdout
    wrong = bench("info", "runs", "-s", "wrk", cwd=here, env=env)
    assert wrong.returncode == 2 and "did you mean 'work'?" in wrong.stderr


def test_help_version_and_verbose(three_runs) -> None:
    here, env = three_runs
    helped = bench("help", "result", cwd=here, env=env)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: bench result ")
    assert bench("help", "history", "list", cwd=here, env=env).stdout.startswith("usage: bench history list")
    assert "COMMAND" in bench("help", cwd=here, env=env).stdout
    typo = bench("help", "reslt", cwd=here, env=env)
    assert typo.returncode == 2 and "did you mean 'result'?" in typo.stderr
    version = bench("-V", cwd=here, env=env)
    assert version.returncode == 0 and version.stdout.startswith("caramel ")
    verbose = bench("-v", "status", "nowhere", cwd=here, env=env)
    assert verbose.returncode != 0 and "Traceback" in verbose.stderr


def test_run_takes_jubes_m_r_a_e_and_not_bench(three_runs, tmp_path) -> None:
    here, env = three_runs
    env = {**env, "CARAMEL_DATA_DIR": str(tmp_path / "data")}
    (tmp_path / "tiny.xml").write_text(TINY)
    ran = bench("run", "tiny.xml", "-q", "-r", "-e", "-m", "a  note", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "n,rate[items/s]\n1,1.0\n2,2.0\n" in ran.stdout  # -r: the tables once it stops
    assert "note: -e" not in ran.stderr  # -e now does what JUBE's does (the test below)
    info = json.loads(bench("info", "runs", "--format", "json", cwd=tmp_path, env=env).stdout)
    assert info["comment"] == "a note"
    went_on = bench("continue", "runs", "-a", "--hide-animation", cwd=tmp_path, env=env)
    assert went_on.returncode == 0 and "analyser a: 2 results" in went_on.stdout
    assert "--hide-animation is spelt --quiet in bench" in went_on.stderr
    skipped = bench("run", "tiny.xml", "--not-bench", "tiny", "--dry-run", cwd=tmp_path, env=env)
    assert skipped.returncode == 0 and skipped.stdout == ""


FAILING = """<jube><benchmark name="e" outpath="runs">
  <parameterset name="p"><parameter name="n" type="int">0,1,2,3</parameter></parameterset>
  <step name="s" {procs}><use>p</use>
    <do>[ $n != 0 ] || sleep 0.5; echo $n >> $jube_benchmark_home/ledger; [ $n != 1 ] &amp;&amp; [ $n != 2 ]</do>
  </step>
</benchmark></jube>"""


def run_e(tmp_path: Path, procs: str = "") -> tuple[dict[str, str], subprocess.CompletedProcess]:
    """`bench run -e` of FAILING (workpackages 1 and 2 of 0..3 fail)."""
    env = isolated_env(tmp_path)
    (tmp_path / "e.xml").write_text(FAILING.format(procs=procs))
    return env, bench("run", "e.xml", "-q", "-e", cwd=tmp_path, env=env)


def wp_states(tmp_path: Path, env: dict[str, str]) -> list[str]:
    doc = json.loads(bench("status", "runs", "--format", "json", cwd=tmp_path, env=env).stdout)
    return [wp["state"] for wp in doc["workpackages"]]


def test_e_starts_no_workpackage_after_the_first_failed_one(tmp_path: Path) -> None:
    """JUBE's -e (jube/main.py `run_new_benchmark`/`continue_benchmarks` set conf.EXIT_ON_ERROR;
    jube/workpackage.py `Workpackage.run` marks the workpackage's error, then raises, which ends
    jube/benchmark.py `Benchmark.run`'s loop over its queue: no further workpackage starts, the run
    stays continuable). Workpackage 1 fails: 2 and 3 stay open and bench exits 1; `continue -e`
    runs 2, which fails (a failure before it does not count), and stops; `continue` runs 3."""
    env, ran = run_e(tmp_path)
    ledger = tmp_path / "ledger"
    assert ran.returncode == 1, ran.stderr
    assert ledger.read_text().split() == ["0", "1"]
    assert wp_states(tmp_path, env) == ["done", "failed", "open", "open"]
    again = bench("continue", "runs", "-q", "-e", cwd=tmp_path, env=env)
    assert again.returncode == 1 and ledger.read_text().split() == ["0", "1", "2"], again.stderr
    assert wp_states(tmp_path, env) == ["done", "failed", "failed", "open"]
    went_on = bench("continue", "runs", "-q", cwd=tmp_path, env=env)
    assert went_on.returncode == 1 and ledger.read_text().split() == ["0", "1", "2", "3"]
    assert wp_states(tmp_path, env) == ["done", "failed", "failed", "done"]


def test_without_e_bench_goes_on_after_a_failed_workpackage(tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    (tmp_path / "e.xml").write_text(FAILING.format(procs=""))
    ran = bench("run", "e.xml", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 1 and (tmp_path / "ledger").read_text().split() == ["0", "1", "2", "3"]


def test_e_lets_the_workpackages_running_with_the_failed_one_finish(tmp_path: Path) -> None:
    """As JUBE's `procs`: a failure in its pool is printed and the pool's other workpackages finish
    (jube/benchmark.py `Benchmark.run`, its error_callback); what comes after starts no more. 0
    (half a second) and 1 (fails at once) start together: 0 finishes, 2 and 3 stay open."""
    env, ran = run_e(tmp_path, procs='procs="2"')
    assert ran.returncode == 1, ran.stderr
    assert wp_states(tmp_path, env) == ["done", "failed", "open", "open"]


ID_WORDS = st.sampled_from(["all", "last", "0", "1", "2", "-1", "-2", "-3", "7", "-4", "x"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ID_WORDS, min_size=1, max_size=5))
def test_any_ids_choose_runs_as_jube_or_are_refused_naming_them(three_runs, ids) -> None:
    """registry.resolve_all against jube/main.py's `search_for_benchmarks` on runs 0, 1, 2: `all`
    every run, `last` and -1 the highest id, a negative -k the k-th from the end, an id itself;
    each run once, in id order; an id or position there is no run for, or a word that is none, is
    a RunError naming it (JUBE raises OSError "Benchmark directory not found")."""
    from caramel.errors import RunError
    from caramel.stages.state.registry import resolve_all

    here, _ = three_runs
    outpath = str(here / "runs")
    runs = [0, 1, 2]
    expected: set[int] = set()
    bad = None
    for word in ids:
        if word == "all":
            expected |= set(runs)
        elif word == "last":
            expected.add(runs[-1])
        elif word.lstrip("-").isdigit() and int(word) < 0 and -int(word) <= len(runs):
            expected.add(runs[int(word)])
        elif word.isdigit() and int(word) in runs:
            expected.add(int(word))
        else:
            bad = bad or word
    if bad is not None:
        with pytest.raises(RunError) as refused:
            resolve_all(outpath, ids)
        assert bad.lstrip("-") in str(refused.value)
        return
    chosen = resolve_all(outpath, ids)
    assert [int(Path(path).name) for path in chosen] == sorted(expected)


def test_layout_takes_time_limit_and_its_old_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    from caramel.cli.main import build_parser

    parser = build_parser(["layout"])
    assert parser.parse_args(["layout", "--time-limit", "9"]).timeout == 9.0
    assert parser.parse_args(["layout", "--timeout", "7"]).timeout == 7.0
    assert "note: --timeout is spelt --time-limit in bench" in capsys.readouterr().err
