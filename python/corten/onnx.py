# SPDX-License-Identifier: Apache-2.0
# python/corten/onnx.py: corten.onnx.load, ONNX models as corten programs (corten/onnx.h).
"""ONNX models in corten: :func:`load` makes a :class:`Model` whose program runs on a scope.

::

    m = corten.onnx.load("resnet18.onnx")
    out = m.run({"input": np.zeros((8, 3, 224, 224), np.float32)})   # any DLPack producer
    np.from_dlpack(out["output"])                                      # zero copy back

The model's initializers are variables of ``m.scope`` (named as in the file), its program is
``m.program`` (append to it to train: ``m.program.append_backward(...)``), and a symbolic dim
(a batch, a sequence) takes any size at run time.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from ._lib import OnnxDimName, OnnxSaveOptions, check, check_ptr, cstr, cstr_array, lib
from .program import BorrowedProgram, Executor, Program
from .scope import Scope
from .tensor import Tensor, import_into, share

# What Scope.__setitem__ makes a new tensor from (the rest are DLPack producers it imports).
_SCOPE_VALUES = (Tensor, bool, int, float, list, tuple)

PathLike = Union[str, "os.PathLike[str]"]


class Model:
    """A loaded ONNX model: ``inputs`` and ``outputs`` (names, in the file's order),
    ``program`` (a corten Program the model owns), ``scope`` (the variables: initializers,
    inputs, outputs) and ``opset``. :meth:`run` feeds inputs and returns the outputs.
    ``constants`` names the variables the load made besides the inputs (the weights)."""

    def __init__(self, handle: int, scope: Scope, optimize: bool = True,
                 constant_weights: bool = False, keep_intermediates: bool = False) -> None:
        self._h = handle
        self.scope = scope
        self.optimize = optimize
        self.constant_weights = constant_weights
        self.keep_intermediates = keep_intermediates
        self.constants: List[str] = [lib.onnx_constant_name(handle, i).decode("utf-8")
                                     for i in range(lib.onnx_constant_count(handle))]
        n_in, n_out = lib.onnx_input_count(handle), lib.onnx_output_count(handle)
        self.inputs: List[str] = [lib.onnx_input_name(handle, i).decode("utf-8")
                                  for i in range(n_in)]
        self.outputs: List[str] = [lib.onnx_output_name(handle, i).decode("utf-8")
                                   for i in range(n_out)]
        self.opset = int(lib.onnx_opset(handle))
        self.program: Program = BorrowedProgram(lib.onnx_program(handle), self, "a model")
        self.device = "cpu"
        self._executor: Optional[Executor] = None
        self._executor_edits = -1
        self._executor_device = ""
        # The executor's input variables (ct_var pointers; NULL for an input the scope does not
        # hold itself) and output variables: stable while it lives (corten/program.h).
        self._feed_vars: Dict[str, int] = {}
        self._fetch: List[Any] = []

    def __del__(self, _free=lib.onnx_free) -> None:
        self._executor = None
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    def to(self, device: str) -> "Model":
        """Copies the model's constants (its weights, ``constants``) to device ("cpu",
        "cuda:0", ...) and makes device where :meth:`run` runs by default; returns the model.
        All or nothing: every constant is copied before any variable takes its copy, so a
        failure (no such device, out of its memory) raises corten.Error and leaves the model
        as it was. Inputs are fed at run time, on the device the run uses."""
        copies = {name: self.scope[name].copy(device) for name in self.constants
                  if self.scope[name].device != device}
        self._executor = None  # it may hold the weights as constants: let them go first
        for name, t in copies.items():
            self.scope[name] = t
        self.device = device
        return self

    def run(self, feeds: Mapping[str, Any], device: Optional[str] = None) -> Dict[str, Tensor]:
        """Sets each input named in feeds (a corten Tensor or any DLPack producer: NumPy,
        PyTorch; zero copy) and runs the program; returns ``{output name: Tensor}`` viewing the
        outputs' memory. ``device`` defaults to the model's (:meth:`to`; "cpu" after a load), and
        every input and weight must be there. The executor is made once and kept while the
        program and the device are unchanged (and while it is, a run feeds the input variables
        it was made over without looking their names up); it runs the graph passes unless the
        model was loaded with ``optimize=False`` (docs/design/passes.md: the outputs are the
        same bits either way), and with
        ``constant_weights=True`` takes the weights as constants (docs/design/constants.md:
        packed once, the same bits; corten refuses to write them while the model keeps its
        executor, and a NumPy view of one taken earlier must not be written either). The
        values between the inputs and the outputs are released after their last use in a run
        (ct_executor_options.free_intermediates, the outputs kept), so a run's peak memory is
        what its live values take, and ``scope`` holds no memory for them afterwards; load with
        ``keep_intermediates=True`` to read them after the run."""
        device = self.device if device is None else device
        ex = self._executor
        if (ex is not None and self._executor_edits == self.program.edits and
                self._executor_device == device):
            # The executor's variables, found when it was made (it holds them the same way):
            # a feed goes into its variable's tensor as Scope.__setitem__ would put it there,
            # without looking the name up; the outputs are read from their variables.
            for name, value in feeds.items():
                var = self._feed_vars.get(name)
                if var is None or isinstance(value, _SCOPE_VALUES):
                    self.scope[name] = value
                else:
                    import_into(check_ptr(lib.var_tensor(var)), value)
            check(lib.executor_run(ex._h))
            return {name: share(check_ptr(lib.var_get_tensor(var))) for name, var in self._fetch}
        for name, value in feeds.items():
            self.scope[name] = value
        if (self._executor is None or self._executor_edits != self.program.edits or
                self._executor_device != device):
            self._executor = None  # freed before the new one binds the scope
            self._executor = Executor(self.program, self.scope, device, optimize=self.optimize,
                                      free_intermediates=not self.keep_intermediates,
                                      keep=self.outputs,
                                      constants=self.constants if self.constant_weights else ())
            self._executor_edits = self.program.edits
            self._executor_device = device
            scope = self.scope._h
            self._feed_vars = {name: lib.scope_find_local_var(scope, cstr(name, "input name"))
                               for name in self.inputs}
            self._fetch = [(name, check_ptr(lib.scope_find_var(scope, cstr(name, "output name"))))
                           for name in self.outputs]
        self._executor.run()
        return {name: self.scope[name] for name in self.outputs}

    def __repr__(self) -> str:
        return "<corten.onnx.Model opset %d, inputs %s, outputs %s, %d ops>" % (
            self.opset, self.inputs, self.outputs, len(self.program))


def load(path: PathLike, scope: Optional[Scope] = None, optimize: bool = True,
         constant_weights: bool = False, keep_intermediates: bool = False) -> Model:
    """Loads the ONNX model at path into scope (a new Scope when None). Raises corten.Error:
    CT_ERR_UNSUPPORTED naming every node corten cannot import, CT_ERR_FORMAT naming the field
    of a malformed file, CT_ERR_IO; the scope is left as it was. ``optimize``: whether
    :meth:`Model.run` runs the graph passes; ``constant_weights``: whether it takes the
    weights as constants; ``keep_intermediates``: whether the values between the inputs and
    the outputs keep their memory after a run (see :meth:`Model.run`)."""
    scope = scope if scope is not None else Scope()
    h = check_ptr(lib.onnx_load(os.fsencode(path), scope._h))
    return Model(h, scope, optimize, constant_weights, keep_intermediates)


def load_bytes(data: bytes, scope: Optional[Scope] = None, optimize: bool = True,
               constant_weights: bool = False, keep_intermediates: bool = False) -> Model:
    """As :func:`load`, from the bytes of a model (external data is refused)."""
    scope = scope if scope is not None else Scope()
    buf = bytes(data)
    h = check_ptr(lib.onnx_load_buffer(buf, len(buf), scope._h))
    return Model(h, scope, optimize, constant_weights, keep_intermediates)


def save(path: PathLike, program: Program, scope: Scope, inputs: List[str] = (),
         outputs: List[str] = (),
         dynamic_axes: Optional[Mapping[str, Mapping[int, str]]] = None) -> None:
    """Writes program as an ONNX model (opset 17) at path (ct_onnx_save): ops with a standard
    equivalent as that ONNX op, the others in the domain ``ai.corten``; the variables of scope
    the program reads before writing them (and that are not inputs) as initializers; inputs and
    outputs as the graph's, with the dims their tensors hold, except the axes ``dynamic_axes``
    names (``{"x": {0: "N"}, "y": {0: "N"}}``, as torch.onnx.export takes it), which are
    symbolic: the model then runs at any size there. :func:`load` of the file gives a program
    computing the same values bit for bit. Raises corten.Error naming a variable nothing
    defines, one holding no tensor, or a dtype ONNX lacks; no file is left then (the write is
    atomic)."""
    ins, keep_in = cstr_array(list(inputs), "input name")
    outs, keep_out = cstr_array(list(outputs), "output name")
    dims = [(var, int(axis), sym) for var, axes in (dynamic_axes or {}).items()
            for axis, sym in axes.items()]
    arr = (OnnxDimName * max(len(dims), 1))()
    for i, (var, axis, sym) in enumerate(dims):
        arr[i] = OnnxDimName(cstr(var, "dynamic_axes variable"), axis, cstr(sym, "dim name"))
    opts = OnnxSaveOptions(arr, len(dims))
    check(lib.onnx_save_with(os.fsencode(path), program._handle(), scope._h, ins, len(keep_in),
                             outs, len(keep_out), ctypes.addressof(opts)))


__all__ = ["Model", "load", "load_bytes", "save"]
