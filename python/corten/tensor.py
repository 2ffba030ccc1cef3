# SPDX-License-Identifier: Apache-2.0
# python/corten/tensor.py: corten.Tensor, from_dlpack and the DLPack protocol methods.
"""corten tensors in Python, exchanged with NumPy, PyTorch and others through DLPack."""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence, Tuple

from . import _dlpack
from ._lib import (DDim, DEVICE_CPU, DTYPES, MAX_RANK, Error, check, check_ptr, device_name, lib,
                   place)


#: NumPy's array-interface type strings of corten's dtypes (little-endian machines).
_TYPESTR = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "int32": "<i4",
            "int64": "<i8", "float16": "<f2", "float32": "<f4", "float64": "<f8",
            "uint16": "<u2", "uint32": "<u4", "uint64": "<u8"}


class _ArrayView:
    """A CPU tensor described through NumPy's array interface: the array NumPy makes over it
    keeps this object, and so the tensor and its memory, alive. Every dtype NumPy has, bool
    and read-only tensors included (which NumPy 1.x's DLPack import refuses)."""

    __slots__ = ("tensor", "__array_interface__")

    def __init__(self, t: "Tensor") -> None:
        self.tensor = t
        self.__array_interface__ = {"version": 3, "shape": t.shape, "typestr": _TYPESTR[t.dtype],
                                    "data": (t.data_ptr, t.read_only)}


class Tensor:
    """A corten tensor: dims, a dtype, a device and reference-counted memory.

    A Tensor is a view: it shares memory with the tensor it was made from (a variable of a
    scope, a NumPy array, a PyTorch tensor), and the memory lives while any view of it does.
    Make one with :func:`from_dlpack`, :func:`zeros`, or by reading a scope's variable; hand it
    to NumPy or PyTorch with ``numpy.from_dlpack(t)`` / ``torch.from_dlpack(t)`` (zero copy).
    """

    __slots__ = ("_h", "__weakref__")

    def __init__(self) -> None:
        """An empty tensor (no dims, no memory); most code wants :func:`zeros` or
        :func:`from_dlpack`."""
        self._h = check_ptr(lib.tensor_new())

    # The C function is bound at definition: at interpreter exit module globals may be gone.
    def __del__(self, _free=lib.tensor_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    # ---- What it is -------------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        """The dims, as a tuple: ``(2, 3)``; ``()`` for a scalar."""
        d = lib.tensor_dims(self._h)
        return tuple(d.d[i] for i in range(max(d.rank, 0)))

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(lib.tensor_numel(self._h))

    @property
    def dtype(self) -> str:
        """The dtype's name: ``'float32'``, ``'bool'``, ``'int64'`` ..."""
        return DTYPES[lib.tensor_dtype(self._h)]

    @property
    def device(self) -> str:
        """``'cpu'``, ``'cuda:N'`` or ``'cuda_host'``."""
        return device_name(lib.tensor_place(self._h))

    @property
    def read_only(self) -> bool:
        """Whether the memory was lent read-only (a DLPack 1.x import with the read-only flag):
        corten then never writes it (ops, copies into it: corten.Error CT_ERR_READ_ONLY)."""
        return bool(lib.tensor_is_read_only(self._h))

    @property
    def data_ptr(self) -> int:
        """The address of the first element (0 without memory)."""
        if not lib.tensor_has_memory(self._h):
            return 0
        return check_ptr(lib.tensor_data(self._h, lib.tensor_dtype(self._h)))

    def __repr__(self) -> str:
        if not lib.tensor_has_memory(self._h):
            return "corten.Tensor(shape=%s, no memory)" % (self.shape,)
        ro = ", read_only" if self.read_only else ""
        return "corten.Tensor(shape=%s, dtype=%s, device=%s%s%s)" % (
            self.shape, self.dtype, self.device, ro, self._first_values())

    def _first_values(self) -> str:
        """", [v0 v1 ... ]" with the first six values of a CPU tensor NumPy can view; ""."""
        try:
            flat = self.__array__().reshape(-1)
        except (TypeError, ImportError, RuntimeError, BufferError, ValueError):
            return ""
        shown = " ".join(str(v) for v in flat[:6].tolist())
        return ", [%s%s]" % (shown, " ..." if flat.size > 6 else "")

    # ---- Python and NumPy idioms ------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> Any:
        """``numpy.asarray(t)``: a NumPy array over the same memory (zero copy; a copy with
        ``copy=True`` or another dtype). CPU tensors only: copy a CUDA tensor to the CPU first
        (``t.copy("cpu")``)."""
        import numpy

        if self.device != "cpu":
            raise TypeError("numpy.asarray: the tensor is on %s; NumPy reads host memory: use "
                            "numpy.asarray(t.copy('cpu'))" % self.device)
        if not lib.tensor_has_memory(self._h):
            raise TypeError("numpy.asarray: the tensor holds no memory yet (shape %s): run the "
                            "op that writes it, or fill it" % (self.shape,))
        if self.dtype not in _TYPESTR:
            raise TypeError("numpy.asarray: NumPy has no %s: cast the tensor first (the cast "
                            "op)" % self.dtype)
        a = numpy.asarray(_ArrayView(self))
        if dtype is not None and numpy.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d corten.Tensor (shape ()): it has no first dim")
        return shape[0]

    def _scalar(self, kind: str) -> Any:
        if self.size != 1:
            raise TypeError("%s(): the tensor has %d elements (shape %s); only a one-element "
                            "tensor converts" % (kind, self.size, self.shape))
        return self.__array__().reshape(-1)[0].item()

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool"))

    def __getitem__(self, key: Any) -> "Tensor":
        """``t[i]``, ``t[a:b]``, ``t[i, j]``: a Tensor viewing the same memory (zero copy) where
        the selection is contiguous; corten.Error (CT_ERR_UNSUPPORTED) for strided ones, which
        corten does not view: copy them through NumPy (``numpy.asarray(t)[key].copy()``)."""
        import numpy

        view = self.__array__()[key]
        return from_dlpack(view if isinstance(view, numpy.ndarray) else numpy.asarray(view))

    # ---- Copies -----------------------------------------------------------------------------
    def copy(self, device: str = "cpu") -> "Tensor":
        """A deep copy with memory of its own on device (always writable)."""
        out = Tensor()
        check(lib.tensor_copy(out._h, self._h, place(device)))
        return out

    def numpy(self) -> Any:
        """A NumPy array over the same memory (``numpy.from_dlpack(self)``)."""
        import numpy

        return numpy.from_dlpack(self)

    # ---- DLPack (the array API standard's protocol) -----------------------------------------
    def __dlpack_device__(self) -> Tuple[int, int]:
        """DLPack's (device type, device id): (1, 0) for the CPU, (2, n) for CUDA device n."""
        p = lib.tensor_place(self._h)
        return (int(p.kind), int(p.device))

    def __dlpack__(self, *, stream: Optional[int] = None,
                   max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None,
                   copy: Optional[bool] = None) -> object:
        """A DLPack capsule over this tensor's memory, for a consumer's ``from_dlpack``.

        max_version: the highest DLPack version the consumer reads; (1, x) or above gets a
        ``DLManagedTensorVersioned`` (which keeps the read-only flag), None or (0, x) the
        older ``DLManagedTensor`` (refused for a read-only tensor: BufferError). stream: None
        for the CPU (corten's CUDA work is finished when a call returns, so any stream is
        accepted for CUDA). dl_device: None or this tensor's device, or (1, 0) with copy not
        False to get a CPU copy. copy: True for a copy, False or None for zero copy.
        """
        kind, _ = self.__dlpack_device__()
        if stream is not None and kind == DEVICE_CPU:
            raise BufferError("corten.Tensor.__dlpack__: stream must be None for a CPU tensor, "
                              "got %r" % (stream,))
        src = self
        copied = False
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if tuple(dl_device) != (DEVICE_CPU, 0) or copy is False:
                raise BufferError("corten.Tensor.__dlpack__: tensor on %s cannot be exported "
                                  "to device %r without a copy" % (self.device, dl_device))
            src, copied = self.copy("cpu"), True
        elif copy:
            src, copied = self.copy(self.device), True
        versioned = max_version is not None and int(max_version[0]) >= 1
        if not versioned and src.read_only:
            raise BufferError("corten.Tensor.__dlpack__: the tensor is read-only, which DLPack "
                              "0.x cannot say: ask for max_version=(1, 0), or copy it")
        return _dlpack.export(src._h, versioned, copied)


def from_dlpack(x: Any) -> Tensor:
    """A corten Tensor over the memory of x, without copying.

    x is any DLPack producer (a NumPy array, a PyTorch tensor, a corten Tensor, anything with
    ``__dlpack__``) or a DLPack capsule. The producer's memory stays alive while the Tensor (or
    any view of it) does. The newest DLPack form the producer speaks is asked for
    (``max_version=(1, 0)``), so a read-only NumPy array gives a read-only Tensor; producers
    that predate DLPack 1.x give the older form. An array whose producer refuses DLPack for its
    dtype (NumPy 1.x and bool) is viewed through its ``__array_interface__``, also zero copy. Raises corten.Error for what corten cannot
    hold (non-contiguous strides, vector lanes, an unknown dtype or device).
    """
    t = Tensor()
    import_into(t._h, x)
    return t


# Producer types whose __dlpack__ predates DLPack 1.x (no max_version keyword): asked without it
# from then on, rather than through a TypeError at every call (NumPy before 2.1: 2 us a feed).
_NO_MAX_VERSION: set = set()


def import_into(handle: int, x: Any) -> None:
    """Makes the ct_tensor at handle view the memory of x, as :func:`from_dlpack` does
    (internal: a scope's variable takes a feed this way, with no Tensor in between)."""
    if _dlpack.is_capsule(x):
        capsule = x
    elif hasattr(x, "__dlpack__"):
        try:
            if type(x) in _NO_MAX_VERSION:
                capsule = x.__dlpack__()
            else:
                try:
                    capsule = x.__dlpack__(max_version=_dlpack.VERSION)
                except TypeError:  # a producer from before DLPack 1.x: no max_version keyword
                    capsule = x.__dlpack__()
                    _NO_MAX_VERSION.add(type(x))
        except BufferError:
            # A dtype the producer cannot say in DLPack (NumPy 1.x: bool), but it describes
            # its memory through the array interface: lent from there, still zero copy.
            if not hasattr(x, "__array_interface__"):
                raise
            _dlpack.lend_array(handle, x)
            return
    else:
        raise TypeError("from_dlpack: %s is neither a DLPack producer (no __dlpack__) nor a "
                        "capsule" % type(x).__name__)
    _dlpack.consume(handle, capsule)


def zeros(shape: Sequence[int], dtype: str = "float32", device: str = "cpu") -> Tensor:
    """A new tensor of shape and dtype on device, filled with zeros."""
    if dtype not in DTYPES[1:]:
        raise Error(-1, "zeros: dtype %r: use one of %s" % (dtype, ", ".join(DTYPES[1:])))
    shape = tuple(int(n) for n in shape)
    if len(shape) > MAX_RANK:
        raise Error(-6, "zeros: shape %r has rank %d, above CT_MAX_RANK (%d)"
                    % (shape, len(shape), MAX_RANK))
    t = Tensor()
    dims = DDim(len(shape), (ctypes.c_int64 * MAX_RANK)(*shape))
    check(lib.tensor_resize(t._h, dims))
    ptr = check_ptr(lib.tensor_mutable_data(t._h, DTYPES.index(dtype), place(device)))
    nbytes = t.size * lib.dtype_size(DTYPES.index(dtype))
    if device == "cpu" and nbytes:
        ctypes.memset(ptr, 0, nbytes)
    elif nbytes:
        # The host tensor is named: a temporary would be freed (its __del__) as soon as its
        # handle was read, before the copy ran.
        host = zeros(shape, dtype, "cpu")
        check(lib.tensor_copy(t._h, host._h, place(device)))
    return t


def share(handle: int) -> Tensor:
    """A new Tensor viewing the memory of the ct_tensor at handle (internal)."""
    t = Tensor()
    check(lib.tensor_share(t._h, handle))
    return t


def as_tensor(x: Any) -> Tensor:
    """x itself when it is a Tensor; a Python number, bool or (nested) list as a new tensor
    (floats as float32, ints as int64, bools as bool, as PyTorch makes them); else
    from_dlpack(x) (internal)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, list, tuple)):
        import numpy

        a = numpy.asarray(x)
        if a.dtype == numpy.float64:
            a = a.astype(numpy.float32)
        elif a.dtype.kind in "iu":
            a = a.astype(numpy.int64)
        elif a.dtype != numpy.bool_:
            raise TypeError("a %s of %s cannot be a tensor: give numbers or bools"
                            % (type(x).__name__, a.dtype))
        return from_dlpack(numpy.array(a, order="C"))  # (ascontiguousarray makes 0-d 1-d)
    return from_dlpack(x)
