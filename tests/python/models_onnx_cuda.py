# SPDX-License-Identifier: Apache-2.0
# tests/python/models_onnx_cuda.py: the imported models (models_onnx.py exports them) run by an
# executor at cuda:0 against the same model on the CPU.
"""Imported models on the GPU: resnet18 (with and without its BatchNormalization nodes),
mobilenet_v2 and a long attention block, their weights copied to cuda:0 and run by an executor
there on a device input, give the CPU's outputs within 1e-4 of their largest magnitude (cuBLAS
and the GPU's kernels sum in other orders). The TransformerEncoder and the LSTM classifier read
their shapes at run time (Shape, Gather, Concat over int64 tensors), which corten runs on the
host only: at cuda:0 they are refused by name (CT_ERR_UNSUPPORTED), never run wrong. Needs a
GPU and a corten built for CUDA (skipped elsewhere, as in every CI environment)."""
import pytest

import corten
from conftest import np
from models_onnx import _exported

pytestmark = pytest.mark.skipif(corten.lib.cuda_device_count() < 1,
                                reason="corten sees no CUDA device (or was built without CUDA)")


def on_device(path):
    """The model at path loaded, its weights copied to cuda:0 (Model.to)."""
    m = corten.onnx.load(path).to("cuda:0")
    assert all(m.scope[name].device == "cuda:0" for name in m.constants)
    return m


@pytest.mark.parametrize("name", ["resnet18", "resnet18_bn", "mobilenet_v2", "attention_long"])
@pytest.mark.parametrize("batch", [1, 8])
def test_cuda_outputs_equal_the_cpus(name, batch):
    path, shape = _exported(name)
    x = np.random.RandomState(batch).randn(batch, *shape).astype(np.float32)
    want = np.from_dlpack(corten.onnx.load(path).run({"x": x})["y"]).copy()
    m = on_device(path)
    y = m.run({"x": corten.from_dlpack(x).copy("cuda:0")})["y"]  # at the model's device
    assert y.device == "cuda:0"
    got = np.from_dlpack(y.copy("cpu"))
    assert got.shape == want.shape
    assert float(np.abs(got - want).max()) <= 1e-4 * float(np.abs(want).max())


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_models_with_run_time_shapes_are_refused_at_cuda_by_name(name):
    path, shape = _exported(name)
    m = on_device(path)
    x = corten.from_dlpack(np.zeros((2, *shape), np.float32)).copy("cuda:0")
    with pytest.raises(corten.Error) as e:
        m.run({"x": x})
    assert e.value.status == "CT_ERR_UNSUPPORTED"
    assert "shape" in e.value.message and "cuda:0" in e.value.message
