import os
import shutil
import subprocess

import pytest

from caramel.adapters.containers.runtime import Apptainer, Charliecloud, runtime, shell_line


def test_apptainer_line_as_caramel_systems_use_it() -> None:
    line = Apptainer(gpu_flag="--nv").command("/c/pytorch.sif", ["bash", "-c", "echo hi"], ["/work"])
    assert shell_line(line) == "apptainer exec --bind=/work --nv /c/pytorch.sif bash -c 'echo hi'"


def test_charliecloud_line_binds_and_separates_the_command() -> None:
    line = Charliecloud().command("/img/rootfs", ["/bin/sh", "-c", "ls /mnt"], ["/data:/mnt", "/scratch"])
    assert line == ["ch-run", "-b", "/data:/mnt", "-b", "/scratch:/scratch", "/img/rootfs", "--",
                    "/bin/sh", "-c", "ls /mnt"]


def test_unknown_runtime_is_named() -> None:
    with pytest.raises(ValueError, match="unknown container runtime 'docker'; expected one of apptainer, charliecloud"):
        runtime("docker")


@pytest.fixture(scope="module")
def charliecloud() -> None:
    """ch-run and a static busybox; installed from Debian when missing and we are root."""
    if shutil.which("ch-run") and shutil.which("busybox"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("charliecloud-runtime and busybox-static are not installed (and we cannot install them)")
    subprocess.run(["apt-get", "install", "-y", "-q", "charliecloud-runtime", "busybox-static"],
                   capture_output=True, timeout=600, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    if not (shutil.which("ch-run") and shutil.which("busybox")):
        pytest.skip("apt-get could not install charliecloud-runtime and busybox-static")


def test_charliecloud_runs_a_step_in_a_busybox_rootfs(charliecloud, tmp_path, monkeypatch) -> None:
    rootfs = tmp_path / "rootfs"
    for folder in ("bin", "proc", "dev", "sys", "tmp", "etc", "mnt"):
        (rootfs / folder).mkdir(parents=True)
    shutil.copy(shutil.which("busybox"), rootfs / "bin" / "busybox")
    (rootfs / "bin" / "sh").symlink_to("busybox")
    (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
    (rootfs / "etc" / "group").write_text("root:x:0:\n")
    (tmp_path / "host").mkdir()
    monkeypatch.setenv("USER", "root")
    line = Charliecloud().command(str(rootfs), ["/bin/sh", "-c", "echo inside > /mnt/out"], [f"{tmp_path / 'host'}:/mnt"])
    subprocess.run(line, check=True, timeout=60)
    assert (tmp_path / "host" / "out").read_text() == "inside\n"


def test_prefix_is_what_benchmark_files_put_before_the_command() -> None:
    from caramel.adapters.containers.runtime import container_prefix
    assert container_prefix("apptainer", "/c/p.sif", "/root", "--nv") == "apptainer exec --bind=/root --nv /c/p.sif"
    assert container_prefix("charliecloud", "/img", "/root") == "ch-run -b /root:/root /img --"
