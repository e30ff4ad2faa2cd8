"""MAD's contract end to end (issue 21): a folder with a models.json of a real entry's shape runs as a
suite; perf.csv has a row per result, a FAILURE row for the model without a figure and madengine's
columns; a suite with an unreadable file fails it and exits non-zero; a tag only unreadable files carry
says so."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from tests.run_bench import bench, isolated_env

from caramel.cli.campaign import MADENGINE_COLUMNS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path, CARAMEL_HISTORY=str(tmp_path / "history.db"))


def git_repo(folder: Path) -> Path:
    """A local git repository standing in for a model's `url` (MAD clones it before the run)."""
    folder.mkdir()
    (folder / "train.py").write_text("print('model code')\n")
    for command in (["init", "-q"], ["add", "."], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=folder, check=True)
    return folder


def write_zoo(tmp_path: Path) -> Path:
    """Three models in MAD's shape: one writes a results CSV (`../NAME.csv`, header `model`), one prints
    `performance:` with no number, one prints a single figure."""
    repo = git_repo(tmp_path / "model_repo")
    zoo = tmp_path / "zoo"
    (zoo / "scripts" / "multi").mkdir(parents=True)
    (zoo / "scripts" / "nofig").mkdir(parents=True)
    (zoo / "scripts" / "multi" / "run.sh").write_text(
        'test -f train.py || exit 3\n'  # runs in the clone, with the scripts copied in
        'echo "args: $*"\n'
        'printf "model,performance,metric,batch_size\\nmulti_bs32,101.5,samples_per_second,32\\n'
        'multi_bs64,180.25,samples_per_second,64\\n" > ../pyt_multi.csv\n')
    (zoo / "scripts" / "nofig" / "run_nofig.sh").write_text(
        'echo "performance:  samples_per_second"\n')
    (zoo / "scripts" / "nofig" / "run_one.sh").write_text('echo "performance: 42.5 samples_per_second"\n')
    entry = {"url": str(repo), "dockerfile": "docker/pyt_huggingface", "n_gpus": "-1", "owner": "mad.support@amd.com",
             "training_precision": "fp16", "data": ""}
    models = [
        dict(entry, name="pyt_multi", scripts="scripts/multi", tags=["pyt", "fp16", "gpt2"],
             multiple_results="pyt_multi.csv", args=f"--steps 5 '$(touch {tmp_path}/pwned)'"),
        dict(entry, name="pyt_nofig", scripts="scripts/nofig/run_nofig.sh", tags=["pyt"], args="", timeout=0),
        dict(entry, name="pyt_one", scripts="scripts/nofig/run_one.sh", n_gpus="1", tags=["pyt"], args=""),
    ]
    (zoo / "models.json").write_text(json.dumps(models, indent=2))
    return zoo


def perf_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_models_json_zoo_runs_as_a_suite_and_perf_csv_has_madengine_columns(tmp_path: Path, env) -> None:
    write_zoo(tmp_path)
    listed = bench("list", "zoo", "--tag", "pyt", "--format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    by_name = {e["name"]: e for e in json.loads(listed.stdout)}
    assert sorted(by_name) == ["pyt_multi", "pyt_nofig", "pyt_one"]
    assert by_name["pyt_multi"]["tags"] == ["pyt_multi", "pyt", "fp16", "gpt2"]
    # madengine's resolve_run_timeout (container_runner_helpers.py): a timeout of 0 is its 7200
    assert by_name["pyt_nofig"]["time_limit"] == 7200 and by_name["pyt_one"]["time_limit"] == 7200
    on_path = bench("benchmarks", cwd=tmp_path, env=dict(env, CARAMEL_BENCHMARKS_PATH=str(tmp_path / "zoo")))
    assert "pyt_multi" in on_path.stdout and "gpt2" in on_path.stdout

    ran = bench("run", "--suite", "pyt", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert not (tmp_path / "pwned").exists()  # args are words handed to run.sh, never shell text
    work = tmp_path / "pyt_multi_runs" / "000000" / "000000_run" / "work"
    assert "args: --steps 5 $(touch" in (work / "stdout").read_text()
    mad_env = dict(line.split("=", 1) for line in (work / "mad.env").read_text().splitlines())
    assert mad_env["MAD_MODEL_NAME"] == "pyt_multi" and mad_env["MAD_RUNTIME_NGPUS"] == "0"  # -1: all of local's 0
    assert mad_env["MAD_OUTPUT_CSV"] == "pyt_multi.csv" and "MAD_SYSTEM_GPU_ARCHITECTURE" in mad_env

    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "failed: no figure: 'performance:  samples_per_second'" in result.stdout
    rows = perf_rows(tmp_path / "perf.csv")
    header = list(rows[0])
    assert header[:len(MADENGINE_COLUMNS)] == MADENGINE_COLUMNS and len(MADENGINE_COLUMNS) == 29
    assert header[-1] == "batch_size"  # the results CSV's further column, kept
    by_model = {r["model"]: r for r in rows}
    # madengine's update_perf_csv.py handle_multiple_results: a CSV row's model is ENTRY_MODEL
    assert set(by_model) == {"pyt_multi_multi_bs32", "pyt_multi_multi_bs64", "pyt_nofig", "pyt_one"}
    bs64 = by_model["pyt_multi_multi_bs64"]
    assert (bs64["performance"], bs64["metric"], bs64["status"], bs64["batch_size"]) == (
        "180.25", "samples_per_second", "SUCCESS", "64")
    assert bs64["training_precision"] == "fp16" and bs64["docker_file"] == "docker/pyt_huggingface"
    assert bs64["args"] == f"--steps 5 '$(touch {tmp_path}/pwned)'" and bs64["n_gpus"] == "0"
    assert bs64["tags"] == "pyt,fp16,gpt2,local" and bs64["deployment_type"] == "local"
    assert float(bs64["test_duration"]) > 0 and bs64["machine_name"]
    nofig = by_model["pyt_nofig"]
    assert nofig["status"] == "FAILURE" and nofig["performance"] == ""
    assert "has no number" in nofig["reason"]
    assert by_model["pyt_one"]["n_gpus"] == "1" and by_model["pyt_one"]["performance"] == "42.5"

    # a second campaign: relative_change against the previous run of the same model in the history
    again = bench("run", "--suite", "pyt_one", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert perf_rows(tmp_path / "perf.csv")[0]["relative_change"] == "0"


def write_suite_with_broken_files(folder: Path) -> None:
    folder.mkdir()
    (folder / "good.yaml").write_text(
        "name: good\noutpath: good_runs\nmeta: {tags: [smoke]}\n"
        "step:\n  name: run\n  do: 'echo \"performance: 3.5 examples/sec\"'\n")
    (folder / "gpt2_allgpus.yaml").write_text(  # a MAD value where caramel expects a number of devices
        "name: gpt2\noutpath: gpt2_runs\nmeta: {tags: [smoke, gpt2_allgpus], devices: \"-1\"}\n"
        "step:\n  name: run\n  do: 'echo \"performance: 1 x/s\"'\n")
    (folder / "misspelt.yaml").write_text(
        "name: misspelt\noutpath: m_runs\nmeta: {tags: [smoke], tmie_limit: 60}\n"
        "step:\n  name: run\n  do: 'echo \"performance: 1 x/s\"'\n")


@pytest.mark.slow
def test_suite_with_unreadable_files_lists_them_as_failed_and_exits_non_zero(tmp_path: Path, env) -> None:
    write_suite_with_broken_files(tmp_path / "zoo")
    listed = bench("list", "zoo", "--tag", "smoke", cwd=tmp_path, env=env)
    assert "misspelt" in listed.stdout and "cannot read" in listed.stdout
    ran = bench("run", "--suite", "smoke", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "2 could not be read: gpt2_allgpus, misspelt" in ran.stdout
    assert "devices='-1' is not a number of devices" in ran.stderr
    assert "unknown key 'tmie_limit'" in ran.stderr and "did you mean 'time_limit'" in ran.stderr
    assert (tmp_path / "good_runs" / "000000").is_dir()  # the readable member ran

    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert result.returncode == 2, result.stderr
    by_model = {r["model"]: r for r in perf_rows(tmp_path / "perf.csv")}
    assert by_model["good"]["status"] == "SUCCESS"
    assert by_model["misspelt"]["status"] == "FAILURE" and "cannot read" in by_model["misspelt"]["reason"]
    assert "tmie_limit" in by_model["misspelt"]["reason"] and by_model["misspelt"]["file"].endswith("misspelt.yaml")
    assert by_model["gpt2_allgpus"]["status"] == "FAILURE"


def test_a_tag_only_unreadable_files_carry_says_so(tmp_path: Path, env) -> None:
    write_suite_with_broken_files(tmp_path / "zoo")
    ran = bench("run", "--suite", "gpt2_allgpus", "--benchmarks", "zoo", "--tag", "local", cwd=tmp_path, env=env)
    assert ran.returncode != 0
    assert "no readable benchmark has the tag gpt2_allgpus" in ran.stderr
    assert "carries it and could not be read" in ran.stderr and "gpt2_allgpus.yaml" in ran.stderr
    assert "did you mean 'gpt2_allgpus'" not in ran.stderr
    nothing = bench("run", "--suite", "nosuchtag", "--benchmarks", "zoo", "--tag", "local", cwd=tmp_path, env=env)
    assert "no benchmark has the tag nosuchtag" in nothing.stderr and "did you mean 'nosuchtag'" not in nothing.stderr


@pytest.mark.slow
def test_results_csv_with_models_header_and_a_silent_workpackage(tmp_path: Path, env) -> None:
    """MAD's README header (`models`, spaces after the commas) reads too; a workpackage that printed
    nothing is a failed row with its reason, not a missing one."""
    (tmp_path / "b.yaml").write_text(
        "name: zoo\noutpath: runs\nmeta: {multiple_results: res.csv}\n"
        "parameterset: {name: p, parameter: {name: kind, _: 'csv,silent'}}\n"
        "step:\n  name: run\n  use: p\n  do: |\n"
        "    if [ $kind = csv ]; then printf 'models, performance, metric\\na,1.5,img/s\\n' > res.csv; fi\n")
    ran = bench("run", "b.yaml", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    result = bench("result", "runs", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "no column" not in result.stderr
    assert [c.strip() for c in result.stdout.split("\n")[3].split("|")[1:5]] == ["a", "1.5", "img/s", "done"]
    assert ("failed: no figure: the script printed no 'performance: NUMBER UNIT' line; "
            "no res.csv in the work folder") in result.stdout


@pytest.mark.slow
def test_dockerfile_runs_in_the_image_the_system_names_else_bare(tmp_path: Path, env) -> None:
    """The entry's dockerfile `docker/pyt_huggingface` runs in the system's image `pyt_huggingface`
    through its container runtime (a stand-in ch-run that records its arguments); on a system with
    no image for it the script runs bare. A model also runs by its name."""
    write_zoo(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ch-run").write_text(
        f'#!/bin/sh\necho "ch-run $*" >> {tmp_path}/ch-run.log\n'
        'while [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n')
    (bin_dir / "ch-run").chmod(0o755)
    systems = tmp_path / "systems"
    systems.mkdir()
    (systems / "boxed.yaml").write_text(
        "description: images per stack\nscheduler: local\ngpus_per_node: 4\naccelerator: amd\n"
        f"container_runtime: charliecloud\nimage_dir: {tmp_path}/images\nimages: {{pyt_huggingface: hf_rootfs}}\n")
    env = dict(env, PATH=f"{bin_dir}:{env['PATH']}")
    ran = bench("run", "--suite", "pyt_one", "--benchmarks", "zoo", "--systems", "systems", "--tag", "boxed", "-q",
                cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    logged = (tmp_path / "ch-run.log").read_text()
    assert f"{tmp_path}/images/hf_rootfs" in logged and "bash run_one.sh" in logged
    assert "-b " in logged and "pyt_one_runs/000000/000000_run" in logged  # the workpackage's folder bound
    assert bench("result", "-c", "last", cwd=tmp_path, env=env).returncode == 0
    (row,) = perf_rows(tmp_path / "perf.csv")
    assert row["docker_image"] == f"{tmp_path}/images/hf_rootfs" and row["performance"] == "42.5"
    (tmp_path / "ch-run.log").unlink()
    bare = bench("run", "pyt_one", "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert bare.returncode == 0, bare.stderr
    assert not (tmp_path / "ch-run.log").exists()


MAD_DATA = Path(__file__).parents[1] / "data" / "mad"  # MAD's own entries (its README says which)
# What MAD's scripts/megatron-lm/megatron-lm_benchmark_report.py writes for Llama-2-7B run in BF16,
# then in FP8 (its report .sh takes -p BF16|FP8 and appends to ../perf_Llama-2-7B.csv): two rows per
# run, one model name
MEGATRON_REPORT = (
    'CSV=../perf_Llama-2-7B.csv\n'
    'report() { test -s $CSV || echo "model,performance,metric" > $CSV\n'
    '  printf "Llama-2-7B,%s,tok_per_s_per_gpu\\n" "$1" >> $CSV\n'
    '  printf "Llama-2-7B,%s,TFLOPS_per_gpu\\n" "$2" >> $CSV; }\n'
    'report 3276 401.2   # BF16\nreport 4512 552.9   # FP8\n')


def mad_folder(tmp_path: Path) -> Path:
    """MAD's own entries (tests/data/mad), with stand-in scripts for the Megatron entry and the
    scripts/pytorch_train entries."""
    zoo = tmp_path / "zoo"
    shutil.copytree(MAD_DATA, zoo)
    (zoo / "scripts" / "megatron-lm").mkdir()
    (zoo / "scripts" / "megatron-lm" / "run.sh").write_text(MEGATRON_REPORT)
    (zoo / "scripts" / "pytorch_train" / "run.sh").write_text(
        'printf "model,performance,metric\\nFlux,1.25,it_per_s\\n" > ../perf_Flux.csv\n')
    return zoo


@pytest.mark.slow
def test_megatron_bf16_and_fp8_rows_stay_four_in_perf_csv_and_history(tmp_path: Path, env) -> None:
    """madengine's reporting/update_perf_csv.py `handle_multiple_results`: one perf.csv row per CSV
    row, never merged, its model ENTRY_MODEL and its metric the CSV's; so 4 rows (3276, 401.2,
    4512, 552.9) where caramel used to write 2 means (3894, 477.05). The history keeps the 4."""
    mad_folder(tmp_path)
    ran = bench("run", "--suite", "llama2", "--benchmarks", "zoo", "--tag", "local", "-q",
                cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    rows = perf_rows(tmp_path / "perf.csv")
    model = "pyt_megatron_lm_train_llama-2-7b_Llama-2-7B"
    assert [(r["model"], r["performance"], r["metric"], r["status"], r["n"]) for r in rows] == [
        (model, "3276", "tok_per_s_per_gpu", "SUCCESS", "1"),
        (model, "401.2", "TFLOPS_per_gpu", "SUCCESS", "1"),
        (model, "4512", "tok_per_s_per_gpu", "SUCCESS", "1"),
        (model, "552.9", "TFLOPS_per_gpu", "SUCCESS", "1")]
    assert rows[0]["docker_file"] == "docker/megatron_train" and rows[0]["args"] == (
        "--model_repo pyt_megatron_lm_train_llama-2-7b")

    from caramel.consumers.history.store import History

    with History.open(env["CARAMEL_HISTORY"]) as history:
        (run,) = history.runs("pyt_megatron_lm_train_llama-2-7b")
        stored = sorted((m.row["model"], m.row["model_row"], m.unit, m.samples)
                        for m in history.metrics(run.run_key))
    assert stored == [(model, "1", "TFLOPS_per_gpu", [401.2]),
                      (model, "1", "tok_per_s_per_gpu", [3276.0]),
                      (model, "2", "TFLOPS_per_gpu", [552.9]),
                      (model, "2", "tok_per_s_per_gpu", [4512.0])]


@pytest.mark.slow
def test_a_scripts_folder_entry_runs_by_its_madengine_name(tmp_path: Path, env) -> None:
    """madengine's utils/discover_models.py names scripts/pytorch_train's pyt_train_flux
    `pytorch_train/pyt_train_flux`, its dockerfile `docker/pytorch_train` (normpath of
    scripts/pytorch_train/../../docker/pytorch_train); its script: scripts/pytorch_train/run.sh."""
    mad_folder(tmp_path)
    name = "pytorch_train/pyt_train_flux"
    listed = bench("list", "zoo", "--tag", "training", "--format", "json", cwd=tmp_path, env=env)
    assert [e["name"] for e in json.loads(listed.stdout) if e["origin"] == "zoo"] == [name]
    ran = bench("run", name, "--benchmarks", "zoo", "--tag", "local", "-q", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "pytorch_train__pyt_train_flux_runs" / "000000").is_dir()
    suite = bench("run", "--suite", name, "--benchmarks", "zoo", "--tag", "local", "-q",
                  cwd=tmp_path, env=env)
    assert suite.returncode == 0, suite.stdout + suite.stderr
    assert bench("result", "-c", "last", cwd=tmp_path, env=env).returncode == 0
    (row,) = perf_rows(tmp_path / "perf.csv")
    assert (row["model"], row["performance"], row["metric"]) == (f"{name}_Flux", "1.25", "it_per_s")
    assert row["docker_file"] == "docker/pytorch_train" and row["benchmark"] == name


def test_csv_row_without_a_number_is_a_failure_row_and_models_no_model(tmp_path: Path, env) -> None:
    """update_perf_csv.py `handle_multiple_results`: a row whose performance is empty is written
    with status FAILURE beside the others; a CSV without the column `model` is refused ('missing the
    model column'), so MAD's README header `models` gives a models.json entry no figure."""
    zoo = tmp_path / "zoo"
    (zoo / "scripts" / "two").mkdir(parents=True)
    (zoo / "scripts" / "two" / "run.sh").write_text(
        'printf "model,performance,metric\\nbs32,10.5,img/s\\nbs64,,img/s\\n" > ../two.csv\n'
        'printf "models,performance,metric\\nbs32,10.5,img/s\\n" > ../readme.csv\n')
    entry = {"scripts": "scripts/two", "tags": ["t"], "n_gpus": "1"}
    models = [dict(entry, name="two", multiple_results="two.csv"),
              dict(entry, name="readme", multiple_results="readme.csv")]
    (zoo / "models.json").write_text(json.dumps(models))
    ran = bench("run", "--suite", "t", "--benchmarks", "zoo", "--tag", "local", "-q",
                cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert bench("result", "-c", "last", cwd=tmp_path, env=env).returncode == 0
    by_model = {r["model"]: r for r in perf_rows(tmp_path / "perf.csv")}
    assert set(by_model) == {"two_bs32", "two_bs64", "readme"}
    good, empty, readme = by_model["two_bs32"], by_model["two_bs64"], by_model["readme"]
    assert (good["status"], good["performance"]) == ("SUCCESS", "10.5")
    assert (empty["status"], empty["performance"]) == ("FAILURE", "")
    assert empty["reason"] == "two.csv:3: empty performance"
    assert readme["status"] == "FAILURE" and "no column model" in readme["reason"]


def test_an_entry_whose_git_clone_fails_is_a_failure_row_never_a_figure(tmp_path: Path,
                                                                         env) -> None:
    """Issue 34: the do's `set -e` held in no last do, so a failed `git clone` went on (the scripts
    folder copied into a fresh folder, the script run from it) and its figure was a SUCCESS row and
    a history entry. madengine's oracle: `execution/container_runner.py`,
    `ContainerRunner.run_container` runs `git clone URL` through `Docker.sh` (`core/console.py`,
    `Console.sh`: a non-zero exit raises RuntimeError); its `except Exception` sets
    `run_results["status"] = "FAILURE"` and writes the row to perf.csv with
    `update_perf_csv(exception_result=...)`, performance and metric empty. Offline: the url is a
    local path that does not exist."""
    write_zoo(tmp_path)
    models = json.loads((tmp_path / "zoo" / "models.json").read_text())
    missing = tmp_path / "no_such_repo"
    models.append(dict(models[2], name="pyt_noclone", url=str(missing), tags=["noclone"]))
    (tmp_path / "zoo" / "models.json").write_text(json.dumps(models, indent=2))

    ran = bench("run", "--suite", "noclone", "--benchmarks", "zoo", "--tag", "local", "-q",
                cwd=tmp_path, env=env)
    assert ran.returncode != 0, ran.stdout + ran.stderr  # a member failed
    work = tmp_path / "pyt_noclone_runs" / "000000" / "000000_run" / "work"
    assert "performance:" not in (work / "stdout").read_text()  # nothing after the clone ran
    assert not (work / "no_such_repo").exists()

    result = bench("result", "-c", "last", cwd=tmp_path, env=env)
    (row,) = perf_rows(tmp_path / "perf.csv")
    assert (row["model"], row["status"], row["performance"], row["metric"]) == (
        "pyt_noclone", "FAILURE", "", "")
    # git's exit status for a repository it cannot read, and its own words from the do's stderr
    assert "do 1 exited with 128: set -e" in row["reason"]
    assert f"stderr: fatal: repository '{missing}' does not exist" in row["reason"]
    assert "42.5" not in result.stdout
    with sqlite3.connect(tmp_path / "history.db") as db:  # no figure of the model in the history
        assert db.execute("SELECT COUNT(*) FROM metrics WHERE mean = 42.5").fetchone()[0] == 0
