# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_params.py: load_params / save_params against TVM's parameter-dictionary
# layout, written here byte by byte from the format's rules.
"""Parameter files: corten writes exactly the bytes TVM's save_param_dict writes (bool as
kDLBool, 8 bits), and reads TVM's files, bool in both its forms."""
import os
import struct

import pytest

import corten
from conftest import np

DICT_MAGIC = 0xF7E58D4F05049CB7
TENSOR_MAGIC = 0xDD5E40F096B4A13F
CODES = {"int": 0, "uint": 1, "float": 2, "bool": 6}


def record(code, bits, shape, data):
    """One tensor record, as TVM's NDArray::Save writes it."""
    out = struct.pack("<QQiiiBBH", TENSOR_MAGIC, 0, 1, 0, len(shape), code, bits, 1)
    out += struct.pack("<%dq" % len(shape), *shape)
    return out + struct.pack("<q", len(data)) + data


def dictionary(entries):
    """A parameter dictionary of (name, record bytes) in order."""
    out = struct.pack("<QQQ", DICT_MAGIC, 0, len(entries))
    for name, _ in entries:
        out += struct.pack("<Q", len(name)) + name.encode()
    out += struct.pack("<Q", len(entries))
    return out + b"".join(r for _, r in entries)


def test_save_writes_tvms_bytes_with_kdlbool(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    mask = np.array([1, 0, 1, 1], dtype=np.uint8)  # as bool below: NumPy 1.24 exports no bool
    s = corten.Scope()
    s["m"] = mask
    corten.Op("cast", inputs={"X": "m"}, outputs={"Out": "flag"},
              dtype=corten.dtype_id("bool")).run(s)
    path = tmp_path / "x.params"
    corten.save_params(path, {"w": w, "flag": s["flag"]})
    want = dictionary([("w", record(2, 32, (2, 3), w.tobytes())),
                       ("flag", record(6, 8, (4,), bytes([1, 0, 1, 1])))])
    assert path.read_bytes() == want
    assert os.listdir(tmp_path) == ["x.params"]  # no temporary left behind


def test_load_reads_both_bool_forms_and_every_entry(tmp_path):
    ids = np.array([[3, -4]], dtype=np.int64)
    path = tmp_path / "tvm.params"
    path.write_bytes(dictionary([
        ("new_bool", record(6, 8, (3,), bytes([0, 1, 1]))),  # TVM 0.27, DLPack 1.x
        ("old_bool", record(1, 1, (2,), bytes([1, 0]))),  # older TVM: uint, 1 bit, a byte each
        ("ids", record(0, 64, (1, 2), ids.tobytes())),
        ("scalar", record(2, 64, (), struct.pack("<d", 2.5))),
    ]))
    d = corten.load_params(path)
    assert sorted(d) == ["ids", "new_bool", "old_bool", "scalar"]
    assert d["new_bool"].dtype == "bool" and d["old_bool"].dtype == "bool"
    assert d["new_bool"].shape == (3,) and d["old_bool"].shape == (2,)
    as_bytes = corten.Scope()
    as_bytes["b"] = d["new_bool"]
    corten.Op("cast", inputs={"X": "b"}, outputs={"Out": "u"},
              dtype=corten.dtype_id("uint8")).run(as_bytes)
    assert np.from_dlpack(as_bytes["u"]).tolist() == [0, 1, 1]
    assert np.from_dlpack(d["ids"]).tolist() == [[3, -4]]
    assert d["scalar"].shape == () and float(np.from_dlpack(d["scalar"])) == 2.5


def test_round_trip_keeps_values_and_dtypes(tmp_path):
    src = {"a": np.array([0.5, -1.0], np.float16), "b": np.arange(4, dtype=np.int8),
           "e": np.zeros((0, 2), np.float32)}
    corten.save_params(tmp_path / "r.params", src)
    back = corten.load_params(tmp_path / "r.params")
    for name, a in src.items():
        b = np.from_dlpack(back[name])
        assert b.dtype == a.dtype and b.shape == a.shape and b.tolist() == a.tolist()


def test_a_corrupt_file_raises_format_error_and_names_the_offset(tmp_path):
    good = dictionary([("w", record(2, 32, (2,), b"\0" * 8))])
    path = tmp_path / "bad.params"
    path.write_bytes(good[:-3])
    with pytest.raises(corten.Error) as e:
        corten.load_params(path)
    assert e.value.status == "CT_ERR_FORMAT" and "offset" in e.value.message


def test_an_mxnet_file_is_refused(tmp_path):
    path = tmp_path / "mx.params"
    path.write_bytes(struct.pack("<QQ", 0x112, 0) + b"\0" * 32)
    with pytest.raises(corten.Error) as e:
        corten.load_params(path)
    assert e.value.status == "CT_ERR_FORMAT" and "MXNet" in e.value.message
