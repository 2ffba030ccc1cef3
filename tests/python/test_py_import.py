# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_import.py: `import corten` in a fresh interpreter, beside NumPy and
# PyTorch in either order, with no glibc tunable; and the host allocator it picks.
"""import corten works in a plain python3 whatever was imported before or after it (the library
does not need jemalloc's static TLS), and uses jemalloc only when the process already has it."""
import os
import subprocess
import sys

import pytest

import corten

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def run(code, **extra):
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    # The package under test: the installed one, or python/ of the source tree.
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(corten.__file__)))
    env.update(extra)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


ORDERS = [("corten", "numpy"), ("numpy", "corten")]
if have("torch"):
    ORDERS += [("corten", "torch", "numpy"), ("torch", "numpy", "corten")]


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_import_in_any_order(order):
    code = "; ".join("import %s" % m for m in order)
    code += "; t = corten.from_dlpack(numpy.ones(2, numpy.float32)); print(t.shape)"
    assert run(code) == "(2,)"


def test_plain_python_uses_the_c_library_allocator():
    assert run("import corten; print(corten.host_allocator())") == "libc"


@pytest.mark.skipif(os.environ.get("CORTEN_TEST_JEMALLOC") != "1" or not os.path.exists(JEMALLOC),
                    reason="a build without jemalloc (sanitizers), or no Debian libjemalloc")
def test_preloaded_jemalloc_is_used():
    preload = " ".join(p for p in [os.environ.get("LD_PRELOAD", ""), JEMALLOC] if p)
    code = "import corten; t = corten.zeros((4,)); print(corten.host_allocator())"
    assert run(code, LD_PRELOAD=preload) == "jemalloc"
