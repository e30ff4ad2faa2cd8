# caramel's fingerprint probe: what the node this runs on is made of, as key=value lines. Run by
# the job script on the job's first node (and by `bench result` on this host for local runs);
# every probe is optional, a missing tool leaves its keys out.
echo "host=$(hostname 2>/dev/null)"
echo "node=${SLURMD_NODENAME:-}"
echo "cpu_model=$(grep -m1 -E '^(model name|Model|cpu model)' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
echo "cpu_count=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null)"
echo "memory_gb=$(awk '/^MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo 2>/dev/null)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | awk -F', ' \
    'NR==1 {m=$1; d=$2} END {if (NR) {print "gpu_model=" m; print "gpu_count=" NR; print "driver=" d}}'
  echo "cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n1)"
elif command -v rocm-smi >/dev/null 2>&1; then
  rocm-smi --showproductname 2>/dev/null | awk -F': ' '/Card [Ss]eries/ {n++; m=$NF} END {if (n) {print "gpu_model=" m; print "gpu_count=" n}}'
  echo "driver=$(cat /sys/module/amdgpu/version 2>/dev/null)"
fi
if [ -r /opt/rocm/.info/version ]; then echo "rocm=$(cat /opt/rocm/.info/version)"; fi
echo "kernel=$(uname -r 2>/dev/null)"
echo "modules=${LOADEDMODULES:-}"
echo "container_image=${APPTAINER_CONTAINER:-${SINGULARITY_CONTAINER:-}}"
echo "python=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null)"
