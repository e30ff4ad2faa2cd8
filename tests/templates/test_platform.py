"""caramel's own platform.xml: JUBE's SLURM parameter interface, found without JUBE installed."""

import textwrap

from caramel.expand.plan import make_plan
from caramel.expand.substitute import substitute
from caramel.spec.loader import load_one
from caramel.spec.sources import templates_dir

BENCH = """
name: platform_user
outpath: run
parameterset:
  - name: systemParameter
    init_with: platform.xml
    parameter:
      - {name: nodes, type: int, _: 2}
      - {name: taskspernode, type: int, _: 4}
      - {name: account, _: proj42}
      - {name: queue, _: gpus}
      - {name: executable, _: python3 train.py}
      - {name: threadspertask, type: int, _: 8}
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


def plan_for(tmp_path, monkeypatch):
    monkeypatch.delenv("JUBE_INCLUDE_PATH", raising=False)
    path = tmp_path / "bench.yaml"
    path.write_text(textwrap.dedent(BENCH))
    bench = load_one(str(path))
    return bench, make_plan(bench, run_id=0)


def test_defaults_and_overrides(tmp_path, monkeypatch):
    _, plan = plan_for(tmp_path, monkeypatch)
    params = plan.workpackages[0].parameters()
    assert params["submit"] == "sbatch"
    assert params["submit_script"] == "submit.job"
    assert params["done_file"] == "ready"
    assert params["starter"] == "srun"
    assert params["tasks"] == 8  # nodes * taskspernode, evaluated after the overrides
    assert params["timelimit"] == "00:30:00"
    assert params["account_slurm"] == "#SBATCH --account=proj42"
    assert params["env"] == 'export OMP_NUM_THREADS="8"\n'


def test_job_script_rendered_from_the_substituteset(tmp_path, monkeypatch):
    bench, plan = plan_for(tmp_path, monkeypatch)
    wp = plan.workpackages[0]
    texts = wp.texts()
    sub_set = bench.substitutesets["executesub@platform.xml"]
    template = (templates_dir() / "platform" / substitute(sub_set.iofiles[0].source, texts, final=True))
    script = template.read_text()
    for sub in sub_set.subs:
        script = script.replace(sub.source, substitute(sub.dest, texts, final=True))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash -x"
    assert "#SBATCH --job-name=\"platform_user_job_0\"" in lines
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --ntasks=8" in lines
    assert "#SBATCH --cpus-per-task=8" in lines and "#SBATCH --partition=gpus" in lines
    assert "#SBATCH --account=proj42" in lines
    assert " srun  python3 train.py " in lines
    assert lines[-1] == "touch ready"
    assert "#" + "FLAG" not in script and "#NODES#" not in script
