#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""corten against PyTorch: the same networks from the same initial weights, trained alike.

The C program tests/torch_parity.c (its path in CORTEN_TORCH_PARITY, set by ctest) trains a
network in float64 and writes its inputs, initial weights, the logits, per-row losses and
gradients of the first step, the loss of every step and the final weights: an MLP for 25 SGD
steps ("mlp"), and a CNN (conv2d, batch_norm in training mode, relu, max and avg pool2d, a grouped
strided conv2d, matmul) for 20 adam steps ("cnn"). This script trains the same networks from
those numbers in PyTorch (torch.nn.functional's conv2d, batch_norm, max_pool2d, avg_pool2d,
cross_entropy with mean reduction; plain SGD, torch.optim.Adam) and checks that every array
agrees within 1e-9 relative (to the largest magnitude in the array).

batch_norm follows PaddlePaddle (docs/design/layers.md): its momentum 0.9 weighs the old
statistic (PyTorch's 0.1); the running variance is updated with the biased batch variance
(PyTorch's update uses the unbiased one, so each step's expected value is PyTorch's corrected by
0.1 (var_unbiased - var_biased)); SavedVariance is 1 / sqrt(var + epsilon).

Exits 77 (skipped) when torch is not installed (Debian: apt-get install python3-torch) or when
the corten build lacks a gradient the network needs.
"""
import os
import sys

REL = 1e-9
EPS = 1e-5

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_parity_util import SKIP, Checker, import_torch, run_corten  # noqa: E402

torch = import_torch()
F = torch.nn.functional


def tensor(c, name, shape):
    return torch.tensor(c[name], dtype=torch.float64).reshape(shape)


def mlp(c, ck):
    """The MLP's parameters, forward function, optimizer, step count, and what to do after each
    step and after the last (nothing)."""
    n, n_in = len(c["labels"]), len(c["x"]) // len(c["labels"])
    n_hid, n_out = len(c["fc1.b"]), len(c["fc2.b"])
    shapes = {"fc1.w": (n_in, n_hid), "fc1.b": (n_hid,), "fc2.w": (n_hid, n_out),
              "fc2.b": (n_out,)}
    params = {k: tensor(c, k, s).requires_grad_() for k, s in shapes.items()}
    x = tensor(c, "x", (n, n_in))

    def forward(step):
        h = torch.relu(x @ params["fc1.w"] + params["fc1.b"])
        return h @ params["fc2.w"] + params["fc2.b"]
    opt = torch.optim.SGD(params.values(), lr=0.1)
    return params, forward, opt, 25, lambda: None, lambda: None


def cnn(c, ck):
    """The CNN of torch_parity.c's comment, in torch.nn.functional; the running statistics are
    checked after the last step (the returned finish)."""
    n = len(c["labels"])
    shapes = {"conv.w": (4, 2, 3, 3), "bn.scale": (4,), "bn.bias": (4,),
              "conv2.w": (6, 2, 3, 3), "fc.w": (54, 5), "fc.b": (5,)}
    params = {k: tensor(c, k, s).requires_grad_() for k, s in shapes.items()}
    x = tensor(c, "x", (n, 2, 8, 8))
    mean, var = tensor(c, "bn.mean", (4,)), tensor(c, "bn.var", (4,))
    p = params
    pending = []

    def forward(step):
        c1 = F.conv2d(x, p["conv.w"], padding=1)
        dims = (0, 2, 3)
        var_b = c1.detach().var(dims, unbiased=False)
        var_u = c1.detach().var(dims, unbiased=True)
        h = F.batch_norm(c1, mean, var, p["bn.scale"], p["bn.bias"], training=True,
                         momentum=0.1, eps=EPS)
        # PaddlePaddle's running variance takes the biased variance: corrected after the step
        # (backward needs the tensor unchanged)
        pending.append(0.1 * (var_u - var_b))
        if step == 0:
            ck.close("bn Y", c["bn.y"], h)
            ck.close("bn SavedMean", c["bn.saved_mean"], c1.detach().mean(dims))
            ck.close("bn SavedVariance", c["bn.saved_var"], 1 / torch.sqrt(var_b + EPS))
        h = F.max_pool2d(torch.relu(h), 2, 2)
        h = F.conv2d(h, p["conv2.w"], stride=2, padding=1, groups=2)
        h = F.avg_pool2d(h, 2, 1, padding=1, count_include_pad=False)
        return h.reshape(n, -1) @ p["fc.w"] + p["fc.b"]

    def after_step():
        var.sub_(pending.pop())

    def finish():
        ck.close("bn running mean after 20 steps", c["bn.mean.final"], mean)
        ck.close("bn running variance after 20 steps", c["bn.var.final"], var)
    opt = torch.optim.Adam(params.values(), lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    return params, forward, opt, 20, after_step, finish


def compare(net, c):
    """Trains net in torch from c's numbers; its Checker."""
    ck = Checker(torch, REL)
    labels = torch.tensor([int(v) for v in c["labels"]], dtype=torch.int64)
    params, forward, opt, steps, after_step, finish = (mlp if net == "mlp" else cnn)(c, ck)
    for step in range(steps):
        logits = forward(step)
        rows = F.cross_entropy(logits, labels, reduction="none")
        loss = rows.mean()
        opt.zero_grad()
        loss.backward()
        if step == 0:
            ck.close("logits", c["logits"], logits)
            ck.close("row_loss", c["row_loss"], rows)
            for k, t in params.items():
                ck.close(k + "@GRAD", c[k + "@GRAD"], t.grad)
        ck.close("loss.%d" % step, c["loss.%d" % step], loss)
        opt.step()
        after_step()
    for k, t in params.items():
        ck.close(k + " after %d steps" % steps, c[k + ".final"], t)
    finish()
    return ck, steps


def main():
    status, compared = 0, 0
    for net in ("mlp", "cnn"):
        c = run_corten(net)
        if not isinstance(c, dict):
            status = status or (0 if c == SKIP else c)
            continue
        compared += 1
        ck, steps = compare(net, c)
        status = ck.report("%s over %d steps" % (net, steps)) or status
    return status if status or compared else SKIP


if __name__ == "__main__":
    sys.exit(main())
