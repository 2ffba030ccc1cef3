#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing corten needs on Debian (or Ubuntu): the compilers, CMake,
# Check, jemalloc, OpenBLAS (the reference GEMM of the tests and the bench), DLPack, git, Python with venv, pip, setuptools, wheel and pytest (the
# corten Python package, its install and its tests), python3-numpy (NumPy 1.24: the DLPack
# tests; NumPy 2 comes from PyPI into a venv the tests make), python3-torch (the PyTorch tests
# and the training parity test), libtorch-dev (the benchmarks' libtorch baselines; about a
# minute to install), OpenMPI (libopenmpi-dev, openmpi-bin: the collectives, corten/comm.h,
# and mpirun for their tests), python3-torchvision (models exported to ONNX for the import's
# parity tests), libonnx-testdata (ONNX's backend conformance tests, which corten's ONNX
# import runs) and python3-matplotlib (the profile's memory picture, an optional dependency of
# the Python package, tested when present). Packages already present are left alone; apt
# runs only when something is missing. Uses sudo when not run as root.
set -euo pipefail

packages=(cmake make gcc g++ clang pkg-config git check libjemalloc-dev libopenblas-dev
          libdlpack-dev python3 python3-venv python3-pip python3-setuptools python3-wheel
          python3-pytest python3-numpy python3-torch python3-torchvision libtorch-dev
          libopenmpi-dev openmpi-bin libonnx-testdata python3-matplotlib)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
