import os
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.adapters.energy.fake_hwmon import make_hwmon

from caramel.adapters.energy.combine import combine
from caramel.payloads.measure import Sampler, integrate_wh, main

pytest.importorskip("jpwr")


def test_energy_is_the_integral_of_the_power_served(tmp_path: Path) -> None:
    hwmon = make_hwmon(tmp_path / "hwmon", {"Module0": 250.0, "Grace0": 50.0})
    start = time.time()
    code = main(["--hwmon-base", str(hwmon), "--interval", "50", "--out-dir", str(tmp_path / "e"), "--",
                 sys.executable, "-c", "import time; time.sleep(1.0)"])
    wall = time.time() - start
    assert code == 0
    lines = combine(tmp_path / "e", tmp_path / "combined.csv")
    assert lines[0] == f"Writing combined energy DataFrame to {tmp_path / 'combined.csv'}"
    values = dict(line.split(": ", 1) for line in lines[1:])
    assert values["Energy status"] == "ok"
    # the window is the command's whole lifetime (sampled right before it starts and after it ends)
    energy = dict(r.split(",", 1) for r in (tmp_path / "e" / "energy.0.csv").read_text().splitlines())
    seconds = float(energy["seconds"])
    assert 1.0 < seconds < wall
    assert float(values["Energy(Wh)"]) == pytest.approx(300.0 * seconds / 3600, rel=0.02)
    assert float(values["Average power(W)"]) == pytest.approx(300.0, rel=0.01)
    assert values["Energy devices"] == "2"


def test_power_that_changes_is_integrated(tmp_path: Path) -> None:
    hwmon = make_hwmon(tmp_path / "hwmon", {"Module0": 100.0})
    power_file = hwmon / "hwmon0" / "device" / "power1_average"

    def change() -> None:  # at once, as sysfs changes a reading: never an empty file to read
        (power_file.parent / "next").write_text("300000000\n")
        os.replace(power_file.parent / "next", power_file)

    threading.Timer(0.5, change).start()
    main(["--hwmon-base", str(hwmon), "--interval", "20", "--out-dir", str(tmp_path / "e"), "--",
          sys.executable, "-c", "import time; time.sleep(1.0)"])
    rows = (tmp_path / "e" / "power.0.csv").read_text().splitlines()[1:]
    times = [float(r.split(",")[1]) for r in rows]
    watts = [float(r.split(",")[2]) for r in rows]
    assert 100.0 in watts and 300.0 in watts
    energy = dict(r.split(",", 1) for r in (tmp_path / "e" / "energy.0.csv").read_text().splitlines())
    assert float(energy["gh:Module0"]) == pytest.approx(integrate_wh(times, watts))


def test_missing_meter_gives_a_status_and_the_command_still_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = main(["--hwmon-base", str(tmp_path / "absent"), "--out-dir", str(tmp_path / "e"), "--",
                 sys.executable, "-c", f"open({str(marker)!r}, 'w'); raise SystemExit(3)"])
    assert code == 3 and marker.exists()
    lines = combine(tmp_path / "e", tmp_path / "c.csv")
    assert lines[-1] == f"Energy status: unavailable: cannot read {tmp_path / 'absent'} (No such file or directory)"
    assert not any(line.startswith("Energy(Wh)") for line in lines)


def test_a_meter_that_hangs_is_given_up_not_waited_for() -> None:
    class Hanging:
        calls = 0

        def init(self, values):
            values["gh:x"] = []

        def measure(self, values):
            Hanging.calls += 1
            if Hanging.calls > 2:
                time.sleep(60)
            values["gh:x"].append(1.0)

    sampler = Sampler(Hanging(), 0.01)
    sampler.start()
    time.sleep(0.1)
    start = time.time()
    sampler.stop(timeout_s=0.3)
    assert time.time() - start < 1.0
    assert sampler.status.startswith("failed: the meter did not answer")


def test_unknown_method_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    main(["--method", "rapl", "--out-dir", str(tmp_path), "--", "true"])
    assert "unknown energy method 'rapl'" in capsys.readouterr().err


def test_method_none_runs_the_command_and_says_why(tmp_path: Path) -> None:
    assert main(["--method", "none", "--out-dir", str(tmp_path / "e"), "--", "true"]) == 0
    assert combine(tmp_path / "e", tmp_path / "c.csv")[-1] == "Energy status: unavailable: this system has no energy method"


@pytest.mark.parametrize(("method", "env", "reason"), [
    ("gh", {}, "cannot read {absent} (No such file or directory)"),
    ("rocm", {"ROCM_PATH": "{absent}"}, "no ROCm at {absent} (ROCM_PATH)"),
])
def test_no_meter_costs_no_jpwr_or_pandas_import(tmp_path: Path, method: str, env: dict[str, str],
                                                 reason: str) -> None:
    """Where the node has no meter the wrapper says why without importing jpwr's method (which imports
    pandas, most of the wrapper's start-up) nor caramel's backends (a third of what is left), nor socket for
    the host name (uname's nodename is the same name, 2 ms sooner): nothing heavy before the command starts."""
    import json
    import os
    import subprocess

    absent = str(tmp_path / "absent")
    code = ("import json, sys\nfrom caramel.payloads.measure import main\n"
            f"main(['--method', {method!r}, '--hwmon-base', {absent!r}, '--out-dir', {str(tmp_path / 'e')!r}, '--', "
            "sys.executable, '-c', 'pass'])\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('jpwr', 'pandas', 'numpy', 'socket')\n"
            "                        or m.startswith('caramel.') and m not in ('caramel.moved', 'caramel.payloads', 'caramel.payloads.measure'))))")
    full_env = {**os.environ, **{k: v.format(absent=absent) for k, v in env.items()}}
    done = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert f"caramel-energy: status unavailable: {reason.format(absent=absent)}" in done.stderr


def test_an_empty_hwmon_folder_is_no_meter(tmp_path: Path) -> None:
    (tmp_path / "hwmon" / "hwmon0").mkdir(parents=True)  # a sensor without power files (a laptop's)
    main(["--hwmon-base", str(tmp_path / "hwmon"), "--out-dir", str(tmp_path / "e"), "--", sys.executable, "-c", ""])
    status = dict(r.split(",", 1) for r in (tmp_path / "e" / "energy.0.csv").read_text().splitlines())["status"]
    assert status == f"unavailable: no power meter under {tmp_path / 'hwmon'} (no hwmon*/device/power1_oem_info)"
