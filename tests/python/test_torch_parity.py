#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""corten against PyTorch: the same MLP from the same initial weights, trained with SGD.

The C program tests/torch_parity.c (its path in CORTEN_TORCH_PARITY, set by ctest) trains the
network in float64 for 25 steps and writes its inputs, initial weights, the logits, per-row
losses and gradients of the first step, the loss of every step and the final weights. This
script trains the same network from those numbers in PyTorch (torch.nn.functional's
cross_entropy, mean reduction, plain SGD) and checks that every array agrees within 1e-9
relative (to the largest magnitude in the array).

Exits 77 (skipped) when torch is not installed (Debian: apt-get install python3-torch) or when
the corten build lacks a gradient the network needs.
"""
import os
import sys

STEPS = 25
LR = 0.1
REL = 1e-9

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_parity_util import import_torch, run_corten  # noqa: E402

torch = import_torch()


def check(name, got, want, failures):
    """got (corten) against want (torch): max |got - want| <= REL * max |want|."""
    got = torch.tensor(got, dtype=torch.float64).reshape(want.shape)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    if err > REL * scale:
        failures.append("%s: max difference %.3g, %.3g relative" % (name, err, err / scale))
    return err / scale if scale > 0 else err


def main():
    c = run_corten()
    if not isinstance(c, dict):
        return c

    n, n_in = len(c["labels"]), len(c["x"]) // len(c["labels"])
    n_hid = len(c["fc1.b"])
    n_out = len(c["fc2.b"])
    x = torch.tensor(c["x"], dtype=torch.float64).reshape(n, n_in)
    labels = torch.tensor([int(v) for v in c["labels"]], dtype=torch.int64)
    shapes = {"fc1.w": (n_in, n_hid), "fc1.b": (n_hid,), "fc2.w": (n_hid, n_out),
              "fc2.b": (n_out,)}
    params = {k: torch.tensor(c[k], dtype=torch.float64).reshape(s).requires_grad_()
              for k, s in shapes.items()}

    failures = []
    worst = 0.0
    for step in range(STEPS):
        h = torch.relu(x @ params["fc1.w"] + params["fc1.b"])
        logits = h @ params["fc2.w"] + params["fc2.b"]
        rows = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
        loss = rows.mean()
        for p in params.values():
            p.grad = None
        loss.backward()
        if step == 0:
            worst = max(worst, check("logits", c["logits"], logits.detach(), failures))
            worst = max(worst, check("row_loss", c["row_loss"], rows.detach(), failures))
            for k, p in params.items():
                worst = max(worst, check(k + "@GRAD", c[k + "@GRAD"], p.grad, failures))
        worst = max(worst, check("loss.%d" % step, c["loss.%d" % step], loss.detach(),
                                 failures))
        with torch.no_grad():
            for p in params.values():
                p -= LR * p.grad
    for k, p in params.items():
        worst = max(worst, check(k + " after %d steps" % STEPS, c[k + ".final"], p.detach(),
                                 failures))

    if failures:
        print("corten and torch %s differ:" % torch.__version__)
        for f in failures:
            print("  " + f)
        return 1
    print("corten and torch %s agree over %d SGD steps (largest relative difference %.3g)"
          % (torch.__version__, STEPS, worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
