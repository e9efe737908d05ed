#!/usr/bin/env bash
# Installs dependencies, builds kiln and runs every test (CTest over the Catch2 suites).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
