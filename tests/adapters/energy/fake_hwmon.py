"""A sysfs-like hwmon tree as jpwr's `gh` method reads it: hwmonN/device/power1_average (µW) and _oem_info."""

from pathlib import Path


def make_hwmon(root: Path, watts: dict[str, float]) -> Path:
    for i, (name, power) in enumerate(watts.items()):
        device = root / f"hwmon{i}" / "device"
        device.mkdir(parents=True)
        (device / "power1_oem_info").write_text(name + "\n")
        (device / "power1_average").write_text(f"{int(power * 1e6)}\n")
    return root
