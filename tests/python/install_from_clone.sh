#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/python/install_from_clone.sh PYTHON3 SOURCE WORK SANITIZED: the package as a new user
# gets it. Clones SOURCE's committed HEAD into WORK, makes a venv (over the system's packages,
# for setuptools, NumPy and PyTorch), runs `pip install ./python` there (CMake builds the
# library; CPU only, which is what this test is about), then imports corten from outside the
# tree with no CORTEN_LIB, PYTHONPATH, LD_PRELOAD or glibc tunable, runs a small program and
# exchanges tensors with NumPy (and PyTorch when present). The install is redone only when HEAD
# changes, in the same clone moved to the new HEAD (CMake then rebuilds what changed; set
# CORTEN_TEST_FRESH_CLONE=1 to start from a new clone). Skipped in sanitizer builds and outside
# a git checkout.
set -eu
python3=$1 src=$2 work=$3 sanitized=$4
if [ "$sanitized" = ON ]; then
  echo "SKIPPED: a sanitizer build (the normal build runs the install test)"; exit 77
fi
head=$(git -C "$src" rev-parse HEAD 2>/dev/null) || {
  echo "SKIPPED: $src is not a git checkout"; exit 77; }
if [ ! -f "$work/installed-$head" ]; then
  if [ ! -d "$work/clone/.git" ] || [ -n "${CORTEN_TEST_FRESH_CLONE:-}" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    git clone -q "$src" "$work/clone"
  else
    # The clone moves to the new HEAD and is cleaned of everything but pip's CMake build
    # folder, so CMake rebuilds only what the new commits changed.
    git -C "$work/clone" fetch -q "$src" HEAD
    git -C "$work/clone" checkout -q --force FETCH_HEAD
    git -C "$work/clone" clean -q -ffdx -e python/build/
    rm -f "$work"/installed-*
  fi
  [ -d "$work/venv" ] || "$python3" -m venv --system-site-packages "$work/venv"
  CORTEN_CMAKE_ARGS="-DCORTEN_CUDA=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$work/venv/bin/python" -m pip install -q --no-build-isolation --force-reinstall --no-deps \
    "$work/clone/python"
  touch "$work/installed-$head"
fi
cd "$work"
exec env -u CORTEN_LIB -u PYTHONPATH -u LD_PRELOAD -u GLIBC_TUNABLES "$work/venv/bin/python" -c '
import os, sys
import corten
import numpy as np
here = os.path.dirname(corten.__file__)
assert "site-packages" in here, here
assert os.path.exists(os.path.join(here, "libcorten.so"))
s = corten.Scope()
s["x"] = np.arange(6, dtype=np.float32).reshape(2, 3)
s["w"] = np.ones((3, 2), np.float32)
p = corten.Program()
p.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "y"})
corten.Executor(p, s).run()
assert np.from_dlpack(s["y"]).tolist() == [[3, 3], [12, 12]]
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    t = torch.from_dlpack(corten.from_dlpack(torch.arange(3.0)))
    assert t.tolist() == [0.0, 1.0, 2.0]
print("installed corten from a clean clone at", here, "; torch:", torch is not None)
'
