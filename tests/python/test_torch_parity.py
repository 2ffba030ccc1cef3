#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""corten against PyTorch: the same networks from the same initial weights, trained alike.

The C program tests/torch_parity.c (its path in CORTEN_TORCH_PARITY, set by ctest) trains a
network in float64 and writes its inputs, initial weights, the logits, per-row losses and
gradients of the first step, the loss of every step and the final weights: an MLP for 25 SGD
steps ("mlp"), and a CNN (conv2d, relu, max and avg pool2d, a grouped strided conv2d, matmul)
for 20 adam steps ("cnn"). This script trains the same networks from those numbers in PyTorch
(torch.nn.functional's conv2d, max_pool2d, avg_pool2d, cross_entropy with mean reduction;
plain SGD, torch.optim.Adam) and checks that every array agrees within 1e-9 relative (to the
largest magnitude in the array).

Exits 77 (skipped) when torch is not installed (Debian: apt-get install python3-torch) or when
the corten build lacks a gradient the network needs.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77
REL = 1e-9

try:
    import torch
except ImportError:
    print("SKIPPED: torch is not installed for %s (Debian: apt-get install python3-torch)"
          % sys.executable)
    sys.exit(SKIP)


def read_arrays(path):
    """The arrays of the C side's file: name -> list of numbers."""
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


def check(name, got, want, failures):
    """got (corten) against want (torch): max |got - want| <= REL * max |want|."""
    got = torch.tensor(got, dtype=torch.float64).reshape(want.shape)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    if err > REL * scale:
        failures.append("%s: max difference %.3g, %.3g relative" % (name, err, err / scale))
    return err / scale if scale > 0 else err


def run_corten(prog, net):
    """Runs the C side for net; its arrays, or an exit status."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "corten.txt")
        run = subprocess.run([prog, out, net], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        sys.stdout.write(run.stdout)
        if run.returncode == SKIP:
            return SKIP
        if run.returncode != 0:
            print("torch_parity %s failed with status %d" % (net, run.returncode))
            return 1
        return read_arrays(out)


def tensor(c, name, shape):
    return torch.tensor(c[name], dtype=torch.float64).reshape(shape)


def mlp(c):
    """The MLP's inputs, parameters, forward function, optimizer and step count."""
    n, n_in = len(c["labels"]), len(c["x"]) // len(c["labels"])
    n_hid, n_out = len(c["fc1.b"]), len(c["fc2.b"])
    shapes = {"fc1.w": (n_in, n_hid), "fc1.b": (n_hid,), "fc2.w": (n_hid, n_out),
              "fc2.b": (n_out,)}
    params = {k: tensor(c, k, s).requires_grad_() for k, s in shapes.items()}
    x = tensor(c, "x", (n, n_in))

    def forward():
        h = torch.relu(x @ params["fc1.w"] + params["fc1.b"])
        return h @ params["fc2.w"] + params["fc2.b"]
    return params, forward, torch.optim.SGD(params.values(), lr=0.1), 25


def cnn(c):
    """The CNN of torch_parity.c's comment, in torch.nn.functional."""
    n = len(c["labels"])
    shapes = {"conv.w": (4, 2, 3, 3), "conv.b": (4, 1, 1), "conv2.w": (6, 2, 3, 3),
              "fc.w": (54, 5), "fc.b": (5,)}
    params = {k: tensor(c, k, s).requires_grad_() for k, s in shapes.items()}
    x = tensor(c, "x", (n, 2, 8, 8))
    F = torch.nn.functional

    def forward():
        h = torch.relu(F.conv2d(x, params["conv.w"], padding=1) + params["conv.b"])
        h = F.max_pool2d(h, 2, 2)
        h = F.conv2d(h, params["conv2.w"], stride=2, padding=1, groups=2)
        h = F.avg_pool2d(h, 2, 1, padding=1, count_include_pad=False)
        return h.reshape(n, -1) @ params["fc.w"] + params["fc.b"]
    opt = torch.optim.Adam(params.values(), lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    return params, forward, opt, 20


def compare(net, c):
    """Trains net in torch from c's numbers; the failures and the largest difference."""
    labels = torch.tensor([int(v) for v in c["labels"]], dtype=torch.int64)
    params, forward, opt, steps = (mlp if net == "mlp" else cnn)(c)
    failures = []
    worst = 0.0
    for step in range(steps):
        logits = forward()
        rows = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
        loss = rows.mean()
        opt.zero_grad()
        loss.backward()
        if step == 0:
            worst = max(worst, check("logits", c["logits"], logits.detach(), failures))
            worst = max(worst, check("row_loss", c["row_loss"], rows.detach(), failures))
            for k, p in params.items():
                worst = max(worst, check(k + "@GRAD", c[k + "@GRAD"], p.grad, failures))
        worst = max(worst, check("loss.%d" % step, c["loss.%d" % step], loss.detach(),
                                 failures))
        opt.step()
    for k, p in params.items():
        worst = max(worst, check(k + " after %d steps" % steps, c[k + ".final"], p.detach(),
                                 failures))
    return failures, worst, steps


def main():
    prog = os.environ.get("CORTEN_TORCH_PARITY")
    if not prog:
        print("CORTEN_TORCH_PARITY is not set: give the path of the torch_parity program "
              "(ctest sets it)")
        return 1
    status, compared = 0, 0
    for net in ("mlp", "cnn"):
        c = run_corten(prog, net)
        if not isinstance(c, dict):
            status = status or (0 if c == SKIP else c)
            continue
        compared += 1
        failures, worst, steps = compare(net, c)
        if failures:
            print("%s: corten and torch %s differ:" % (net, torch.__version__))
            for f in failures:
                print("  " + f)
            status = 1
            continue
        print("%s: corten and torch %s agree over %d steps (largest relative difference %.3g)"
              % (net, torch.__version__, steps, worst))
    return status if status or compared else SKIP


if __name__ == "__main__":
    sys.exit(main())
