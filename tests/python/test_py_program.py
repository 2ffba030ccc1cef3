# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_program.py: scopes, ops, programs, the executor and training from Python.
"""A program built and run from Python on NumPy's memory, and one SGD step trained through
Program.append_backward, against NumPy's own arithmetic."""
import pytest

import corten
from conftest import np


def test_scope_holds_variables_by_name():
    s = corten.Scope()
    s["x"] = np.arange(3, dtype=np.float32)
    kid = s.kid()
    kid["y"] = np.ones(2, np.int64)
    assert "x" in kid and "y" in kid and "y" not in s
    assert kid.names() == ["y"] and s.names() == ["x"] and len(s) == 1
    assert np.from_dlpack(kid["x"]).tolist() == [0, 1, 2]  # found in the parent
    kid["x"] = np.zeros(1, np.float32)  # shadows it
    assert kid["x"].shape == (1,) and s["x"].shape == (3,)
    s.rename("x", "z")
    assert s.names() == ["z"]
    del s["z"]
    assert s.names() == [] and s.get("z") is None and kid.parent is s


def test_a_program_runs_on_numpy_memory():
    s = corten.Scope()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.ones((3, 2), np.float32)
    s["x"], s["w"], s["b"] = x, w, np.array([10.0, 20.0], np.float32)
    p = corten.Program()
    p.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "xw"})
    p.append("elementwise_add", inputs={"X": "xw", "Y": "b"}, outputs={"Out": "y"})
    p.append(corten.Op("relu", inputs={"X": "y"}, outputs={"Out": "out"}))
    assert len(p) == 3
    e = corten.Executor(p, s)
    e.run()
    assert np.from_dlpack(s["out"]).tolist() == [[13, 23], [22, 32]]
    x[0, 0] = 100.0  # the scope reads x's memory: the next run sees the change
    e.run()
    assert np.from_dlpack(s["out"]).tolist() == [[113, 123], [22, 32]]


def test_one_sgd_step_matches_numpy():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3)).astype(np.float64)
    target = rng.standard_normal((4, 1)).astype(np.float64)
    w0 = rng.standard_normal((3, 1)).astype(np.float64)
    s = corten.Scope()
    s["x"], s["t"], s["w"] = x, target, w0.copy()
    s["lr"] = np.array([0.1])
    p = corten.Program()
    p.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "y"})
    p.append("elementwise_sub", inputs={"X": "y", "Y": "t"}, outputs={"Out": "d"})
    p.append("elementwise_mul", inputs={"X": "d", "Y": "d"}, outputs={"Out": "d2"})
    p.append("mean", inputs={"X": "d2"}, outputs={"Out": "loss"})
    assert p.append_backward("loss", ["w"]) == ["w@GRAD"]
    p.append("sgd", inputs={"Param": "w", "Grad": "w@GRAD", "LearningRate": "lr"},
             outputs={"ParamOut": "w"})
    corten.Executor(p, s).run()
    grad = 2.0 / 4 * x.T @ (x @ w0 - target)
    np.testing.assert_allclose(np.from_dlpack(s["w@GRAD"]), grad, rtol=1e-12)
    np.testing.assert_allclose(np.from_dlpack(s["w"]), w0 - 0.1 * grad, rtol=1e-12)
    assert float(np.from_dlpack(s["loss"])) == pytest.approx(np.mean((x @ w0 - target) ** 2))


def test_attributes_of_every_type():
    s = corten.Scope()
    corten.Op("fill_constant", outputs={"Out": "c"}, shape=[2, 2], value=1.5,
              dtype=corten.dtype_id("float64")).run(s)
    assert np.from_dlpack(s["c"]).tolist() == [[1.5, 1.5], [1.5, 1.5]]
    corten.Op("scale", inputs={"X": "c"}, outputs={"Out": "d"}, scale=2.0, bias=1.0,
              bias_after_scale=False).run(s)
    assert np.from_dlpack(s["d"]).tolist() == [[5.0, 5.0], [5.0, 5.0]]
    corten.Op("transpose", inputs={"X": "d"}, outputs={"Out": "e"}, axis=[1, 0]).run(s)
    assert s["e"].shape == (2, 2)


def test_tensors_outlive_their_scope():
    s = corten.Scope()
    corten.Op("fill_constant", outputs={"Out": "c"}, shape=[3], value=4.0).run(s)
    t = s["c"]
    del s
    assert np.from_dlpack(t).tolist() == [4.0, 4.0, 4.0]
