"""The owner check of a derived tensor held by its matched module: once per (declaration,
module class), and still per layer wherever it fails (each issue names its own layer)."""

from __future__ import annotations

import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import build
from derivgraph.compiler.bind import BoundSpec
from derivgraph.errors import Rule


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4), requires_grad=False)


class OtherLayer(Layer):
    """Another class: its own check."""


class Plain:
    """Not a module: a parameter or buffer cannot be bound on it."""

    def __init__(self) -> None:
        self.scale = torch.ones(4)


def _spec() -> Spec:
    return Spec(name="owners", target=Target(module_class=["Layer"]),
                derived=[DerivedTensor(name="inv", kind="buffer", formula="1.0 / scale",
                                       device="cpu"),
                         DerivedTensor(name="twice", kind="attribute", formula="scale * 2",
                                       device="cpu")])


def test_module_owner_checked_once_per_declaration_and_class(monkeypatch) -> None:
    calls: list[tuple[str, str]] = []
    real = build._owner_problem

    def counted(bound, item, owner):  # type: ignore[no-untyped-def]
        calls.append((bound.module_path, item.name))
        return real(bound, item, owner)

    monkeypatch.setattr(build, "_owner_problem", counted)
    model = nn.Sequential(Layer(), Layer(), OtherLayer(), Layer())
    spec = _spec()
    graph = build.build_graph(model, [BoundSpec(spec, str(i), model[i]) for i in range(4)])
    assert not graph.issues
    assert sorted(graph.derived) == [f"{i}.{n}" for i in range(4) for n in ("inv", "twice")]
    # layers 1 and 3: proven by layer 0; layer 2, another class, checked on its own
    assert calls == [("0", "inv"), ("0", "twice"), ("2", "inv"), ("2", "twice")]


def test_failing_module_owner_is_checked_for_every_layer() -> None:
    model = nn.Module()
    model.a, model.b = Plain(), Plain()  # type: ignore[assignment]
    spec = _spec()
    graph = build.build_graph(model, [BoundSpec(spec, "a", model.a),  # type: ignore[arg-type]
                                      BoundSpec(spec, "b", model.b)])  # type: ignore[arg-type]
    owner_issues = [(i.rule, i.node) for i in graph.issues if i.rule == Rule.OWNER]
    assert owner_issues == [(Rule.OWNER, "a.inv"), (Rule.OWNER, "b.inv")]
    assert "a.inv" not in graph.derived and "b.inv" not in graph.derived
    assert "a.twice" in graph.derived and "b.twice" in graph.derived
