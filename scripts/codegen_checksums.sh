#!/usr/bin/env bash
# Checksums of the code kiln generates for the shared models on five targets: the host CPU,
# x86-64-v3, aarch64, cuda -arch=sm_90 and opencl. A change that should not alter generated code
# (a restructure) shows the same list before and after:
#   bash scripts/codegen_checksums.sh [KILN] > after.txt; diff before.txt after.txt
# Per model and target: the module .so (kernels, plan, weights; GPU: the device images) and,
# for GPU targets, the device source as printed (module.cu / module.cl). KILN defaults to
# build/bin/kiln; the models come from ../shared/models.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kiln="${1:-$root/build/bin/kiln}"
models="$root/../shared/models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
targets=("llvm" "llvm -mcpu=x86-64-v3" "llvm -mtriple=aarch64-linux-gnu" "cuda -arch=sm_90" "opencl")
for model in bert_mini mobilenet_v2 resnet18 squeezenet1_1; do
  for target in "${targets[@]}"; do
    out="$work/m.so"
    args=(compile "$models/$model/model.onnx" -o "$out" --target "$target")
    case "$target" in cuda* | opencl) args+=(--save-device-code "$work/device") ;; esac
    "$kiln" "${args[@]}" > /dev/null
    echo "$(sha256sum < "$out" | cut -c1-16)  $model  $target  .so"
    for src in "$work"/device/module.cu "$work"/device/module.cl; do
      [ -f "$src" ] && echo "$(sha256sum < "$src" | cut -c1-16)  $model  $target  $(basename "$src")"
    done
    rm -rf "$work/device" "$out"
  done
done
