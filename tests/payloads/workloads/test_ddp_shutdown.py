"""caramel's trainers under torchrun, two ranks on a loaded CPU: they end with exit code 0, their process
group torn down and no thread of theirs left at interpreter exit, and nothing else on stderr but
torchrun's own notice (no `terminate called without an active exception` at shutdown)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

SRC = Path(__file__).parents[3] / "src"
TORCHRUN_NOTICE = "Setting OMP_NUM_THREADS environment variable"


AT_EXIT = "at exit: process group gone, other threads []"
# each rank runs the trainer's main() and, at interpreter exit, says what is left of the run
DRIVER = """
import atexit, os, sys, threading
import torch.distributed as dist
from caramel.payloads.workloads import {module}

def left_over():
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    line = f"at exit: process group {{'alive' if dist.is_initialized() else 'gone'}}, other threads {{others}}\\n"
    os.write(2, line.encode())  # one write: the two ranks share the pipe, and their lines must not mix

atexit.register(left_over)
{module}.main(sys.argv[1:])
"""


def run_two_ranks(module: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    driver = tmp_path / f"run_{module}.py"
    driver.write_text(DRIVER.format(module=module))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # load on a core while the ranks run
    try:
        return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                               str(driver), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=240)
    finally:
        busy.kill()
        busy.wait()


def unexpected_stderr(stderr: str) -> list[str]:
    assert stderr.count(AT_EXIT) == 2, stderr  # both ranks tore their process group down, no thread left
    return [line for line in stderr.splitlines()
            if line.strip("* ") and TORCHRUN_NOTICE not in line and line != AT_EXIT]


def test_resnet_two_ranks_end_cleanly_under_load(tmp_path: Path) -> None:
    done = run_two_ranks("resnet", ["--batch_size", "2", "--num_batches", "3",
                                                      "--num_warmup_batches", "1", "--image_size", "16",
                                                      "--width", "4"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "total images/sec:" in done.stdout and "> layout: 2 process(es) x 1 thread(s)" in done.stdout
    assert unexpected_stderr(done.stderr) == []


def test_gpt_two_ranks_accumulating_end_cleanly_under_load(tmp_path: Path) -> None:
    done = run_two_ranks("gpt", ["--num-layers", "1", "--hidden-size", "16",
                                                   "--num-attention-heads", "2", "--seq-length", "8",
                                                   "--micro-batch-size", "1", "--global-batch-size", "4",
                                                   "--train-iters", "3", "--warmup-iters", "1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "data parallel 2, gradient accumulation 2" in done.stdout and "> MFU:" in done.stdout
    assert unexpected_stderr(done.stderr) == []
