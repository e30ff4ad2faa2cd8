"""A benchmark step run by `bench` inside a charliecloud container (a busybox root filesystem)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.run_bench import bench

SPEC = """name: in_container
outpath: runs
parameterset:
  - name: p
    parameter:
      - {{name: word, _: "alpha,beta"}}
step:
  - name: inside
    use: p
    do: "{python} -m caramel.payloads.container --runtime charliecloud --image {rootfs} --bind $jube_wp_abspath:/mnt -- /bin/sh -c 'echo $word from $$(cat /etc/hostname-marker) > /mnt/out.txt' && cat out.txt"
patternset:
  - name: pat
    pattern:
      - {{name: said, type: str, _: "(\\\\w+) from busybox-rootfs"}}
analyser:
  - name: a
    use: pat
    analyse: {{step: inside, file: stdout}}
result:
  use: a
  table: {{name: t, style: csv, sort: word, column: [word, said]}}
"""


def busybox_rootfs(folder: Path) -> Path:
    for sub in ("bin", "proc", "dev", "sys", "tmp", "etc", "mnt"):
        (folder / sub).mkdir(parents=True)
    shutil.copy(shutil.which("busybox"), folder / "bin" / "busybox")
    for applet in ("sh", "cat", "echo"):
        (folder / "bin" / applet).symlink_to("busybox")
    (folder / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
    (folder / "etc" / "group").write_text("root:x:0:\n")
    (folder / "etc" / "hostname-marker").write_text("busybox-rootfs\n")  # only inside the image
    return folder


@pytest.fixture(scope="module")
def charliecloud() -> None:
    if not (shutil.which("ch-run") and shutil.which("busybox")):
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip("charliecloud-runtime and busybox-static are not installed")
        subprocess.run(["apt-get", "install", "-y", "-q", "charliecloud-runtime", "busybox-static"],
                       capture_output=True, timeout=600, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if not (shutil.which("ch-run") and shutil.which("busybox")):
            pytest.skip("apt-get could not install charliecloud-runtime and busybox-static")


def test_bench_runs_a_step_in_charliecloud(charliecloud, tmp_path: Path, env: dict[str, str]) -> None:
    rootfs = busybox_rootfs(tmp_path / "rootfs")
    (tmp_path / "b.yaml").write_text(SPEC.format(python=sys.executable, rootfs=rootfs))
    ran = bench("run", "b.yaml", cwd=tmp_path, env=env, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    shown = bench("result", "-i", "last", cwd=tmp_path, env=env)
    assert shown.stdout.strip().splitlines() == ["word,said", "alpha,alpha", "beta,beta"]
