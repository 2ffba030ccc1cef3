# SPDX-License-Identifier: Apache-2.0
# python/corten/nn.py: corten.nn, programs built by layers (corten/nn.h).
"""Layers, losses and optimizers that write a program for you (corten/nn.h)::

    s = corten.Scope()
    nn = corten.nn.Builder(s, seed=0)
    h = nn.linear("x", 64, 128, act="relu")      # fc_0: parameters fc_0.w, fc_0.b
    loss = nn.cross_entropy(nn.linear(h, 128, 10), "label")
    nn.adam(loss, lr=1e-3)                       # backward pass, adam on every parameter
    nn.run_startup()                             # the initial weights and adam's state
    step = corten.Executor(nn.program, s)        # one training step a run

Initialisers are given as a kind and its numbers: "default" (PyTorch's: weights uniform in
+-1/sqrt(fan_in), biases zero), "xavier_uniform" (gain), "kaiming_uniform" (gain), ("normal",
mean, std), ("uniform", low, high), ("constant", value), "zeros".
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence, Union

from ._lib import check, check_ptr, cstr, lib, place
from .program import BorrowedProgram, Program
from .scope import Scope

_KINDS = ("default", "xavier_uniform", "kaiming_uniform", "normal", "uniform", "constant",
          "zeros")
Init = Union[None, str, Sequence[Any]]


class _Init(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("a", ctypes.c_double), ("b", ctypes.c_double)]


class _Opts(ctypes.Structure):
    _fields_ = [("act", ctypes.c_char_p), ("weight", _Init), ("bias", _Init),
                ("no_bias", ctypes.c_bool)]


class _Optimizer(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("lr", ctypes.c_double), ("mu", ctypes.c_double),
                ("weight_decay", ctypes.c_double), ("schedule", ctypes.c_char_p),
                ("warmup_steps", ctypes.c_int64), ("step_size", ctypes.c_int64),
                ("total_steps", ctypes.c_int64), ("gamma", ctypes.c_double),
                ("min_lr", ctypes.c_double)]


def _init(x: Init) -> _Init:
    if x is None:
        return _Init(0, 0.0, 0.0)
    kind, *numbers = (x,) if isinstance(x, str) else tuple(x)
    if kind not in _KINDS or len(numbers) > 2:
        raise ValueError("initialiser %r: give one of %s, with up to two numbers"
                         % (x, ", ".join(_KINDS)))
    numbers = [float(v) for v in numbers] + [0.0] * (2 - len(numbers))
    return _Init(_KINDS.index(kind), numbers[0], numbers[1])


class Builder:
    """A startup program (initialisers, run once) and a main program, built by layers over
    scope. Every layer returns its output variable's name (see corten/nn.h for the names)."""

    def __init__(self, scope: Scope, seed: int = 0) -> None:
        self.scope = scope
        self._h = check_ptr(lib.nn_new(scope._h, seed))
        self.startup: Program = BorrowedProgram(lib.nn_startup(self._h), self, "a builder")
        self.program: Program = BorrowedProgram(lib.nn_main(self._h), self, "a builder")

    def __del__(self, _free=lib.nn_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    @property
    def params(self) -> List[str]:
        """The trainable parameters so far, in the order the layers made them."""
        return [lib.nn_param(self._h, i).decode() for i in range(lib.nn_param_count(self._h))]

    def run_startup(self, device: str = "cpu") -> None:
        """Runs the startup program once: the parameters' and the optimizers' first values."""
        check(lib.nn_run_startup(self._h, place(device)))

    @staticmethod
    def _name(ptr: Optional[bytes]) -> str:
        check_ptr(ptr)
        return ptr.decode()

    def _opts(self, act, weight, bias, no_bias) -> _Opts:
        return _Opts(cstr(act, "act") if act else None, _init(weight), _init(bias), no_bias)

    # ---- Layers ---------------------------------------------------------------------------
    def linear(self, x: str, in_features: int, out_features: int, act: Optional[str] = None,
               weight: Init = None, bias: Init = None, no_bias: bool = False) -> str:
        """fc_k: x W + b over the last dim, then act ("relu", "tanh", "sigmoid", "gelu")."""
        o = self._opts(act, weight, bias, no_bias)
        return self._name(lib.nn_linear(self._h, cstr(x, "x"), in_features, out_features,
                                        ctypes.byref(o)))

    def conv2d(self, x: str, in_channels: int, out_channels: int, kernel: int, stride: int = 1,
               padding: int = 0, act: Optional[str] = None, weight: Init = None,
               bias: Init = None, no_bias: bool = False) -> str:
        """conv2d_k: an NCHW convolution with a kernel x kernel filter, then act."""
        o = self._opts(act, weight, bias, no_bias)
        return self._name(lib.nn_conv2d(self._h, cstr(x, "x"), in_channels, out_channels, kernel,
                                        stride, padding, ctypes.byref(o)))

    def pool2d(self, x: str, kernel: int, stride: Optional[int] = None, max: bool = True) -> str:
        """pool_k: max (or average) pooling, stride the kernel's size unless given."""
        return self._name(lib.nn_pool2d(self._h, cstr(x, "x"), max, kernel,
                                        kernel if stride is None else stride))

    def flatten(self, x: str) -> str:
        return self._name(lib.nn_flatten(self._h, cstr(x, "x")))

    def activation(self, x: str, act: str) -> str:
        return self._name(lib.nn_activation(self._h, cstr(x, "x"), cstr(act, "act")))

    def batch_norm(self, x: str, channels: int, training: bool = True) -> str:
        return self._name(lib.nn_batch_norm(self._h, cstr(x, "x"), channels, training))

    def layer_norm(self, x: str, n: int) -> str:
        return self._name(lib.nn_layer_norm(self._h, cstr(x, "x"), n))

    def embedding(self, ids: str, count: int, dim: int) -> str:
        return self._name(lib.nn_embedding(self._h, cstr(ids, "ids"), count, dim))

    def dropout(self, x: str, p: float, training: bool = True) -> str:
        return self._name(lib.nn_dropout(self._h, cstr(x, "x"), p, training))

    def lstm(self, x: str, in_features: int, hidden: int, batch_first: bool = False) -> str:
        """lstm_k over x [T, N, in] ([N, T, in] batch first): the output [T, N, hidden] (or
        [N, T, hidden]); the last hidden state is "lstm_k.h", [N, hidden]."""
        return self._name(lib.nn_lstm(self._h, cstr(x, "x"), in_features, hidden, batch_first))

    def gru(self, x: str, in_features: int, hidden: int, batch_first: bool = False) -> str:
        """gru_k, as lstm (PyTorch's GRU candidate: linear_before_reset)."""
        return self._name(lib.nn_gru(self._h, cstr(x, "x"), in_features, hidden, batch_first))

    # ---- Losses and optimizers ------------------------------------------------------------
    def cross_entropy(self, logits: str, labels: str) -> str:
        """loss_k: the mean softmax cross-entropy of logits [N, C] against int64 labels [N, 1]."""
        return self._name(lib.nn_cross_entropy(self._h, cstr(logits, "logits"),
                                               cstr(labels, "labels")))

    def mse(self, prediction: str, target: str) -> str:
        return self._name(lib.nn_mse(self._h, cstr(prediction, "prediction"),
                                     cstr(target, "target")))

    def _minimize(self, kind: int, loss: str, lr: float, mu: float, weight_decay: float,
                  schedule: Optional[str], warmup_steps: int, step_size: int, gamma: float,
                  total_steps: int, min_lr: float) -> None:
        opt = _Optimizer(kind, lr, mu, weight_decay,
                         cstr(schedule, "schedule") if schedule is not None else None,
                         warmup_steps, step_size, total_steps, gamma, min_lr)
        check(lib.nn_minimize(self._h, cstr(loss, "loss"), ctypes.byref(opt)))

    def sgd(self, loss: str, lr: float, *, weight_decay: float = 0.0,
            schedule: Optional[str] = None, warmup_steps: int = 0, step_size: int = 0,
            gamma: float = 0.0, total_steps: int = 0, min_lr: float = 0.0) -> None:
        """Minimises loss over every parameter made so far with sgd (lr in <sgd_k>.lr).

        weight_decay adds weight_decay * param to each gradient before its update (L2).
        schedule "step" (lr * gamma**(t // step_size)) or "cosine" (from lr down to min_lr
        over total_steps) runs an lr_schedule op each step, counting steps in <opt>.step;
        warmup_steps > 0 ramps the rate up linearly first (docs/ops.md, lr_schedule)."""
        self._minimize(0, loss, lr, 0.0, weight_decay, schedule, warmup_steps, step_size, gamma,
                       total_steps, min_lr)

    def momentum(self, loss: str, lr: float, mu: float = 0.9, *, weight_decay: float = 0.0,
                 schedule: Optional[str] = None, warmup_steps: int = 0, step_size: int = 0,
                 gamma: float = 0.0, total_steps: int = 0, min_lr: float = 0.0) -> None:
        """As sgd, with momentum mu (state <param>.velocity)."""
        self._minimize(1, loss, lr, mu, weight_decay, schedule, warmup_steps, step_size, gamma,
                       total_steps, min_lr)

    def adam(self, loss: str, lr: float = 1e-3, *, weight_decay: float = 0.0,
             schedule: Optional[str] = None, warmup_steps: int = 0, step_size: int = 0,
             gamma: float = 0.0, total_steps: int = 0, min_lr: float = 0.0) -> None:
        """As sgd, with adam (state <param>.moment1, .moment2, .beta1_pow, .beta2_pow)."""
        self._minimize(2, loss, lr, 0.0, weight_decay, schedule, warmup_steps, step_size, gamma,
                       total_steps, min_lr)


__all__ = ["Builder"]
