# SPDX-License-Identifier: Apache-2.0
"""What the PyTorch parity scripts (test_torch_parity*.py) share: running the C side and reading
the arrays it writes."""
import os
import subprocess
import sys
import tempfile

SKIP = 77


def import_torch():
    """The torch module; exits 77 (skipped) when it is not installed."""
    try:
        import torch
    except ImportError:
        print("SKIPPED: torch is not installed for %s (Debian: apt-get install python3-torch)"
              % sys.executable)
        sys.exit(SKIP)
    return torch


def read_arrays(path):
    """The arrays of the C side's file: for each, a line "name count", then count values one per
    line. Returns name -> list of floats."""
    arrays = {}
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        name, count = lines[i].split()
        count = int(count)
        arrays[name] = [float(v) for v in lines[i + 1:i + 1 + count]]
        i += 1 + count
    return arrays


def run_corten():
    """Runs the C program named by CORTEN_TORCH_PARITY (ctest sets it) and returns its arrays,
    or the exit status to leave with (SKIP when it skipped, 1 on a failure)."""
    prog = os.environ.get("CORTEN_TORCH_PARITY")
    if not prog:
        print("CORTEN_TORCH_PARITY is not set: give the path of the C side's program (ctest "
              "sets it)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "corten.txt")
        run = subprocess.run([prog, out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        sys.stdout.write(run.stdout)
        if run.returncode == SKIP:
            return SKIP
        if run.returncode != 0:
            print("%s failed with status %d" % (os.path.basename(prog), run.returncode))
            return 1
        return read_arrays(out)
