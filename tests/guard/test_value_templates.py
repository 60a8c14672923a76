"""Rebuilt values off every chain proven tensor-free by the snapshot value's template: a fresh
closure of the same code with cells of the same atom classes (vLLM's CPU GEMM dispatch assigns
one to every linear layer in each post-load step), a partial, an atom; a dict that only gained
such values is re-based. A closure or partial that brings a NEW tensor is still reported."""

from __future__ import annotations

import functools

import torch
from torch import nn

from derivgraph.guard import Change, Guard
from derivgraph.guard import sweep as sweep_module
from derivgraph.guard import watch as watch_module
from derivgraph.guard.sweep import MAX_GROWS
from derivgraph.guard.template import ATOM, CallSig, harmless, value_template


def _dispatch(layer: nn.Module, n: object) -> None:
    """Like vLLM's ``dispatch_cpu_unquantized_gemm``: a fresh closure in every post-load step."""
    layer.cpu_linear = lambda x, w, b: torch.nn.functional.linear(x, w, b) * n


class Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 3), requires_grad=False)
        self.scratch: torch.Tensor | None = None

    def post_load(self, n: object = 2) -> None:
        self.scratch = self.weight * 2  # a guarded derived tensor: the module is on a chain
        _dispatch(self, n)
        self.gemm = functools.partial(torch.mul, other=3)


def _startup() -> tuple[Linear, Guard]:
    layer = Linear()
    layer.post_load()
    guard = Guard()
    guard.snapshot(layer)
    return layer, guard


def test_a_closure_of_the_same_code_and_cell_classes_is_tensor_free():
    make = lambda n: (lambda x: x * n)  # noqa: E731
    template = value_template(make(2))
    assert isinstance(template, CallSig) and template.code is make(2).__code__
    assert harmless(template, make(5))                       # another int in the cell
    assert not harmless(template, make(2.5))                 # another class
    assert not harmless(template, make(torch.ones(1)))       # a tensor in the cell
    assert not harmless(template, lambda x: x)               # another code object
    assert value_template(make(torch.ones(1))) is None       # holds a tensor: no template
    assert value_template(3) is ATOM and harmless(ATOM, "s") and not harmless(ATOM, torch.ones(1))


def test_a_partial_and_a_nested_closure_are_checked_all_the_way_down():
    p = functools.partial(torch.mul, 2, other=3)
    template = value_template(p)
    assert harmless(template, functools.partial(torch.mul, 5, other=1))
    assert not harmless(template, functools.partial(torch.mul, torch.ones(1), other=1))
    assert not harmless(template, functools.partial(torch.mul, 5, other=torch.ones(1)))
    outer = lambda g: (lambda x: g(x))  # noqa: E731
    inner = lambda n: (lambda x: x * n)  # noqa: E731
    nested = value_template(outer(inner(2)))
    assert harmless(nested, outer(inner(7)))
    assert not harmless(nested, outer(inner(torch.ones(1))))  # a tensor two cells down


def test_a_rebuilt_closure_makes_no_container_dirty_and_nothing_is_walked():
    layer, guard = _startup()
    _dispatch(layer, 5)
    layer.gemm = functools.partial(torch.mul, other=4)
    assert guard.watch._dirty() == set()
    survey = guard.watch.survey()
    assert (survey.places, survey.loose, survey.roots) == ([], [], [])
    assert guard.restore(layer).ok


def test_a_closure_capturing_a_new_tensor_is_reported():
    """The canary's target: the same code, a tensor in the cell."""
    layer, guard = _startup()
    _dispatch(layer, torch.ones(3))
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [
        ("cpu_linear.closure.n", Change.NEW)]


def test_a_partial_capturing_a_new_tensor_is_reported():
    layer, guard = _startup()
    layer.gemm = functools.partial(torch.mul, other=torch.ones(3))
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [
        ("gemm.partial.keywords['other']", Change.NEW)]


def test_canary_a_template_blind_to_cell_classes_misses_the_new_tensor(monkeypatch):
    """Planted bug: the check compares code objects only; the tensor closure goes unreported."""
    def blind(template, value):  # noqa: ANN001, ANN202
        return template is ATOM or getattr(value, "__code__", None) is template.code

    monkeypatch.setattr(sweep_module, "harmless", blind)
    monkeypatch.setattr(watch_module, "harmless", blind)
    layer, guard = _startup()
    _dispatch(layer, torch.ones(3))
    assert guard.restore(layer).recapture == []  # red: the new tensor is missed


def test_a_dirty_container_skips_its_tensor_free_closure_but_restores_the_slot():
    layer, guard = _startup()
    kept = layer.scratch
    layer.scratch = layer.weight * 3  # rebound: the container is dirty for a guarded slot
    _dispatch(layer, 7)
    survey = guard.watch.survey()
    assert [p.piece for p in survey.places] == [".scratch"] and survey.roots == []
    report = guard.restore(layer)
    assert [c.path for c in report.restored] == ["scratch"] and layer.scratch is kept


def test_a_module_that_gained_flags_is_rebased_and_later_changes_are_still_seen():
    layer, guard = _startup()
    layer._do_reload, layer._was = False, False  # vLLM's layerwise reload adds two flags
    assert guard.watch._dirty() == set()  # re-based: the flags hold no tensor
    assert guard.watch._dirty() == set()
    layer._was = torch.ones(2)  # a rebased flag later holds a tensor: a change
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [("_was", Change.NEW)]


def test_a_dict_that_gained_a_tensor_is_not_rebased():
    layer, guard = _startup()
    layer.flag, layer.extra = True, torch.ones(2)
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.recapture] == [("extra", Change.NEW)]
    assert guard.watch.sweep.grows == {}


def test_a_dict_growing_on_every_reload_is_rebased_a_bounded_number_of_times():
    layer, guard = _startup()
    for i in range(MAX_GROWS + 2):
        setattr(layer, f"_flag{i}", i)
        dirty = guard.watch._dirty()
    assert dirty != set()  # past the bound: diffed as before
    assert max(guard.watch.sweep.grows.values()) == MAX_GROWS
    assert guard.restore(layer).ok
