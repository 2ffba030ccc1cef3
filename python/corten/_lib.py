# SPDX-License-Identifier: Apache-2.0
# python/corten/_lib.py: loads libcorten with ctypes, declares the C signatures, maps failures to
# corten.Error.
"""The shared library and its C signatures (internal).

The library is loaded with ``ctypes.PyDLL``: every corten call keeps the GIL, because letting
go of a tensor imported from NumPy or PyTorch runs their DLPack deleter, which touches Python
objects. It is found beside this file (where ``pip install`` puts it), or at the path in the
``CORTEN_LIB`` environment variable (the test suite points it at a build tree).
"""
from __future__ import annotations

import ctypes
import os
from typing import Optional

MAX_RANK = 9

#: corten's dtypes (corten/types.h), in enum order (uint16, uint32 and uint64 were appended).
DTYPES = ("undefined", "bool", "int8", "uint8", "int16", "int32", "int64", "float16",
          "bfloat16", "float32", "float64", "uint16", "uint32", "uint64")

#: corten's status codes (corten/status.h) by value.
STATUS_NAMES = {
    0: "CT_OK", -1: "CT_ERR_INVALID_ARGUMENT", -2: "CT_ERR_OUT_OF_MEMORY",
    -3: "CT_ERR_NOT_FOUND", -4: "CT_ERR_TYPE_MISMATCH", -5: "CT_ERR_UNINITIALIZED",
    -6: "CT_ERR_OUT_OF_RANGE", -7: "CT_ERR_ALREADY_EXISTS", -8: "CT_ERR_EXTERNAL_BUFFER",
    -9: "CT_ERR_SHAPE", -10: "CT_ERR_UNSUPPORTED", -11: "CT_ERR_DEVICE", -12: "CT_ERR_IO",
    -13: "CT_ERR_FORMAT", -14: "CT_ERR_READ_ONLY",
}

DEVICE_CPU, DEVICE_CUDA, DEVICE_CUDA_HOST = 1, 2, 3


class Error(RuntimeError):
    """A failed corten call.

    Attributes:
        code: the C status, a negative int (``-14``).
        status: its name (``"CT_ERR_READ_ONLY"``).
        message: corten's ``ct_last_error()``, naming the objects involved and the fix.
    """

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.status = STATUS_NAMES.get(code, "CT_ERR_%d" % code)
        self.message = message
        super().__init__("%s: %s" % (self.status, message))


class Place(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("device", ctypes.c_int)]


class DDim(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int), ("d", ctypes.c_int64 * MAX_RANK)]


class ExecutorOptions(ctypes.Structure):
    """ct_executor_options, field for field (corten/program.h)."""
    _fields_ = [("free_intermediates", ctypes.c_bool),
                ("keep", ctypes.POINTER(ctypes.c_char_p)), ("n_keep", ctypes.c_size_t),
                ("fuse_elementwise", ctypes.c_bool), ("optimize", ctypes.c_bool),
                ("constants", ctypes.POINTER(ctypes.c_char_p)), ("n_constants", ctypes.c_size_t)]


class OnnxDimName(ctypes.Structure):
    """ct_onnx_dim_name (corten/onnx.h)."""
    _fields_ = [("var", ctypes.c_char_p), ("axis", ctypes.c_int), ("name", ctypes.c_char_p)]


class OnnxSaveOptions(ctypes.Structure):
    """ct_onnx_save_options (corten/onnx.h)."""
    _fields_ = [("dim_names", ctypes.POINTER(OnnxDimName)), ("n_dim_names", ctypes.c_size_t)]


class SlotDef(ctypes.Structure):
    """ct_slot_def (corten/op.h)."""
    _fields_ = [("name", ctypes.c_char_p), ("flags", ctypes.c_uint)]


class _IntList(ctypes.Structure):
    _fields_ = [("v", ctypes.POINTER(ctypes.c_int64)), ("n", ctypes.c_size_t)]


class _FloatList(ctypes.Structure):
    _fields_ = [("v", ctypes.POINTER(ctypes.c_double)), ("n", ctypes.c_size_t)]


class _AttrUnion(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double), ("b", ctypes.c_bool),
                ("s", ctypes.c_char_p), ("ints", _IntList), ("floats", _FloatList),
                ("program", ctypes.c_void_p)]


class AttrValue(ctypes.Structure):
    """ct_attr_value (corten/op.h)."""
    _fields_ = [("type", ctypes.c_int), ("u", _AttrUnion)]


class AttrDef(ctypes.Structure):
    """ct_attr_def (corten/op.h)."""
    _fields_ = [("name", ctypes.c_char_p), ("value", AttrValue), ("required", ctypes.c_bool)]


class OpDef(ctypes.Structure):
    """ct_op_def (corten/op.h), field for field."""
    _fields_ = [("type", ctypes.c_char_p),
                ("inputs", ctypes.POINTER(SlotDef)), ("n_inputs", ctypes.c_size_t),
                ("outputs", ctypes.POINTER(SlotDef)), ("n_outputs", ctypes.c_size_t),
                ("attrs", ctypes.POINTER(AttrDef)), ("n_attrs", ctypes.c_size_t),
                ("infer_shape", ctypes.c_void_p), ("dtype_attr", ctypes.c_char_p),
                ("grad", ctypes.c_void_p), ("flags", ctypes.c_uint)]


class MemoryReportEntry(ctypes.Structure):
    """ct_memory_report_entry (corten/scope.h)."""
    _fields_ = [("path", ctypes.c_char_p), ("dtype", ctypes.c_int), ("dims", DDim),
                ("place", Place), ("bytes", ctypes.c_size_t), ("block_bytes", ctypes.c_size_t),
                ("holding", ctypes.c_int), ("shared_with", ctypes.c_char_p),
                ("block", ctypes.c_size_t)]


class MemoryReport(ctypes.Structure):
    """ct_memory_report (corten/scope.h)."""
    _fields_ = [("entries", ctypes.POINTER(MemoryReportEntry)), ("n", ctypes.c_size_t)]


class ProfileEvent(ctypes.Structure):
    """ct_profile_event (corten/profile.h)."""
    _fields_ = [("type", ctypes.c_char_p), ("label", ctypes.c_char_p),
                ("start_ns", ctypes.c_int64), ("dur_ns", ctypes.c_int64),
                ("thread", ctypes.c_int), ("bytes", ctypes.c_int64), ("allocs", ctypes.c_int64),
                ("status", ctypes.c_int), ("device_start_ns", ctypes.c_int64),
                ("device_dur_ns", ctypes.c_int64)]


class MemoryStats(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_size_t), ("peak", ctypes.c_size_t),
                ("reserved", ctypes.c_size_t), ("allocs", ctypes.c_uint64),
                ("frees", ctypes.c_uint64)]


def _library_path() -> str:
    path = os.environ.get("CORTEN_LIB")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.startswith("libcorten.so"):
            return os.path.join(here, name)
    raise ImportError("corten: libcorten.so is not installed beside %s: install the package "
                      "with pip (pip install ./python), or set CORTEN_LIB to the library" % here)


_p, _i, _i64, _sz, _b = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t,
                         ctypes.c_bool)
_s, _d = ctypes.c_char_p, ctypes.c_double
_pp = ctypes.POINTER(ctypes.c_char_p)

# name: (result, arguments). A status result is an int.
_SIGNATURES = {
    "ct_status_str": (_s, [_i]),
    "ct_last_error": (_s, []),
    "ct_last_status": (_i, []),
    "ct_clear_error": (None, []),
    "ct_dtype_size": (_sz, [_i]),
    "ct_cpu": (Place, []),
    "ct_cuda": (Place, [_i]),
    "ct_cuda_host": (Place, []),
    "ct_cuda_device_count": (_i, []),
    "ct_memory_stats_get": (_i, [Place, ctypes.POINTER(MemoryStats)]),
    "ct_host_allocator_name": (_s, []),
    "ct_tensor_new": (_p, []),
    "ct_tensor_free": (None, [_p]),
    "ct_tensor_resize": (_i, [_p, DDim]),
    "ct_tensor_mutable_data": (_p, [_p, _i, Place]),
    "ct_tensor_data": (_p, [_p, _i]),
    "ct_tensor_dims": (DDim, [_p]),
    "ct_tensor_dtype": (_i, [_p]),
    "ct_tensor_place": (Place, [_p]),
    "ct_tensor_numel": (_i64, [_p]),
    "ct_tensor_has_memory": (_b, [_p]),
    "ct_tensor_is_read_only": (_b, [_p]),
    "ct_tensor_share": (_i, [_p, _p]),
    "ct_tensor_copy": (_i, [_p, _p, Place]),
    "ct_tensor_to_dlpack": (_i, [_p, ctypes.POINTER(_p)]),
    "ct_tensor_to_dlpack_versioned": (_i, [_p, ctypes.POINTER(_p)]),
    "ct_tensor_from_dlpack": (_i, [_p, _p]),
    "ct_tensor_from_dlpack_versioned": (_i, [_p, _p]),
    "ct_scope_new": (_p, []),
    "ct_scope_new_kid": (_p, [_p]),
    "ct_scope_free": (None, [_p]),
    "ct_scope_var": (_p, [_p, _s]),
    "ct_scope_find_var": (_p, [_p, _s]),
    "ct_scope_find_local_var": (_p, [_p, _s]),
    "ct_scope_erase_vars": (_sz, [_p, _pp, _sz]),
    "ct_scope_rename": (_i, [_p, _s, _s]),
    "ct_scope_local_var_names": (_sz, [_p, _pp, _sz]),
    "ct_scope_memory_report": (_i, [_p, ctypes.POINTER(ctypes.POINTER(MemoryReport))]),
    "ct_memory_report_free": (None, [ctypes.POINTER(MemoryReport)]),
    "ct_var_tensor": (_p, [_p]),
    "ct_var_get_tensor": (_p, [_p]),
    "ct_params_save": (_i, [_s, _p, _pp, _sz]),
    "ct_params_load": (_i, [_s, _p]),
    "ct_op_new": (_p, [_s]),
    "ct_op_free": (None, [_p]),
    "ct_op_set_inputs": (_i, [_p, _s, _pp, _sz]),
    "ct_op_set_outputs": (_i, [_p, _s, _pp, _sz]),
    "ct_op_set_attr_int": (_i, [_p, _s, _i64]),
    "ct_op_set_attr_float": (_i, [_p, _s, _d]),
    "ct_op_set_attr_bool": (_i, [_p, _s, _b]),
    "ct_op_set_attr_string": (_i, [_p, _s, _s]),
    "ct_op_set_attr_ints": (_i, [_p, _s, ctypes.POINTER(_i64), _sz]),
    "ct_op_set_attr_floats": (_i, [_p, _s, ctypes.POINTER(_d), _sz]),
    "ct_op_set_attr_program": (_i, [_p, _s, _p]),
    "ct_op_run": (_i, [_p, _p, Place]),
    "ct_program_new": (_p, []),
    "ct_program_free": (None, [_p]),
    "ct_program_append": (_i, [_p, _p]),
    "ct_program_size": (_sz, [_p]),
    "ct_program_append_backward": (_i, [_p, _s, _pp, _sz]),
    "ct_program_prune": (_i, [_p, _pp, _sz]),
    "ct_nn_new": (_p, [_p, ctypes.c_uint64]),
    "ct_nn_free": (None, [_p]),
    "ct_nn_startup": (_p, [_p]),
    "ct_nn_main": (_p, [_p]),
    "ct_nn_run_startup": (_i, [_p, Place]),
    "ct_nn_param_count": (_sz, [_p]),
    "ct_nn_param": (_s, [_p, _sz]),
    "ct_nn_linear": (_s, [_p, _s, _i64, _i64, _p]),
    "ct_nn_conv2d": (_s, [_p, _s, _i64, _i64, _i, _i, _i, _p]),
    "ct_nn_pool2d": (_s, [_p, _s, _b, _i, _i]),
    "ct_nn_flatten": (_s, [_p, _s]),
    "ct_nn_activation": (_s, [_p, _s, _s]),
    "ct_nn_batch_norm": (_s, [_p, _s, _i64, _b]),
    "ct_nn_layer_norm": (_s, [_p, _s, _i64]),
    "ct_nn_embedding": (_s, [_p, _s, _i64, _i64]),
    "ct_nn_dropout": (_s, [_p, _s, _d, _b]),
    "ct_nn_lstm": (_s, [_p, _s, _i64, _i64, _b]),
    "ct_nn_gru": (_s, [_p, _s, _i64, _i64, _b]),
    "ct_nn_cross_entropy": (_s, [_p, _s, _s]),
    "ct_nn_mse": (_s, [_p, _s, _s]),
    "ct_nn_sgd": (_i, [_p, _s, _d]),
    "ct_nn_momentum": (_i, [_p, _s, _d, _d]),
    "ct_nn_adam": (_i, [_p, _s, _d]),
    "ct_nn_minimize": (_i, [_p, _s, _p]),
    "ct_program_op": (_p, [_p, _sz]),
    "ct_op_type": (_s, [_p]),
    "ct_op_type_get": (_i, [_s, ctypes.POINTER(OpDef)]),
    "ct_op_type_names": (_sz, [_pp, _sz]),
    "ct_op_type_doc": (_s, [_s]),
    "ct_op_get_attr": (_i, [_p, _s, ctypes.POINTER(AttrValue)]),
    "ct_kernel_get": (_p, [_s, _i, _i]),
    "ct_op_input_count": (_sz, [_p, _s]),
    "ct_op_output_count": (_sz, [_p, _s]),
    "ct_op_input": (_s, [_p, _s, _sz]),
    "ct_op_output": (_s, [_p, _s, _sz]),
    "ct_executor_new": (_p, [_p, _p, Place]),
    "ct_executor_new_with": (_p, [_p, _p, Place, ctypes.POINTER(ExecutorOptions)]),
    "ct_profile_start": (_p, [_i]),
    "ct_profile_stop": (_i, [_p]),
    "ct_profile_free": (None, [_p]),
    "ct_profile_count": (_sz, [_p]),
    "ct_profile_event_get": (_i, [_p, _sz, ctypes.POINTER(ProfileEvent)]),
    "ct_profile_table": (_i, [_p, _i, _p, _sz, ctypes.POINTER(_sz)]),
    "ct_profile_save_chrome_trace": (_i, [_p, _s]),
    "ct_set_num_threads": (None, [_i]),
    "ct_get_num_threads": (_i, []),
    "ct_executor_run": (_i, [_p]),
    "ct_executor_free": (None, [_p]),
    "ct_onnx_load": (_p, [_s, _p]),
    "ct_onnx_load_buffer": (_p, [_p, _sz, _p]),
    "ct_onnx_program": (_p, [_p]),
    "ct_onnx_input_count": (_sz, [_p]),
    "ct_onnx_input_name": (_s, [_p, _sz]),
    "ct_onnx_output_count": (_sz, [_p]),
    "ct_onnx_output_name": (_s, [_p, _sz]),
    "ct_onnx_constant_count": (_sz, [_p]),
    "ct_onnx_constant_name": (_s, [_p, _sz]),
    "ct_onnx_opset": (ctypes.c_longlong, [_p]),
    "ct_onnx_free": (None, [_p]),
    "ct_onnx_save": (_i, [_s, _p, _p, _pp, _sz, _pp, _sz]),
    "ct_onnx_save_with": (_i, [_s, _p, _p, _pp, _sz, _pp, _sz, _p]),
}


class _Lib:
    """The loaded library: each C function as an attribute named without its ct_ prefix."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dll = ctypes.PyDLL(path)
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(self.dll, name)
            fn.restype = res
            fn.argtypes = args
            setattr(self, name[3:], fn)


lib = _Lib(_library_path())


#: The C calls corten's messages name as fixes, and what does the same from Python.
_PYTHON_FIX = (
    ("ct_scope_var", 'scope["name"] = value'),
    ("ct_scope_erase_vars", 'del scope["name"]'),
    ("ct_op_set_attr_", "Op(type, ..., name=value) or op.set_attr(name, value)"),
    ("ct_op_set_input", "Op(type, inputs={slot: names})"),
    ("ct_op_set_output", "Op(type, outputs={slot: names})"),
    ("ct_op_type_names", "corten.ops()"),
    ("ct_tensor_mutable_data", "a value: scope[name] = array (or run the op that writes it)"),
    ("ct_tensor_resize", "a value of the dims you want: scope[name] = array"),
    ("ct_tensor_copy", "tensor.copy(device)"),
    ("ct_params_load", "corten.load_params(path)"),
    ("ct_params_save", "corten.save_params(path, tensors)"),
    ("ct_onnx_load", "corten.onnx.load(path)"),
    ("ct_memory_empty_cache", "corten.memory_stats(device) to see what is held"),
    ("ct_executor_new", "corten.Executor(program, scope)"),
    ("ct_program_append_backward", "program.append_backward(loss, params)"),
    ("ct_cpu()", 'device="cpu"'),
    ("ct_cuda(n)", 'device="cuda:N"'),
    ("ct_cuda_host()", 'device="cuda_host"'),
)


def python_message(message: str) -> str:
    """corten's message with, after it, the Python spelling of each C call it names as a fix
    (the C sentence is kept: it is the same in every language)."""
    fixes = ["%s: %s" % (c.rstrip("_"), py) for c, py in _PYTHON_FIX if c in message]
    return message if not fixes else "%s [from Python: %s]" % (message, "; ".join(fixes))


def last_error() -> Error:
    """The calling thread's last corten failure as an Error, its fix also in Python terms."""
    return Error(lib.last_status(), python_message(lib.last_error().decode("utf-8", "replace")))


def check(status: int) -> None:
    """Raises the last error when a corten call returned a failing status."""
    if status != 0:
        raise Error(status, lib.last_error().decode("utf-8", "replace"))


def check_ptr(ptr: Optional[int]) -> int:
    """Raises the last error when a corten call returned NULL; else returns the pointer."""
    if not ptr:
        raise last_error()
    return ptr


def cstr(s: str, what: str) -> bytes:
    """A Python str as a C string, refusing what C cannot hold."""
    if not isinstance(s, str):
        raise TypeError("%s must be a str, not %s" % (what, type(s).__name__))
    b = s.encode("utf-8")
    if b"\0" in b:
        raise ValueError("%s %r holds a NUL character" % (what, s))
    return b


def cstr_array(names, what: str):
    """A C array of C strings (and the encoded strings, which must outlive it)."""
    encoded = [cstr(n, what) for n in names]
    return (ctypes.c_char_p * max(len(encoded), 1))(*encoded), encoded


def place(device: str) -> Place:
    """A C place from "cpu", "cuda", "cuda:N" or "cuda_host"."""
    if device == "cpu":
        return lib.cpu()
    if device == "cuda_host":
        return lib.cuda_host()
    if device == "cuda" or (isinstance(device, str) and device.startswith("cuda:")):
        ordinal = 0 if device == "cuda" else device[5:]
        try:
            return lib.cuda(int(ordinal))
        except ValueError:
            pass
    raise Error(-1, "device %r: use 'cpu', 'cuda', 'cuda:N' or 'cuda_host'" % (device,))


def device_name(p: Place) -> str:
    """"cpu", "cuda:N" or "cuda_host" for a C place."""
    if p.kind == DEVICE_CUDA:
        return "cuda:%d" % p.device
    if p.kind == DEVICE_CUDA_HOST:
        return "cuda_host"
    return "cpu"
