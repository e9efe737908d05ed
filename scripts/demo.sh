#!/usr/bin/env bash
# Installs dependencies, builds kiln, then runs the main job on the bundled example model:
# compile examples/tiny_cnn/model.onnx into one .so, run it on its test input, check it against
# ONNX Runtime's output, and time it. Then the tensor-level demo (matmul and conv2d GFLOPS).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
build/bin/kiln compile examples/tiny_cnn/model.onnx -o build/tiny_cnn.so
build/bin/kiln run build/tiny_cnn.so --input input=examples/tiny_cnn/test_data_set_0/input_0.pb --output-dir build/tiny_cnn_out
build/bin/kiln check examples/tiny_cnn
build/bin/kiln bench build/tiny_cnn.so --threads 2 --repeat 5
build/bin/kiln_demo
