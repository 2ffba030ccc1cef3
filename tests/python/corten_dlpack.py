# SPDX-License-Identifier: Apache-2.0
"""A small ctypes shim over the corten shared library, enough to exchange tensors with NumPy
through DLPack: corten tensors offered to ``numpy.from_dlpack`` (an object with ``__dlpack__``
and ``__dlpack_device__``), and NumPy's ``__dlpack__()`` capsules taken into corten.

The library is loaded with ``ctypes.PyDLL`` so the GIL stays held during every corten call:
releasing a tensor imported from NumPy runs NumPy's deleter, which touches Python objects.
"""
import ctypes

CT_MAX_RANK = 9

# corten's dtypes (corten/types.h), in enum order.
DTYPES = ["undefined", "bool", "int8", "uint8", "int16", "int32", "int64", "float16",
          "bfloat16", "float32", "float64"]


class Place(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("device", ctypes.c_int)]


class DDim(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("d", ctypes.c_int64 * CT_MAX_RANK)]


class MemoryStats(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_size_t), ("peak", ctypes.c_size_t),
                ("reserved", ctypes.c_size_t), ("allocs", ctypes.c_uint64),
                ("frees", ctypes.c_uint64)]


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


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
MANAGED_P = ctypes.POINTER(DLManagedTensor)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]

# The CPython capsule API, called with the GIL held (pythonapi is a PyDLL).
_py = ctypes.pythonapi
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_IsValid.restype = ctypes.c_int
_py.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor sees a capsule being destroyed: pass it as a plain address, never as an object.
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.c_void_p]
_capsule_ptr_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_address):
    """DLPack's rule: a capsule still named "dltensor" was never consumed, so its producer's
    deleter runs here; a consumer renames it "used_dltensor" and owns the tensor."""
    if _capsule_name(capsule_address) != b"dltensor":
        return
    address = _capsule_ptr_raw(capsule_address, b"dltensor")
    if address:
        managed = ctypes.cast(address, ctypes.POINTER(DLManagedTensor))
        if managed.contents.deleter:
            managed.contents.deleter(managed)


class Corten:
    """The corten functions the DLPack tests call, with their C signatures."""

    def __init__(self, path):
        lib = ctypes.PyDLL(path)
        self.lib = lib
        sigs = {
            "ct_cpu": (Place, []),
            "ct_tensor_new": (ctypes.c_void_p, []),
            "ct_tensor_free": (None, [ctypes.c_void_p]),
            "ct_tensor_resize": (ctypes.c_int, [ctypes.c_void_p, DDim]),
            "ct_tensor_mutable_data": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int, Place]),
            "ct_tensor_data": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int]),
            "ct_tensor_dims": (DDim, [ctypes.c_void_p]),
            "ct_tensor_dtype": (ctypes.c_int, [ctypes.c_void_p]),
            "ct_tensor_place": (Place, [ctypes.c_void_p]),
            "ct_tensor_is_external": (ctypes.c_bool, [ctypes.c_void_p]),
            "ct_tensor_has_memory": (ctypes.c_bool, [ctypes.c_void_p]),
            "ct_tensor_share": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
            "ct_tensor_to_dlpack": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(MANAGED_P)]),
            "ct_tensor_from_dlpack": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
            "ct_memory_stats_get": (ctypes.c_int, [Place, ctypes.POINTER(MemoryStats)]),
            "ct_last_error": (ctypes.c_char_p, []),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
            setattr(self, name[3:], fn)

    def error(self):
        return self.last_error().decode()

    def stats(self):
        s = MemoryStats()
        assert self.memory_stats_get(self.cpu(), ctypes.byref(s)) == 0, self.error()
        return s

    def tensor(self, shape, dtype, values=None):
        """A new corten tensor of shape and dtype (a name in DTYPES); values, if given, is a
        sequence written into it through a ctypes array of the matching C type."""
        t = self.tensor_new()
        dims = DDim(len(shape), (ctypes.c_int64 * CT_MAX_RANK)(*shape))
        assert self.tensor_resize(t, dims) == 0, self.error()
        p = self.tensor_mutable_data(t, DTYPES.index(dtype), self.cpu())
        assert p, self.error()
        if values is not None:
            ctype = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                     "int32": ctypes.c_int32, "int64": ctypes.c_int64, "int8": ctypes.c_int8,
                     "uint8": ctypes.c_uint8, "int16": ctypes.c_int16}[dtype]
            arr = (ctype * len(values)).from_address(p)
            for i, v in enumerate(values):
                arr[i] = v
        return t

    def dims(self, t):
        d = self.tensor_dims(t)
        return tuple(d.d[i] for i in range(d.rank))


class Exported:
    """A corten tensor offered to a DLPack consumer: each __dlpack__() exports it anew
    (ct_tensor_to_dlpack) in a capsule named "dltensor"."""

    def __init__(self, ct, tensor):
        self.ct = ct
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        if stream is not None:
            raise BufferError("corten's CPU tensors take no stream")
        out = ctypes.POINTER(DLManagedTensor)()
        rc = self.ct.tensor_to_dlpack(self.tensor, ctypes.byref(out))
        if rc != 0:
            raise BufferError(self.ct.error())
        address = ctypes.cast(out, ctypes.c_void_p).value
        return _py.PyCapsule_New(address, b"dltensor",
                                 ctypes.cast(_capsule_destructor, ctypes.c_void_p).value)

    def __dlpack_device__(self):
        place = self.ct.tensor_place(self.tensor)
        return (place.kind, place.device)


def import_capsule(ct, tensor, capsule):
    """Takes a "dltensor" capsule into a corten tensor, as a DLPack consumer does: on success
    the capsule is renamed "used_dltensor" (corten now owns the managed tensor); on failure it
    is left as it was, and the producer's capsule destructor will free it. Returns corten's
    status."""
    address = _py.PyCapsule_GetPointer(capsule, b"dltensor")
    rc = ct.tensor_from_dlpack(tensor, address)
    if rc == 0:
        _py.PyCapsule_SetName(capsule, b"used_dltensor")
    return rc
