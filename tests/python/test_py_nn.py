# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_nn.py: corten.nn, programs built by layers from Python.
"""corten.nn.Builder: the layers' names and parameters, initialisers given as kinds, a small
network trained by the builder's optimizer, and errors that name the argument."""
import pytest

import corten
from conftest import np


def test_layers_name_their_outputs_and_parameters():
    s = corten.Scope()
    nn = corten.nn.Builder(s, seed=1)
    c = nn.conv2d("img", 1, 4, 3, padding=1, act="relu")
    p = nn.pool2d(nn.batch_norm(c, 4), 2)
    y = nn.linear(nn.flatten(p), 16, 2, weight=("normal", 0.0, 0.02), bias=("constant", 0.5))
    assert (c, p, y) == ("conv2d_0.act", "pool_0.out", "fc_0.out")
    assert nn.params == ["conv2d_0.w", "conv2d_0.b", "batch_norm_0.scale", "batch_norm_0.bias",
                         "fc_0.w", "fc_0.b"]
    nn.run_startup()
    assert np.asarray(s["fc_0.b"]).tolist() == [0.5, 0.5]
    assert abs(float(np.asarray(s["fc_0.w"]).std()) - 0.02) < 0.01
    assert [op.type for op in nn.startup][:2] == ["uniform_random", "fill_constant"]


def test_a_small_network_learns_xor_with_adam():
    s = corten.Scope()
    s["x"] = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    s["label"] = np.array([[0], [1], [1], [0]], np.int64)
    nn = corten.nn.Builder(s, seed=3)
    h = nn.linear("x", 2, 16, act="tanh")
    loss = nn.cross_entropy(nn.linear(h, 16, 2), "label")
    nn.adam(loss, lr=0.05)
    nn.run_startup()
    step = corten.Executor(nn.program, s)
    for _ in range(300):
        step.run()
    assert float(s[loss]) < 0.05
    assert np.asarray(s["fc_1.out"]).argmax(1).tolist() == [0, 1, 1, 0]


def test_errors_name_the_argument():
    nn = corten.nn.Builder(corten.Scope())
    with pytest.raises(corten.Error, match="size 2 is 0"):
        nn.linear("x", 3, 0)
    with pytest.raises(corten.Error, match="activation 'swish'"):
        nn.linear("x", 3, 2, act="swish")
    with pytest.raises(ValueError, match="xavier_uniform"):
        nn.linear("x", 3, 2, weight="glorot")
    with pytest.raises(corten.Error, match="no trainable parameter"):
        nn.sgd("loss", 0.1)
    assert len(nn.program) == 0 and nn.params == []


def test_an_lstm_layer_feeds_a_linear_head():
    s = corten.Scope()
    s["x"] = np.random.RandomState(0).randn(4, 6, 3).astype(np.float32)  # batch first
    nn = corten.nn.Builder(s, seed=2)
    out = nn.lstm("x", 3, 5, batch_first=True)
    y = nn.linear("lstm_0.h", 5, 2)
    nn.run_startup()
    corten.Executor(nn.program, s).run()
    assert out == "lstm_0.out" and s[out].shape == (4, 6, 5)
    assert s["lstm_0.h"].shape == (4, 5) and s[y].shape == (4, 2)
    assert nn.params == ["lstm_0.w", "lstm_0.r", "lstm_0.b", "fc_0.w", "fc_0.b"]
    # the last hidden state is the output's last step
    np.testing.assert_array_equal(np.asarray(s["lstm_0.h"]), np.asarray(s[out])[:, -1])


def test_a_schedule_and_weight_decay_from_python():
    s = corten.Scope()
    s["x"] = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    s["label"] = np.array([[0], [1], [1], [0]], np.int64)
    nn = corten.nn.Builder(s, seed=3)
    loss = nn.cross_entropy(nn.linear(nn.linear("x", 2, 16, act="tanh"), 16, 2), "label")
    nn.adam(loss, lr=0.05, weight_decay=1e-4, schedule="cosine", total_steps=100, min_lr=0.005,
            warmup_steps=10)
    assert [op.type for op in nn.program].count("lr_schedule") == 1
    nn.run_startup()
    step = corten.Executor(nn.program, s)
    step.run()
    assert float(s["adam_0.lr"]) == pytest.approx(0.005, rel=1e-6)  # warm-up: 0.05 * 1 / 10
    for _ in range(299):
        step.run()
    assert int(s["adam_0.step"]) == 300
    assert float(s["adam_0.lr"]) == pytest.approx(0.005, rel=1e-6)  # the cosine's floor
    assert float(s[loss]) < 0.1
    with pytest.raises(corten.Error, match="schedule \"linear\""):
        corten.nn.Builder(corten.Scope()).adam("loss", schedule="linear")
