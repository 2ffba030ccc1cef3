#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""corten and NumPy exchanging tensors through DLPack, both ways, zero-copy.

NumPy (1.22 and later; Debian ships 1.24) is a real consumer, numpy.from_dlpack, and a real
producer, ndarray.__dlpack__. The tests check the values, that no byte is copied (the same
addresses), and the lifetimes: corten's memory lives until NumPy frees its array, and NumPy's
array lives until corten lets go of the last view.

Run by ctest with CORTEN_LIB set to the shared library. Exits 77 (skipped) when NumPy is
absent, saying so.
"""
import gc
import os
import sys
import unittest
import weakref

SKIP = 77

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed for %s (Debian: apt-get install python3-numpy)"
          % sys.executable)
    sys.exit(SKIP)
if not hasattr(np, "from_dlpack"):
    print("SKIPPED: numpy %s has no from_dlpack (it needs 1.22 or later)" % np.__version__)
    sys.exit(SKIP)

LIB = os.environ.get("CORTEN_LIB")
if not LIB:
    print("CORTEN_LIB is not set: give the path of libcorten.so (ctest sets it)")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corten_dlpack as cd  # noqa: E402

ct = cd.Corten(LIB)
FLOAT32 = cd.DTYPES.index("float32")
CT_ERR_UNSUPPORTED = -10


def collect():
    gc.collect()
    gc.collect()


class NumpyReadsCorten(unittest.TestCase):
    """A corten tensor through numpy.from_dlpack."""

    def setUp(self):
        self.base = ct.stats()

    def frees(self):
        return ct.stats().frees - self.base.frees

    def test_values_and_shape_without_a_copy(self):
        t = ct.tensor((2, 3), "float32", [0, 1, 2, 3, 4, 5])
        a = np.from_dlpack(cd.Exported(ct, t))
        self.assertEqual(a.shape, (2, 3))
        self.assertEqual(a.dtype, np.float32)
        self.assertEqual(a.tolist(), [[0, 1, 2], [3, 4, 5]])
        self.assertEqual(a.ctypes.data, ct.tensor_data(t, FLOAT32))
        # corten writes, numpy sees it (numpy 1.24 marks DLPack arrays read-only)
        p = (cd.ctypes.c_float * 6).from_address(ct.tensor_data(t, FLOAT32))
        p[5] = 42.0
        self.assertEqual(a[1, 2], 42.0)
        del a, p
        collect()
        ct.tensor_free(t)

    def test_memory_lives_until_numpy_frees_the_array(self):
        t = ct.tensor((4,), "float32", [1, 2, 3, 4])
        a = np.from_dlpack(cd.Exported(ct, t))
        ct.tensor_free(t)  # corten's last view goes; the DLManagedTensor still holds the memory
        collect()
        self.assertEqual(self.frees(), 0)
        view = a[1:]
        del a
        collect()
        self.assertEqual(self.frees(), 0)  # the numpy view keeps it alive
        self.assertEqual(view.tolist(), [2, 3, 4])
        del view
        collect()
        self.assertEqual(self.frees(), 1)  # the deleter ran, and only once
        self.assertEqual(ct.stats().allocated, self.base.allocated)

    def test_an_unconsumed_capsule_runs_the_deleter(self):
        t = ct.tensor((3,), "float32", [1, 2, 3])
        cap = cd.Exported(ct, t).__dlpack__()
        ct.tensor_free(t)
        self.assertEqual(self.frees(), 0)
        del cap
        collect()
        self.assertEqual(self.frees(), 1)

    def test_dtypes(self):
        for dtype in ["int8", "uint8", "int16", "int32", "int64", "float32", "float64"]:
            t = ct.tensor((3,), dtype, [1, 2, 3])
            a = np.from_dlpack(cd.Exported(ct, t))
            self.assertEqual(a.dtype, np.dtype(dtype), dtype)
            self.assertEqual(a.tolist(), [1, 2, 3], dtype)
            del a
            collect()
            ct.tensor_free(t)

    def test_scalar(self):
        t = ct.tensor((), "float64", [2.5])
        a = np.from_dlpack(cd.Exported(ct, t))
        self.assertEqual(a.shape, ())
        self.assertEqual(float(a), 2.5)
        del a
        collect()
        ct.tensor_free(t)

    def test_device(self):
        t = ct.tensor((1,), "float32", [0])
        self.assertEqual(cd.Exported(ct, t).__dlpack_device__(), (1, 0))
        ct.tensor_free(t)


class CortenReadsNumpy(unittest.TestCase):
    """A numpy array's __dlpack__() capsule through ct_tensor_from_dlpack."""

    def test_values_and_shape_without_a_copy(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = ct.tensor_new()
        self.assertEqual(cd.import_capsule(ct, t, a.__dlpack__()), 0, ct.error())
        self.assertEqual(ct.dims(t), (3, 4))
        self.assertEqual(ct.tensor_dtype(t), FLOAT32)
        self.assertTrue(ct.tensor_is_external(t))
        self.assertEqual(ct.tensor_data(t, FLOAT32), a.ctypes.data)
        a[2, 3] = -1.0
        p = (cd.ctypes.c_float * 12).from_address(ct.tensor_data(t, FLOAT32))
        self.assertEqual(p[11], -1.0)
        self.assertEqual(p[5], 5.0)
        ct.tensor_free(t)

    def test_numpy_deleter_runs_when_corten_lets_go(self):
        a = np.arange(6, dtype=np.int64)
        alive = weakref.ref(a)
        t = ct.tensor_new()
        cap = a.__dlpack__()
        self.assertEqual(cd.import_capsule(ct, t, cap), 0, ct.error())
        del cap, a
        collect()
        self.assertIsNotNone(alive())  # corten holds numpy's managed tensor
        t2 = ct.tensor_new()
        self.assertEqual(ct.tensor_share(t2, t), 0)
        ct.tensor_free(t)
        collect()
        self.assertIsNotNone(alive())  # a view remains
        p = (cd.ctypes.c_int64 * 6).from_address(ct.tensor_data(t2, cd.DTYPES.index("int64")))
        self.assertEqual(list(p), [0, 1, 2, 3, 4, 5])
        del p
        ct.tensor_free(t2)
        collect()
        self.assertIsNone(alive())  # numpy's deleter ran

    def test_dtypes(self):
        for dtype in ["int8", "uint8", "int16", "int32", "int64", "float16", "float32",
                      "float64"]:
            a = np.zeros(5, dtype=dtype)
            t = ct.tensor_new()
            self.assertEqual(cd.import_capsule(ct, t, a.__dlpack__()), 0, ct.error())
            self.assertEqual(cd.DTYPES[ct.tensor_dtype(t)], dtype)
            ct.tensor_free(t)

    def test_a_strided_array_is_refused_and_not_taken(self):
        a = np.arange(12, dtype=np.float32).reshape(3, 4).T  # not C-contiguous
        alive = weakref.ref(a.base)
        t = ct.tensor_new()
        cap = a.__dlpack__()
        self.assertEqual(cd.import_capsule(ct, t, cap), CT_ERR_UNSUPPORTED)
        self.assertIn("stride", ct.error())
        self.assertFalse(ct.tensor_has_memory(t))
        self.assertEqual(cd._py.PyCapsule_IsValid(cap, b"dltensor"), 1)  # still numpy's
        del cap, a
        collect()
        self.assertIsNone(alive())  # numpy's own capsule destructor freed it
        ct.tensor_free(t)

    def test_dtypes_corten_lacks_are_refused_and_not_taken(self):
        for dtype in ["uint16", "uint32", "uint64", "complex64"]:
            a = np.zeros(3, dtype=dtype)
            t = ct.tensor_new()
            cap = a.__dlpack__()
            self.assertEqual(cd.import_capsule(ct, t, cap), CT_ERR_UNSUPPORTED, dtype)
            self.assertEqual(cd._py.PyCapsule_IsValid(cap, b"dltensor"), 1)
            ct.tensor_free(t)

    def test_round_trip_back_to_numpy_shares_memory(self):
        a = np.arange(8, dtype=np.float64)
        alive = weakref.ref(a)
        t = ct.tensor_new()
        self.assertEqual(cd.import_capsule(ct, t, a.__dlpack__()), 0, ct.error())
        b = np.from_dlpack(cd.Exported(ct, t))
        self.assertEqual(b.ctypes.data, a.ctypes.data)
        ct.tensor_free(t)
        del a
        collect()
        self.assertIsNotNone(alive())
        self.assertEqual(b.tolist(), list(range(8)))
        del b
        collect()
        self.assertIsNone(alive())


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
