#!/usr/bin/env bash
# MLPerf inference on a CUDA GPU (docs/mlperf.md): the four LoadGen scenarios x two modes with
# PyTorch (fp32, fp16) and, where ONNX Runtime has its CUDA provider, ONNX Runtime (fp32); then
# each run's table. One prepared script for a GPU machine when one is lent:
#   bash perf/gpu_mlperf.sh            (from the repository root; PYTHONPATH=src is set here)
# It writes under ${OUT:-/tmp}/gpu_mlperf and prints the tables and the wall time of each run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
work="${OUT:-/tmp}/gpu_mlperf"
mkdir -p "$work"
python - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device",
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
PY
if ! python -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "no CUDA device visible to torch: nothing to run" >&2
    exit 1
fi
python -c 'import mlperf_loadgen' 2>/dev/null || pip install -q mlcommons-loadgen
runs=("pytorch fp32" "pytorch fp16")
if python -c 'import onnxruntime as o, sys; sys.exit("CUDAExecutionProvider" not in o.get_available_providers())' 2>/dev/null; then
    runs+=("onnxruntime fp32")
else
    echo "ONNX Runtime without CUDAExecutionProvider (pip install onnxruntime-gpu): skipped" >&2
fi
# the benchmark file with the backend, precision and device of each run (threads: torch's own)
for run in "${runs[@]}"; do
    read -r backend precision <<<"$run"
    folder="$work/$backend-$precision"
    mkdir -p "$folder"
    sed -e "s/{name: backend, _: pytorch}/{name: backend, _: $backend}/" \
        -e "s/{name: precision, _: fp32}/{name: precision, _: $precision}/" \
        -e "s/{name: device, _: cpu}/{name: device, _: cuda}/" \
        -e "s/{name: threads, type: int, _: 1}/{name: threads, type: int, _: 0}/" \
        benchmarks/mlperf_inference.yaml >"$folder/mlperf_inference.yaml"
    echo "== $backend $precision on cuda"
    start=$(date +%s)
    (cd "$folder" && python -m caramel run mlperf_inference.yaml --tag local >run.log 2>&1) || true
    echo "wall: $(( $(date +%s) - start )) s"
    (cd "$folder" && python -m caramel result -i last)
done
