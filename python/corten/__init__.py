# SPDX-License-Identifier: Apache-2.0
# python/corten/__init__.py: the corten package, Python's way into libcorten.
"""corten from Python: tensors shared with NumPy and PyTorch, scopes, ops, programs, training.

Tensors cross between corten, NumPy and PyTorch through DLPack without copying::

    import numpy as np, corten
    t = corten.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = np.from_dlpack(t)             # the same memory
    t.shape, t.dtype, t.device        # ((2, 3), 'float32', 'cpu')

Programs name their variables; a scope holds them::

    scope = corten.Scope()
    scope["x"] = np.ones((2, 3), np.float32)
    scope["w"] = np.ones((3, 4), np.float32)
    prog = corten.Program()
    prog.append("matmul", inputs={"X": "x", "Y": "w"}, outputs={"Out": "y"})
    corten.Executor(prog, scope).run()
    np.from_dlpack(scope["y"])        # 3.0 everywhere

Parameter files are TVM's format: :func:`load_params`, :func:`save_params`. Every failure of
the C library raises :class:`Error` with the status (``e.status``, ``"CT_ERR_SHAPE"``) and
corten's message naming what went wrong (``e.message``).
"""
from __future__ import annotations

from typing import Dict

from ._lib import DTYPES as _DTYPES
from ._lib import Error, MemoryStats, check, lib, place
from . import nn, onnx
from .ops import op_info, ops
from .params import load_params, save_params
from .profile import Profile, profile
from .program import Executor, Op, Program, ProgramOp
from .scope import Scope
from .tensor import Tensor, from_dlpack, zeros

__version__ = "0.1.0"

#: The dtype names corten tensors can have.
dtypes = _DTYPES[1:]


def dtype_id(name: str) -> int:
    """corten's number for a dtype name, as ops' ``dtype`` attributes take it:
    ``Op("cast", ..., dtype=corten.dtype_id("float16"))``."""
    if name not in dtypes:
        raise Error(-1, "dtype %r: use one of %s" % (name, ", ".join(dtypes)))
    return _DTYPES.index(name)


def memory_stats(device: str = "cpu") -> Dict[str, int]:
    """The memory figures of a device: bytes tensors hold (allocated), their peak, bytes held
    from the system (reserved), and the counts of allocations and frees."""
    s = MemoryStats()
    check(lib.memory_stats_get(place(device), s))
    return {name: int(getattr(s, name)) for name, _ in MemoryStats._fields_}


def host_allocator() -> str:
    """Where host tensor memory comes from in this process: ``'jemalloc'`` when jemalloc was in
    the process as the library loaded (preloaded, say), else ``'libc'``."""
    return lib.host_allocator_name().decode()


def set_num_threads(n: int) -> None:
    """The number of threads large CPU kernels split across: 0 (the default) one per core this
    process may run on, 1 the calling thread only, n > 1 that many (at most 256). Results do not
    depend on it (corten/op.h, ct_set_num_threads)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError("set_num_threads takes an int, not %s" % type(n).__name__)
    if n < 0 or n > 256:
        raise ValueError("set_num_threads(%d): give 0 (one per core) or 1 to 256" % n)
    lib.set_num_threads(n)


def get_num_threads() -> int:
    """The number of threads the current setting stands for (0 read as the core count)."""
    return int(lib.get_num_threads())


def cuda_device_count() -> int:
    """The number of CUDA devices corten can use (0 in a build without CUDA)."""
    return int(lib.cuda_device_count())


for _cls in (Error, Tensor, Scope, Op, Program, Executor):
    _cls.__module__ = "corten"  # help() and tracebacks name them corten.X
del _cls

__all__ = ["Error", "Tensor", "from_dlpack", "zeros", "Scope", "Op", "Program", "ProgramOp",
           "Executor", "nn", "onnx", "ops", "op_info", "load_params", "save_params", "memory_stats", "host_allocator",
           "cuda_device_count", "set_num_threads", "get_num_threads", "profile", "Profile",
           "dtypes", "dtype_id"]
