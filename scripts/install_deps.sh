#!/usr/bin/env bash
# Installs every Debian package kiln needs to build and test (docs/architecture.md, "Dependencies").
# Idempotent: apt-get skips what is already there. Run as root (or with sudo available).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PACKAGES=(
  cmake g++ make pkg-config
  llvm-16-dev llvm-16-tools libzstd-dev zlib1g-dev libedit-dev libxml2-dev libtinfo-dev libffi-dev
  libxgboost-dev nlohmann-json3-dev libfmt-dev catch2
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdlpack-dev libcli11-dev libbenchmark-dev libopenblas-dev
  python3-dev python3-venv python3-pip
)
# Optional: the aarch64 cross toolchain and user-mode qemu. With them the default build also
# cross-builds the runtime and kiln-runner for aarch64, and CTest runs aarch64 modules under
# qemu-aarch64 (check.aarch64.*); without them kiln still builds and those tests are not registered.
# OpenCL on the CPU (PoCL and the ICD loader, which kiln loads at run time): with them CTest runs
# every model compiled for the opencl target (check.*.opencl) and the GPU schedules' OpenCL text.
# Graphviz: renders `kiln compile --dump-dot` pictures; CTest's dot.renders is skipped without it.
OPTIONAL_PACKAGES=(
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  ocl-icd-libopencl1 pocl-opencl-icd
  graphviz
  libopenmpi-dev openmpi-bin  # `mpirun -np N kiln tune` (MPI found by CMake)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
optional_missing=()
for p in "${OPTIONAL_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || optional_missing+=("$p")
done
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ] || [ ${#optional_missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#optional_missing[@]} -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${optional_missing[@]}" ||
    echo "note: optional packages not installed (${optional_missing[*]}): no aarch64 runtime or qemu tests, no OpenCL (PoCL) tests, or no rendering of DOT pictures"
fi
echo "kiln dependencies installed"
