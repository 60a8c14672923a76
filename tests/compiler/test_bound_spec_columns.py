"""Bound specs held as columns (:class:`~derivgraph.compiler.bind.BoundSpecs`): what
``match_specs`` gives is the per-row rule (each matching (spec, module) pair, in module order),
a row's :class:`BoundSpec` is made only where a row is read, and the build of a stamped run
makes none for its held rows (their graph columns keep three lists, not a record per row).
Canaries (bound79 NOTES): ``_derived_columns`` reading the devices row by row through bound
specs again, or the build iterating every row, turns the count test red; a column's paths
shifted by one turns the rule test red."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import bind, build
from derivgraph.compiler.bind import BoundSpec, BoundSpecs, match_specs, rows_of
from derivgraph.compiler.graph import HeldDerived
from derivgraph.compiler.resolve import device_of, devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4), requires_grad=False)


class Other(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("b", torch.zeros(2, dtype=torch.float64), persistent=False)


def _spec(name: str, cls: str) -> Spec:
    return Spec(name=name, target=Target(module_class=[cls]),
                derived=[DerivedTensor(name=f"{name}_inv", kind="attribute",
                                       formula="1.0 / scale")])


def _rule(model: nn.Module, specs: list[Spec]) -> list[tuple[Spec, str, nn.Module]]:
    """Every (spec, module) pair whose target matches, module after module."""
    return [(spec, path, module) for path, module in model.named_modules() for spec in specs
            if bind.target_matches(spec.target, module)]


def _fields(bounds: Any) -> list[tuple[Any, str, Any]]:
    return [(b.spec, b.module_path, b.module) for b in bounds]


def _stack(*layers: nn.Module) -> nn.Module:
    root = nn.Module()
    root.layers = nn.ModuleList(layers)
    return root


@pytest.mark.parametrize("case", ["one", "two-classes", "overlap"])
def test_match_specs_gives_the_rule_as_columns(case: str) -> None:
    model = _stack(Layer(), Other(), Layer(), Layer(), Other())
    specs = {"one": [_spec("s", "Layer")],
             "two-classes": [_spec("s", "Layer"), _spec("o", "Other")],
             "overlap": [_spec("s", "Layer"), _spec("m", "Module")]}[case]
    bound = match_specs(model, specs)
    assert type(bound) is BoundSpecs
    want = _rule(model, specs)
    assert _fields(bound) == want
    assert list(zip(bound.specs, bound.paths, bound.modules)) == want
    assert [_fields([bound[i]]) for i in range(len(bound))] == [[w] for w in want]
    assert _fields(bound[1:3]) == want[1:3] and _fields(bound.take([2, 0])) == [want[2], want[0]]
    assert _fields(rows_of(bound, [1])) == _fields(rows_of(list(bound), [1])) == [want[1]]
    assert _fields(BoundSpecs.of(list(bound))) == want and BoundSpecs.of(bound) is bound


def test_a_row_read_is_a_bound_spec_equal_to_the_eager_one() -> None:
    model = _stack(Layer(), Layer())
    bound = match_specs(model, [_spec("s", "Layer")])
    row = bound[1]
    assert type(row) is BoundSpec and row == BoundSpec(bound.specs[1], "layers.1",
                                                       model.layers[1])
    assert row.qualify("x") == "layers.1.x" and row.relative("layers.1.y") == "y"


def _made_during(monkeypatch: pytest.MonkeyPatch, layers: int) -> int:
    """BoundSpecs made while a scaling model of ``layers`` layers is bound and built."""
    made = [0]

    class Counted(BoundSpec):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            made[0] += 1
            super().__init__(*args)

    model = scaling_model(layers)
    bound = match_specs(model, [scaling_spec()])
    monkeypatch.setattr(bind, "BoundSpec", Counted)
    bind.check_bindings(bound)
    graph = build.build_graph(model, bound)
    monkeypatch.undo()
    assert graph.stamped == layers - 1
    return made[0]


def test_a_stamped_run_makes_no_bound_spec_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = _made_during(monkeypatch, 20), _made_during(monkeypatch, 200)
    assert small == large and small <= 4  # the template's rows, not one per layer


def test_the_held_columns_keep_the_bound_columns_and_a_node_its_row() -> None:
    model = scaling_model(30)
    bound = match_specs(model, [scaling_spec()])
    graph = build.build_graph(model, bound)
    held = [column for _ids, _set, columns in graph._held for column in columns]
    assert held and all(type(c) is HeldDerived and type(c.bounds) is BoundSpecs for c in held)
    assert all(c.bounds.specs == [bound.specs[0]] * len(c) for c in held)
    nodes = graph.derived  # every held node made (a cold reader)
    for path, module in list(model.named_modules())[2:]:
        node = nodes[f"{path}.inv"]
        assert node.bound == BoundSpec(bound.specs[0], path, module)
        assert node.bound.module is module and node.bound.module_path == path


def test_devices_of_is_device_of_on_each_module() -> None:
    class NoOwn(nn.Module):  # no own parameter: a child's, else a buffer's
        def __init__(self, child: bool) -> None:
            super().__init__()
            if child:
                self.inner = Layer()
            else:
                self.register_buffer("b", torch.zeros(1, device="meta"), persistent=False)

    class Walked(Layer):  # parameters() not nn.Module's own walk
        def parameters(self, recurse: bool = True) -> Any:
            yield torch.zeros(1, device="meta")

    modules = [Layer(), NoOwn(True), NoOwn(False), Walked(), nn.Module()]
    for decl in [DerivedTensor(name="x", kind="attribute", formula="1.0"),
                 DerivedTensor(name="x", kind="attribute", formula="1.0", device="meta"),
                 DerivedTensor(name="x", kind="attribute", formula="1.0", device="scale")]:
        plain: dict[type, bool] = {}
        want = [device_of(BoundSpec(None, "", m), decl) for m in modules]  # type: ignore
        assert devices_of(modules, decl, plain) == want
        assert devices_of(modules, decl) == want
    assert want[0] == torch.device("cpu")


class _WeightFirst(nn.Module):
    """Its first own parameter (``weight``, on meta) is not the one the spec reads."""

    def __init__(self, first: str) -> None:
        super().__init__()
        tensors = {"weight": torch.ones(4, device="meta"), "scale": torch.ones(4)}
        for name in (first, "scale" if first == "weight" else "weight"):
            self.register_parameter(name, nn.Parameter(tensors[name], requires_grad=False))


def _scale_spec() -> Spec:
    return Spec(name="w", target=Target(module_class=["_WeightFirst"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                         DerivedTensor(name="n", kind="attribute",
                                       formula="full([E], 7, dtype=int64)")])


@pytest.mark.parametrize("first", ["scale", "weight"])
def test_a_run_s_devices_are_each_module_s_first_own_parameter_s(
        first: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept sweep of ``scale`` proves the rows' device only where ``scale`` is each
    module's first own parameter; else each row is read (``weight``'s meta device)."""
    got: list[tuple[list[nn.Module], DerivedTensor, list[torch.device], bool]] = []
    real = build.devices_of

    def kept(modules: Any, decl: Any, plain: Any, sweeps: Any = None) -> Any:
        proven = sweeps is not None and sweeps.own_first(modules) is not None
        got.append((list(modules), decl, real(modules, decl, plain, sweeps), proven))
        return got[-1][2]

    monkeypatch.setattr(build, "devices_of", kept)
    model = _stack(*(_WeightFirst(first) for _ in range(6)))
    build.build_graph(model, match_specs(model, [_scale_spec()]))
    assert got  # the run's rows were made by column
    want = torch.device("meta" if first == "weight" else "cpu")
    for modules, decl, devices, proven in got:
        assert devices == [device_of(BoundSpec(None, "", m), decl)  # type: ignore[arg-type]
                           for m in modules] == [want] * len(modules) == [want] * 5
        assert proven is (first == "scale")
