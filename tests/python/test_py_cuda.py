# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_cuda.py: CUDA tensors between corten and PyTorch, and a program at cuda:0.
"""Device memory crosses between corten and PyTorch through DLPack without a copy, both ways,
and a corten program runs at cuda:0 on PyTorch's tensors. Needs a GPU, a corten built for CUDA
and a PyTorch built for CUDA: skipped elsewhere (every environment of the CPU suite), saying
which is missing."""
import pytest

import corten
from conftest import collect

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.skipif(corten.lib.cuda_device_count() < 1,
                       reason="corten sees no CUDA device (or was built without CUDA)"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="this PyTorch sees no CUDA device"),
]

DTYPES = [("float32", torch.float32), ("float64", torch.float64), ("float16", torch.float16),
          ("bfloat16", torch.bfloat16), ("int32", torch.int32), ("int64", torch.int64),
          ("uint8", torch.uint8)]


def cuda_allocs():
    collect()
    return corten.memory_stats("cuda:0")["allocs"]


@pytest.mark.parametrize("name,tdtype", DTYPES)
def test_torch_cuda_tensor_into_corten_is_zero_copy(name, tdtype):
    x = torch.arange(12, device="cuda").reshape(3, 4).to(tdtype)
    before = cuda_allocs()
    t = corten.from_dlpack(x)
    assert (t.shape, t.dtype, t.device) == ((3, 4), name, "cuda:0")
    assert t.data_ptr == x.data_ptr()
    assert cuda_allocs() == before
    x[2, 3] = 50
    torch.cuda.synchronize()
    # Read back through PyTorch: NumPy has no bfloat16.
    back = torch.from_dlpack(t.copy("cpu"))
    assert back.dtype == tdtype
    assert back.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 50]]


def test_corten_cuda_tensor_into_torch_and_writes_show():
    t = corten.zeros((4,), "float32", "cuda:0")
    y = torch.from_dlpack(t)
    assert y.device == torch.device("cuda", 0)
    assert y.data_ptr() == t.data_ptr
    y += 3.0
    torch.cuda.synchronize()
    assert t.copy("cpu").numpy().tolist() == [3.0, 3.0, 3.0, 3.0]


def test_torch_keeps_corten_memory_alive_after_the_tensor_goes():
    t = corten.zeros((5,), "float32", "cuda:0")
    y = torch.from_dlpack(t)
    del t
    collect()
    y += 1.5
    assert y.cpu().tolist() == [1.5] * 5


def test_a_program_at_cuda_adds_torch_tensors_bit_for_bit():
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.rand(1000, 37, device="cuda", generator=g)
    y = torch.rand(37, device="cuda", generator=g)  # broadcast along the rows
    scope = corten.Scope()
    scope["x"] = x
    scope["y"] = y
    prog = corten.Program()
    prog.append("elementwise_add", inputs={"X": "x", "Y": "y"}, outputs={"Out": "z"})
    corten.Executor(prog, scope, "cuda:0").run()
    z = torch.from_dlpack(scope["z"])
    assert z.device == torch.device("cuda", 0)
    assert torch.equal(z, x + y)


def test_a_profile_gives_cuda_ops_their_device_time():
    x = torch.rand(512, 512, device="cuda")
    scope = corten.Scope()
    scope["x"] = x
    prog = corten.Program()
    prog.append("matmul", inputs={"X": "x", "Y": "x"}, outputs={"Out": "m"})
    prog.append("relu", inputs={"X": "m"}, outputs={"Out": "r"})
    e = corten.Executor(prog, scope, "cuda:0")
    e.run()  # warm: cuBLAS loaded, outputs allocated
    with corten.profile() as prof:
        e.run()
    events = prof.events()
    assert [ev["type"] for ev in events] == ["matmul", "relu", "executor_run"]
    mm, relu, run = events
    assert mm["device_dur_us"] > relu["device_dur_us"] > 0
    # one stream: the relu after the matmul, both inside the run (event times: 0.5 us steps)
    assert relu["device_start_us"] + 2 >= mm["device_start_us"] + mm["device_dur_us"]
    assert mm["device_start_us"] + 2 >= run["device_start_us"]
    assert "device ms" in prof.table()
