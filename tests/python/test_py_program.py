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


def test_prune_keeps_the_forward_part_of_a_training_step():
    s = corten.Scope()
    s["x"], s["w"] = np.ones((2, 3), np.float32), np.full((3, 1), 0.5, np.float32)
    s["lr"] = np.array([0.1], np.float32)
    p = corten.Program()
    p.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "y"})
    p.append("mean", inputs={"X": "y"}, outputs={"Out": "loss"})
    p.append_backward("loss", ["w"])
    p.append("sgd", inputs={"Param": "w", "Grad": "w@GRAD", "LearningRate": "lr"},
             outputs={"ParamOut": "w"})
    assert p.prune("loss") is p and len(p) == 2
    corten.Executor(p, s).run()
    assert float(np.from_dlpack(s["loss"])) == 1.5
    assert np.from_dlpack(s["w"]).tolist() == [[0.5]] * 3  # the sgd op went
    with pytest.raises(corten.Error) as e:
        p.prune(["loss", "los"])
    assert e.value.status == "CT_ERR_NOT_FOUND" and "'los'" in e.value.message
    assert len(p) == 2


def test_a_program_lists_its_ops_and_their_wiring():
    p = corten.Program()
    p.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "xw"})
    p.append("concat", inputs={"X": ["xw", "b"]}, outputs={"Out": "y"}, axis=1)
    assert [op.type for op in p] == ["matmul", "concat"]
    assert p[0].inputs == {"X": ["x"], "Y": ["w"]} and p[0].outputs == {"Out": ["xw"]}
    assert p[-1].inputs == {"X": ["xw", "b"]}
    assert repr(p[1]) == "concat(X=[xw, b]) -> Out=y"
    assert p[1].attrs == {"axis": 1} and p[0].attrs["transpose_x"] is False
    assert repr(p) == ("<corten.Program of 2 ops\n  matmul(X=x, Y=w) -> Out=xw\n"
                       "  concat(X=[xw, b]) -> Out=y>")
    with pytest.raises(IndexError):
        p[2]
    with pytest.raises(TypeError):
        p["matmul"]


def test_the_memory_report_names_who_holds_what():
    s = corten.Scope()
    s["a"] = np.zeros((4, 4), np.float32)  # NumPy's memory, lent: external
    kid = s.kid()
    p = corten.Program()
    p.append("relu", inputs={"X": "a"}, outputs={"Out": "r"})
    p.append("reshape", inputs={"X": "r"}, outputs={"Out": "flat"}, shape=[16])
    corten.Executor(p, kid).run()
    report = s.memory_report()
    assert [e["path"] for e in report] == ["a", "kid0/flat", "kid0/r"]
    a, flat, r = report
    assert a["holding"] == "external" and a["shape"] == (4, 4) and a["dtype"] == "float32"
    assert flat["holding"] == r["holding"] == "shared" and flat["shared_with"] == ["kid0/r"]
    assert r["bytes"] == 64 and r["device"] == "cpu" and r["block"] == flat["block"]


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


def _conv_bias_relu(s):
    """y = relu(conv2d(x, w) + reshape(b, [-1, 1, 1])) over scope s; the program."""
    rng = np.random.RandomState(0)
    s["x"] = rng.randn(1, 2, 5, 5).astype(np.float32)
    s["w"] = rng.randn(3, 2, 3, 3).astype(np.float32)
    s["b"] = rng.randn(3).astype(np.float32)
    p = corten.Program()
    p.append("conv2d", inputs={"Input": "x", "Filter": "w"}, outputs={"Output": "c"})
    p.append("reshape", inputs={"X": "b"}, outputs={"Out": "b3"}, shape=[-1, 1, 1])
    p.append("elementwise_add", inputs={"X": "c", "Y": "b3"}, outputs={"Out": "cb"})
    p.append("relu", inputs={"X": "cb"}, outputs={"Out": "y"})
    return p


def test_executor_options_optimize_and_keep():
    plain, fused, kept = corten.Scope(), corten.Scope(), corten.Scope()
    p = _conv_bias_relu(plain)
    corten.Executor(p, plain).run()
    _conv_bias_relu(fused)
    corten.Executor(p, fused, optimize=True).run()
    want = np.from_dlpack(plain["y"]).copy()
    assert np.from_dlpack(fused["y"]).tobytes() == want.tobytes()
    with pytest.raises(corten.Error, match="holds nothing"):
        fused["cb"]  # fused away: never even made
    _conv_bias_relu(kept)
    corten.Executor(p, kept, optimize=True, keep=["cb"]).run()
    assert np.from_dlpack(kept["cb"]).tobytes() == np.from_dlpack(plain["cb"]).tobytes()
    with pytest.raises(TypeError):
        corten.Executor(p, kept, keep=[1])


def test_threads_are_set_and_read():
    old = corten.get_num_threads()
    try:
        corten.set_num_threads(2)
        assert corten.get_num_threads() == 2
        corten.set_num_threads(0)
        assert corten.get_num_threads() >= 1
        with pytest.raises(ValueError, match="give 0"):
            corten.set_num_threads(-1)
        with pytest.raises(TypeError):
            corten.set_num_threads(1.5)
    finally:
        corten.set_num_threads(old)


def test_profile_table_and_trace(tmp_path):
    import json
    s = corten.Scope()
    p = _conv_bias_relu(s)
    e = corten.Executor(p, s)
    with corten.profile() as prof:
        e.run()
        e.run()
    assert len(prof) == 2 * 4 + 2  # four ops and one run event, twice
    table = prof.table(sort="count")
    assert "conv2d" in table and "2 executor runs" in table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    slices = [ev for ev in events if ev["ph"] == "X"]
    assert len(slices) == 10 and all({"ts", "dur", "pid", "tid"} <= set(ev) for ev in slices)
    with pytest.raises(ValueError, match="give one of"):
        prof.table(sort="size")


def test_profile_events_and_the_memory_picture(tmp_path):
    s = corten.Scope()
    p = _conv_bias_relu(s)
    with corten.profile() as prof:
        corten.Executor(p, s).run()
    events = prof.events()
    assert [ev["type"] for ev in events] == ["conv2d", "reshape", "elementwise_add", "relu",
                                             "executor_run"]
    assert events[0]["label"] == "c" and events[0]["bytes"] == 3 * 3 * 3 * 4
    assert events[0]["allocs"] == 1 and events[3]["label"] == "y" and events[3]["bytes"] == 108
    # on the host: no device time
    assert all(ev["device_start_us"] is None and ev["device_dur_us"] is None for ev in events)
    try:
        import matplotlib  # noqa: F401  (an optional dependency)
    except ImportError:
        with pytest.raises(ImportError, match="apt-get install python3-matplotlib"):
            prof.plot_memory(tmp_path / "memory.png")
        return
    prof.plot_memory(tmp_path / "memory.png")
    assert (tmp_path / "memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_op_types_and_their_slots_are_listed():
    names = corten.ops()
    assert "matmul" in names and names == sorted(names)
    info = corten.op_info("adam")
    assert [s["name"] for s in info["inputs"]] == ["Param", "Grad", "LearningRate", "Moment1",
                                                    "Moment2", "Beta1Pow", "Beta2Pow"]
    assert {a["name"]: a["default"] for a in info["attributes"]} == {
        "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-08}
    assert "float32" in info["kernels"]["cpu"] and info["gradient"] is False
    assert "Beta1Pow at beta1" in info["doc"]
    assert corten.op_info("reshape")["kernels"]["cpu"] == ["any"]
    assert corten.op_info("matmul")["gradient"] is True
    with pytest.raises(corten.Error, match="near: matmul"):
        corten.op_info("matmull")
