# SPDX-License-Identifier: Apache-2.0
# tests/python/models_onnx_export.py: ONNX export (corten.onnx.save) of the models of
# models_onnx.py: imported, saved, checked by onnx's checker, run by onnxruntime, imported again.
"""ONNX export parity: resnet18, mobilenet_v2, a TransformerEncoder and an LSTM classifier
(models_onnx.py exports them from PyTorch into the build tree) are imported into corten, run once
and saved with corten.onnx.save. Every export whose ops are all standard ONNX passes
``onnx.checker.check_model(full_check=True)`` and runs in onnxruntime with outputs equal to
corten's within 1e-5 relative; every export, standard or not, imported again gives corten's
outputs bit for bit. Run by ctest `python_onnx_models` in the `onnx` environment."""
import bisect
import json
import os
import subprocess

import pytest

import corten
from conftest import np
from models_onnx import _exported

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

NAMES = ["resnet18", "mobilenet_v2", "transformer", "lstm"]


def _saved(name, tmp_path, batch=2):
    """The model imported and run on a random batch, saved to tmp_path: (path of the export,
    the input, corten's output)."""
    path, shape = _exported(name)
    m = corten.onnx.load(path)
    x = np.random.RandomState(7).randn(batch, *shape).astype(np.float32)
    y = np.from_dlpack(m.run({"x": x})["y"]).copy()
    out = str(tmp_path / (name + "-export.onnx"))
    corten.onnx.save(out, m.program, m.scope, inputs=m.inputs, outputs=m.outputs)
    return out, x, y


def _standard(model):
    return all(n.domain in ("", "ai.onnx") for n in model.graph.node)


@pytest.mark.parametrize("name", NAMES)
def test_import_export_import_gives_the_same_bits(name, tmp_path):
    out, x, y = _saved(name, tmp_path)
    again = np.from_dlpack(corten.onnx.load(out).run({"x": x})["y"])
    assert again.shape == y.shape
    assert again.tobytes() == y.tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_standard_exports_pass_the_checker_and_run_in_onnxruntime(name, tmp_path):
    out, x, y = _saved(name, tmp_path)
    model = onnx.load(out)
    if not _standard(model):
        kept = sorted({n.op_type for n in model.graph.node if n.domain == "ai.corten"})
        pytest.skip("%s keeps ops of ai.corten: %s" % (name, ", ".join(kept)))
    onnx.checker.check_model(model, full_check=True)
    want = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert want.shape == y.shape
    scale = max(float(np.abs(y).max()), 1e-30)
    assert float(np.abs(want - y).max()) <= 1e-5 * scale


@pytest.mark.parametrize("name", ["lstm", "transformer"])
def test_the_round_trip_tool_finds_the_same_bits(name):
    """`corten onnx MODEL --round-trip` loads, saves, loads again and compares bit for bit."""
    tool = os.environ.get("CORTEN_TOOL")
    if not tool:
        pytest.skip("CORTEN_TOOL (the corten tool of the build) is not set")
    path, _ = _exported(name)
    out = subprocess.run([tool, "onnx", path, "--round-trip"], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert "every output identical, bit for bit" in out.stdout


def test_a_small_program_saves_as_standard_onnx(tmp_path):
    """A program built in Python (matmul, bias add, relu, softmax) is standard ONNX that the
    checker accepts and onnxruntime computes."""
    s = corten.Scope()
    w = np.random.RandomState(1).randn(4, 3).astype(np.float32)
    b = np.random.RandomState(2).randn(3).astype(np.float32)
    x = np.random.RandomState(3).randn(5, 4).astype(np.float32)
    for n, v in (("W", w), ("b", b), ("x", x)):
        s[n] = v
    p = corten.Program()
    p.append(corten.Op("matmul", inputs={"X": "x", "Y": "W"}, outputs={"Out": "xw"}))
    p.append(corten.Op("elementwise_add", inputs={"X": "xw", "Y": "b"}, outputs={"Out": "h"}))
    p.append(corten.Op("relu", inputs={"X": "h"}, outputs={"Out": "r"}))
    p.append(corten.Op("softmax", inputs={"X": "r"}, outputs={"Out": "y"}, axis=-1))
    corten.Executor(p, s).run()
    y = np.from_dlpack(s["y"]).copy()
    out = str(tmp_path / "small.onnx")
    corten.onnx.save(out, p, s, inputs=["x"], outputs=["y"])
    model = onnx.load(out)
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add", "Relu", "Softmax"]
    assert sorted(t.name for t in model.graph.initializer) == ["W", "b"]
    onnx.checker.check_model(model, full_check=True)
    want = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(want, y, rtol=1e-5, atol=1e-7)


def test_an_undefined_variable_is_refused_and_leaves_no_file(tmp_path):
    s = corten.Scope()
    s["x"] = np.ones((2, 2), np.float32)
    p = corten.Program()
    p.append(corten.Op("matmul", inputs={"X": "x", "Y": "missing"}, outputs={"Out": "y"}))
    out = tmp_path / "bad.onnx"
    with pytest.raises(corten.Error) as e:
        corten.onnx.save(str(out), p, s, inputs=["x"], outputs=["y"])
    assert "'missing'" in e.value.message
    assert os.listdir(tmp_path) == []


def test_dynamic_axes_make_a_batch_symbolic(tmp_path):
    """corten.onnx.save's dynamic_axes: a program run at batch 5 saves a model onnxruntime runs
    at batch 2; a name for a variable that is not an input or output is refused."""
    s = corten.Scope()
    s["x"], s["W"] = np.ones((5, 4), np.float32), np.full((4, 3), 0.5, np.float32)
    p = corten.Program()
    p.append(corten.Op("matmul", inputs={"X": "x", "Y": "W"}, outputs={"Out": "y"}))
    corten.Executor(p, s).run()
    out = str(tmp_path / "dyn.onnx")
    corten.onnx.save(out, p, s, inputs=["x"], outputs=["y"],
                     dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    model = onnx.load(out)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    onnx.checker.check_model(model, full_check=True)
    y = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((2, 4), np.float32)})[0]
    assert y.tolist() == [[2.0] * 3] * 2
    with pytest.raises(corten.Error) as e:
        corten.onnx.save(str(tmp_path / "bad.onnx"), p, s, inputs=["x"], outputs=["y"],
                         dynamic_axes={"W": {0: "N"}})
    assert e.value.status == "CT_ERR_INVALID_ARGUMENT" and "'W'" in e.value.message
    assert sorted(os.listdir(tmp_path)) == ["dyn.onnx"]


def _example(var, *args):
    """Runs the example program named by environment variable var with args; its stdout."""
    prog = os.environ.get(var)
    if not prog:
        pytest.skip("%s (an example program of the build) is not set" % var)
    for a in args:
        if a.endswith(".params") and not os.path.exists(a):
            pytest.skip("%s is not there (the shared data folder)" % a)
    run = subprocess.run([prog] + list(args), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _digits():
    d = corten.load_params(os.environ.get("CORTEN_DIGITS", ""))
    images = np.from_dlpack(d["images"]).astype(np.float32).reshape(-1, 1, 8, 8) / 16
    return images, np.from_dlpack(d["labels"]).astype(np.int64)


def _same_in_both(path, feeds):
    """onnx's checker accepts the file, onnxruntime and corten give the same outputs (1e-5
    relative), and corten's export of its import gives corten's bits again. Returns the
    output."""
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert all(n.domain in ("", "ai.onnx") for n in model.graph.node)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    m = corten.onnx.load(path)
    got = np.from_dlpack(m.run(feeds)[m.outputs[0]]).copy()
    assert got.shape == want.shape
    assert float(np.abs(got - want).max()) <= 1e-5 * float(np.abs(want).max())
    again = path + ".again.onnx"
    corten.onnx.save(again, m.program, m.scope, inputs=m.inputs, outputs=m.outputs)
    assert np.from_dlpack(corten.onnx.load(again).run(feeds)[m.outputs[0]]).tobytes() == \
        got.tobytes()
    return want


def test_the_trained_digits_cnn_runs_in_onnxruntime(tmp_path):
    """examples/train_digits trains its CNN and saves it (x -> logits, any batch): onnxruntime
    classifies the held-out digits as corten did."""
    out = str(tmp_path / "digits_cnn.onnx")
    text = _example("CORTEN_TRAIN_DIGITS", os.environ.get("CORTEN_DIGITS", "none.params"), out)
    printed = float(text.split("test accuracy ")[1].split("%")[0])
    images, labels = _digits()
    logits = _same_in_both(out, {"x": images[1500:]})
    assert abs(100.0 * float(np.mean(logits.argmax(1) == labels[1500:])) - printed) < 0.005
    _same_in_both(out, {"x": images[:3]})  # another batch size


def test_lenet_runs_in_onnxruntime(tmp_path):
    """examples/lenet builds LeNet over its real weights and saves it (data -> prob): the same
    probabilities in onnxruntime, on random images."""
    out = str(tmp_path / "lenet.onnx")
    _example("CORTEN_LENET", os.environ.get("CORTEN_LENET_PARAMS", "none.params"),
             os.environ.get("CORTEN_DIGITS", "none.params"), out)
    x = np.random.RandomState(5).rand(4, 1, 28, 28).astype(np.float32)
    prob = _same_in_both(out, {"data": x})
    np.testing.assert_allclose(prob.sum(1), np.ones(4), rtol=1e-5)


def test_an_elman_rnn_unrolls_to_standard_onnx(tmp_path):
    """The recurrent op is saved as its steps unrolled (a Gather per step, the step's ops,
    Unsqueeze and Concat for the outputs): standard ONNX that onnxruntime runs with corten's
    outputs, which are a NumPy loop's."""
    rs = np.random.RandomState(4)
    T, B, D, H = 6, 2, 3, 4
    s = corten.Scope()
    w, u, b = (rs.randn(*d).astype(np.float32) * 0.5 for d in ((D, H), (H, H), (H,)))
    x, h0 = rs.randn(T, B, D).astype(np.float32), rs.randn(B, H).astype(np.float32)
    s["W"], s["U"], s["b"], s["h0"], s["x_seq"] = w, u, b, h0, x
    step = corten.Program()
    step.append("matmul", inputs={"X": "x", "Y": "W"}, outputs={"Out": "xw"})
    step.append("matmul", inputs={"X": "h_prev", "Y": "U"}, outputs={"Out": "hu"})
    step.append("elementwise_add", inputs={"X": "xw", "Y": "hu"}, outputs={"Out": "sum"})
    step.append("elementwise_add", inputs={"X": "sum", "Y": "b"}, outputs={"Out": "pre"})
    step.append("tanh", inputs={"X": "pre"}, outputs={"Out": "h"})
    p = corten.Program()
    p.append("recurrent", inputs={"X": "x_seq", "InitStates": "h0", "Params": ["W", "U", "b"]},
             outputs={"Out": "h_seq", "FinalStates": "h_last", "StepScopes": "steps"},
             step_program=step, states="h", ex_states="h_prev", step_inputs="x",
             step_outputs="h")
    corten.Executor(p, s).run()
    h_seq, h_last = (np.from_dlpack(s[n]).copy() for n in ("h_seq", "h_last"))
    ref, h = [], h0
    for t in range(T):
        h = np.tanh(x[t] @ w + h @ u + b)
        ref.append(h)
    np.testing.assert_allclose(h_seq, np.stack(ref), rtol=1e-5, atol=1e-6)
    out = str(tmp_path / "elman.onnx")
    corten.onnx.save(out, p, s, inputs=["x_seq"], outputs=["h_seq", "h_last"])
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    assert sum(n.op_type == "Gather" for n in model.graph.node) == T
    want = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x_seq": x})
    np.testing.assert_allclose(want[0], h_seq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(want[1], h_last, rtol=1e-5, atol=1e-6)


def test_train_digits_profiles_its_run(tmp_path):
    """`train_digits --profile TRACE` prints the table per op type and writes a Chrome trace:
    every op slice lies inside an executor run's slice on its thread, and the run slices count
    the ops they hold."""
    trace = tmp_path / "trace.json"
    text = _example("CORTEN_TRAIN_DIGITS", os.environ.get("CORTEN_DIGITS", "none.params"),
                    "--profile", str(trace))
    assert "conv2d_grad" in text and "executor runs" in text
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    runs = [e for e in slices if e["name"] == "executor_run"]
    ops = [e for e in slices if e["name"] != "executor_run"]
    assert all({"ts", "dur", "pid", "tid"} <= set(e) for e in slices)
    assert sum(int(r["args"]["label"].split()[0]) for r in runs) == len(ops)
    runs.sort(key=lambda r: r["ts"])
    starts = [r["ts"] for r in runs]
    for op in ops:
        r = runs[bisect.bisect_right(starts, op["ts"]) - 1]
        assert r["tid"] == op["tid"]
        assert r["ts"] <= op["ts"] and op["ts"] + op["dur"] <= r["ts"] + r["dur"] + 1e-3
    assert any(e["ph"] == "C" and e["name"] == "cpu allocated" for e in events)
