"""The stage-v8 draw rules (pwal_calls, pwal_xfile, lazy2) find the stores they describe.

Each rule is run on a small source text (ast only, as in the draw); each test also plants the
case the rule must skip, so a rule that matches everything or nothing goes red.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

_DRAW = Path(__file__).resolve().parents[2] / "resources" / "static_recall_outside_draw.py"
_spec = importlib.util.spec_from_file_location("static_recall_outside_draw", _DRAW)
assert _spec is not None and _spec.loader is not None
draw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(draw)  # the committed draw script, loaded by path (not a package)


def _fn(src: str) -> ast.FunctionDef:
    node = ast.parse(src).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_pwal_calls_finds_store_calls_with_derived_values():
    fn = _fn(
        "def process_weights_after_loading(self, layer, given):\n"
        "    layer.register_buffer('w_t', layer.weight.t().contiguous())\n"
        "    layer.register_parameter('s', torch.nn.Parameter(x, requires_grad=False))\n"
        "    setattr(layer, f'{p}_scale', layer.s.max())\n"
        "    replace_parameter(layer, 'weight', new)\n"
        "    layer.register_buffer('none', None)\n"
        "    setattr(layer, 'flag', True)\n"
        "    layer.register_parameter('passed', given)\n")
    assert draw._call_stores(fn) == [
        (2, "w_t"), (3, "s"), (4, "f'{p}_scale'"), (5, "weight")]


def test_lazy2_finds_first_use_caches_behind_other_guards():
    fn = _fn(
        "def get(self, k):\n"
        "    if not hasattr(self, '_a'):\n"
        "        self._a = torch.zeros(2)\n"
        "    if getattr(self, '_b', None) is None:\n"
        "        self._b = build()\n"
        "    if self._c is None or self._c.device != d:\n"
        "        self._c = build()\n"
        "    if k not in self._d:\n"
        "        self._d[k] = build(k)\n"
        "    if self._e is None:\n"
        "        self._e = build()\n"
        "    if not hasattr(self, '_f'):\n"
        "        self._g = build()\n")
    assert sorted(draw._lazy2_stores(fn)) == [(3, "_a"), (5, "_b"), (7, "_c"), (9, "_d")]


def test_lazy2_finds_the_early_return_form():
    fn = _fn(
        "def weights(self):\n"
        "    if self._w is not None:\n"
        "        return self._w\n"
        "    x = 1\n"
        "    self._w = make(x)\n"
        "    self._other = make(x)\n"
        "    return self._w\n")
    assert draw._lazy2_stores(fn) == [(5, "_w")]


def test_xfile_resolves_imported_functions_in_other_vllm_files():
    if draw._module_file("vllm.model_executor.utils") is None:
        pytest.skip("vLLM is not installed")
    tree = ast.parse(
        "from vllm.model_executor.utils import replace_parameter\n"
        "import os\n"
        "def process_weights_after_loading(self, layer):\n"
        "    replace_parameter(layer, 'w', layer.w.t())\n"
        "    os.path.join('a', 'b')\n")
    pwal = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    found = draw._xfile_callees(tree, "vllm/fake/mod.py", pwal)
    assert {(f, getattr(g, "name", "")) for f, g in found} >= {
        ("vllm/model_executor/utils.py", "replace_parameter")}
    assert all(f.startswith("vllm/") and f != "vllm/fake/mod.py" for f, _ in found)
    assert draw._xfile_callees(tree, "vllm/model_executor/utils.py", pwal) == []
