#!/usr/bin/env bash
# Installs dependencies, builds kiln and its Python package, runs every test (CTest over the Catch2
# suites and pytest's tests/python).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
# The Python package in a venv of its own (CTest's python.pytest runs there). pip reuses build/
# (pyproject.toml), so this compiles the extension alone; no build isolation, so that the build
# environment's path stays the same and a rerun is incremental (a new one would make
# scikit-build-core clear the CMake cache).
[ -x build/venv-python/bin/python ] || python3 -m venv build/venv-python
build/venv-python/bin/pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" numpy onnx pytest
build/venv-python/bin/pip install -q --no-build-isolation .
ctest --test-dir build --output-on-failure -j2
