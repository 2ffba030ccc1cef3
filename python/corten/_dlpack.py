# SPDX-License-Identifier: Apache-2.0
# python/corten/_dlpack.py: DLPack's C structures and the PyCapsule protocol, both forms.
"""DLPack capsules (internal).

A producer hands a consumer a PyCapsule named ``"dltensor"`` (holding a ``DLManagedTensor``,
DLPack 0.x) or ``"dltensor_versioned"`` (a ``DLManagedTensorVersioned``, DLPack 1.x). The
consumer renames it ``"used_dltensor"`` / ``"used_dltensor_versioned"`` once it owns the
tensor; a capsule destroyed under its first name was never consumed, and its destructor calls
the managed tensor's deleter.
"""
from __future__ import annotations

import ctypes

from ._lib import Error, check, lib

VERSIONED = b"dltensor_versioned"
UNVERSIONED = b"dltensor"
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
#: The DLPack version corten speaks (exports carry it; imports read any 1.x).
VERSION = (1, 0)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
_DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion),
                                     ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", _DELETER_V), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

# The CPython capsule API (pythonapi keeps the GIL).
_py = ctypes.pythonapi
_new = _py.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_is_valid = _py.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get = _py.PyCapsule_GetPointer
_get.restype = ctypes.c_void_p
_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_set_name = _py.PyCapsule_SetName
_set_name.restype = ctypes.c_int
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

# The capsules' destructor is corten's C one: Python may destroy a capsule with an exception
# pending (a consumer that refused it), when no Python code may run.
_DESTRUCTOR = ctypes.cast(lib.dll.ct_dlpack_capsule_destructor, ctypes.c_void_p).value


def export(handle: int, versioned: bool, copied: bool = False) -> object:
    """A new capsule over the ct_tensor at handle, zero copy (the capsule keeps the memory alive
    until its consumer calls the deleter, or until it is destroyed unconsumed)."""
    out = ctypes.c_void_p()
    if versioned:
        check(lib.tensor_to_dlpack_versioned(handle, ctypes.byref(out)))
        if copied:
            m = ctypes.cast(out, ctypes.POINTER(DLManagedTensorVersioned))
            m.contents.flags |= FLAG_IS_COPIED
        return _new(out.value, VERSIONED, _DESTRUCTOR)
    check(lib.tensor_to_dlpack(handle, ctypes.byref(out)))
    return _new(out.value, UNVERSIONED, _DESTRUCTOR)


def is_capsule(x: object) -> bool:
    return type(x).__name__ == "PyCapsule"


def consume(handle: int, capsule: object) -> None:
    """Makes the ct_tensor at handle view a producer's capsule and takes ownership (renaming the
    capsule). On failure the capsule is left as it was (its destructor frees the tensor) and
    corten.Error is raised (CT_ERR_INVALID_ARGUMENT for a capsule already consumed)."""
    if _is_valid(capsule, VERSIONED):
        check(lib.tensor_from_dlpack_versioned(handle, _get(capsule, VERSIONED)))
        _set_name(capsule, b"used_dltensor_versioned")
    elif _is_valid(capsule, UNVERSIONED):
        check(lib.tensor_from_dlpack(handle, _get(capsule, UNVERSIONED)))
        _set_name(capsule, b"used_dltensor")
    else:
        raise Error(-1, "from_dlpack: the capsule is not an unconsumed DLPack tensor (named "
                         "'dltensor' or 'dltensor_versioned'); a capsule can be consumed once")


# ---- Arrays whose producer cannot say them in DLPack ----------------------------------------
# NumPy 1.x exports no bool through DLPack (BufferError), yet its arrays describe their memory
# through the array interface. Such an array is lent to corten as a DLPack 1.x tensor made here:
# its shape lives beside the managed tensor, and both, with the array, stay referenced in
# _LENT until corten calls the deleter (the last view of the memory gone).
_KIND_CODES = {"b": 6, "i": 0, "u": 1, "f": 2}  # kDLBool, kDLInt, kDLUInt, kDLFloat
_LENT: dict = {}


def _deleter(m) -> None:
    _LENT.pop(ctypes.cast(m, ctypes.c_void_p).value, None)


_DELETER_LENT = _DELETER_V(_deleter)


def lend_array(handle: int, x: object) -> None:
    """Makes the ct_tensor at handle view the memory of x, an object with the array interface
    (``__array_interface__``: C-contiguous, native byte order), zero copy; x stays alive until
    corten lets go. A read-only array gives a read-only tensor. Raises corten.Error otherwise."""
    ai = x.__array_interface__
    typestr, shape = ai["typestr"], tuple(int(n) for n in ai["shape"])
    ptr, readonly = ai["data"]
    itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 0
    contiguous = ai.get("strides") is None
    if not contiguous:  # strides may still be the C order's
        want, step = [], itemsize
        for n in reversed(shape):
            want.insert(0, step)
            step *= n
        contiguous = tuple(ai["strides"]) == tuple(want) or 0 in shape
    if (typestr[0] not in "<|=" or typestr[1] not in _KIND_CODES or itemsize == 0
            or not contiguous or ai.get("mask") is not None):
        raise Error(-1, "from_dlpack: an array of %s with strides %r cannot be viewed by corten: "
                        "give a C-contiguous array of bool, integers or floats in native byte "
                        "order (numpy.ascontiguousarray)" % (typestr, ai.get("strides")))
    m = DLManagedTensorVersioned()
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    m.version = DLPackVersion(1, 0)
    m.deleter = _DELETER_LENT
    m.flags = FLAG_READ_ONLY if readonly else 0
    m.dl_tensor.data = ptr
    m.dl_tensor.device = DLDevice(1, 0)  # kDLCPU
    m.dl_tensor.ndim = len(shape)
    m.dl_tensor.dtype = DLDataType(_KIND_CODES[typestr[1]], itemsize * 8, 1)
    m.dl_tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    key = ctypes.addressof(m)
    _LENT[key] = (m, dims, x)
    try:
        check(lib.tensor_from_dlpack_versioned(handle, key))
    except Error:
        _LENT.pop(key, None)  # not taken: corten calls no deleter
        raise


__all__ = ["Error", "export", "consume", "is_capsule", "lend_array", "VERSION"]
