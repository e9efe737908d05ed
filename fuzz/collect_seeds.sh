#!/usr/bin/env bash
# fuzz/collect_seeds.sh OUT_DIR: gathers seed inputs for each fuzzer out of the repository's
# models and test data (and ../shared, when it is beside the checkout) into OUT_DIR/NAME/, as
# links, so nothing big is committed: ONNX models for onnx_import, TensorProto .pb files for
# tensor_pb, .npy files for npy. fuzz/seeds/NAME/ holds the committed seeds (tuning logs, which
# the repository has none of, and small hand-made cases). Files over 64 KiB are left out: seeds
# that big slow every mutation down and cover nothing the small models do not.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
rm -rf "$out"
mkdir -p "$out"/{onnx_import,tensor_pb,npy,tuning_log,module_data}
shared=../shared
# link NAME FILE...: each file as OUT/NAME/<its path with / as _>.
link() {
  local name=$1
  shift
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    ln -sf "$(realpath "$f")" "$out/$name/$(echo "$f" | tr '/' '_')"
  done
}
shopt -s nullglob globstar
link onnx_import examples/**/*.onnx tests/**/*.onnx "$shared"/models/*/model.onnx "$shared"/onnx/node/*/model.onnx
link tensor_pb examples/**/*.pb tests/**/*.pb "$shared"/onnx/node/*/test_data_set_*/*.pb
link npy tests/**/*.npy
for name in "$out"/*; do
  echo "seeds: $(basename "$name"): $(find "$name" -type l | wc -l) from the repository"
done
