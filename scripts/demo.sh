#!/usr/bin/env bash
# Installs dependencies, builds kiln and runs the main job on the bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
build/bin/kiln_demo
