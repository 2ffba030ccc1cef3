#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/python/make_envs.sh PYTHON3 DIR SANITIZED: makes the test suite's virtual environments
# in DIR, once (a stamp file marks each done; delete DIR to remake them):
#   DIR/numpy1  python3 -m venv --system-site-packages: the system's NumPy (Debian: 1.24),
#               PyTorch and pytest (pytest from PyPI if the system has none)
#   DIR/numpy2  a plain venv with NumPy 2 and pytest from PyPI; when PyPI cannot be reached it
#               is left out, and python_numpy2 reports itself skipped (not in sanitizer builds)
#   DIR/onnx    over the system's packages (Debian's PyTorch, torchvision, NumPy 1.24), with
#               onnx and onnxruntime from PyPI (NumPy kept below 2 for Debian's PyTorch): the
#               ONNX model parity tests (not in sanitizer builds; skipped without PyPI)
set -eu
python3=$1 dir=$2 sanitized=$3
mkdir -p "$dir"
if [ ! -f "$dir/numpy1.done" ]; then
  rm -rf "$dir/numpy1"
  # No pip of its own (ensurepip is most of a venv's making) unless pytest must be installed.
  "$python3" -m venv --system-site-packages --without-pip "$dir/numpy1"
  if ! "$dir/numpy1/bin/python" -c "import pytest" 2>/dev/null; then
    rm -rf "$dir/numpy1"
    "$python3" -m venv --system-site-packages "$dir/numpy1"
    "$dir/numpy1/bin/python" -m pip install -q pytest
  fi
  touch "$dir/numpy1.done"
fi
if [ "$sanitized" = ON ]; then
  echo "numpy2: not made in a sanitizer build (the normal build covers NumPy 2)" > "$dir/numpy2.skip"
  echo "onnx: not made in a sanitizer build (the normal build runs the model parity tests)" \
    > "$dir/onnx.skip"
  exit 0
fi
if [ ! -f "$dir/onnx.done" ]; then
  rm -rf "$dir/onnx" "$dir/onnx.skip"
  "$python3" -m venv --system-site-packages "$dir/onnx"
  if "$dir/onnx/bin/python" -m pip install -q onnx onnxruntime "numpy<2" pytest; then
    touch "$dir/onnx.done"
  else
    echo "onnx: pip could not install onnx and onnxruntime (is PyPI reachable?)" > "$dir/onnx.skip"
  fi
fi
if [ ! -f "$dir/numpy2.done" ]; then
  rm -rf "$dir/numpy2" "$dir/numpy2.skip"
  "$python3" -m venv "$dir/numpy2"
  if "$dir/numpy2/bin/python" -m pip install -q "numpy>=2" pytest; then
    touch "$dir/numpy2.done"
  else
    echo "numpy2: pip could not install numpy>=2 and pytest (is PyPI reachable?)" \
      > "$dir/numpy2.skip"
  fi
fi
"$dir/numpy1/bin/python" -c "import numpy; print('numpy1 env: NumPy', numpy.__version__)"
if [ -f "$dir/numpy2.done" ]; then
  "$dir/numpy2/bin/python" -c "import numpy; print('numpy2 env: NumPy', numpy.__version__)"
fi
