#!/usr/bin/env bash
# Prepares what bench/gpu/run.sh runs on a GPU machine, which needs no LLVM, CUDA toolkit or
# kiln compiler: kiln-runner with the runtime and device libraries, models compiled for
# `cuda -arch=sm_90` (cubins for sm_80 and sm_90, PTX for newer GPUs) with their test data as
# .npy, and SGEMM models (both operands are inputs: nothing to carry but the kernel).
#
#   bash bench/gpu/prepare.sh [CASE_DIR[@B] ...] (default: examples/tiny_cnn, tests/models/*,
#                                                 ../shared/models/* but resnet18, bert_mini@32)
# CASE_DIR@B bundles a batch-B variant (bench/gpu/batch_variant.py) as NAME_bB, with the batch-1
# test data and tile.txt: run.sh tiles the input and the reference B times. resnet18 does not fit
# a bundle with others: `prepare.sh ../shared/models/resnet18` and `... resnet18@32` by themselves.
# Environment: KILN_BUILD (default build), KILN_GPU_TARGET (default "cuda -arch=sm_90"; opencl
# makes a bundle that run.sh runs on PoCL: a dry run of the scripts here), KILN_GPU_SGEMM (the
# SGEMM sizes, default "1024 2048 4096"),
# KILN_PYTHON (a python with numpy and onnx; default /work/venv-torch/bin/python, else python3).
# Writes bench/gpu/bundle/ (git-ignored). Bundles are carried whole: keep them under 64 MiB
# (resnet18's weights alone are 47 MB: bundle it by itself).
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
  dir=${spec%@*}
  name=$(basename "$dir")
  model="$dir/model.onnx"
  if [ "$spec" != "$dir" ]; then
    batch=${spec##*@}
    name="${name}_b$batch"
    model="$out/$name.onnx"
    "$py" bench/gpu/batch_variant.py "$dir/model.onnx" "$batch" "$model"
  fi
  mkdir -p "$out/cases/$name"
  "$build/bin/kiln" compile "$model" -o "$out/cases/$name/model.so" --target "$target" 2>/dev/null
  "$py" bench/gpu/case_to_npy.py "$dir" "$out/cases/$name"
  [ "$spec" != "$dir" ] && { echo "$batch" > "$out/cases/$name/tile.txt"; rm "$model"; }
  echo "bundled $name"
done
# SGEMM: C = A . B for square sizes, A and B graph inputs (run.sh makes random ones there).
for n in ${KILN_GPU_SGEMM:-1024 2048 4096}; do
  mkdir -p "$out/sgemm/$n"
  "$py" bench/gpu/case_to_npy.py --sgemm "$n" "$out/sgemm/$n"
  "$build/bin/kiln" compile "$out/sgemm/$n/model.onnx" -o "$out/sgemm/$n/model.so" --target "$target" 2>/dev/null
done
du -sh "$out"
