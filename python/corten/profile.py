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
from typing import Any, Dict, List, Optional

from ._lib import ProfileEvent, check, check_ptr, lib

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
        """Per op type: count, total ms, mean us, share, bytes, allocations (and device ms where
        ops ran at a CUDA place); sort by "total", "count", "mean" or "bytes"."""
        if sort not in _SORTS:
            raise ValueError("sort %r: give one of %s" % (sort, ", ".join(_SORTS)))
        need = ctypes.c_size_t(0)
        check(lib.profile_table(self._h, _SORTS[sort], None, 0, ctypes.byref(need)))
        buf = ctypes.create_string_buffer(need.value)
        check(lib.profile_table(self._h, _SORTS[sort], buf, need.value, None))
        return buf.value.decode()

    def events(self) -> List[Dict[str, Any]]:
        """Every event in the order recorded: dicts with ``type`` (the op type, or
        "executor_run"), ``label`` (the op's outputs), ``start_us``, ``dur_us``, ``thread``,
        ``bytes`` (the change of the place's allocated bytes across it), ``allocs``, and
        for an op at a CUDA place ``device_start_us`` and ``device_dur_us`` (its kernels' time
        from CUDA events; None on the host)."""
        out, e = [], ProfileEvent()
        for i in range(len(self)):
            check(lib.profile_event_get(self._h, i, ctypes.byref(e)))
            out.append({"type": e.type.decode(), "label": e.label.decode(),
                        "start_us": e.start_ns / 1e3, "dur_us": e.dur_ns / 1e3,
                        "thread": e.thread, "bytes": e.bytes, "allocs": e.allocs,
                        "device_start_us": (e.device_start_ns / 1e3
                                            if e.device_dur_ns >= 0 else None),
                        "device_dur_us": (e.device_dur_ns / 1e3
                                          if e.device_dur_ns >= 0 else None)})
        return out

    def plot_memory(self, path, labels: int = 5) -> None:
        """Draws the allocated bytes over the profile's ops (each op's change added in the
        order they ended, so the curve starts at 0: what the profiled code allocated) and
        labels the `labels` ops that allocated most with their variables; saves it at path (a
        PNG, SVG or PDF, by its extension). Needs matplotlib (an optional dependency: Debian's
        python3-matplotlib, or pip install matplotlib)."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("Profile.plot_memory draws with matplotlib, which is not "
                              "installed: apt-get install python3-matplotlib, or pip install "
                              "matplotlib (%s)" % e) from None
        ops = sorted((e for e in self.events() if e["type"] != "executor_run"),
                     key=lambda e: e["start_us"] + e["dur_us"])
        t, y, level = [0.0], [0.0], 0
        for e in ops:
            level += e["bytes"]
            t.append((e["start_us"] + e["dur_us"]) / 1e3)
            y.append(level / 2**20)
        fig, ax = plt.subplots(figsize=(10, 4))
        ax.step(t, y, where="post")
        ax.set_xlabel("time since the profile started (ms)")
        ax.set_ylabel("allocated (MiB, from the start)")
        ax.set_title("memory over %d ops" % len(ops))
        top = sorted(range(len(ops)), key=lambda i: -ops[i]["bytes"])[:labels]
        for i in top:
            if ops[i]["bytes"] > 0:
                ax.annotate("%s (%.2f MiB)" % (ops[i]["label"][:40], ops[i]["bytes"] / 2**20),
                            (t[i + 1], y[i + 1]), fontsize=7, xytext=(4, 4),
                            textcoords="offset points")
        fig.tight_layout()
        fig.savefig(os.fspath(path))
        plt.close(fig)

    def export_chrome_trace(self, path) -> None:
        """Writes the Trace Event Format JSON (atomically: an earlier file stays on failure)."""
        check(lib.profile_save_chrome_trace(self._h, os.fsencode(path)))


def profile(process: bool = False) -> Profile:
    """A profile to use as a context manager (see the module's docstring)."""
    return Profile(process)


__all__ = ["Profile", "profile"]
