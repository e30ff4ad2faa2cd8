"""A run's fingerprint (templates/slurm/fingerprint.sh) and site."""

from __future__ import annotations

import os
import socket

from caramel.consumers.history import fingerprint


def test_parse_keeps_values_and_counts_as_numbers():
    text = "host=n1\ncpu_model=AMD EPYC 7742 64-Core\ncpu_count=128\ngpu_model=NVIDIA A100-SXM4-40GB\n" \
           "gpu_count=4\ndriver=535.54\ncuda=12.2\nrocm=\nnoise\n"
    assert fingerprint.parse(text) == {"host": "n1", "cpu_model": "AMD EPYC 7742 64-Core", "cpu_count": 128,
                                       "gpu_model": "NVIDIA A100-SXM4-40GB", "gpu_count": 4, "driver": "535.54",
                                       "cuda": "12.2"}


def test_a_local_run_is_probed_on_this_host(tmp_path):
    found = fingerprint.from_run(str(tmp_path), [])
    assert found["cpu_count"] == os.cpu_count() and found["detected_on"].endswith("(local run)")


def test_a_job_run_reads_the_probe_file_of_its_node(tmp_path):
    work = tmp_path / "000001_train" / "work"
    work.mkdir(parents=True)
    (work / "caramel_fingerprint.txt").write_text("host=x\nnode=n7\ncpu_count=64\ngpu_count=8\n")
    assert fingerprint.from_run(str(tmp_path), ["12"]) == {"host": "x", "node": "n7", "cpu_count": 64,
                                                            "gpu_count": 8, "detected_on": "job node n7"}
    (work / "caramel_fingerprint.txt").unlink()  # a JUBE-style job: no probe file, this host says so
    assert "submitting host" in fingerprint.from_run(str(tmp_path), ["12"])["detected_on"]


def test_site_name(monkeypatch):
    monkeypatch.setenv("CARAMEL_SITE", "jureca")
    assert fingerprint.site_name(["1"]) == "jureca"
    monkeypatch.delenv("CARAMEL_SITE")
    assert fingerprint.site_name([]) == socket.gethostname().split(".")[0]
    assert fingerprint.site_name(["1"], lambda jobs: "cluster-of-" + jobs[0]) == "cluster-of-1"  # the scheduler's answer
    assert fingerprint.site_name(["1"], lambda jobs: "") == socket.gethostname().split(".")[0]
