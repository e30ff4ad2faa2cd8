"""MAD's contract end to end (issue 21): a folder with a models.json of a real entry's shape runs as a
suite; perf.csv has a row per result, a FAILURE row for the model without a figure and madengine's
columns; a suite with an unreadable file fails it and exits non-zero; a tag only unreadable files carry
says so."""

from __future__ import annotations

import csv
import json
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
    listed = bench("list", "zoo", "--tags", "pyt", "--format", "json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    by_name = {e["name"]: e for e in json.loads(listed.stdout)}
    assert sorted(by_name) == ["pyt_multi", "pyt_nofig", "pyt_one"]
    assert by_name["pyt_multi"]["tags"] == ["pyt_multi", "pyt", "fp16", "gpt2"]
    assert by_name["pyt_nofig"]["time_limit"] == 0 and by_name["pyt_one"]["time_limit"] == 7200
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
    assert set(by_model) == {"multi_bs32", "multi_bs64", "pyt_nofig", "pyt_one"}
    bs64 = by_model["multi_bs64"]
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
    listed = bench("list", "zoo", "--tags", "smoke", cwd=tmp_path, env=env)
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
