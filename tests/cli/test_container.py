"""`bench container build|pull` through spython, with a stand-in `singularity` that records its command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("spython")

CONTAINERS = Path(__file__).parents[2] / "containers"
FAKE = """#!/bin/sh
if [ "$1" = "--version" ] || [ "$1" = "version" ]; then echo "apptainer version 1.3.4"; exit 0; fi
echo "$@" >> "{log}"
for last; do :; done
case "$1" in
  build) for a; do case "$a" in *.sif) touch "$a";; esac; done;;
  pull) touch "$3";;
esac
"""


def bench(*args: str, cwd: Path, path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path}
    return subprocess.run([sys.executable, "-m", "caramel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def fake_apptainer(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.log"
    script = folder / "singularity"
    script.write_text(FAKE.format(log=log))
    script.chmod(0o755)
    return log, f"{folder}:{os.environ['PATH']}"


def test_container_definitions_exist_for_pytorch_and_tensorflow() -> None:
    for name in ("pytorch.def", "pytorch_rocm.def", "tensorflow.def"):
        text = (CONTAINERS / name).read_text()
        assert "Bootstrap: docker" in text and "jpwr" in text


def test_build_runs_the_exact_command_through_spython(tmp_path: Path, fake_apptainer: tuple[Path, str]) -> None:
    log, path = fake_apptainer
    image = tmp_path / "pytorch.sif"
    built = bench("container", "build", str(CONTAINERS / "pytorch.def"), "-o", str(image), cwd=tmp_path, path=path)
    assert built.returncode == 0, built.stderr
    assert log.read_text().splitlines() == [f"build --fakeroot {image} {CONTAINERS / 'pytorch.def'}"]
    dry = bench("container", "build", str(CONTAINERS / "pytorch.def"), "-o", str(image), "--dry-run", cwd=tmp_path,
                path=path)
    assert dry.stdout.strip() == f"singularity build --fakeroot {image} {CONTAINERS / 'pytorch.def'}"


def test_pull_goes_through_spython(tmp_path: Path, fake_apptainer: tuple[Path, str]) -> None:
    log, path = fake_apptainer
    (tmp_path / "img").mkdir()
    pulled = bench("container", "pull", "docker://busybox:1.36", "-o", "img/busybox.sif", cwd=tmp_path, path=path)
    assert pulled.returncode == 0, pulled.stderr
    expected = f"pull --name {tmp_path / 'img' / 'busybox.sif'} docker://busybox:1.36"
    assert log.read_text().splitlines() == [expected]
    assert (tmp_path / "img" / "busybox.sif").exists()
    dry = bench("container", "pull", "docker://busybox:1.36", "-o", "img/busybox.sif", "--dry-run", cwd=tmp_path,
                path=path)
    assert dry.stdout.strip() == "singularity " + expected


def test_without_apptainer_the_error_says_so(tmp_path: Path) -> None:
    done = bench("container", "build", str(CONTAINERS / "pytorch.def"), cwd=tmp_path, path="/usr/bin:/bin")
    assert done.returncode == 2
    assert "neither apptainer nor singularity is installed here" in done.stderr
    assert "Traceback" not in done.stderr
