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
    assert len(blocks) == 5
    monkeypatch.chdir(tmp_path)
    ns = {}
    for block in blocks[:3]:
        exec(compile(block, "README.md", "exec"), ns)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[[ 0.  4.]" and out[1] == " [ 8. 13.]]"
    assert float(out[2]) < 1e-4
    assert out[3:] == ["(4,) float32 cpu", "[ 0. 10. 20. 30.]", "['b', 'w1']"]
    # the fine-tuning block reads the digits from the shared folder beside the repository
    digits = os.environ.get("CORTEN_DIGITS", "")
    if not os.path.exists(digits):
        pytest.skip("CORTEN_DIGITS does not name the digits file (the shared data folder)")
    block = blocks[3].replace('"../shared/data/digits/digits.params"', repr(digits))
    assert block != blocks[3]
    exec(compile(block, "README.md", "exec"), ns)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("test accuracy ")
    assert float(out[0][len("test accuracy "):-1]) >= 97.0
    exec(compile(blocks[4], "README.md", "exec"), ns)  # the MLP by layers, on the same digits
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("test accuracy ")
    assert float(out[0][len("test accuracy "):-1]) >= 90.0
