#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""corten against PyTorch: the layers (lookup_table_v2, layer_norm, gelu, dropout in test mode,
arg_max, batch_norm) from the same weights, in float64.

The C program tests/torch_parity_layers.c (its path in CORTEN_TORCH_PARITY, set by ctest) trains
a transformer-style block with adam for 20 steps and runs a batch_norm layer in training and
test mode; it writes its inputs, initial weights and results. This script computes the same in
PyTorch and checks that every array agrees within 1e-9 relative (to the largest magnitude in the
array) and that the predictions (arg_max) are equal.

PaddlePaddle's conventions, emulated here: lookup_table_v2's padding_idx row reads as zeros
(PyTorch's embedding returns the row itself, only its gradient is zero); batch_norm's momentum
weighs the old statistic (0.9 here is PyTorch's 0.1); its running variance is updated with the
biased batch variance (PyTorch uses the unbiased one, so the expected value is PyTorch's update
corrected by 0.1 (var_unbiased - var_biased)); SavedVariance is 1 / sqrt(var + epsilon).

Exits 77 (skipped) when torch is not installed (Debian: apt-get install python3-torch).
"""
import os
import sys

STEPS = 20
REL = 1e-9
B, T, V, D, H, C = 2, 5, 11, 8, 16, 4
BN_SHAPE = (4, 3, 2, 3)
EPS = 1e-5

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_parity_util import Checker, import_torch, run_corten  # noqa: E402

torch = import_torch()
F = torch.nn.functional


def f64(c, name, shape):
    return torch.tensor(c[name], dtype=torch.float64).reshape(shape)


def block(c, ck):
    shapes = {"emb.w": (V, D), "ln1.scale": (D,), "ln1.bias": (D,), "fc1.w": (D, H),
              "fc1.b": (H,), "fc2.w": (H, D), "fc2.b": (D,), "ln2.scale": (D,),
              "ln2.bias": (D,), "out.w": (D, C)}
    params = {k: f64(c, k, s).requires_grad_() for k, s in shapes.items()}
    ids = torch.tensor([int(v) for v in c["ids"]], dtype=torch.int64).reshape(B, T)
    labels = torch.tensor([int(v) for v in c["labels"]], dtype=torch.int64)
    opt = torch.optim.Adam(params.values(), lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    p = params
    for step in range(STEPS):
        emb = F.embedding(ids, p["emb.w"], padding_idx=0) * (ids != 0).unsqueeze(-1)
        h = F.layer_norm(emb, (D,), p["ln1.scale"], p["ln1.bias"], eps=EPS)
        f = F.dropout(F.gelu(h @ p["fc1.w"] + p["fc1.b"]), p=0.5, training=False)
        f = f @ p["fc2.w"] + p["fc2.b"]
        z = F.layer_norm(emb + f, (D,), p["ln2.scale"], p["ln2.bias"], eps=EPS)
        logits = (z @ p["out.w"]).reshape(B * T, C)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        if step == 0:
            ck.close("logits", c["logits"], logits)
            ck.equal("pred", c["pred"], logits.argmax(1))
            for k, t in p.items():
                ck.close(k + "@GRAD", c[k + "@GRAD"], t.grad)
        ck.close("loss.%d" % step, c["loss.%d" % step], loss)
        opt.step()
    for k, t in p.items():
        ck.close(k + " after %d steps" % STEPS, c[k + ".final"], t)


def batch_norm(c, ck):
    nc = BN_SHAPE[1]
    x = f64(c, "bn.x", BN_SHAPE).requires_grad_()
    r = f64(c, "bn.r", BN_SHAPE)
    scale = f64(c, "bn.scale", (nc,)).requires_grad_()
    bias = f64(c, "bn.bias", (nc,)).requires_grad_()
    mean0, var0 = f64(c, "bn.mean", (nc,)), f64(c, "bn.var", (nc,))
    rm, rv = mean0.clone(), var0.clone()
    y = F.batch_norm(x, rm, rv, scale, bias, training=True, momentum=0.1, eps=EPS)
    (y * r).mean().backward()
    dims = (0, 2, 3)
    var_b = x.detach().var(dims, unbiased=False)
    var_u = x.detach().var(dims, unbiased=True)
    ck.close("bn Y", c["bn.y"], y)
    ck.close("bn SavedMean", c["bn.saved_mean"], x.detach().mean(dims))
    ck.close("bn SavedVariance", c["bn.saved_var"], 1 / torch.sqrt(var_b + EPS))
    ck.close("bn MeanOut", c["bn.mean_out"], rm)
    var_out = rv - 0.1 * (var_u - var_b)
    ck.close("bn VarianceOut", c["bn.var_out"], var_out)
    ck.close("bn X@GRAD", c["bn.x@GRAD"], x.grad)
    ck.close("bn Scale@GRAD", c["bn.scale@GRAD"], scale.grad)
    ck.close("bn Bias@GRAD", c["bn.bias@GRAD"], bias.grad)
    y_test = F.batch_norm(x, rm, var_out, scale, bias, training=False, eps=EPS)
    ck.close("bn Y (test mode)", c["bn.y_test"], y_test)


def main():
    c = run_corten()
    if not isinstance(c, dict):
        return c
    ck = Checker(torch, REL)
    block(c, ck)
    batch_norm(c, ck)
    return ck.report("the block over %d adam steps and batch_norm" % STEPS)


if __name__ == "__main__":
    sys.exit(main())
