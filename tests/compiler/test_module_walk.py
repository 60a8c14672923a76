"""The bind's module walk (:func:`~derivgraph.compiler.bind.named_modules`) gives
``list(model.named_modules())`` exactly: the same paths and module objects, in order, and
torch's own walk wherever a module's walk is not proven ``nn.Module``'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.compiler.bind as bind
from derivgraph.compiler.bind import named_modules
from derivgraph.tools.bench_scaling import scaling_model


def _same(model: nn.Module) -> list[tuple[str, nn.Module]]:
    got, want = named_modules(model), list(model.named_modules())
    assert [p for p, _ in got] == [p for p, _ in want]
    assert all(a is b for (_, a), (_, b) in zip(got, want, strict=True))
    return got


class Leaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2), requires_grad=False)


class SkipsChildren(Leaf):
    """Its own ``named_modules``: yields itself only."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Leaf()

    def named_modules(self, memo: Any = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, nn.Module]]:
        yield prefix, self


class AllEqual(Leaf):
    """Every instance equal to every other (one hash): torch's memo keeps the first only."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AllEqual)

    def __hash__(self) -> int:
        return 7


def test_the_scaling_model_is_walked_as_torch_walks_it() -> None:
    got = _same(scaling_model(40))
    assert len(got) == 42 and got[2][0] == "layers.0"


def test_a_tree_of_leaves_and_branches_none_and_repeats_is_walked_as_torch_walks_it() -> None:
    shared = Leaf()
    model = nn.Sequential(Leaf(), nn.Sequential(Leaf(), shared), nn.ModuleList([shared, Leaf()]))
    model.register_module("gone", None)
    got = _same(model)
    assert [p for p, _ in got] == ["", "0", "1", "1.0", "1.1", "2", "2.1"]


def test_a_repeat_among_leaves_is_yielded_once() -> None:
    """Canary: the same leaf twice in one list (the sweep would yield both)."""
    leaf = Leaf()
    got = _same(nn.ModuleList([leaf, Leaf(), leaf]))
    assert [p for p, _ in got] == ["", "0", "1"]


def test_modules_equal_by_their_own_eq_are_yielded_as_torchs_memo_yields_them() -> None:
    """Canary: a class whose instances are all equal: only the first is yielded."""
    got = _same(nn.ModuleList([AllEqual(), AllEqual(), Leaf()]))
    assert [p for p, _ in got] == ["", "0", "2"]


def test_a_class_with_its_own_walk_is_walked_by_torch() -> None:
    """Canary: a leaf-looking child whose class walks itself its own way."""
    got = _same(nn.ModuleList([SkipsChildren(), SkipsChildren()]))
    assert [p for p, _ in got] == ["", "0", "1"]  # their `inner` is not yielded


def test_a_module_holding_its_own_walk_is_walked_by_torch() -> None:
    """Canary: an instance whose ``__dict__`` holds ``named_modules``."""
    odd = Leaf()
    odd.named_modules = lambda memo=None, prefix="", remove_duplicate=True: iter(())
    got = _same(nn.ModuleList([Leaf(), odd]))
    assert [p for p, _ in got] == ["", "0"]


def test_match_specs_takes_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = bind.named_modules

    def spy(model: nn.Module) -> list[tuple[str, nn.Module]]:
        calls.append(1)
        return real(model)

    monkeypatch.setattr(bind, "named_modules", spy)
    from derivgraph.tools.bench_scaling import scaling_spec
    bound = bind.match_specs(scaling_model(5), [scaling_spec()])
    assert calls == [1] and [b.module_path for b in bound] == [f"layers.{i}" for i in range(5)]
