"""The wheel: built with the standard front-end, installed (not editable) into a fresh venv, run
from an empty folder, with nothing written into the installed package.

The fresh venv gets no network: the wheel is installed with --no-deps, and the dependencies come
from this interpreter's site-packages through a .pth line (the editable caramel there is not seen:
.pth files of a folder added that way are not processed). `pip check` in the new venv then proves
the wheel's declared requirements are what it needs to import and run.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test over 2 s (docs/development.md: the tiers)

ROOT = Path(__file__).resolve().parents[2]
CARAML_GIT = Path("/work/.mirror/FZJ-JSC+CARAML/repo")
SOURCES = ["src", "benchmarks", "systems", "templates", "containers", "setup.py", "setup.cfg", "pyproject.toml",
           "README.md", "MANIFEST.in"]


def build_wheel(out: Path) -> Path:
    """`python -m build --wheel` on a clean copy of the sources (the checkout gets no build/ folder)."""
    src = out / "src-copy"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.egg-info", "*_run", "*.sif"))
        else:
            shutil.copy2(ROOT / name, src / name)
    (src / "benchmarks" / "leftover_run").mkdir()  # what a user's run leaves must not be shipped
    (src / "benchmarks" / "leftover_run" / "x.yaml").write_text("name: x\n")
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out / "dist"),
                           str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return next((out / "dist").glob("caramel-*.whl"))


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base)
    env_dir = base / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "_deps_from_test.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return wheel, env_dir


def test_wheel_carries_the_shipped_folders_and_no_run_output(installed) -> None:
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in ["benchmarks/llm.yaml", "benchmarks/resnet50.xml", "systems/A100.yaml", "systems/local.yaml",
                 "templates/platform/platform.xml", "templates/platform/submit.job.in", "templates/slurm/job.sh.j2",
                 "containers/pytorch.def"]:
        assert f"caramel/_shipped/{path}" in names
    for kind in ("benchmark", "system", "targets", "models"):  # the JSON Schemas editors are pointed at
        assert f"caramel/schemas/{kind}.schema.json" in names
    assert not any("leftover_run" in n or n.startswith("tests/") for n in names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert {r.split()[1].split(">")[0].lower() for r in requires} == {
        "pyyaml", "lxml", "jinja2", "pandas", "rich", "plotly", "scikit-learn", "submitit", "orjson",
        "scipy", "pint", "regex", "ruptures", "argcomplete"}


def run_bench(env_dir: Path, *args: str, cwd: Path, env: dict[str, str], timeout: float = 300):
    return subprocess.run([str(env_dir / "bin" / "bench"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_installed_wheel_plans_caraml_and_runs_llm_by_name(installed, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    _, env_dir = installed
    python = env_dir / "bin" / "python"
    package = Path(subprocess.run([str(python), "-c", "import caramel, os; print(os.path.dirname(caramel.__file__))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    assert package.is_relative_to(env_dir), package  # the wheel's copy, not the checkout's
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True)
    assert "caramel" not in check.stdout, check.stdout
    before = snapshot(package)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    env["CARAMEL_DATA_DIR"] = str(tmp_path / "userdata")
    env["CARAMEL_HISTORY"] = str(tmp_path / "history.db")
    empty = tmp_path / "empty"
    empty.mkdir()
    if CARAML_GIT.is_dir():
        caraml = tmp_path / "caraml"
        caraml.mkdir()
        shown = subprocess.run(["git", "--git-dir", str(CARAML_GIT), "show",
                                "HEAD:llm_training/llm_benchmark_nvidia_amd.yaml"], capture_output=True, check=True)
        (caraml / "llm_benchmark_nvidia_amd.yaml").write_bytes(shown.stdout)
        planned = run_bench(env_dir, "plan", str(caraml / "llm_benchmark_nvidia_amd.yaml"), "--tag", "800M", "A100",
                            cwd=empty, env=env)
        assert planned.returncode == 0, planned.stderr
        assert "workpackages" in planned.stdout
    ran = run_bench(env_dir, "run", "llm", "--tag", "117M", "local", "smoke", cwd=empty, env=env,
                    timeout=600)  # the README's job, 60 iterations (`smoke`) instead of 1000
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert list(empty.glob("llm_benchmark_run/000000/*_benchmark/work/job.out"))  # runs under the current folder
    shown = run_bench(env_dir, "result", "-i", "last", cwd=empty, env=env)
    assert shown.returncode == 0, shown.stderr
    assert float(shown.stdout.splitlines()[1].split(",")[17]) > 0  # Tokens/second
    assert snapshot(package) == before  # nothing written into the installed package


FAKE_SLURM = {"sbatch": "echo 'Submitted batch job 42'\n", "sacct": "exit 0\n", "scancel": "exit 0\n",
              "squeue": "exit 0\n"}


def test_installed_wheel_renders_job_scripts_whose_paths_exist(installed, tmp_path: Path) -> None:
    """`bench run llm --tag 800M A100` from the wheel (sbatch faked): every host path its job script names
    exists, or is one of the system file's folders (image_dir, data_dir: where the site keeps images and
    data); nothing points into the installed package's data; caramel's own package is what the
    container binds, never the whole site-packages. `bench container build pytorch.def` finds the
    shipped definition and writes the image here."""
    _, env_dir = installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_")) and k != "PYTHONPATH"}
    package = Path(subprocess.run([str(env_dir / "bin" / "python"), "-c",
                                   "import caramel, os; print(os.path.dirname(caramel.__file__))"],
                                  capture_output=True, text=True, check=True, env=env).stdout.strip())
    assert package.is_relative_to(env_dir), package  # the wheel's caramel, not a checkout's
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, body in FAKE_SLURM.items():
        (fake / name).write_text("#!/bin/sh\n" + body)
        (fake / name).chmod(0o755)
    env.update(CARAMEL_DATA_DIR=str(tmp_path / "userdata"), PATH=f"{fake}{os.pathsep}{env['PATH']}")
    work = tmp_path / "project"
    work.mkdir()
    before = snapshot(package)
    ran = run_bench(env_dir, "run", "llm", "--tag", "800M", "A100", cwd=work, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    script = next(work.glob("llm_benchmark_run/000000/*_benchmark/work/job.sh")).read_text()
    # the system file's folders (A100.yaml: image_dir: containers, data_dir: data), and the run folder the job writes in
    site_folders = (work / "containers", work / "data", work / "llm_benchmark_run")
    assert "_shipped" not in script
    for path in sorted(set(re.findall(r"(?<![\w$])/[\w.+-][\w./+-]*", script))):
        if path.startswith("/opt/"):  # inside the image (Megatron-LM's checkout)
            continue
        assert Path(path).exists() or any(Path(path).is_relative_to(f) for f in site_folders), path
    binds = re.search(r"--bind=(\S+)", script).group(1).split(",")
    assert str(package) in binds and str(package.parent) not in binds  # caramel alone, not site-packages
    assert f"export PYTHONPATH={package.parent}:" in script
    built = run_bench(env_dir, "container", "build", "pytorch.def", "--dry-run", cwd=work, env=env)
    assert built.returncode == 0, built.stderr
    assert built.stdout.split()[-2:] == ["pytorch.sif", str(package / "_shipped" / "containers" / "pytorch.def")]
    assert snapshot(package) == before  # nothing written into the installed package
