"""caramel's own platform files (templates/platform/): JUBE's SLURM interface without JUBE installed.

Real benchmark files (CARAML's, among others) say `init_with="platform.xml"` and
`<use from="platform.xml">jobfiles</use>` / `executesub`. These tests load small benchmarks of that
kind through caramel with no include path set, so the shipped platform files are the ones found, and
check the defaults, the workpackage order that the platform's parameter order implies, and the job
script made from submit.job.in. The expected values were taken from JUBE 2.7.1 runs of the same
benchmarks with JUBE's own platform/slurm files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET

import pytest

from caramel.stages.engine.files import apply_substituteset
from caramel.stages.expand.plan import make_plan
from caramel.stages.expand.substitute import substitute
from caramel.stages.spec.loader import load_one
from caramel.stages.spec.sources import templates_dir

PLATFORM = templates_dir() / "platform"

# sha256 of the submit.job JUBE 2.7.1 wrote for workpackage 0 of SIZED and of DEFAULTS, with its own
# platform/slurm files: the scripts rendered here must be those very bytes.
JUBE_SIZED_SHA256 = "53fce49968b0b0dd89665874f7016dc64527ef9d95ebb5b4881b61f7b9f9458c"
JUBE_DEFAULTS_SHA256 = "26348237de58ca82f9337d9fb549ed1cddec8fe387c0e21bf08d810658acbb72"

SIZED = """\
<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="plat" outpath="run">
    <parameterset name="systemParameter" init_with="platform.xml">
      <parameter name="nodes" type="int">2</parameter>
      <parameter name="taskspernode" type="int">4</parameter>
      <parameter name="threadspertask" type="int">8</parameter>
      <parameter name="account">proj42</parameter>
      <parameter name="queue">gpus</parameter>
      <parameter name="gres">gpu:4</parameter>
      <parameter name="timelimit">01:00:00</parameter>
      <parameter name="executable">python3 train.py</parameter>
      <parameter name="args_exec">--steps $STEPS</parameter>
      <parameter name="preprocess">module load Stages</parameter>
      <parameter name="additional_job_config">#SBATCH --exclusive</parameter>
      <parameter name="STEPS" export="true">10</parameter>
    </parameterset>
    <parameterset name="executeset" init_with="platform.xml"/>
    <step name="train">
      <use>systemParameter,executeset</use>
      <use from="platform.xml">jobfiles</use>
      <use from="platform.xml">executesub</use>
      <do done_file="$done_file">$submit $submit_script</do>
    </step>
  </benchmark>
</jube>
"""

DEFAULTS = """\
<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="dflt" outpath="run">
    <parameterset name="systemParameter" init_with="platform.xml"/>
    <parameterset name="executeset" init_with="platform.xml"/>
    <step name="job">
      <use>systemParameter,executeset</use>
      <use from="platform.xml">jobfiles</use>
      <use from="platform.xml">executesub</use>
      <do done_file="$done_file">$submit $submit_script</do>
    </step>
  </benchmark>
</jube>
"""

# Lists given in another order than the platform's: the workpackages come in the platform's order.
ORDERED = """\
<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="ord" outpath="run">
    <parameterset name="systemParameter" init_with="platform.xml">
      <parameter name="queue">qa,qb</parameter>
      <parameter name="nodes">1,2</parameter>
      <parameter name="gres">g1,g2</parameter>
      <parameter name="timelimit">t1,t2</parameter>
      <parameter name="env" separator=";">$jube_wp_envstr#NODES#</parameter>
    </parameterset>
    <parameterset name="executeset" init_with="platform.xml"/>
    <step name="s">
      <use>systemParameter,executeset</use>
      <use from="platform.xml">jobfiles</use>
      <use from="platform.xml">executesub</use>
      <do>echo $queue $nodes</do>
    </step>
  </benchmark>
</jube>
"""

YAML = """\
name: platform_user
outpath: run
parameterset:
  - name: systemParameter
    init_with: platform.xml
    parameter:
      - {name: nodes, type: int, _: 2}
      - {name: taskspernode, type: int, _: 4}
      - {name: queue, _: gpus}
      - {name: executable, _: python3 train.py}
  - name: executeset
    init_with: platform.xml
step:
  name: job
  use:
    - systemParameter
    - executeset
    - {from: platform.xml, _: jobfiles}
    - {from: platform.xml, _: executesub}
  do: {done_file: $done_file, _: $submit $submit_script}
"""


@pytest.fixture
def load(tmp_path, monkeypatch):
    """Load a benchmark text with caramel's own platform files as the only ones to be found."""
    for var in ("JUBE_INCLUDE_PATH", "CARAMEL_INCLUDE_PATH", "CARAMEL_TEMPLATES"):
        monkeypatch.delenv(var, raising=False)

    def _load(text: str, name: str = "bench.xml"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        bench = load_one(str(path))
        return bench, make_plan(bench, run_id=0)

    return _load


def render(bench, wp) -> str:
    """The job script of `wp`, made as JUBE's executesub does: each sub's source (after `$`
    substitution) replaced by its dest, one after the other in the substituteset's order."""
    texts = wp.params()
    jobfiles = bench.filesets["jobfiles@platform.xml"]
    executesub = bench.substitutesets["executesub@platform.xml"]
    (entry,) = jobfiles.entries
    template = os.path.join(entry.base_dir, substitute(entry.path, texts, final=True))
    (iofile,) = executesub.iofiles
    assert os.path.basename(template) == substitute(iofile.source, texts, final=True)
    with open(template, encoding="utf-8") as handle:
        script = handle.read()
    for sub in executesub.subs:
        assert sub.mode == "text"
        script = script.replace(substitute(sub.source, texts, final=True),
                                substitute(sub.dest, texts, final=True))
    return script


def test_the_template_is_found_in_caramels_own_platform_folder(load):
    bench, _ = load(DEFAULTS)
    (entry,) = bench.filesets["jobfiles@platform.xml"].entries
    assert os.path.samefile(entry.base_dir, PLATFORM)
    assert (PLATFORM / "submit.job.in").is_file()
    assert os.access(PLATFORM / "chainJobs.sh", os.X_OK)


def test_defaults(load):
    _, plan = load(DEFAULTS)
    (wp,) = plan.workpackages
    params = wp.params().typed_values()
    expected = {
        # executeset
        "submit": "sbatch", "submit_script": "submit.job", "done_file": "ready", "error_file": "error",
        "starter": "srun", "args_starter": "", "shared_folder": "shared",
        "shared_job_info": "shared/jobid", "chainjob_script": "./chainJobs.sh",
        "chainjob_needs_submit": "false",
        # systemParameter
        "jobname": "dflt_job_0", "nodes": 1, "taskspernode": 1, "threadspertask": 1, "tasks": 1,
        "OMP_NUM_THREADS": 1, "queue": "batch", "account": "", "account_slurm": "", "gres": "NONE",
        "executable": "", "args_exec": "", "mail": "", "env": 'export OMP_NUM_THREADS="1"\n',
        "notification": "NONE", "outlogfile": "job.out", "errlogfile": "job.err",
        "timelimit": "00:30:00", "preprocess": "", "postprocess": "", "measurement": "",
        "additional_job_config": "",
    }
    assert {name: params[name] for name in expected} == expected


def test_overrides_reach_the_derived_parameters(load):
    _, plan = load(SIZED)
    params = plan.workpackages[0].params().typed_values()
    assert params["tasks"] == 8  # nodes * taskspernode, after the overrides
    assert params["OMP_NUM_THREADS"] == 8
    assert params["account_slurm"] == "#SBATCH --account=proj42"
    assert params["env"] == 'export OMP_NUM_THREADS="8"\nexport STEPS="10"\n'
    assert params["jobname"] == "plat_train_0"


def test_platform_sets_keep_jubes_parameter_and_sub_order():
    """Order is semantics: it fixes the workpackage order (and so the ids in job names) and the
    order in which the template's tokens are replaced."""
    root = ET.parse(PLATFORM / "platform.xml").getroot()

    def names(kind, name, child, attr):
        (node,) = [n for n in root.findall(kind) if n.get("name") == name]
        return [c.get(attr) for c in node.findall(child)]

    assert names("parameterset", "executeset", "parameter", "name") == [
        "submit", "submit_script", "done_file", "error_file", "starter", "args_starter",
        "shared_folder", "shared_job_info", "chainjob_script", "chainjob_needs_submit"]
    assert names("parameterset", "systemParameter", "parameter", "name") == [
        "jobname", "nodes", "taskspernode", "threadspertask", "tasks", "OMP_NUM_THREADS", "queue",
        "account", "account_slurm", "gres", "executable", "args_exec", "mail", "env",
        "notification", "outlogfile", "errlogfile", "timelimit", "preprocess", "postprocess",
        "measurement", "additional_job_config"]
    assert names("substituteset", "executesub", "sub", "source") == [
        "#ENV#", "#NOTIFY_EMAIL#", "#NOTIFICATION_TYPE#", "#BENCHNAME#", "#NODES#", "#TASKS#",
        "#NCPUS#", "#NTHREADS#", "#TIME_LIMIT#", "#PREPROCESS#", "#POSTPROCESS#",
        "#ACCOUNT_CONFIG#", "#QUEUE#", "#GRES#", "#STARTER#", "#ARGS_STARTER#", "#MEASUREMENT#",
        "#STDOUTLOGFILE#", "#STDERRLOGFILE#", "#ADDITIONAL_JOB_CONFIG#", "#EXECUTABLE#",
        "#ARGS_EXECUTABLE#", "#FLAG#", "#FLAG_ERROR#"]
    assert {s.get("name") for s in root.findall("substituteset")} == {"executesub", "chainsub"}
    assert {s.get("name") for s in root.findall("fileset")} == {"jobfiles", "chainfiles"}


def test_workpackage_order_follows_the_platforms_parameter_order(load):
    _, plan = load(ORDERED)
    got = [(wp.text("nodes"), wp.text("queue"), wp.text("gres"), wp.text("timelimit"))
           for wp in sorted(plan.workpackages, key=lambda w: w.id)]
    # JUBE 2.7.1: nodes varies slowest, then queue, gres, timelimit (the platform's order).
    assert got == [(n, q, g, t) for n in ("1", "2") for q in ("qa", "qb")
                   for g in ("g1", "g2") for t in ("t1", "t2")]


def test_tokens_are_replaced_one_after_the_other(load):
    """#ENV# is replaced first, so a later token inside the env value is filled in too (as in JUBE)."""
    bench, plan = load(ORDERED)
    wp = next(w for w in plan.workpackages if w.text("nodes") == "2")
    lines = render(bench, wp).splitlines()
    assert lines[lines.index('export OMP_NUM_THREADS="1"') + 1] == "2"


def test_job_script(load):
    bench, plan = load(SIZED)
    script = render(bench, plan.workpackages[0])
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash -x"
    assert lines[1:14] == [
        '#SBATCH --job-name="plat_train_0"',
        "#SBATCH --mail-user=",
        "#SBATCH --mail-type=NONE",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks=8",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --time=01:00:00",
        "#SBATCH --output=job.out",
        "#SBATCH --error=job.err",
        "#SBATCH --partition=gpus",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --account=proj42",
        "#SBATCH --exclusive",
    ]
    env = lines.index('export OMP_NUM_THREADS="8"')
    assert lines[env + 1] == 'export STEPS="10"'
    pre = lines.index("module load Stages")
    run = lines.index(" srun  python3 train.py --steps 10")  # measurement, starter, its args: empty
    assert 14 < env < pre < run
    # the steps before and after the run stop the job and leave the error file when they fail
    assert lines.count("    touch error") == 3
    assert lines.count("    exit $JUBE_ERR_CODE") == 3
    assert lines[-1] == "touch ready"
    assert script.endswith("touch ready\n")
    assert len(lines) == 44
    assert not re.search(r"#[A-Z_]+#", script)
    assert hashlib.sha256(script.encode()).hexdigest() == JUBE_SIZED_SHA256


def test_job_script_with_defaults(load):
    bench, plan = load(DEFAULTS)
    script = render(bench, plan.workpackages[0])
    lines = script.splitlines()
    assert '#SBATCH --job-name="dflt_job_0"' in lines
    assert "#SBATCH --partition=batch" in lines and "#SBATCH --gres=NONE" in lines
    assert "#SBATCH --time=00:30:00" in lines
    assert not any(line.startswith("#SBATCH --account") for line in lines)
    # no account, no extra config: those two template lines become empty lines
    assert lines[13:15] == ["", ""]
    assert " srun   " in lines
    assert lines[-1] == "touch ready"
    assert len(lines) == 43
    assert hashlib.sha256(script.encode()).hexdigest() == JUBE_DEFAULTS_SHA256


def test_engine_writes_the_same_job_script(load, tmp_path):
    """What `bench run` writes (fileset copy + substituteset) is the script rendered above."""
    bench, plan = load(SIZED)
    wp = plan.workpackages[0]
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(PLATFORM / "submit.job.in", work / "submit.job.in")
    apply_substituteset(bench.substitutesets["executesub@platform.xml"], wp.params(), str(work))
    assert (work / "submit.job").read_text() == render(bench, wp)


def test_yaml_benchmark(load):
    bench, plan = load(YAML, "bench.yaml")
    wp = plan.workpackages[0]
    assert wp.params().typed_values()["tasks"] == 8
    lines = render(bench, wp).splitlines()
    assert '#SBATCH --job-name="platform_user_job_0"' in lines
    assert "#SBATCH --ntasks=8" in lines and "#SBATCH --partition=gpus" in lines
    assert " srun  python3 train.py " in lines


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_chain_jobs_script(tmp_path):
    """chainJobs.sh JOBID_FILE SBATCH_ARGS...: each job depends on the one submitted before it."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text(
        '#!/bin/bash\necho "$@" >> calls.txt\necho "Submitted batch job $((100 + $(wc -l < calls.txt)))"\n')
    (fake / "sbatch").chmod(0o755)
    (tmp_path / "shared").mkdir()
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    outs = [subprocess.run([str(PLATFORM / "chainJobs.sh"), "shared/jobid", "submit.job"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout for _ in range(2)]
    assert (tmp_path / "calls.txt").read_text().splitlines() == [
        "submit.job", "--dependency=afterany:101 submit.job"]
    assert (tmp_path / "shared" / "jobid").read_text() == "102\n"
    assert outs[1].splitlines() == ["sbatch --dependency=afterany:101 submit.job",
                                    "RETURN: Submitted batch job 102"]
    bad = subprocess.run([str(PLATFORM / "chainJobs.sh"), "only-one"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1
