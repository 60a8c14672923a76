"""Binding checks a spec's declaration once for all the modules it matched where that is
proven (no module holds the name, each class passes the owner and member checks), and module
by module otherwise: every problem one module has is still reported, at that module."""

from __future__ import annotations

import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.errors import Rule


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4), requires_grad=False)


class MethodLayer(Layer):
    def inv(self) -> None:  # a method where the spec binds a tensor
        return None


class Other(nn.Module):
    pass


def _spec() -> Spec:
    return Spec(name="s", target=Target(module_class=["Layer"]),
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                         DerivedTensor(name="twice", kind="attribute", formula="2.0 * scale")])


def _stack(*layers: nn.Module) -> nn.Module:
    root = nn.Module()
    root.layers = nn.ModuleList(layers)
    return root


def test_free_names_report_nothing() -> None:
    model = _stack(*(Layer() for _ in range(5)))
    assert check_bindings(match_specs(model, [_spec()])) == []


def test_one_module_holding_the_name_is_reported_alone() -> None:
    layers = [Layer() for _ in range(5)]
    layers[3].inv = 7  # a plain int where the derived tensor would go
    layers[1].register_buffer("twice", torch.zeros(2), persistent=False)  # a tensor: fine
    layers[4].twice = None  # None without `replace`
    issues = check_bindings(match_specs(_stack(*layers), [_spec()]))
    assert [(i.rule, i.node) for i in issues] == [(Rule.UNSAFE_NAME, "layers.3.inv"),
                                                  (Rule.UNSAFE_NAME, "layers.4.twice")]
    assert "Layer.inv holds a int" in issues[0].message
    assert "is None" in issues[1].message


def test_a_class_with_a_member_of_that_name_is_reported_at_each_module() -> None:
    model = _stack(Layer(), MethodLayer(), Layer(), MethodLayer())
    issues = check_bindings(match_specs(model, [_spec()]))
    assert [(i.rule, i.node) for i in issues] == [(Rule.UNSAFE_NAME, "layers.1.inv"),
                                                  (Rule.UNSAFE_NAME, "layers.3.inv")]
    assert all("MethodLayer.inv is a function" in i.message for i in issues)


def test_the_class_test_is_per_module_class() -> None:
    model = _stack(Layer(), Other(), MethodLayer(), Other(), Layer())
    bound = match_specs(model, [_spec()])
    assert [b.module_path for b in bound] == ["layers.0", "layers.2", "layers.4"]


def test_a_device_path_is_read_on_every_module_even_where_the_names_are_free() -> None:
    """A declaration whose device is a path is checked module by module (``DG017``) though
    its name is free everywhere: only a spec whose every declaration is free and names no
    device path skips its rows."""
    spec = Spec(name="s", target=Target(module_class=["Layer"]),
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                         DerivedTensor(name="twice", kind="attribute", formula="2.0 * scale",
                                       device="where")])
    layers = [Layer() for _ in range(4)]
    layers[0].where = torch.zeros(1)
    layers[2].where = torch.device("cpu")
    issues = check_bindings(match_specs(_stack(*layers), [spec]))
    assert [(i.rule, i.node) for i in issues] == [(Rule.UNKNOWN_DEVICE, "layers.1.twice"),
                                                  (Rule.UNKNOWN_DEVICE, "layers.3.twice")]


def test_a_quiet_spec_does_not_hide_another_specs_rows() -> None:
    """Rows of a spec whose declarations are all free are skipped; another spec's rows, on
    the same modules, are still checked and reported in module order."""
    other = Spec(name="o", target=Target(module_class=["Layer"]),
                 derived=[DerivedTensor(name="scale", kind="attribute", formula="2.0 * inv",
                                        owner="")])
    issues = check_bindings(match_specs(_stack(Layer(), Layer()), [_spec(), other]))
    assert [i.node for i in issues] == []  # scale is a tensor: a tensor slot is fine
    layers = [Layer(), Layer()]
    layers[1].busy = 3
    busy = Spec(name="b", target=Target(module_class=["Layer"]),
                derived=[DerivedTensor(name="busy", kind="attribute", formula="2.0 * scale")])
    issues = check_bindings(match_specs(_stack(*layers), [_spec(), busy]))
    assert [(i.rule, i.node) for i in issues] == [(Rule.UNSAFE_NAME, "layers.1.busy")]


def _other_spec() -> Spec:
    return Spec(name="o", target=Target(module_class=["Other"]),
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / x")])


def test_two_specs_interleaved_report_the_rows_of_the_one_not_quiet() -> None:
    """Canary: the first spec's rows are all quiet, the second's report (the rows are not
    skipped wholesale where one spec is not quiet); the modules are grouped per spec in
    order."""
    others = [Other(), Other()]
    others[1].inv = "held"  # a str where the derived tensor would go
    model = _stack(Layer(), others[0], Layer(), others[1], Layer())
    bound = match_specs(model, [_spec(), _other_spec()])
    assert [b.spec.name for b in bound] == ["s", "o", "s", "o", "s"]
    issues = check_bindings(bound)
    assert [(i.rule, i.node) for i in issues] == [(Rule.UNSAFE_NAME, "layers.3.inv")]
    from derivgraph.compiler.bind import _by_spec

    grouped = _by_spec(bound)
    assert [(spec.name, [id(m) for m in modules]) for spec, modules in grouped.values()] == [
        ("s", [id(model.layers[0]), id(model.layers[2]), id(model.layers[4])]),
        ("o", [id(model.layers[1]), id(model.layers[3])])]
