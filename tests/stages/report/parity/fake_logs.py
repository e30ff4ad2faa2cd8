#!/usr/bin/env python3
"""Write logs shaped like CARAML's real ones into the work folders of a run (JUBE's or bench's).

    fake_logs.py RUN_DIR KIND      KIND: megatron | ipu | resnet

Values depend only on the workpackage id, so a JUBE run and a bench run of the same file get the
same logs and their result tables can be compared cell by cell.
"""
import os
import sys


def megatron(wp_id: int) -> str:
    lines = ["using world size: 4, data-parallel size: 4, tensor-model-parallel size: 1",
             "[after dataloaders are built] datetime: 2024-03-01 10:00:00"]
    for it in range(1, 10):
        elapsed = 0.9 + 0.01 * ((it * 7 + wp_id) % 5)
        tflops = 60.0 + 0.5 * ((it * 3 + wp_id) % 7)
        lines.append(f" iteration        {it * 5}/ 9375000 | consumed samples:        {it * 160} | elapsed time per "
                     f"iteration (s): {elapsed:.4f} | learning rate: 1.500E-04 | global batch size:    32 | "
                     f"lm loss: {10 - it * 0.3:.6E} | loss scale: 4096.0 | grad norm: 2.345 | number of skipped "
                     f"iterations:   0 | number of nan iterations:   0 | TFLOPs: {tflops:.2f} |")
    lines.append("[exiting program after 15.0 minutes] datetime: 2024-03-01 10:15:00")
    return "\n".join(lines) + "\n"


def ipu(wp_id: int) -> str:
    lines = ["Graph compilation: 100%|##########| 100/100 [05:12<00:00]"]
    for step in range(1, 6):
        lines.append(f"step: {step} of 100 loss: {9 - step * 0.1:.3f} step_time: {1.5 + 0.1 * ((step + wp_id) % 3):.4f} "
                     f"throughput: {40 + (step + wp_id) % 4:.2f} samples/sec")
    return "\n".join(lines) + "\n"


def resnet_out(wp_id: int) -> str:
    lines = ["Step\tImg/sec\ttotal_loss"]
    for step in range(1, 4):
        lines.append(f"{step * 10}\timages/sec: {900 + step + wp_id:.1f} +/- 0.0 (jitter = 0.0)\t7.8")
    lines.append("----------------------------------------------------------------")
    lines.append(f"total images/sec: {2700.5 + wp_id * 3.25:.2f}")
    lines.append("----------------------------------------------------------------")
    return "\n".join(lines) + "\n"


def main() -> None:
    run_dir, kind = sys.argv[1], sys.argv[2]
    for name in sorted(os.listdir(run_dir)):
        if "_" not in name or not name[:6].isdigit():
            continue
        wp_id, step = int(name[:6]), name[7:]
        work = os.path.join(run_dir, name, "work")
        if not os.path.isdir(work):
            continue
        if kind == "megatron" and step == "benchmark":
            with open(os.path.join(work, "job.out"), "w") as f:
                f.write(megatron(wp_id))
        elif kind == "ipu" and step == "benchmark":
            with open(os.path.join(work, "job.err"), "w") as f:
                f.write(ipu(wp_id))
        elif kind == "resnet" and step == "execute":
            with open(os.path.join(work, "job.out"), "w") as f:
                f.write(resnet_out(wp_id))
            with open(os.path.join(work, "job.err"), "w") as f:
                f.write(f"2024-03-01 10:00:00 start\nreal {612.5 + wp_id:.2f}\nuser 10.0\nsys 1.0\nJUBE_ERR_CODE=0\n")


if __name__ == "__main__":
    main()
