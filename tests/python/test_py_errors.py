# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_errors.py: every failure of the C library reaches Python as corten.Error.
"""Each error path of the package raises corten.Error (a RuntimeError) with the C status name
and corten's message naming the objects involved."""
import pytest

import corten
from conftest import np

INVALID, NOT_FOUND, RANGE = "CT_ERR_INVALID_ARGUMENT", "CT_ERR_NOT_FOUND", "CT_ERR_OUT_OF_RANGE"


def raises(status, fn, *args, **kw):
    with pytest.raises(corten.Error) as e:
        fn(*args, **kw)
    assert e.value.status == status, str(e.value)
    assert isinstance(e.value, RuntimeError) and e.value.message
    assert str(e.value) == "%s: %s" % (e.value.status, e.value.message)
    return e.value


def test_error_carries_code_status_and_message():
    e = raises(NOT_FOUND, corten.Op, "no_such_op")
    assert e.code == -3 and "no_such_op" in e.message


def test_scope_errors():
    s = corten.Scope()
    s["a"], s["b"] = np.zeros(1, np.float32), np.zeros(1, np.float32)
    assert "'missing'" in raises(NOT_FOUND, s.__getitem__, "missing").message
    raises(NOT_FOUND, s.__delitem__, "missing")
    raises("CT_ERR_ALREADY_EXISTS", s.rename, "a", "b")
    raises(NOT_FOUND, s.rename, "missing", "c")
    raises(INVALID, s.__setitem__, "", np.zeros(1))
    corten.Executor(corten.Program().append("relu", inputs={"X": "a"}, outputs={"Out": "o"}),
                    s)
    raises("CT_ERR_UNINITIALIZED", s.__getitem__, "o")  # created by the executor, still empty


def test_op_and_program_errors():
    s = corten.Scope()
    s["x"] = np.zeros((2, 3), np.float32)
    s["y"] = np.zeros((4, 5), np.float32)
    op = corten.Op("relu", inputs={"X": "missing"}, outputs={"Out": "o"})
    assert "missing" in raises(NOT_FOUND, op.run, s).message
    raises("CT_ERR_SHAPE", corten.Op("matmul", inputs={"X": "x", "Y": "y"},
                                     outputs={"Out": "o"}).run, s)
    p = corten.Program()
    p.append(op)
    raises(INVALID, op.run, s)  # the program owns it now
    raises(NOT_FOUND, corten.Executor, p, s)
    raises("CT_ERR_TYPE_MISMATCH", corten.Op("scale").set_attr, "scale", "x")
    raises(NOT_FOUND, corten.Program().append_backward, "nothing", ["x"])
    raises(INVALID, op.run, s, "tpu")


def test_executor_run_failure_names_the_op():
    s = corten.Scope()
    s["x"] = np.zeros((2, 3), np.float32)
    p = corten.Program()
    p.append("matmul", inputs={"X": "x", "Y": "x"}, outputs={"Out": "o"})
    e = raises("CT_ERR_SHAPE", lambda: corten.Executor(p, s).run())
    assert "matmul" in e.message


def test_tensor_errors():
    raises(INVALID, corten.zeros, (2,), "complex64")
    raises(RANGE, corten.zeros, (1,) * 10)
    raises(INVALID, corten.zeros, (-1,))
    t = corten.zeros((2,), "float32")
    if corten.cuda_device_count() > 0:  # a GPU: the copy is made (test_py_cuda.py says more)
        assert t.copy("cuda:0").device == "cuda:0"
    else:  # a CPU-only build (unsupported) or no device (a device error)
        with pytest.raises(corten.Error) as e:
            t.copy("cuda:0")
        assert e.value.status in ("CT_ERR_UNSUPPORTED", "CT_ERR_DEVICE")
    raises("CT_ERR_UNINITIALIZED", corten.Tensor().copy)
    raises("CT_ERR_UNINITIALIZED", corten.Tensor().__dlpack__)
    raises(INVALID, corten.dtype_id, "int128")


def test_dlpack_import_errors():
    raises("CT_ERR_UNSUPPORTED", corten.from_dlpack, np.zeros(3, np.complex64))
    raises("CT_ERR_UNSUPPORTED", corten.from_dlpack, np.zeros((3, 3), np.float32)[:, 1])
    cap = np.zeros(2, np.float32).__dlpack__()
    corten.from_dlpack(cap)
    raises(INVALID, corten.from_dlpack, cap)  # a capsule is consumed once


def test_params_errors(tmp_path):
    raises("CT_ERR_IO", corten.load_params, tmp_path / "absent.params")
    raises("CT_ERR_IO", corten.save_params, tmp_path / "no" / "dir.params",
           {"a": np.zeros(1, np.float32)})
    raises(INVALID, corten.save_params, tmp_path / "x.params", {"": np.zeros(1, np.float32)})
    (tmp_path / "short.params").write_bytes(b"\x01\x02")
    raises("CT_ERR_FORMAT", corten.load_params, tmp_path / "short.params")


def test_protocol_misuse_is_bufferror_as_the_array_api_says():
    t = corten.zeros((1,), "float32")
    with pytest.raises(BufferError):
        t.__dlpack__(stream=5)


def test_messages_give_the_python_fix_beside_the_c_one():
    """A message naming a C call as its fix keeps it and adds what does the same from Python."""
    s = corten.Scope()
    with pytest.raises(corten.Error) as e:
        s["missing"]
    assert "create it with ct_scope_var" in e.value.message  # the C sentence, kept
    assert e.value.message.endswith('[from Python: ct_scope_var: scope["name"] = value]')
    assert corten._lib.python_message("no fix named here") == "no fix named here"
    assert corten._lib.python_message("use ct_cpu()") == (
        'use ct_cpu() [from Python: ct_cpu(): device="cpu"]')
