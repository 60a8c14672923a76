"""The derived nodes' devices of a stamped run read by column (:func:`devices_of`): every
row's answer is :func:`device_of`'s, the first-parameter sweep taken only where its rule
applies (no declared device, one plain module class, a non-None first parameter)."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.compiler.resolve as resolve
from derivgraph import DerivedTensor
from derivgraph.compiler.resolve import device_of, devices_of
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_DECL = DerivedTensor(name="y", kind="attribute", formula="w * 2.0")


class Layer(nn.Module):
    def __init__(self, device: str, first_none: bool = False) -> None:
        super().__init__()
        if first_none:
            self.register_parameter("a", None)
        self.w = nn.Parameter(torch.ones(2, device=device), requires_grad=False)


class Reordered(Layer):
    """A class whose ``parameters()`` is its own (meta first): not nn.Module's walk."""

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]:
        yield nn.Parameter(torch.ones(1, device="meta"), requires_grad=False)
        yield from super().parameters(recurse)


def _bounds(modules: list[nn.Module]) -> list[Any]:
    return [SimpleNamespace(module=m) for m in modules]


def _by_row(bounds: list[Any], decl: DerivedTensor = _DECL) -> list[torch.device]:
    return [device_of(b, decl, {}) for b in bounds]


def test_a_column_gives_each_rows_first_parameter_device() -> None:
    bounds = _bounds([Layer("cpu"), Layer("meta"), Layer("cpu")])
    got = devices_of(bounds, _DECL, {})
    assert got == _by_row(bounds) == [torch.device("cpu"), torch.device("meta"),
                                      torch.device("cpu")]


def test_a_row_whose_first_parameter_is_none_is_read_by_the_rule(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: the row's first ``_parameters`` value is None; its device is the next one's."""
    bounds = _bounds([Layer("cpu"), Layer("meta", first_none=True)])
    calls: list[Any] = []
    real = resolve.device_of

    def spy(bound: Any, decl: Any, plain: Any = None) -> torch.device:
        calls.append(bound)
        return real(bound, decl, plain)

    monkeypatch.setattr(resolve, "device_of", spy)
    assert devices_of(bounds, _DECL, {}) == [torch.device("cpu"), torch.device("meta")]
    assert calls == [bounds[1]]  # only that row went through the rule


def test_a_class_with_its_own_parameters_walk_is_read_by_the_rule() -> None:
    """Canary: ``parameters()`` yields a meta tensor first while ``_parameters`` holds a CPU
    one; the rule (not plain) answers meta."""
    bounds = _bounds([Reordered("cpu"), Reordered("cpu")])
    assert devices_of(bounds, _DECL, {}) == _by_row(bounds) == [torch.device("meta")] * 2


def test_a_declared_device_is_read_by_the_rule() -> None:
    """Canary: the declaration names the device; the parameters' is not the answer."""
    decl = DerivedTensor(name="y", kind="attribute", formula="w * 2.0", device="meta")
    bounds = _bounds([Layer("cpu"), Layer("cpu")])
    assert devices_of(bounds, decl, {}) == _by_row(bounds, decl) == [torch.device("meta")] * 2


def test_modules_of_two_classes_are_read_by_the_rule() -> None:
    """Canary: the second row's class walks its own parameters (meta first)."""
    bounds = _bounds([Layer("cpu"), Reordered("cpu")])
    assert devices_of(bounds, _DECL, {}) == _by_row(bounds) == [torch.device("cpu"),
                                                                   torch.device("meta")]


def test_a_stamped_build_reads_the_run_by_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamped scaling build asks :func:`devices_of` for its run and gets the rule's
    answers (each node's device the rule's on its module)."""
    from derivgraph.compiler import build
    from derivgraph.compiler.bind import match_specs
    from derivgraph.compiler.stamp import stamping

    asked: list[int] = []
    real = build.devices_of

    def spy(bounds: Any, decl: Any, plain: Any = None) -> list[torch.device]:
        asked.append(len(bounds))
        return real(bounds, decl, plain)

    monkeypatch.setattr(build, "devices_of", spy)
    model = scaling_model(6)
    with stamping(True):
        bound = match_specs(model, [scaling_spec()])
        graph = build.build_graph(model, bound)
    assert asked and max(asked) >= 4
    modules = {b.module_path: b for b in bound}
    for node in graph.derived.values():
        assert node.device == device_of(modules[node.bound.module_path], node.decl)
