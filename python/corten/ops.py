# SPDX-License-Identifier: Apache-2.0
# python/corten/ops.py: corten.ops() and corten.op_info(), the registered op types.
"""The op types corten knows (built in, and registered by programs), with their slots,
attributes and kernels, read from the registry (corten/op.h): the same facts as docs/ops.md."""
from __future__ import annotations

import ctypes
import difflib
from typing import Any, Dict, List

from ._lib import DEVICE_CPU, DEVICE_CUDA, DTYPES, Error, OpDef, check, cstr, lib

_OPTIONAL, _MANY, _ANY_TYPE = 1, 2, 4
_ATTR_TYPES = {1: "int", 2: "float", 3: "bool", 4: "string", 5: "ints", 6: "floats",
               7: "program"}


def ops() -> List[str]:
    """The names of every registered op type, sorted."""
    n = lib.op_type_names(None, 0)
    out = (ctypes.c_char_p * max(n, 1))()
    n = min(n, lib.op_type_names(out, n))
    return [out[i].decode() for i in range(n)]


def attr_value(v) -> Any:
    """A ct_attr_value as Python: int, float, bool, str, list, or None for a program."""
    return _default(v)


def _default(v) -> Any:
    t = _ATTR_TYPES.get(v.type)
    if t == "int":
        return v.u.i
    if t == "float":
        return v.u.f
    if t == "bool":
        return bool(v.u.b)
    if t == "string":
        return v.u.s.decode() if v.u.s else ""
    if t == "ints":
        return [v.u.ints.v[k] for k in range(v.u.ints.n)]
    if t == "floats":
        return [v.u.floats.v[k] for k in range(v.u.floats.n)]
    return None


def op_info(name: str) -> Dict[str, Any]:
    """One op type: ``inputs`` and ``outputs`` (lists of dicts: name, optional, many,
    any_type), ``attributes`` (name, type, default, required), ``kernels`` ({"cpu": [dtypes],
    "cuda": [...]}: "any" for a kernel of every dtype), ``gradient`` (whether
    append_backward can differentiate it) and ``doc`` (what it computes: its formula, its
    inputs' dims and dtypes, how to start its state; None when the type has none). Raises corten.Error (CT_ERR_NOT_FOUND) for a name
    no op type has, naming the near ones."""
    d = OpDef()
    try:
        check(lib.op_type_get(cstr(name, "op type"), ctypes.byref(d)))
    except Error as e:
        near = difflib.get_close_matches(name, ops(), n=5)
        raise Error(e.code, "op_info: no op type %r is registered (corten.ops() lists them)%s"
                    % (name, "; near: " + ", ".join(near) if near else "")) from None

    def slots(v, n):
        return [{"name": v[k].name.decode(), "optional": bool(v[k].flags & _OPTIONAL),
                 "many": bool(v[k].flags & _MANY), "any_type": bool(v[k].flags & _ANY_TYPE)}
                for k in range(n)]

    kernels = {}
    for dev, kind in (("cpu", DEVICE_CPU), ("cuda", DEVICE_CUDA)):
        got = [dt for i, dt in enumerate(DTYPES) if i and lib.kernel_get(d.type, kind, i)]
        kernels[dev] = ["any"] if lib.kernel_get(d.type, kind, 0) else got
    return {"type": d.type.decode(), "inputs": slots(d.inputs, d.n_inputs),
            "outputs": slots(d.outputs, d.n_outputs),
            "attributes": [{"name": d.attrs[k].name.decode(),
                            "type": _ATTR_TYPES.get(d.attrs[k].value.type, "unknown"),
                            "default": _default(d.attrs[k].value),
                            "required": bool(d.attrs[k].required)} for k in range(d.n_attrs)],
            "kernels": kernels, "gradient": bool(d.grad), "doc": _doc(d.type)}


def _doc(type_name: bytes):
    text = lib.op_type_doc(type_name)
    return text.decode() if text is not None else None


__all__ = ["ops", "op_info"]
