#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from the repository root, with a bundle from
# bench/gpu/prepare.sh, in this order: each GEMM's latency and correctness; each bundled model's
# correctness on the GPU (kiln-runner against its PyTorch reference, rtol 1e-3 atol 1e-4 as
# `kiln check`; a batch-32 variant on the batch-1 input tiled 32 times, against the reference
# tiled alike) and latency; PyTorch's in the same run (bench/gpu/torch_peers.py); last,
# compute-sanitizer's memcheck and racecheck over the small GEMMs and every model.
# Needs python3 with numpy (and torch, torchvision, transformers for the peers), and
# compute-sanitizer on PATH (else those checks are skipped, saying so).
#
#   bash bench/gpu/run.sh [BUNDLE] [REPEAT]       (default bench/gpu/bundle, 50)
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=${1:-bench/gpu/bundle}
repeat=${2:-50}
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
runner="$bundle/bin/kiln-runner"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
# compute-sanitizer's memcheck and racecheck over one run (ARGS: the runner's command line), each
# given KILN_SANITIZE_TIMEOUT seconds (default 180).
sanitize() {
  for tool in memcheck racecheck; do
    summary=$(timeout "${KILN_SANITIZE_TIMEOUT:-180}" "$sanitizer" --tool "$tool" "$@" 2>&1 |
              grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
    echo "  $tool: ${summary:-no summary (timed out or did not run)}"
    case "$summary" in *" 0 "*) ;; *) status=1 ;; esac
  done
}
# Sanitizer runs wait until every figure is taken (they are slow under the tools, so a run cut
# short still has its figures): GROUP (0 the small GEMMs, 1 the models), LABEL, then the runner's
# command line (its second word the module: smaller ones first).
queue_sanitize() {
  local group=$1 label=$2
  shift 2
  printf '%s %s %q ' "$group" "$(stat -c %s "$2")" "$label" >> "$tmp/sanitize"
  printf '%q ' "$@" >> "$tmp/sanitize"
  echo >> "$tmp/sanitize"
}
# GEMMs: random operands per dtype and size, made here; latency with the operands already on
# the device (kiln-runner --device-inputs: the kernels alone), as the PyTorch peer's.
for g in "$bundle"/gemm/*/; do
  v=$(basename "$g")  # DTYPE_N_VARIANT
  dtype=${v%%_*} rest=${v#*_}
  n=${rest%%_*} variant=${rest#*_}
  data="$tmp/gemm_${dtype}_$n"
  if [ ! -d "$data" ]; then
    mkdir -p "$data"
    python3 -c "import numpy as np; r=np.random.default_rng($n); [np.save('$data/'+x+'.npy', r.standard_normal(($n,$n)).astype('$dtype')) for x in 'AB']"
  fi
  gargs=(--input "A=$data/A.npy" --input "B=$data/B.npy")
  latency=$("$runner" "$g/model.so" "${gargs[@]}" --output-dir "$tmp/gemm_out" --repeat 30 --device-inputs | grep '^latency')
  nt=()
  [[ "$variant" == nt_* ]] && nt=(nt)
  verdict=$(python3 bench/gpu/compare.py --gemm "$data" "$tmp/gemm_out" "${nt[@]}") || status=1
  tflops=$(awk -v n="$n" '{print 2 * n * n * n / $3 / 1e9}' <<< "$latency")
  printf 'gemm %s %s %s: %s; kiln %s (%.1f TFLOP/s)\n' "$dtype" "$n" "$variant" "$verdict" "$latency" "$tflops"
  [ "$n" -le 1024 ] && queue_sanitize 0 "gemm $dtype $n $variant" "$runner" "$g/model.so" "${gargs[@]}" --output-dir "$tmp/san"
done
for c in "$bundle"/cases/*/; do
  name=$(basename "$c")
  args=()
  while read -r input file; do
    if [ -f "$c/tile.txt" ]; then  # a batch-B variant: the batch-1 input tiled B times
      python3 -c "import numpy as np, sys; a = np.load(sys.argv[1]); np.save(sys.argv[2], np.concatenate([a] * int(sys.argv[3])))" \
        "$c/$file" "$tmp/$name.$file" "$(cat "$c/tile.txt")"
      args+=(--input "$input=$tmp/$name.$file")
    else
      args+=(--input "$input=$c/$file")
    fi
  done < "$c/inputs.txt"
  out="$tmp/$name"
  latency=$("$runner" "$c/model.so" "${args[@]}" --output-dir "$out" --repeat "$repeat" | grep '^latency')
  verdict=$(python3 bench/gpu/compare.py "$c" "$out") || status=1
  echo "$name: $verdict; kiln $latency"
  queue_sanitize 1 "$name" "$runner" "$c/model.so" "${args[@]}" --output-dir "$tmp/san"
done
python3 bench/gpu/torch_peers.py "$bundle" "$repeat" || echo "PyTorch peers failed"
if [ -z "$sanitizer" ]; then
  echo "compute-sanitizer not found: memcheck and racecheck skipped"
elif [ -f "$tmp/sanitize" ]; then
  while read -r _ _ line; do
    eval "set -- $line"
    echo "sanitize $1"
    shift
    sanitize "$@" < /dev/null
  done < <(sort -n -k1,1 -k2,2 "$tmp/sanitize")
fi
exit $status
