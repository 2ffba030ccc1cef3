# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_numpy.py: corten and NumPy (1.24 from Debian, 2.x from PyPI) through
# DLPack, both ways, zero copy.
"""NumPy reads corten tensors (numpy.from_dlpack) and corten reads NumPy arrays
(corten.from_dlpack), with the same memory on both sides: a write through either is seen by the
other, nothing is allocated, and each side's memory lives until the other lets go."""
import ctypes
import gc
import weakref

import pytest

import corten
from conftest import NUMPY2, collect, np

ALL = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64",
       "uint16", "uint32", "uint64"]


def test_numpy_array_into_corten_is_zero_copy(stats):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = corten.from_dlpack(a)
    assert (t.shape, t.dtype, t.device, t.read_only) == ((3, 4), "float32", "cpu", False)
    assert t.data_ptr == a.ctypes.data
    a[2, 3] = -1.0
    assert np.from_dlpack(t)[2, 3] == -1.0
    assert stats.delta("allocs") == 0


def test_corten_tensor_into_numpy_is_zero_copy_and_writes_show(stats):
    t = corten.zeros((2, 3), "float32")
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr
    assert a.shape == (2, 3) and a.dtype == np.float32
    # NumPy 2 asks for DLPack 1.x and gets a writable array; NumPy 1.24 marks it read-only.
    assert a.flags.writeable == NUMPY2
    if NUMPY2:
        a[1, 2] = 7.0
    else:  # corten writes: an op's output in place
        b = corten.from_dlpack(np.ones((2, 3), np.float32))
        s = corten.Scope()
        s["t"], s["b"] = t, b
        corten.Op("scale", inputs={"X": "b"}, outputs={"Out": "t"}, scale=7.0).run(s)
    assert a[1, 2] == 7.0
    assert stats.delta("allocs") == 1  # the zeros; the export allocates no tensor memory


def test_numpy_negotiates_the_dlpack_version():
    t = corten.zeros((2,), "int32")
    v = t.__dlpack__(max_version=(1, 0))
    old = t.__dlpack__()
    assert "dltensor_versioned" in repr(v)
    assert '"dltensor"' in repr(old)
    assert "dltensor" in repr(t.__dlpack__(max_version=(0, 8)))
    assert t.__dlpack_device__() == (1, 0)


def test_corten_memory_lives_until_numpy_lets_go(stats):
    t = corten.from_dlpack(np.arange(4, dtype=np.float32)).copy()
    a = np.from_dlpack(t)
    del t
    assert stats.delta("frees") == 0
    view = a[1:]
    del a
    assert stats.delta("frees") == 0
    assert view.tolist() == [1, 2, 3]
    del view
    assert stats.delta("frees") == 1


def test_numpy_memory_lives_until_corten_lets_go():
    a = np.arange(6, dtype=np.int64)
    alive = weakref.ref(a)
    t = corten.from_dlpack(a)
    s = corten.Scope()
    s["x"] = t
    del a, t
    collect()
    assert alive() is not None  # the scope's variable holds NumPy's array
    assert np.from_dlpack(s["x"]).tolist() == [0, 1, 2, 3, 4, 5]
    del s
    collect()
    assert alive() is None


def test_an_unconsumed_capsule_frees_its_export(stats):
    t = corten.zeros((3,), "float32")
    cap = t.__dlpack__(max_version=(1, 0))
    del t
    assert stats.delta("frees") == 0
    del cap
    assert stats.delta("frees") == 1


@pytest.mark.parametrize("dtype", ALL)
def test_every_dtype_numpy_to_corten(dtype):
    a = np.array([1, 0, 1], dtype=dtype)
    # NumPy 1.24 exports no bool through DLPack: corten views it through the array interface.
    t = corten.from_dlpack(a)
    assert t.dtype == dtype
    assert t.data_ptr == a.ctypes.data


@pytest.mark.parametrize("dtype", ALL)
def test_every_dtype_corten_to_numpy(dtype):
    t = corten.zeros((3,), dtype)
    if dtype == "bool" and not NUMPY2:
        with pytest.raises(RuntimeError, match="Unsupported dtype"):  # NumPy 1.24: no kDLBool
            np.from_dlpack(t)
        return
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(dtype)
    assert a.tolist() == [0, 0, 0]


def test_a_bool_array_is_viewed_zero_copy_and_kept_alive():
    a = np.array([True, False, True])
    t = corten.from_dlpack(a)
    assert t.dtype == "bool" and t.shape == (3,) and t.data_ptr == a.ctypes.data
    s = corten.Scope()
    s["flag"] = t  # a second view, in a variable
    gone = weakref.ref(a)
    del a, t
    collect()
    assert gone() is not None  # the variable still views the array
    assert ctypes.string_at(s["flag"].data_ptr, 3) == b"\x01\x00\x01"
    del s
    collect()
    assert gone() is None  # the last view gone, corten let go of the array


def test_a_read_only_bool_array_gives_a_read_only_tensor():
    a = np.array([True, False])
    a.flags.writeable = False
    assert corten.from_dlpack(a).read_only


def test_save_params_takes_bool_arrays(tmp_path):
    path = tmp_path / "flags.params"
    corten.save_params(path, {"flag": np.array([True, False])})
    back = corten.load_params(path)["flag"]
    assert back.dtype == "bool" and back.shape == (2,)
    assert bytes(ctypes.string_at(back.data_ptr, 2)) == b"\x01\x00"


@pytest.mark.skipif(not NUMPY2, reason="NumPy 1.24 exchanges no bool through DLPack")
def test_bool_both_ways_with_numpy2():
    a = np.array([True, False, True])
    t = corten.from_dlpack(a)
    b = np.from_dlpack(t)
    assert b.dtype == np.bool_ and b.tolist() == [True, False, True]
    b[1] = True
    assert a[1]


def test_float16_values_cross_unchanged():
    a = np.array([0.5, -2.0, 65504.0], dtype=np.float16)
    t = corten.from_dlpack(a)
    assert t.dtype == "float16"
    assert np.from_dlpack(t.copy()).tolist() == [0.5, -2.0, 65504.0]


def test_zero_dim_both_ways():
    t = corten.from_dlpack(np.array(2.5))
    assert t.shape == () and t.size == 1
    a = np.from_dlpack(t.copy())
    assert a.shape == () and float(a) == 2.5


def test_empty_arrays_both_ways():
    t = corten.from_dlpack(np.zeros((0, 3), np.float32))
    assert t.shape == (0, 3) and t.size == 0
    a = np.from_dlpack(corten.zeros((2, 0), "int64"))
    assert a.shape == (2, 0) and a.dtype == np.int64


def test_read_only_numpy_array():
    a = np.arange(3, dtype=np.float32)
    a.flags.writeable = False
    # NumPy 1.24 refuses to export it through DLPack: corten views it through the array
    # interface, read-only too.
    t = corten.from_dlpack(a)
    assert t.read_only
    s = corten.Scope()
    s["x"], s["y"] = t, np.ones(3, np.float32)
    with pytest.raises(corten.Error) as e:
        corten.Op("scale", inputs={"X": "y"}, outputs={"Out": "x"}, scale=2.0).run(s)
    assert e.value.status == "CT_ERR_READ_ONLY"
    assert a.tolist() == [0, 1, 2]
    if not NUMPY2:
        return
    b = np.from_dlpack(t)  # back to NumPy 2, still read-only
    assert not b.flags.writeable
    with pytest.raises(BufferError):
        t.__dlpack__()  # the unversioned form cannot say read-only
    assert not t.copy().read_only


def test_strided_arrays_are_refused_and_stay_numpys():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    alive = weakref.ref(a.base)
    with pytest.raises(corten.Error) as e:
        corten.from_dlpack(a)
    assert e.value.status == "CT_ERR_UNSUPPORTED" and "stride" in e.value.message
    del a, e  # the traceback holds from_dlpack's frame, and the capsule in it
    collect()
    assert alive() is None  # NumPy's own capsule destructor freed it


def test_a_feed_into_a_held_variable_is_zero_copy_and_a_refused_one_changes_nothing():
    s = corten.Scope()
    s["a"] = np.arange(6, dtype=np.float32)  # a new variable
    b = np.arange(4, dtype=np.float64)
    s["a"] = b  # into the variable the scope holds: its tensor views b
    assert s["a"].data_ptr == b.ctypes.data and s["a"].dtype == "float64"
    with pytest.raises(corten.Error) as e:
        s["a"] = np.arange(12, dtype=np.float32).reshape(3, 4).T  # strided: refused
    assert e.value.status == "CT_ERR_UNSUPPORTED"
    assert s["a"].data_ptr == b.ctypes.data and s["a"].shape == (4,)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_unsigned_extremes_round_trip_exactly(dtype):
    top = np.iinfo(dtype).max
    a = np.array([0, 1, top // 2 + 1, top], dtype=dtype)
    t = corten.from_dlpack(a)
    assert t.dtype == np.dtype(dtype).name and t.data_ptr == a.ctypes.data
    b = np.from_dlpack(t.copy())
    assert b.dtype == dtype and b.tolist() == [0, 1, int(top) // 2 + 1, int(top)]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_dtypes_corten_lacks_are_refused(dtype):
    with pytest.raises(corten.Error) as e:
        corten.from_dlpack(np.zeros(3, dtype=dtype))
    assert e.value.status == "CT_ERR_UNSUPPORTED"


def test_copy_and_device_requests():
    t = corten.zeros((2,), "float32")
    a = np.from_dlpack(t)
    c = corten.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert c.data_ptr != t.data_ptr
    assert np.from_dlpack(corten.from_dlpack(t.__dlpack__(dl_device=(1, 0)))).ctypes.data == \
        a.ctypes.data
    with pytest.raises(BufferError):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))


def test_numpy_asarray_len_float_and_indexing_feel_like_numpy():
    """np.asarray(t) and np.array(t) give the values (asarray zero copy), len, float, int and
    bool read them, t[i] and t[a:b] view rows, and the repr shows the first values."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = corten.from_dlpack(x)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.tolist() == x.tolist()
    assert a.__array_interface__["data"][0] == t.data_ptr  # zero copy
    assert np.array(t).__array_interface__["data"][0] != t.data_ptr  # np.array copies
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert len(t) == 3
    row = t[1]
    assert row.shape == (4,) and np.asarray(row).tolist() == [4, 5, 6, 7]
    assert row.data_ptr == t.data_ptr + 16  # a view of the same memory
    assert t[1:3].shape == (2, 4) and float(t[2, 3]) == 11.0
    one = corten.from_dlpack(np.array([7], np.int64))
    assert int(one) == 7 and float(one) == 7.0 and bool(one)
    with pytest.raises(TypeError):
        float(t)
    with pytest.raises(TypeError):
        len(corten.from_dlpack(np.float32(1.5).reshape(())))
    assert repr(row) == "corten.Tensor(shape=(4,), dtype=float32, device=cpu, [4.0 5.0 6.0 7.0])"
    assert repr(t).endswith("[0.0 1.0 2.0 3.0 4.0 5.0 ...])")
    kept = np.asarray(corten.zeros((3,), "float32"))  # the array keeps the tensor alive
    gc.collect()
    assert kept.tolist() == [0.0, 0.0, 0.0]


def test_lists_and_numbers_go_into_a_scope():
    s = corten.Scope()
    s["l"], s["i"], s["b"], s["f"] = [1.0, 2.0], [[1, 2], [3, 4]], [True, False], 0.5
    assert s["l"].dtype == "float32" and np.asarray(s["l"]).tolist() == [1.0, 2.0]
    assert s["i"].dtype == "int64" and s["i"].shape == (2, 2)
    assert s["b"].dtype == "bool" and np.asarray(s["b"]).tolist() == [True, False]
    assert s["f"].shape == () and float(s["f"]) == 0.5
    with pytest.raises(TypeError):
        s["bad"] = ["a", "b"]
