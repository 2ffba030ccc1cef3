# SPDX-License-Identifier: Apache-2.0
# tests/python/conftest.py: what the pytest suites of the corten package share.
"""Shared fixtures: the package under test (python/ of the source tree, with CORTEN_LIB set by
ctest to the build's library), NumPy's major version, and a memory-stats probe."""
import gc
import os
import sys

import pytest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.environ.get("CORTEN_LIB") and os.path.abspath(SRC) not in map(os.path.abspath, sys.path):
    sys.path.insert(0, os.path.abspath(SRC))

import corten  # noqa: E402

np = pytest.importorskip("numpy")
NUMPY2 = int(np.__version__.split(".")[0]) >= 2


def collect():
    """Runs the garbage collector until nothing more is freed."""
    gc.collect()
    gc.collect()


class Stats:
    """Host memory figures relative to when the probe was made."""

    def __init__(self):
        collect()
        self.base = corten.memory_stats()

    def delta(self, name):
        collect()
        return corten.memory_stats()[name] - self.base[name]


@pytest.fixture
def stats():
    return Stats()
