#!/usr/bin/env bash
# Prepares what bench/gpu/run.sh runs on a GPU machine, which needs no LLVM, CUDA toolkit or
# kiln compiler: kiln-runner with the runtime and device libraries, models compiled for
# `cuda -arch=sm_90` (cubins for sm_80 and sm_90, PTX for newer GPUs) with their test data as
# .npy, and GEMM models (both operands are inputs: nothing to carry but the kernel), one per
# schedule of bench/gpu/gemm_variants.txt.
#
#   bash bench/gpu/prepare.sh [CASE_DIR[@B][%fp16] ...] (default: examples/tiny_cnn, tests/models/*,
#                                                       ../shared/models/* but resnet18, bert_mini@32)
# CASE_DIR@B bundles a batch-B variant (bench/gpu/batch_variant.py) as NAME_bB, with the batch-1
# test data and tile.txt: run.sh tiles the input and the reference B times. CASE_DIR%fp16 compiles
# with --precision fp16 as NAME_fp16 and writes tolerance.txt (rtol and atol 2e-2 against the
# float32 reference, as CTest's check.*.fp16). resnet18 does not fit a bundle with others:
# `prepare.sh ../shared/models/resnet18` by itself (its float16 form is half the size).
# Environment: KILN_BUILD (default build), KILN_GPU_TARGET (default "cuda -arch=sm_90"; opencl
# makes a bundle that run.sh runs on PoCL: a dry run of the scripts here), KILN_GPU_GEMM (the
# GEMMs, DTYPE:N[:nt], default "float32:4096 float16:4096 float32:4096:nt float16:4096:nt
# float32:1024 float16:1024"; "" for none),
# KILN_PYTHON (a python with numpy and onnx; default /work/venv-torch/bin/python, else python3).
# Writes bench/gpu/bundle/ (git-ignored). Bundles are carried whole: keep them under 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${KILN_BUILD:-build}
target=${KILN_GPU_TARGET:-cuda -arch=sm_90}
py=${KILN_PYTHON:-/work/venv-torch/bin/python}
[ -x "$py" ] || py=python3
out=bench/gpu/bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/cases"
cp "$build/bin/kiln-runner" "$out/bin/"
cp "$build/lib/libkiln_runtime.so" "$build/lib/libkiln_device.so" "$out/lib/"
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(examples/tiny_cnn tests/models/bert_tiny tests/models/gpt2_tiny)
  for m in mobilenet_v2 squeezenet1_1 bert_mini bert_mini@32; do
    [ -d "../shared/models/${m%@*}" ] && cases+=("../shared/models/$m")
  done
fi
for spec in "${cases[@]}"; do
  precision=fp32
  [[ "$spec" == *%fp16 ]] && { precision=fp16; spec=${spec%\%fp16}; }
  dir=${spec%@*}
  name=$(basename "$dir")
  model="$dir/model.onnx"
  if [ "$spec" != "$dir" ]; then
    batch=${spec##*@}
    name="${name}_b$batch"
    model="$out/$name.onnx"
    "$py" bench/gpu/batch_variant.py "$dir/model.onnx" "$batch" "$model"
  fi
  [ "$precision" = fp16 ] && name="${name}_fp16"
  mkdir -p "$out/cases/$name"
  "$build/bin/kiln" compile "$model" -o "$out/cases/$name/model.so" --target "$target" --precision "$precision" 2>/dev/null
  "$py" bench/gpu/case_to_npy.py "$dir" "$out/cases/$name"
  [ "$precision" = fp16 ] && echo "2e-2 2e-2" > "$out/cases/$name/tolerance.txt"
  [ "$spec" != "$dir" ] && { echo "$batch" > "$out/cases/$name/tile.txt"; rm "$model"; }
  echo "bundled $name"
done
# GEMMs: C = A . B for square sizes, A and B graph inputs (run.sh makes random ones there), one
# module per schedule of gemm_variants.txt (knobs forced by a one-record tuning log).
# DTYPE:N:nt is C = A . B^T (a dense layer's weight layout), its default schedule alone.
for gemm in ${KILN_GPU_GEMM-float32:4096 float16:4096 float32:4096:nt float16:4096:nt float32:1024 float16:1024}; do
  IFS=: read -r dtype n layout <<< "$gemm"
  layout=${layout:-nn}
  while read -r vdtype variant knobs; do
    [ "$vdtype" = "$dtype" ] || continue
    # The 1024 GEMM is the sanitizer's (run.sh): its default schedule and the deeper pipelines
    # (the cp.async waits a race would hide in); the nt GEMMs their default alone.
    keep=0
    [ "$variant" = default ] && keep=1
    [ "$layout" = nn ] && { [ "$n" -ge 4096 ] || [[ "$variant" == *stages ]]; } && keep=1
    [ "$keep" = 1 ] || continue
    # wgmma's knobs exist on sm_90a alone.
    [[ "$knobs" == *warpgroup_mma* && "$target" != *sm_90a* ]] && continue
    [ "$layout" = nn ] || variant="${layout}_$variant"
    d="$out/gemm/${dtype}_${n}_$variant"
    mkdir -p "$d"
    "$py" bench/gpu/case_to_npy.py --gemm "$n" "$dtype" "$d" "$layout"
    log_args=()
    if [ -n "$knobs" ]; then
      workload="gpu_matmul:nn.matmul($dtype[$n,$n],$dtype[$n,$n])->$dtype[$n,$n]"
      "$py" bench/gpu/forced_config_log.py "$workload" "$target" "$knobs" "$d/forced.json"
      log_args=(--tuning-log "$d/forced.json")
    fi
    if ! notes=$("$build/bin/kiln" compile "$d/model.onnx" -o "$d/model.so" --target "$target" "${log_args[@]}" 2>&1); then
      echo "prepare.sh: $dtype $n $variant: $notes" >&2
      exit 1
    fi
    if [ -n "$knobs" ] && ! grep -q "applied to 1 kernel" <<< "$notes"; then
      echo "prepare.sh: $dtype $n $variant: the forced knobs $knobs were not applied:" >&2
      echo "$notes" >&2
      exit 1
    fi
    rm "$d/model.onnx"
  done < <(grep -v '^#' bench/gpu/gemm_variants.txt | grep .)
done
du -sh "$out"
