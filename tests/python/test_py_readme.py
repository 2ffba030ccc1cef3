# SPDX-License-Identifier: Apache-2.0
# tests/python/test_py_readme.py: the README's Python quick start runs as written.
"""Runs the README's ```python blocks in order, in one namespace, in a scratch directory, and
checks what their comments promise."""
import os
import re

import pytest

pytest.importorskip("torch")
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def test_readme_python_blocks(tmp_path, monkeypatch, capsys):
    with open(README, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    ns = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), ns)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[[ 0.  4.]" and out[1] == " [ 8. 13.]]"
    assert float(out[2]) < 1e-4
    assert out[3:] == ["(4,) float32 cpu", "[ 0. 10. 20. 30.]", "['b', 'w1']"]
