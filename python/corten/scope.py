# SPDX-License-Identifier: Apache-2.0
# python/corten/scope.py: corten.Scope, named variables holding tensors.
"""Scopes: named variables in nested scopes, as ops and programs read and write them."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Iterator, List, Optional

from ._lib import (DTYPES, Error, MemoryReport, check, check_ptr, cstr, cstr_array,
                   device_name, lib)
from .tensor import Tensor, as_tensor, import_into, share

_NOT_FOUND = -3


class Scope:
    """A scope of named variables. ``Scope()`` is a root; :meth:`kid` makes a kid scope.

    ``scope["x"] = value`` points variable x at value's memory (a corten Tensor, a NumPy array,
    a PyTorch tensor: any DLPack producer; zero copy, so ops read and write that memory).
    ``scope["x"]`` is a Tensor viewing the variable's memory (zero copy); lookups walk up to the
    ancestors. A missing name raises corten.Error (CT_ERR_NOT_FOUND).
    """

    def __init__(self) -> None:
        self._h = check_ptr(lib.scope_new())
        self._parent: Optional[Scope] = None

    @classmethod
    def _kid_of(cls, parent: "Scope") -> "Scope":
        s = cls.__new__(cls)
        s._h = check_ptr(lib.scope_new_kid(parent._h))
        s._parent = parent  # the parent owns the kid's C scope and must outlive this object
        return s

    def __del__(self, _free=lib.scope_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h and getattr(self, "_parent", None) is None:
            _free(h)

    def kid(self) -> "Scope":
        """A new kid scope: its variables shadow this scope's, lookups fall back to it."""
        return Scope._kid_of(self)

    @property
    def parent(self) -> Optional["Scope"]:
        """The parent scope, None for a root."""
        return self._parent

    def __setitem__(self, name: str, value: Any) -> None:
        key = cstr(name, "variable name")
        var = lib.scope_find_local_var(self._h, key)
        if var and not isinstance(value, (Tensor, bool, int, float, list, tuple)):
            # A DLPack producer into a variable this scope holds (a model's feed, every run):
            # imported straight into its tensor, which a failed import leaves as it was.
            import_into(check_ptr(lib.var_tensor(var)), value)
            return
        t = as_tensor(value)
        var = check_ptr(lib.scope_var(self._h, key))
        check(lib.tensor_share(check_ptr(lib.var_tensor(var)), t._h))

    def __getitem__(self, name: str) -> Tensor:
        var = check_ptr(lib.scope_find_var(self._h, cstr(name, "variable name")))
        return share(check_ptr(lib.var_get_tensor(var)))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(lib.scope_find_var(self._h, cstr(name, "name")))

    def get(self, name: str, default: Any = None) -> Any:
        """scope[name], or default when no scope up the chain has the name."""
        try:
            return self[name]
        except Error as e:
            if e.code == _NOT_FOUND:
                return default
            raise

    def __delitem__(self, name: str) -> None:
        names, keep = cstr_array([name], "variable name")
        if lib.scope_erase_vars(self._h, names, 1) != 1:
            raise Error(_NOT_FOUND, "scope has no local variable %r to erase" % name)

    def rename(self, old: str, new: str) -> None:
        """Renames a local variable (corten.Error if old is missing or new exists)."""
        check(lib.scope_rename(self._h, cstr(old, "variable name"), cstr(new, "variable name")))

    def names(self) -> List[str]:
        """This scope's own variable names, sorted."""
        n = lib.scope_local_var_names(self._h, None, 0)
        out = (ctypes.c_char_p * max(n, 1))()
        n = min(n, lib.scope_local_var_names(self._h, out, n))
        return [out[i].decode("utf-8") for i in range(n)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def memory_report(self) -> List[Dict[str, Any]]:
        """Every variable of this scope and its kids (step scopes included) that holds memory,
        largest first (ct_scope_memory_report): dicts with ``path`` ("steps[3]/h"), ``dtype``,
        ``shape``, ``device``, ``bytes``, ``block_bytes``, ``holding`` ("own", "shared", "view"
        or "external"), ``shared_with`` (the other paths on the same block) and ``block`` (a
        number equal for entries on one block: sum block_bytes once per block, external ones
        left out, for what the scope holds)."""
        r = ctypes.POINTER(MemoryReport)()
        check(lib.scope_memory_report(self._h, ctypes.byref(r)))
        try:
            out = []
            for i in range(r.contents.n):
                e = r.contents.entries[i]
                with_ = e.shared_with.decode("utf-8")
                out.append({
                    "path": e.path.decode("utf-8"), "dtype": DTYPES[e.dtype],
                    "shape": tuple(e.dims.d[k] for k in range(max(e.dims.rank, 0))),
                    "device": device_name(e.place), "bytes": e.bytes,
                    "block_bytes": e.block_bytes,
                    "holding": ("own", "shared", "view", "external")[e.holding],
                    "shared_with": with_.split(", ") if with_ else [], "block": e.block})
            return out
        finally:
            lib.memory_report_free(r)

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return "corten.Scope(%s)" % ", ".join(self.names())
