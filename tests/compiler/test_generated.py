"""Generated Python (:mod:`derivgraph.compiler.generated`): registered with linecache while its
function lives; a template's compiled replay writes nothing but slot numbers as text."""

from __future__ import annotations

import gc
import linecache

import pytest

from derivgraph.compiler.generated import define
from derivgraph.compiler.replay import FlatStep, _compile_steps


def test_a_defined_function_runs_with_its_lines_in_linecache_while_it_lives() -> None:
    scope = {"_c0": 41}
    fn = define("def f(x):\n    return x + _c0\n", "probe", scope, "f")
    assert fn(1) == 42
    filename = fn.__code__.co_filename
    assert filename.startswith("<derivgraph probe #")
    assert linecache.getline(filename, 2).strip() == "return x + _c0"
    del fn, scope
    gc.collect()
    assert filename not in linecache.cache


def test_two_definitions_have_their_own_names() -> None:
    a = define("def f():\n    return 1\n", "probe", {}, "f")
    b = define("def f():\n    return 2\n", "probe", {}, "f")
    assert a.__code__.co_filename != b.__code__.co_filename
    assert (a(), b()) == (1, 2)


def test_a_replay_step_whose_slot_is_not_an_int_is_refused() -> None:
    """A slot is the only part of a step written into the replay's source: anything else
    (a string that would be code) is refused before any source is made."""
    good = FlatStep("add", (), (), {}, (), (), 0, "r")
    assert callable(_compile_steps([good]))
    with pytest.raises(TypeError, match="slot must be an int"):
        _compile_steps([good._replace(out="0] = 1; import os #")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="slot must be an int"):
        _compile_steps([good._replace(order=("v",))])  # type: ignore[arg-type]
