# SPDX-License-Identifier: Apache-2.0
"""corten.profile: where a run's time goes, op by op (corten/profile.h).

    with corten.profile() as p:
        model.run({"x": x})
    print(p.table())
    p.export_chrome_trace("run.json")   # chrome://tracing or ui.perfetto.dev
"""
from __future__ import annotations

import ctypes
import os
from typing import Optional

from ._lib import check, check_ptr, lib

_SORTS = {"total": 0, "count": 1, "mean": 2, "bytes": 3}


class Profile:
    """A profile: records the ops executors and ``Op.run`` run while it is active (on this
    thread, or on every thread with ``process=True``), then gives a table and a Chrome trace."""

    def __init__(self, process: bool = False) -> None:
        self._process = process
        self._h: Optional[int] = None

    def __enter__(self) -> "Profile":
        self._h = check_ptr(lib.profile_start(1 if self._process else 0))
        return self

    def __exit__(self, *exc) -> None:
        check(lib.profile_stop(self._h))

    def __del__(self, _free=lib.profile_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    def __len__(self) -> int:
        """The events recorded (ops and executor runs)."""
        return int(lib.profile_count(self._h)) if self._h else 0

    def table(self, sort: str = "total") -> str:
        """Per op type: count, total ms, mean us, share, bytes, allocations; sort by "total",
        "count", "mean" or "bytes"."""
        if sort not in _SORTS:
            raise ValueError("sort %r: give one of %s" % (sort, ", ".join(_SORTS)))
        need = ctypes.c_size_t(0)
        check(lib.profile_table(self._h, _SORTS[sort], None, 0, ctypes.byref(need)))
        buf = ctypes.create_string_buffer(need.value)
        check(lib.profile_table(self._h, _SORTS[sort], buf, need.value, None))
        return buf.value.decode()

    def export_chrome_trace(self, path) -> None:
        """Writes the Trace Event Format JSON (atomically: an earlier file stays on failure)."""
        check(lib.profile_save_chrome_trace(self._h, os.fsencode(path)))


def profile(process: bool = False) -> Profile:
    """A profile to use as a context manager (see the module's docstring)."""
    return Profile(process)


__all__ = ["Profile", "profile"]
