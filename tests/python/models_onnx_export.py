# SPDX-License-Identifier: Apache-2.0
# tests/python/models_onnx_export.py: ONNX export (corten.onnx.save) of the models of
# models_onnx.py: imported, saved, checked by onnx's checker, run by onnxruntime, imported again.
"""ONNX export parity: resnet18, mobilenet_v2, a TransformerEncoder and an LSTM classifier
(models_onnx.py exports them from PyTorch into the build tree) are imported into corten, run once
and saved with corten.onnx.save. Every export whose ops are all standard ONNX passes
``onnx.checker.check_model(full_check=True)`` and runs in onnxruntime with outputs equal to
corten's within 1e-5 relative; every export, standard or not, imported again gives corten's
outputs bit for bit. Run by ctest `python_onnx_models` in the `onnx` environment."""
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
