# SPDX-License-Identifier: Apache-2.0
# python/corten/program.py: corten.Op, Program and Executor, and training through
# ct_program_append_backward.
"""Ops, programs and the executor: build a computation by variable names, run it on a scope."""
from __future__ import annotations

import ctypes
from typing import Any, List, Mapping, Optional, Sequence, Union

from ._lib import (AttrValue, Error, ExecutorOptions, OpDef, check, check_ptr, cstr, cstr_array,
                   lib, place)
from .ops import attr_value
from .scope import Scope

Names = Union[str, Sequence[str]]

_INVALID_ARGUMENT = -1


def _names(v: Names) -> List[str]:
    return [v] if isinstance(v, str) else list(v)


class Op:
    """One operator: a type (``"matmul"``, ``"elementwise_add"``, ... see docs/ops.md), its
    input and output variables by slot, and attributes.

    ``Op("elementwise_add", inputs={"X": "a", "Y": "b"}, outputs={"Out": "c"})``; attributes
    come as keyword arguments or ``attrs``, typed by their Python value: bool, int, float, str,
    a list of ints, a list of floats, or a Program. An unknown type raises corten.Error
    (CT_ERR_NOT_FOUND); a wiring mistake raises when the op runs, naming the slot.
    """

    def __init__(self, type: str, inputs: Optional[Mapping[str, Names]] = None,
                 outputs: Optional[Mapping[str, Names]] = None,
                 attrs: Optional[Mapping[str, Any]] = None, **kwattrs: Any) -> None:
        self._h = check_ptr(lib.op_new(cstr(type, "op type")))
        self.type = type
        for slot, names in (inputs or {}).items():
            self.set_inputs(slot, names)
        for slot, names in (outputs or {}).items():
            self.set_outputs(slot, names)
        for name, value in dict(attrs or {}, **kwattrs).items():
            self.set_attr(name, value)

    def __del__(self, _free=lib.op_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    def _handle(self) -> int:
        if not self._h:
            raise Error(_INVALID_ARGUMENT, "op %r was appended to a program, which owns it now"
                        % self.type)
        return self._h

    def set_inputs(self, slot: str, names: Names) -> "Op":
        """Sets the variables an input slot reads."""
        arr, keep = cstr_array(_names(names), "variable name")
        check(lib.op_set_inputs(self._handle(), cstr(slot, "slot"), arr, len(keep)))
        return self

    def set_outputs(self, slot: str, names: Names) -> "Op":
        """Sets the variables an output slot writes."""
        arr, keep = cstr_array(_names(names), "variable name")
        check(lib.op_set_outputs(self._handle(), cstr(slot, "slot"), arr, len(keep)))
        return self

    def set_attr(self, name: str, value: Any) -> "Op":
        """Sets an attribute, its C type chosen by the Python value's type."""
        h, n = self._handle(), cstr(name, "attribute name")
        if isinstance(value, bool):
            check(lib.op_set_attr_bool(h, n, value))
        elif isinstance(value, int):
            check(lib.op_set_attr_int(h, n, value))
        elif isinstance(value, float):
            check(lib.op_set_attr_float(h, n, value))
        elif isinstance(value, str):
            check(lib.op_set_attr_string(h, n, cstr(value, "attribute value")))
        elif isinstance(value, Program):
            check(lib.op_set_attr_program(h, n, value._take()))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, int) and
                                                     not isinstance(v, bool) for v in value):
            arr = (ctypes.c_int64 * max(len(value), 1))(*value)
            check(lib.op_set_attr_ints(h, n, arr, len(value)))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) and
                                                     not isinstance(v, bool) for v in value):
            arr = (ctypes.c_double * max(len(value), 1))(*value)
            check(lib.op_set_attr_floats(h, n, arr, len(value)))
        else:
            raise TypeError("attribute %r: %r is not a bool, int, float, str, list of ints or "
                            "floats, or Program" % (name, value))
        return self

    def run(self, scope: Scope, device: str = "cpu") -> None:
        """Runs the op once on scope's variables (outputs are created when missing)."""
        check(lib.op_run(self._handle(), scope._h, place(device)))

    def __repr__(self) -> str:
        return "corten.Op(%r)" % self.type


class ProgramOp:
    """What op i of a program is, read when it was asked for (a copy: it stays valid whatever
    happens to the program): ``type``, ``inputs`` / ``outputs`` mapping each wired slot to its
    variable names, and ``attrs`` every attribute's value (set or default; a program attribute
    as None)."""

    __slots__ = ("type", "inputs", "outputs", "attrs")

    def __init__(self, type: str, inputs: Mapping[str, List[str]],
                 outputs: Mapping[str, List[str]],
                 attrs: Optional[Mapping[str, Any]] = None) -> None:
        self.type, self.inputs, self.outputs = type, dict(inputs), dict(outputs)
        self.attrs = dict(attrs or {})

    def __repr__(self) -> str:
        def wiring(slots):
            return ", ".join("%s=%s" % (k, v[0] if len(v) == 1 else "[" + ", ".join(v) + "]")
                             for k, v in slots.items())
        return "%s(%s) -> %s" % (self.type, wiring(self.inputs), wiring(self.outputs))


def _read_op(h: int) -> ProgramOp:
    t = lib.op_type(h)
    d = OpDef()
    check(lib.op_type_get(t, ctypes.byref(d)))
    sides = []
    for slots, n, count, name_of in ((d.inputs, d.n_inputs, lib.op_input_count, lib.op_input),
                                     (d.outputs, d.n_outputs, lib.op_output_count,
                                      lib.op_output)):
        wired = {}
        for k in range(n):
            slot = slots[k].name
            names = [name_of(h, slot, i).decode() for i in range(count(h, slot))]
            if names:
                wired[slot.decode()] = names
        sides.append(wired)
    attrs = {}
    v = AttrValue()
    for k in range(d.n_attrs):
        name = d.attrs[k].name
        check(lib.op_get_attr(h, name, ctypes.byref(v)))
        attrs[name.decode()] = attr_value(v)
    return ProgramOp(t.decode(), sides[0], sides[1], attrs)


class Program:
    """A list of ops run in order. ``append`` adds an Op (the program takes it) or builds one
    from the same arguments as :class:`Op`."""

    def __init__(self) -> None:
        self._h = check_ptr(lib.program_new())

    def __del__(self, _free=lib.program_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    def _handle(self) -> int:
        if not self._h:
            raise Error(_INVALID_ARGUMENT, "the program was given to an op as an attribute, "
                        "which owns it now")
        return self._h

    def _take(self) -> int:
        h = self._handle()
        self._h = None
        return h

    def append(self, op: Union[Op, str], inputs: Optional[Mapping[str, Names]] = None,
               outputs: Optional[Mapping[str, Names]] = None, **attrs: Any) -> "Program":
        """Appends op (an Op, or a type with inputs, outputs and attributes to build one)."""
        if isinstance(op, str):
            op = Op(op, inputs, outputs, **attrs)
        elif inputs or outputs or attrs:
            raise TypeError("append: pass an Op alone, or a type with its slots")
        self._edited()  # even a failed append may have taken (freed) the op
        check(lib.program_append(self._handle(), op._handle()))
        op._h = None  # the program owns it now
        return self

    def append_backward(self, loss: str, params: Sequence[str]) -> List[str]:
        """Appends the ops computing d(loss)/d(p) for each p into variables named ``p@GRAD``;
        returns those names. Raises corten.Error (CT_ERR_UNSUPPORTED) for an op on the path
        without a gradient, leaving the program as it was."""
        arr, keep = cstr_array(list(params), "parameter name")
        self._edited()
        check(lib.program_append_backward(self._handle(), cstr(loss, "loss name"), arr,
                                          len(keep)))
        return [p + "@GRAD" for p in params]

    def prune(self, targets: Names) -> "Program":
        """Cuts the program down to the ops the variables ``targets`` depend on (a model's
        features without its head, a training step's forward part) and drops the rest; the
        targets get the values a run of the whole program gives them. Raises corten.Error
        (CT_ERR_NOT_FOUND) for a target no op writes, leaving the program as it was. Executors
        made over the program before must not run afterwards: make new ones."""
        arr, keep = cstr_array(_names(targets), "target name")
        self._edited()
        check(lib.program_prune(self._handle(), arr, len(keep)))
        return self

    def __len__(self) -> int:
        return int(lib.program_size(self._handle()))

    @property
    def edits(self) -> int:
        """How many times this Program object was edited (append, append_backward, prune): an
        executor made before an edit must not run after it; compare this to know."""
        return getattr(self, "_edit_count", 0)

    def _edited(self) -> None:
        self._edit_count = self.edits + 1

    def __getitem__(self, i: int) -> ProgramOp:
        """Op i (negative from the end) as a :class:`ProgramOp`: its type and wiring."""
        n = len(self)
        if not isinstance(i, int):
            raise TypeError("a program is indexed by an int, not %s" % type(i).__name__)
        if not -n <= i < n:
            raise IndexError("op %d of a program of %d ops" % (i, n))
        return _read_op(lib.program_op(self._handle(), i % n))

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        n = len(self)
        shown = [repr(self[i]) for i in range(min(n, 8))]
        more = ["... %d more" % (n - 8)] if n > 8 else []
        return "<corten.Program of %d ops%s>" % (n, "".join("\n  " + line
                                                            for line in shown + more))

    def run(self, scope: Scope, device: str = "cpu") -> None:
        """Runs the program once (a new Executor each call; keep one to run it many times)."""
        Executor(self, scope, device).run()


class BorrowedProgram(Program):
    """A program another object owns (an ONNX Model, an nn Builder): appending to it works;
    freeing is the owner's, and the owner lives while this does."""

    def __init__(self, handle: int, owner: Any, what: str) -> None:  # pylint: disable=super-init-not-called
        self._h = handle
        self._owner = owner
        self._what = what

    def __del__(self) -> None:  # the owner frees it
        self._h = None

    def _take(self) -> int:
        raise TypeError("%s's program cannot be given to an op: %s owns it"
                        % (self._what, self._what))


class Executor:
    """Runs a program on a scope at a device. Every name and kernel is resolved once, here;
    :meth:`run` then runs without look-ups. Keeps the program and the scope alive.

    The options are ct_executor_options' (corten/program.h): ``free_intermediates`` releases
    intermediates after their last use, ``fuse_elementwise`` runs chains of elementwise ops as
    one expression, ``optimize`` runs the graph passes (docs/design/passes.md), ``keep`` names
    variables none of them may release or fuse away, ``constants`` names variables that stay
    the same while the executor lives (weights: packed once for the GEMM, and read-only to
    corten meanwhile; docs/design/constants.md)."""

    def __init__(self, program: Program, scope: Scope, device: str = "cpu", *,
                 free_intermediates: bool = False, fuse_elementwise: bool = False,
                 optimize: bool = False, keep: Sequence[str] = (),
                 constants: Sequence[str] = ()) -> None:
        self._program, self._scope = program, scope
        names = [cstr(k, "kept variable name") for k in keep]
        self._keep = (ctypes.c_char_p * max(len(names), 1))(*names)
        consts = [cstr(k, "constant variable name") for k in constants]
        self._constants = (ctypes.c_char_p * max(len(consts), 1))(*consts)
        opts = ExecutorOptions(free_intermediates=free_intermediates, keep=self._keep,
                               n_keep=len(names), fuse_elementwise=fuse_elementwise,
                               optimize=optimize, constants=self._constants,
                               n_constants=len(consts))
        self._h = check_ptr(lib.executor_new_with(program._handle(), scope._h, place(device),
                                                  ctypes.byref(opts)))

    def __del__(self, _free=lib.executor_free) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            _free(h)

    def run(self) -> None:
        """Runs the program once; the first failing op raises corten.Error naming it."""
        check(lib.executor_run(self._h))
