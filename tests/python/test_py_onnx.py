# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_onnx.py: corten.onnx: a model exported by PyTorch loads, runs at two batch
# sizes with NumPy and PyTorch inputs (zero copy both ways), matches PyTorch, and trains.
"""corten.onnx.load / load_bytes and Model.run against PyTorch's own outputs."""
import io

import pytest

import corten
from conftest import np

torch = pytest.importorskip("torch")


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.manual_seed(0)
    net = SmallCNN().eval()
    path = tmp_path_factory.mktemp("onnx") / "cnn.onnx"
    torch.onnx.export(net, torch.zeros(1, 1, 8, 8), str(path), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      opset_version=13)
    return net, path


def test_the_model_names_its_inputs_outputs_and_variables(exported):
    _, path = exported
    m = corten.onnx.load(path)
    assert m.inputs == ["x"] and m.outputs == ["y"] and m.opset == 13
    assert "fc.weight" in m.scope and m.scope["fc.weight"].shape == (10, 64)
    assert len(m.program) > 0


@pytest.mark.parametrize("batch", [1, 8])
def test_run_matches_pytorch_at_any_batch(exported, batch):
    net, path = exported
    m = corten.onnx.load(path)
    x = np.random.RandomState(batch).randn(batch, 1, 8, 8).astype(np.float32)
    y = np.from_dlpack(m.run({"x": x})["y"])
    with torch.no_grad():
        want = net(torch.from_numpy(x)).numpy()
    assert y.shape == (batch, 10)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_constant_weights_give_the_same_bits(exported):
    _, path = exported
    plain, const = corten.onnx.load(path), corten.onnx.load(path, constant_weights=True)
    assert set(const.constants) >= {"conv.weight", "conv.bias", "fc.weight", "fc.bias"}
    assert "x" not in const.constants
    for batch in (1, 3):
        x = np.random.RandomState(batch).randn(batch, 1, 8, 8).astype(np.float32)
        want = np.from_dlpack(plain.run({"x": x})["y"]).copy()
        for _ in range(2):
            got = np.from_dlpack(const.run({"x": x})["y"])
            assert got.tobytes() == want.tobytes()


def test_a_run_releases_the_intermediates_unless_asked_to_keep_them(exported):
    _, path = exported
    x = np.random.RandomState(5).randn(2, 1, 8, 8).astype(np.float32)
    freed, kept = corten.onnx.load(path), corten.onnx.load(path, keep_intermediates=True)
    for _ in range(2):  # the second run reuses what the first released
        y_freed = np.from_dlpack(freed.run({"x": x})["y"]).copy()
        y_kept = np.from_dlpack(kept.run({"x": x})["y"])
        assert y_freed.tobytes() == y_kept.tobytes()

    def holds_memory(scope, name):
        try:
            return scope[name].data_ptr != 0
        except corten.Error:  # a value the graph passes fused away: never made
            return False

    made = {n for n in kept.scope.names() if n not in kept.constants and n not in ("x", "y")
            and holds_memory(kept.scope, n)}
    assert "/pool/MaxPool_output_0" in made  # the values that ran op by op
    # all released (the bias's reshape went with the fused convolution: its view never made)
    assert not {n for n in made if holds_memory(freed.scope, n)}
    assert not holds_memory(kept.scope, "/conv/Conv_output_0@onnx1")
    assert holds_memory(freed.scope, "y")


def test_torch_tensors_in_and_out_zero_copy(exported):
    net, path = exported
    m = corten.onnx.load(path)
    x = torch.randn(2, 1, 8, 8)
    out = m.run({"x": x})["y"]
    assert m.scope["x"].data_ptr == x.data_ptr()  # the input was viewed, not copied
    y = torch.from_dlpack(out)
    assert y.data_ptr() == out.data_ptr
    with torch.no_grad():
        torch.testing.assert_close(y, net(x), rtol=1e-5, atol=1e-5)


def test_load_bytes_and_a_broken_file(exported):
    _, path = exported
    data = path.read_bytes()
    m = corten.onnx.load_bytes(data)
    assert m.outputs == ["y"]
    with pytest.raises(corten.Error) as e:
        corten.onnx.load_bytes(data[: len(data) // 2])
    assert e.value.status == "CT_ERR_FORMAT"
    s = corten.Scope()
    with pytest.raises(corten.Error):
        corten.onnx.load_bytes(data[:100], s)
    assert len(s) == 0  # a failed load leaves the scope as it was


def test_an_imported_model_trains(exported):
    """append_backward over the imported program, then sgd: the loss falls."""
    _, path = exported
    m = corten.onnx.load(path)
    s = m.scope
    rs = np.random.RandomState(3)
    s["label"] = rs.randint(0, 10, size=(16, 1)).astype(np.int64)
    s["lr"] = np.array([0.05], np.float32)
    s["x"] = rs.randn(16, 1, 8, 8).astype(np.float32)
    p = m.program
    p.append("softmax_with_cross_entropy", inputs={"Logits": "y", "Label": "label"},
             outputs={"Softmax": "prob", "Loss": "row_loss"})
    p.append("mean", inputs={"X": "row_loss"}, outputs={"Out": "loss"})
    params = ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
    p.append_backward("loss", params)
    for name in params:
        p.append("sgd", inputs={"Param": name, "Grad": name + "@GRAD", "LearningRate": "lr"},
                 outputs={"ParamOut": name})
    step = corten.Executor(p, s)
    losses = []
    for _ in range(80):
        step.run()
        losses.append(float(np.from_dlpack(s["loss"])))
    assert losses[-1] < losses[0] * 0.5


def test_run_makes_a_new_executor_after_any_edit(exported):
    """Model.run keeps its executor while the program is unchanged; an edit that leaves the op
    count as it was (a prune, then an append) still gets a new one."""
    _, path = exported
    m = corten.onnx.load(path)
    x = np.random.RandomState(2).randn(2, 1, 8, 8).astype(np.float32)
    want = np.from_dlpack(m.run({"x": x})["y"]).copy()
    n = len(m.program)
    m.program.prune("y")  # nothing to drop: the same ops
    m.program.append("relu", inputs={"X": "y"}, outputs={"Out": "y_relu"})
    m.program.prune("y")  # back to n ops, edited twice
    assert len(m.program) == n
    assert np.from_dlpack(m.run({"x": x})["y"]).tobytes() == want.tobytes()


def test_every_run_feeds_its_inputs_as_the_scope_would(exported):
    """The runs after the first feed the executor's input variables directly: each feed,
    whatever its producer or batch, is viewed by the input variable as scope[name] = value
    would view it, and a name that is no input still goes to the scope."""
    net, path = exported
    m = corten.onnx.load(path)
    rs = np.random.RandomState(4)
    feeds = [rs.randn(2, 1, 8, 8).astype(np.float32), rs.randn(5, 1, 8, 8).astype(np.float32),
             torch.randn(3, 1, 8, 8), corten.from_dlpack(rs.randn(1, 1, 8, 8).astype(np.float32))]
    for x in feeds:
        out = m.run({"x": x, "note": [1.0, 2.0]})["y"]
        ptr = x.data_ptr if isinstance(x, corten.Tensor) else (
            x.data_ptr() if isinstance(x, torch.Tensor) else x.ctypes.data)
        assert m.scope["x"].data_ptr == ptr  # viewed, not copied
        xt = torch.from_dlpack(x) if not isinstance(x, torch.Tensor) else x
        with torch.no_grad():
            want = net(xt).numpy()
        assert np.from_dlpack(out).shape == want.shape
        np.testing.assert_allclose(np.from_dlpack(out), want, rtol=1e-5, atol=1e-5)
        assert np.from_dlpack(m.scope["note"]).tolist() == [1.0, 2.0]
    with pytest.raises(corten.Error):  # a feed the input cannot take still raises
        m.run({"x": np.zeros((2, 1, 8, 8), np.float64)})


def test_to_moves_the_weights_all_or_nothing(exported):
    _, path = exported
    m = corten.onnx.load(path)
    x = np.random.RandomState(3).randn(2, 1, 8, 8).astype(np.float32)
    want = np.from_dlpack(m.run({"x": x})["y"]).copy()
    assert m.to("cpu") is m and m.device == "cpu"
    if corten.cuda_device_count() == 0:  # (on a GPU, models_onnx_cuda.py runs models there)
        before = {n: m.scope[n].data_ptr for n in m.constants}
        with pytest.raises(corten.Error, match="cuda:0"):
            m.to("cuda:0")
        assert m.device == "cpu"
        assert {n: m.scope[n].data_ptr for n in m.constants} == before
    assert np.from_dlpack(m.run({"x": x})["y"]).tobytes() == want.tobytes()
