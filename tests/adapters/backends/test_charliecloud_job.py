"""A step that is a SLURM job on the test cluster and runs its command in a charliecloud container
(the busybox root filesystem of tests/e2e/test_charliecloud_step.py)."""

from __future__ import annotations

import sys

from e2e.test_charliecloud_step import busybox_rootfs, charliecloud  # noqa: F401 - a fixture

from .test_slurm_cluster import bench, status

SPEC = """name: container_job
outpath: runs
parameterset:
  - name: p
    parameter: {{name: word, _: "alpha,beta"}}
step:
  - name: inside
    use: [p, system]
    submit: true
    do:
      - "{python} -m caramel.payloads.container --runtime $system_container_runtime --image {rootfs} --bind $jube_wp_abspath:/mnt -- /bin/sh -c 'echo $word from $$(cat /etc/hostname-marker) in job $$SLURM_JOB_ID > /mnt/out.txt'"
      - cat out.txt
patternset:
  - name: pat
    pattern:
      - {{name: said, _: "(\\\\w+) from busybox-rootfs"}}
      - {{name: job, type: int, _: "in job $jube_pat_int"}}
analyser:
  - name: a
    use: pat
    analyse: {{step: inside, file: job.out}}
result:
  use: a
  table: {{name: t, style: csv, sort: word, column: [word, said, job]}}
"""


def test_charliecloud_step_inside_a_slurm_job(charliecloud, env, tmp_path):  # noqa: F811
    rootfs = busybox_rootfs(tmp_path / "rootfs")
    (tmp_path / "c.yaml").write_text(SPEC.format(python=sys.executable, rootfs=rootfs))
    started = bench("run", "c.yaml", "--tag", "localcluster", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = [wp["job_id"] for wp in status(tmp_path, env).values()]
    rows = bench("result", "-i", "last", cwd=tmp_path, env=env).stdout.strip().splitlines()
    assert rows == ["word,said,job", f"alpha,alpha,{jobs[0]}", f"beta,beta,{jobs[1]}"]
