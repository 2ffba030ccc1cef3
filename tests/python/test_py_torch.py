# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_torch.py: corten and PyTorch (Debian's python3-torch) through DLPack.
"""PyTorch reads corten tensors (torch.from_dlpack) and corten reads PyTorch tensors, zero
copy both ways. Skipped where PyTorch is not importable (the NumPy 2 environment)."""
import pytest

import corten
from conftest import collect

torch = pytest.importorskip("torch")


def test_torch_tensor_into_corten_is_zero_copy(stats):
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = corten.from_dlpack(x)
    assert (t.shape, t.dtype, t.device) == ((2, 3), "float32", "cpu")
    assert t.data_ptr == x.data_ptr()
    x[1, 2] = 50.0
    y = torch.from_dlpack(t)
    assert y[1, 2].item() == 50.0
    assert stats.delta("allocs") == 0


def test_corten_tensor_into_torch_and_writes_show():
    t = corten.zeros((3,), "float32")
    y = torch.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr
    y += 2.0
    back = torch.from_dlpack(corten.from_dlpack(y))
    assert back.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64"])
def test_dtypes_both_ways(dtype):
    x = torch.zeros(4, dtype=getattr(torch, dtype))
    t = corten.from_dlpack(x)
    assert t.dtype == dtype
    assert torch.from_dlpack(t).dtype == x.dtype


TORCH1 = int(torch.__version__.split(".")[0]) < 2


def test_bool_with_torch():
    s = corten.Scope()
    s["a"] = torch.tensor([1.0, 0.0, 2.0])
    corten.Op("cast", inputs={"X": "a"}, outputs={"Out": "eq"},
              dtype=corten.dtype_id("bool")).run(s)
    if TORCH1:  # PyTorch 1.x has no DLPack bool either way (kDLBool came in 2.0)
        with pytest.raises(RuntimeError, match="Unsupported code 6"):
            torch.from_dlpack(s["eq"])
        with pytest.raises(RuntimeError, match="Bool type is not supported"):
            corten.from_dlpack(torch.tensor([True]))
        return
    eq = torch.from_dlpack(s["eq"])
    assert eq.dtype == torch.bool and eq.tolist() == [True, False, True]
    assert corten.from_dlpack(torch.tensor([True])).dtype == "bool"


def test_zero_dim_and_empty():
    t = corten.from_dlpack(torch.tensor(3.5))
    assert t.shape == ()
    assert torch.from_dlpack(t.copy()).item() == 3.5
    e = corten.from_dlpack(torch.zeros(0, 2))
    assert e.shape == (0, 2)
    assert torch.from_dlpack(corten.zeros((0,), "int64")).shape == (0,)


def test_torch_memory_lives_until_corten_lets_go():
    x = torch.arange(4, dtype=torch.int32)
    t = corten.from_dlpack(x)
    del x
    collect()
    assert torch.from_dlpack(t).tolist() == [0, 1, 2, 3]


def test_a_transposed_torch_tensor_is_refused():
    with pytest.raises(corten.Error) as e:
        corten.from_dlpack(torch.zeros(2, 3).t())
    assert e.value.status == "CT_ERR_UNSUPPORTED"
