# SPDX-License-Identifier: Apache-2.0
# python/corten/params.py: load_params / save_params over TVM's parameter-dictionary format.
"""Parameter files in TVM's (and CVM's) parameter-dictionary format, byte for byte."""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Union

from ._lib import check, check_ptr, cstr_array, lib
from .scope import Scope
from .tensor import Tensor, as_tensor, share

PathLike = Union[str, "os.PathLike[str]"]


def load_params(path: PathLike) -> Dict[str, Tensor]:
    """Reads a parameter file (TVM's ``save_param_dict`` format) into a dict name -> Tensor,
    sorted by name. All or nothing: a malformed, truncated or foreign file raises
    corten.Error (CT_ERR_FORMAT, naming the entry and the offset), an unreadable one CT_ERR_IO.
    Bool entries are read in both forms (kDLBool 8 bits, and the older uint 1 bit)."""
    scope = Scope()
    check(lib.params_load(os.fsencode(path), scope._h))
    out: Dict[str, Tensor] = {}
    for name in scope.names():
        var = check_ptr(lib.scope_find_var(scope._h, name.encode("utf-8")))
        out[name] = share(check_ptr(lib.var_get_tensor(var)))
    return out


def save_params(path: PathLike, params: Mapping[str, Any]) -> None:
    """Writes params (name -> corten Tensor or any DLPack producer: NumPy, PyTorch) to path as
    TVM's parameter dictionary, in the mapping's order, without copying the tensors first.
    Atomic: a failed save leaves an existing file as it was. Bool is written as current TVM
    writes it (kDLBool, 8 bits)."""
    scope = Scope()
    tensors = []
    for name, value in params.items():
        t = as_tensor(value)
        tensors.append(t)
        scope[name] = t
    names, keep = cstr_array(list(params.keys()), "parameter name")
    check(lib.params_save(os.fsencode(path), scope._h, names, len(keep)))
