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


def run_corten(*args):
    """Runs the C program named by CORTEN_TORCH_PARITY (ctest sets it) with the output file and
    args, and returns its arrays, or the exit status to leave with (SKIP when it skipped, 1 on a
    failure)."""
    prog = os.environ.get("CORTEN_TORCH_PARITY")
    if not prog:
        print("CORTEN_TORCH_PARITY is not set: give the path of the C side's program (ctest "
              "sets it)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "corten.txt")
        run = subprocess.run([prog, out] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        sys.stdout.write(run.stdout)
        if run.returncode == SKIP:
            return SKIP
        if run.returncode != 0:
            print("%s failed with status %d" % (" ".join([os.path.basename(prog)] + list(args)),
                                                run.returncode))
            return 1
        return read_arrays(out)


class Checker:
    """Collects the arrays where corten and torch differ by more than rel relative to the largest
    magnitude of torch's array, and the largest relative difference seen."""

    def __init__(self, torch, rel=1e-9):
        self.torch = torch
        self.rel = rel
        self.failures = []
        self.worst = 0.0

    def close(self, name, got, want):
        """got (corten's list) against want (a torch tensor): max |got - want| <= rel max |want|."""
        want = want.detach()
        got = self.torch.tensor(got, dtype=self.torch.float64).reshape(want.shape)
        scale = max(want.abs().max().item(), 1e-300)
        err = (got - want).abs().max().item()
        if err > self.rel * scale:
            self.failures.append("%s: max difference %.3g, %.3g relative" % (name, err,
                                                                               err / scale))
        self.worst = max(self.worst, err / scale)

    def equal(self, name, got, want):
        """got (corten's list of integers) equals want (a torch tensor)."""
        if [int(v) for v in got] != [int(v) for v in want.reshape(-1).tolist()]:
            self.failures.append("%s: %s, torch %s" % (name, got, want.tolist()))

    def report(self, what):
        """Prints the verdict on what; 0 when everything agreed, 1 when not."""
        version = self.torch.__version__
        if self.failures:
            print("%s: corten and torch %s differ:" % (what, version))
            for f in self.failures:
                print("  " + f)
            return 1
        print("%s: corten and torch %s agree (largest relative difference %.3g)"
              % (what, version, self.worst))
        return 0
