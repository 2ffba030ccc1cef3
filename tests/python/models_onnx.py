# SPDX-License-Identifier: Apache-2.0
# tests/python/models_onnx.py: the models of issue 33 exported from PyTorch at opset 17 with a
# dynamic batch, run by corten and by onnxruntime; and the peak memory of loading resnet18.
"""ONNX model parity: torchvision's resnet18 (also with its BatchNormalization nodes kept, as
model zoos ship them) and mobilenet_v2, a 2-layer TransformerEncoder (also with GELU at opset
14, whose exporter writes each layer norm out as nine ops), an LSTM classifier and one head
of attention over 1024 tokens, with random weights and batch-norm statistics measured on random
batches (so a dropped statistic shows), exported by Debian's PyTorch into the build tree (never
committed). corten's outputs must equal onnxruntime's within 1e-4 of the outputs' largest
magnitude at batch 1 and 8. Then NaN, signed zeros and infinities through single activations
against onnxruntime; and onnxruntime's quantization tool's outputs (dynamic: MatMulInteger,
ConvInteger; static QDQ) against onnxruntime. Run by ctest `python_onnx_models` in the `onnx` environment
(tests/python/make_envs.sh)."""
import functools
import inspect
import os
import subprocess

import pytest

import corten
from conftest import np

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

MODELS = os.environ.get("CORTEN_ONNX_MODELS", "onnx-models")


def _bn_statistics(net, shape):
    """Moves every batch norm's running mean and variance off 0 and 1 (a few training-mode
    passes over random batches), then puts the network in inference mode."""
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.randn(*shape))
    return net.eval()


class LSTMClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 32, batch_first=True)
        self.fc = torch.nn.Linear(32, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class LongAttention(torch.nn.Module):
    """One head of self-attention over a long sequence (1024 tokens of 64): MatMul, Div,
    Softmax, MatMul between three projections, the scores 4 MB an entry."""
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(64, 64) for _ in range(3))

    def forward(self, x):
        s = self.q(x) @ self.k(x).transpose(1, 2) / 8.0
        return torch.softmax(s, dim=-1) @ self.v(x)


def _make(name):
    torch.manual_seed(0)
    if name in ("resnet18", "resnet18_bn"):
        return _bn_statistics(torchvision.models.resnet18(), (4, 3, 224, 224)), (3, 224, 224)
    if name == "mobilenet_v2":
        return _bn_statistics(torchvision.models.mobilenet_v2(), (4, 3, 224, 224)), (3, 224, 224)
    if name in ("transformer", "transformer_gelu14"):
        gelu = name.endswith("gelu14")
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                 batch_first=True,
                                                 activation="gelu" if gelu else "relu")
        return torch.nn.TransformerEncoder(layer, num_layers=2).eval(), (10, 64)
    if name == "attention_long":
        return LongAttention().eval(), (1024, 64)
    return LSTMClassifier().eval(), (12, 16)


@functools.lru_cache(maxsize=None)
def _exported(name):
    """The model's file in the build tree (exported once) and its per-sample input shape."""
    os.makedirs(MODELS, exist_ok=True)
    path = os.path.join(MODELS, name + ".onnx")
    shape = {"resnet18": (3, 224, 224), "resnet18_bn": (3, 224, 224),
             "mobilenet_v2": (3, 224, 224), "transformer": (10, 64),
             "transformer_gelu14": (10, 64), "lstm": (12, 16), "attention_long": (1024, 64)}[name]
    if not os.path.exists(path):
        net, shape = _make(name)
        tmp = path + ".tmp"
        # resnet18_bn keeps its BatchNormalization nodes (as model zoos' files have them): no
        # folding into the convolutions at export.
        keep = name.endswith("_bn")
        # PyTorch 2.9 and later export through dynamo by default: the TorchScript exporter
        # (Debian's PyTorch's only one) keeps the files the same wherever they are made.
        legacy = ({"dynamo": False}
                  if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})
        torch.onnx.export(net, torch.randn(1, *shape), tmp, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                          opset_version=14 if name.endswith("14") else 17,
                          training=(torch.onnx.TrainingMode.PRESERVE if keep
                                    else torch.onnx.TrainingMode.EVAL),
                          do_constant_folding=not keep, **legacy)
        os.replace(tmp, path)
    return path, shape


@pytest.mark.parametrize("name", ["resnet18", "resnet18_bn", "mobilenet_v2", "transformer",
                                  "transformer_gelu14", "lstm", "attention_long"])
@pytest.mark.parametrize("batch", [1, 8])
def test_outputs_equal_onnxruntimes(name, batch):
    path, shape = _exported(name)
    try:
        m = corten.onnx.load(path)
    except corten.Error as e:
        if e.status == "CT_ERR_UNSUPPORTED":
            pytest.skip("corten cannot import %s yet: %s" % (name, e.message[:300]))
        raise
    x = np.random.RandomState(batch).randn(batch, *shape).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.from_dlpack(m.run({"x": x})["y"])
    assert got.shape == want.shape
    scale = float(np.abs(want).max())
    assert float(np.abs(got - want).max()) <= 1e-4 * scale


def _quantized(name, kind):
    """The model quantized by onnxruntime's tool into the build tree (once): "dynamic" (weights
    uint8, activations quantized at run time: DynamicQuantizeLinear, MatMulInteger,
    ConvInteger), "qdq" (static, QuantizeLinear / DequantizeLinear around float ops,
    calibrated on two random batches) or "qop" (static, the same calibration, in quantized
    ops: QLinearConv and onnxruntime's QLinearAdd, QLinearGlobalAveragePool, QGemm)."""
    from onnxruntime import quantization as q
    path, shape = _exported(name)
    out = os.path.join(MODELS, "%s_%s.onnx" % (name, kind))
    if not os.path.exists(out):
        if kind == "dynamic":
            q.quantize_dynamic(path, out + ".tmp", weight_type=q.QuantType.QUInt8)
        else:
            class Batches(q.CalibrationDataReader):
                def __init__(self):
                    self.left = [{"x": np.random.RandomState(i).randn(2, *shape)
                                  .astype(np.float32)} for i in range(2)]

                def get_next(self):
                    return self.left.pop() if self.left else None

            fmt = q.QuantFormat.QDQ if kind == "qdq" else q.QuantFormat.QOperator
            q.quantize_static(path, out + ".tmp", Batches(), quant_format=fmt)
        os.replace(out + ".tmp", out)
    return out, shape


@pytest.mark.parametrize("name,kind", [("transformer", "dynamic"), ("mobilenet_v2", "dynamic"),
                                       ("mobilenet_v2", "qdq"), ("mobilenet_v2", "qop")])
def test_quantized_models_equal_onnxruntimes(name, kind):
    """onnxruntime's quantization tool's output (its standard-domain ops) runs in corten to
    onnxruntime's values within 1e-5 of their largest magnitude."""
    path, shape = _quantized(name, kind)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"dynamic": {"DynamicQuantizeLinear"}, "qdq": {"QuantizeLinear", "Conv"},
            "qop": {"QLinearConv", "QLinearAdd", "QGemm"}}[kind] <= ops
    x = np.random.RandomState(5).randn(1, *shape).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = np.from_dlpack(corten.onnx.load(path).run({"x": x})["y"])
    assert got.shape == want.shape
    if kind == "dynamic":
        assert float(np.abs(got - want).max()) <= 1e-5 * float(np.abs(want).max())
        return
    # QDQ and QOperator: the float sums between quantizations differ in their last bits from onnxruntime's
    # (which runs them as int8 kernels), and a value on a rounding edge moves one step, which
    # later layers carry: y is the last DequantizeLinear's, so every element equal or one of
    # its steps apart. (onnxruntime's optimized and unoptimized runs of this model differ so in
    # about 8 % of the logits, corten's from either in about 7 %.)
    model = onnx.load(path)
    last = next(n for n in model.graph.node if "y" in n.output)
    assert last.op_type == "DequantizeLinear"
    step = float(next(onnx.numpy_helper.to_array(t) for t in model.graph.initializer
                      if t.name == last.input[1]))
    diff = np.abs(got - want)
    assert float(diff.max()) <= 1.001 * step
    assert int((diff > 0).sum()) <= diff.size // 5


@pytest.mark.parametrize("name", ["resnet18", "resnet18_bn", "mobilenet_v2", "transformer",
                                  "transformer_gelu14", "lstm", "attention_long"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_graph_passes_keep_the_bits(name, threads):
    """The executor's optimize option (on by default) gives the unoptimized program's bits, at
    batch 2 and at batch 1 (one image alone on the threads: the fused ops split it, not the
    batch), optimized with the weights as constants (packed once, as the bench runs it)."""
    path, shape = _exported(name)
    old = corten.get_num_threads()
    corten.set_num_threads(threads)
    try:
        for batch in (2, 1):
            x = np.random.RandomState(threads).randn(batch, *shape).astype(np.float32)
            outs = [np.from_dlpack(corten.onnx.load(path, optimize=o, constant_weights=o)
                                   .run({"x": x})["y"]).copy() for o in (True, False)]
            assert outs[0].tobytes() == outs[1].tobytes(), "batch %d" % batch
    finally:
        corten.set_num_threads(old)


def test_transformer_gelu14_writes_its_layer_norms_out():
    """The export the decomposed-layer-norm pass is checked on: four norms as ReduceMean, Sub,
    Pow, ReduceMean, Add, Sqrt, Div, Mul, Add; GELU as Erf; two attention softmaxes."""
    path, _ = _exported("transformer_gelu14")
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert (ops.count("ReduceMean"), ops.count("Pow"), ops.count("Erf"), ops.count("Softmax"),
            ops.count("LayerNormalization")) == (8, 4, 2, 2, 0)


def test_resnet18_bn_keeps_its_batch_norms():
    """The export the batch-norm tests rely on: 20 BatchNormalization nodes, none folded."""
    path, _ = _exported("resnet18_bn")
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("BatchNormalization") == 20


def test_loading_resnet18_holds_the_weights_once():
    """Peak host memory during the load: at most 1.2x the weight bytes above the baseline."""
    path, _ = _exported("resnet18")
    weights = 0
    for t in onnx.load(path, load_external_data=False).graph.initializer:
        weights += onnx.numpy_helper.to_array(t).nbytes
    out = subprocess.run([os.environ["CORTEN_ONNX_PEAK"], path], check=True,
                         capture_output=True, text=True).stdout
    fig = dict(line.split() for line in out.splitlines())
    added = (int(fig["hwm_after_kib"]) - int(fig["rss_before_kib"])) * 1024
    assert int(fig["tensor_bytes"]) >= weights
    assert added <= 1.2 * weights, "the load peaked %.2fx the weights" % (added / weights)


# NaNs, signed zeros and infinities (results exact), then ordinary values (rounded results).
SPECIALS = np.array([np.nan, -np.nan, -0.0, 0.0, -np.inf, np.inf, -1.0, 1.0, -3.5, 7.0],
                    dtype=np.float32)


@pytest.mark.parametrize("op,attrs,extra", [
    ("Relu", {}, []), ("LeakyRelu", {"alpha": 0.5}, []), ("Clip", {}, [0.0, 6.0]),
    ("Abs", {}, []), ("Neg", {}, []), ("Tanh", {}, []), ("Sigmoid", {}, []), ("Exp", {}, []),
    ("Sqrt", {}, [])])
def test_special_values_through_activations_as_onnxruntime(op, attrs, extra):
    """NaN, signed zeros and infinities through each activation as onnxruntime gives them: a NaN
    stays NaN (never hidden as 0), a zero keeps the sign onnxruntime gives it, bit for bit; the
    ordinary values within 2e-6 (Tanh, Sigmoid and Exp are each side's own approximations:
    onnxruntime's sigmoid(-3.5) is 0.02931219, 12 ulp below the true 0.0293122308)."""
    h = onnx.helper
    inputs = ["x"]
    inits = []
    for k, v in enumerate(extra):
        inits.append(onnx.numpy_helper.from_array(np.array(v, dtype=np.float32), "c%d" % k))
        inputs.append("c%d" % k)
    graph = h.make_graph([h.make_node(op, inputs, ["y"], **attrs)], "specials",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [10])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [10])], inits)
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(
        None, {"x": SPECIALS})[0]
    got = np.from_dlpack(corten.onnx.load_bytes(data).run({"x": SPECIALS})["y"])
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    ok = ~np.isnan(want[:6])
    assert got[:6][ok].tobytes() == want[:6][ok].tobytes(), (got, want)
    assert np.allclose(got[6:], want[6:], rtol=2e-6, atol=0, equal_nan=True), (got, want)
