"""A template's facts checked on another layer (:func:`derivgraph.compiler.stamp.facts_hold`).

The facts are compiled once per template: a path probe that found a tensor at its first hop
reads that hop from the module's registries and compares the layout field by field, a
derived-path probe is one lookup; anything else (and any first hop the shortcut does not
find) runs the probe. The answer (None, or the objects the path probes found) must be what
running every probe gives: checked here on layers that differ from the template in one fact
each (shape, dtype, stride, device, class, registry, a submodule or a None parameter in the
tensor's place, a derived tensor at the path). Canary: a layout check planted to compare a
tensor dtype other than the fact's makes the two answers differ.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import stamp_columns
from derivgraph.compiler.bind import BoundSpec
from derivgraph.compiler.reads import Reads, probe_derived, probe_path
from derivgraph.compiler.stamp import facts_hold

_SPEC = Spec(name="facts", target=Target(module_class=["Layer"]),
             derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale")])
#: the probes a formula reading ``scale``, ``scale.shape[0]``, ``weight`` and ``cfg.k`` makes
_PROBES = [(probe_path, (("scale",),)), (probe_derived, ("scale",)),
           (probe_path, (("scale", "shape"),)), (probe_path, (("weight",),)),
           (probe_derived, ("weight",)), (probe_path, (("k",),))]


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8), requires_grad=False)
        self.weight = nn.Parameter(torch.ones(8, 4), requires_grad=False)
        self.k = 7


class _Graph:
    """What the probes read of a graph: its derived tensors."""

    def __init__(self, derived: tuple[str, ...] = ()) -> None:
        self.derived = dict.fromkeys(derived)

    @property
    def derived_ids(self) -> Any:  # what the probes read (DerivedGraph.derived_ids)
        return self.derived.keys()

    def derived_node(self, node_id: str) -> Any:
        return self.derived.get(node_id)

    def derived_each(self, ids: Any) -> list[bool]:
        return [i in self.derived for i in ids]


def _bound(module: nn.Module, index: int) -> BoundSpec:
    return BoundSpec(_SPEC, f"layers.{index}", module)


def _template() -> Reads:
    reads = Reads()
    bound = _bound(Layer(), 0)
    for probe, args in _PROBES:
        reads.note(probe, args, probe(_Graph(), bound, {}, *args)[0])
    return reads


def _every_probe(graph: Any, reads: Reads, bound: BoundSpec) -> dict[Any, Any] | None:
    """The oracle: every probe run, in order."""
    objects = {}
    for (probe, args), fact in reads.facts.items():
        got, obj = probe(graph, bound, {}, *args)
        if got != fact:
            return None
        if probe is probe_path:
            objects[args[0]] = obj
    return objects


def _set(name: str, value: Any) -> Callable[[Layer], None]:
    return lambda m: setattr(m, name, value)


def _swap(registry: str, name: str, value: Any) -> Callable[[Layer], None]:
    def change(m: Layer) -> None:
        del m._parameters[name]
        getattr(m, registry)[name] = value
    return change


#: name -> how a layer differs from the template (None: it does not)
_VARIANTS: dict[str, Callable[[Layer], None] | None] = {
    "same": None,
    "shape": _set("scale", nn.Parameter(torch.ones(6), requires_grad=False)),
    "dtype": _set("scale", nn.Parameter(torch.ones(8, dtype=torch.float16),
                                        requires_grad=False)),
    "stride": _set("weight", nn.Parameter(torch.ones(4, 8).t(), requires_grad=False)),
    "device": _set("scale", nn.Parameter(torch.ones(8, device="meta"), requires_grad=False)),
    "class": _swap("_parameters", "scale", torch.ones(8)),
    "buffer": _swap("_buffers", "scale", nn.Parameter(torch.ones(8), requires_grad=False)),
    "attribute": lambda m: (m._parameters.pop("scale"), object.__setattr__(
        m, "scale", nn.Parameter(torch.ones(8), requires_grad=False))),
    "submodule": lambda m: (m._parameters.pop("scale"), m.add_module("scale", nn.Linear(8, 8))),
    "none": lambda m: m.register_parameter("scale", None),
    "none, a buffer behind": lambda m: (m.register_parameter("scale", None),
                                        m._buffers.__setitem__("scale", torch.ones(8))),
    "config": _set("k", 9),
}


@pytest.mark.parametrize("variant", list(_VARIANTS))
@pytest.mark.parametrize("derived", [(), ("layers.1.scale",)])
def test_compiled_facts_answer_as_every_probe(variant: str, derived: tuple[str, ...]) -> None:
    reads, graph = _template(), _Graph(derived)
    facts_hold(graph, reads, _bound(Layer(), 2), {})  # compiled here, on another layer
    module = Layer()
    change = _VARIANTS[variant]
    if change is not None:
        change(module)
    bound = _bound(module, 1)
    want = _every_probe(graph, reads, bound)
    assert facts_hold(graph, reads, bound, {}) == want
    # the same facts: the same layouts (a buffer, an instance attribute: the same tensor class)
    assert (want is not None) is (variant in ("same", "buffer", "attribute") and not derived)


def test_the_checks_take_the_shortcuts_where_they_hold() -> None:
    reads = _template()
    facts_hold(_Graph(), reads, _bound(Layer(), 1), {})
    assert [(c.part, c.rel) for c in reads.checks] == [
        ("scale", None), (None, "scale"), ("scale", None), ("weight", None), (None, "weight"),
        (None, None)]


def test_canary_a_layout_compared_other_than_the_fact_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    init = stamp_columns.Check.__init__

    def planted(self: stamp_columns.Check, *args: Any) -> None:
        init(self, *args)
        if self.part is not None:  # the shortcut compares a dtype the fact does not hold
            cls, shape, stride, _, device = self.layout
            self.layout = (cls, shape, stride, torch.float16, device)

    monkeypatch.setattr(stamp_columns.Check, "__init__", planted)
    reads, graph = _template(), _Graph()
    module = Layer()
    _VARIANTS["dtype"](module)
    bound = _bound(module, 1)
    assert _every_probe(graph, reads, bound) is None
    assert facts_hold(graph, reads, bound, {}) is not None  # the planted bug shows


def test_canary_a_derived_path_joined_other_than_qualify_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The derived-path shortcut joins the module path and the probe's path as
    ``bound.qualify`` does; planted to join another path, a derived tensor at the probed
    path is missed."""
    init = stamp_columns.Check.__init__

    def planted(self: stamp_columns.Check, *args: Any) -> None:
        init(self, *args)
        if self.rel is not None:
            self.suffix = ".elsewhere"

    monkeypatch.setattr(stamp_columns.Check, "__init__", planted)
    reads, graph = _template(), _Graph(("layers.1.scale",))
    bound = _bound(Layer(), 1)
    assert _every_probe(graph, reads, bound) is None
    assert facts_hold(graph, reads, bound, {}) is not None  # the planted bug shows
