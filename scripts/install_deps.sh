#!/usr/bin/env bash
# Installs every Debian package kiln needs to build and test (DESIGN.md, "Dependencies").
# Idempotent: apt-get skips what is already there. Run as root (or with sudo available).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PACKAGES=(
  cmake g++ make
  llvm-16-dev llvm-16-tools libzstd-dev zlib1g-dev libedit-dev libxml2-dev libtinfo-dev libffi-dev
  libxgboost-dev nlohmann-json3-dev libfmt-dev catch2
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdlpack-dev libcli11-dev libbenchmark-dev libopenblas-dev
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "kiln dependencies installed"
