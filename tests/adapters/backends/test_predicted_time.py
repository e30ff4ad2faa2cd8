"""`bench run --time-from-prediction` on the test cluster: the jobs get the predicted --time."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from tests.consumers.predict.conftest import record
from tests.consumers.predict.test_cli import SUBMIT

from .test_slurm_cluster import bench


def test_jobs_run_with_the_predicted_time_limit(env, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(SUBMIT)
    env = dict(env, CARAMEL_HISTORY=str(tmp_path / "history.db"))
    record(tmp_path / "history.db", "job", [({"n": 1}, [1000.0, 1100.0, 1050.0]), ({"n": 2}, [2000.0, 1900.0])],
           system="localcluster", table="t")
    started = bench("run", "job.yaml", "--tag", "localcluster", "--time-from-prediction", cwd=tmp_path, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    limit = re.search(r"job --time (\S+):", started.stderr).group(1)
    assert limit != "00:05:00"  # the system file's default is replaced
    done = bench("continue", "-i", "last", "--wait", "--interval", "1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for work in sorted((tmp_path / "runs" / "000000").glob("*_work/work")):
        assert f"#SBATCH --time={limit}\n" in (work / "caramel_job.sh").read_text()
        job = (work / "stdout").read_text().split()[-1].split(";")[0]
        for _ in range(20):  # accounting may lag behind the job's end by a moment
            accounted = subprocess.run(["sacct", "-X", "-n", "-P", "-o", "Timelimit", "-j", job], env=env,
                                       capture_output=True, text=True, timeout=30)
            if accounted.stdout.strip():
                break
            time.sleep(0.5)
        assert accounted.stdout.split() == [limit], (job, accounted.stdout, accounted.stderr)
