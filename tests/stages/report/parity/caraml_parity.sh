#!/usr/bin/env bash
# caraml_parity.sh FILE KIND [TAG...]
#   Runs JUBE 2.7.1 and bench on one of CARAML's benchmark files with faked site commands, writes the
#   same CARAML-shaped logs (fake_logs.py KIND: megatron | ipu | resnet) into both runs, lets the
#   asynchronous steps finish, and compares `jube result -s csv` with `bench result --format csv`
#   (tables as multisets of rows, /work/shared/tools/compare.py). Exit 0 when they agree.
# Scratch under ${PARITY_TMP:-/tmp/jp-result}/caraml; JUBE from ${JUBE:-/tmp/jube-parity/jube-venv/bin/jube}.
set -u
file=$1; kind=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
T=${PARITY_TMP:-/tmp/jp-result}/caraml; rm -rf "$T"; mkdir -p "$T/jube" "$T/bench" "$T/fake"
JUBE=${JUBE:-/tmp/jube-parity/jube-venv/bin/jube}
# the real script, not a pyenv shim (a shim puts its own python3 first on PATH, hiding the fake one)
BENCH=${BENCH:-$(pyenv which bench 2>/dev/null || command -v bench)}
export JUBE_INCLUDE_PATH=${JUBE_INCLUDE_PATH:-/tmp/jube-parity/jube-src/platform/slurm}
real_python=$(command -v python3)
printf '#!/bin/bash\necho "Submitted batch job 4242"\n' > "$T/fake/sbatch"
printf '#!/bin/bash\nexit 0\n' > "$T/fake/module"
printf '#!/bin/bash\nif [ "$1" = clone ]; then mkdir -p "${@: -1}"; exit 0; fi\nexit 0\n' > "$T/fake/git"
cat > "$T/fake/python3" <<PY
#!/bin/bash
# combine_energy.py needs real energy files: print what it prints and stop
if [[ "\${1:-}" == *combine_energy.py ]]; then
  while [ \$# -gt 0 ]; do [ "\$1" = --output ] && { echo "Writing combined energy DataFrame to \$2"; exit 0; }; shift; done
fi
exec $real_python "\$@"
PY
chmod +x "$T/fake"/*
src=$(cd "$(dirname "$file")" && pwd); base=$(basename "$file")
cp -r "$src"/. "$T/jube/"; cp -r "$src"/. "$T/bench/"
tagargs=(); [ $# -gt 0 ] && tagargs=(--tag "$@")
export PATH=$T/fake:$PATH
( cd "$T/jube" && "$JUBE" run --hide-animation "$base" "${tagargs[@]}" >run.out 2>&1
  out=$(ls -d */000000 | head -1); out=${out%/000000}
  python3 "$here/fake_logs.py" "$out/000000" "$kind"
  for _ in 1 2 3; do for wd in "$out"/000000/*/work; do touch "$wd/ready"; done
    "$JUBE" continue --hide-animation "$out" -i 0 >>run.out 2>&1; done
  "$JUBE" result -a "$out" -i 0 -s csv >"$T/jube.txt" 2>"$T/jube.err" )
( cd "$T/bench" && "$BENCH" run "$base" "${tagargs[@]}" >run.out 2>&1
  out=$(ls -d */000000 | head -1)
  python3 "$here/fake_logs.py" "$out" "$kind"
  for _ in 1 2 3; do for wd in "$out"/*/work; do touch "$wd/ready"; done
    "$BENCH" continue "$out" >>run.out 2>&1; done
  "$BENCH" result "$out" --format csv >"$T/bench.txt" 2>"$T/bench.err" ) || { echo "bench failed: $T/bench.err"; }
echo "--- jube";  cat "$T/jube.txt"; echo "--- bench"; cat "$T/bench.txt"
python3 /work/shared/tools/compare.py tables "$T/jube.txt" "$T/bench.txt" "$T/jube" "$T/bench"
rc=$?; [ $rc = 0 ] && echo "same as JUBE 2.7.1 ($base ${*:-})"; echo "scratch: $T"; exit $rc
