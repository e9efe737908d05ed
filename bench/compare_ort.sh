#!/usr/bin/env bash
# Latency of kiln against ONNX Runtime and OpenVINO (CPU), measured in the same run.
# Usage: bash bench/compare_ort.sh [--kiln PATH] [--target T] [--tuning-log LOG] [--rounds R]
#          [--repeat N] [--models-dir DIR] [--models a,b] [--quantized]
# The venv lives in build/bench-venv (created once, reused): benchmarks may need packages the
# build does not, and nothing here may touch the system Python.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/build/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import onnxruntime, openvino, onnx, numpy, sympy" 2>/dev/null; then
  # onnx only parses the models and their TensorProto test inputs; ORT and OpenVINO are the
  # peers being measured; sympy is what ORT's quantization tools need (--quantized).
  "$venv/bin/pip" install -q onnxruntime openvino onnx numpy sympy
fi
exec "$venv/bin/python" "$root/bench/compare_ort.py" --root "$root" "$@"
