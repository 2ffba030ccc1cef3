# SPDX-License-Identifier: Apache-2.0
# tests/python/models_onnx_finetune.py: fine-tuning an imported ONNX model (issue 34, point 1):
# examples/finetune_onnx on the digits, its export run by onnxruntime, and 20 SGD steps of the
# imported model against PyTorch's from the same weights.
"""A digits CNN exported from PyTorch with random weights (conv 3x3 32, relu, 2x2 max pool,
linear 512->64, relu, linear 64->10) is imported into corten and trained there:

- examples/finetune_onnx replaces its last layer and fine-tunes it on ../shared/data/digits to at
  least 97% on the held-out images, and its ONNX export passes onnx's checker and runs in
  onnxruntime with corten's outputs (1e-5 relative) and the same accuracy;
- the imported model, trained 20 SGD steps in corten and in PyTorch from the same weights on the
  same batches, gives the same losses and weights within 1e-5 relative (float32).

Run by ctest `python_onnx_models` in the `onnx` environment; CORTEN_FINETUNE and CORTEN_DIGITS
name the example and the digits file."""
import os
import re
import subprocess

import pytest

import corten
from conftest import np

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

MODELS = os.environ.get("CORTEN_ONNX_MODELS", "onnx-models")
N_TRAIN = 1500


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 32, 3, padding=1)
        self.fc1 = torch.nn.Linear(512, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def _net():
    torch.manual_seed(0)
    return DigitsCNN()


@pytest.fixture(scope="module")
def cnn():
    """The CNN's file in the build tree (exported once, random weights, dynamic batch)."""
    os.makedirs(MODELS, exist_ok=True)
    path = os.path.join(MODELS, "digits_cnn.onnx")
    if not os.path.exists(path):
        tmp = path + ".tmp"
        torch.onnx.export(_net().eval(), torch.zeros(1, 1, 8, 8), tmp, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                          opset_version=17)
        os.replace(tmp, path)
    return path


@pytest.fixture(scope="module")
def digits():
    """(images float32 [1797,1,8,8] in [0, 1], labels int64 [1797])."""
    path = os.environ.get("CORTEN_DIGITS", "")
    if not os.path.exists(path):
        pytest.skip("CORTEN_DIGITS does not name the digits file (../shared/data/digits)")
    d = corten.load_params(path)
    images = np.from_dlpack(d["images"]).astype(np.float32).reshape(-1, 1, 8, 8) / 16
    return images, np.from_dlpack(d["labels"]).astype(np.int64)


def test_the_example_finetunes_to_97_and_its_export_runs_in_onnxruntime(cnn, digits, tmp_path):
    example = os.environ.get("CORTEN_FINETUNE")
    if not example:
        pytest.skip("CORTEN_FINETUNE (examples/finetune_onnx of the build) is not set")
    out = str(tmp_path / "finetuned.onnx")
    run = subprocess.run([example, cnn, os.environ["CORTEN_DIGITS"], out], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    printed = float(re.search(r"test accuracy ([0-9.]+)%", run.stdout).group(1))
    assert printed >= 97.0
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    images, labels = digits
    test_x, test_y = images[N_TRAIN:], labels[N_TRAIN:]
    want = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None,
                                                                             {"x": test_x})[0]
    got = np.from_dlpack(corten.onnx.load(out).run({"x": test_x})["logits"])
    assert got.shape == want.shape == (len(test_y), 10)
    assert float(np.abs(got - want).max()) <= 1e-5 * float(np.abs(want).max())
    accuracy = 100.0 * float(np.mean(want.argmax(1) == test_y))
    assert abs(accuracy - printed) < 0.005  # onnxruntime classifies as corten did (printed %.2f)
    # the export keeps the batch symbolic: any number of images runs
    one = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None,
                                                                            {"x": test_x[:1]})[0]
    assert one.shape == (1, 10)


PARAMS = ["conv.weight", "conv.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def test_twenty_sgd_steps_match_pytorch(cnn, digits):
    """The imported model with a loss, append_backward and sgd, against the same steps of
    torch.optim.SGD on the same network and batches: losses and weights within 1e-5 relative."""
    images, labels = digits
    lr, batch, steps = 0.1, 32, 20
    m = corten.onnx.load(cnn)
    s, p = m.scope, m.program
    assert all(name in s for name in PARAMS)
    s["lr"] = np.array([lr], np.float32)
    p.append("softmax_with_cross_entropy", inputs={"Logits": "y", "Label": "label"},
             outputs={"Softmax": "prob", "Loss": "row_loss"})
    p.append("mean", inputs={"X": "row_loss"}, outputs={"Out": "loss"})
    p.append_backward("loss", PARAMS)
    for name in PARAMS:
        p.append("sgd", inputs={"Param": name, "Grad": name + "@GRAD", "LearningRate": "lr"},
                 outputs={"ParamOut": name})
    step = None
    net = _net()
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    ours, theirs = [], []
    for k in range(steps):
        x = images[k * batch:(k + 1) * batch]
        y = labels[k * batch:(k + 1) * batch]
        s["x"], s["label"] = x, y.reshape(-1, 1)
        step = step or corten.Executor(p, s)  # made once, when every input is there
        step.run()
        ours.append(float(np.from_dlpack(s["loss"])))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        theirs.append(float(loss))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert theirs[-1] < theirs[0]  # the steps did train
    for name, param in net.named_parameters():
        want = param.detach().numpy()
        got = np.from_dlpack(s[name])
        assert got.shape == want.shape, name
        err = float(np.abs(got - want).max())
        assert err <= 1e-5 * float(np.abs(want).max()), "%s differs by %.3g" % (name, err)
