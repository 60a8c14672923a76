"""lower44: the lowering half's per-column shortcuts give exactly what the per-tensor code gave."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler import transaction
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction, on_the_way
from derivgraph.runtime import engine
from derivgraph.runtime.engine import Layouts, _guard_dims
from derivgraph.runtime.entry import address_of, addresses_of


class _Leaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.nothing: Any = None


def _model() -> nn.Module:
    model = nn.Module()
    model.layers = nn.ModuleList([_Leaf() for _ in range(3)])
    model.head = _Leaf()
    model.head.inner = _Leaf()
    return model


_OWNER_PATHS = ["layers.0", "layers.2", "head.inner", "head", "", "head.nothing.deep",
                "missing.deeper.still", "layers.7", "head.inner.nothing"]


def _chains(model: nn.Module, paths: list[str]) -> list[int]:
    reader = PathReader(model)
    return sorted({id(o) for p in paths for o in reader.chain(p)})


def test_on_the_way_is_every_chain_each_prefix_once() -> None:
    model = _model()
    got = on_the_way(PathReader(model), _OWNER_PATHS)
    assert sorted(map(id, got)) == _chains(model, _OWNER_PATHS)
    assert len(got) == len({id(o) for o in got})  # each object once
    # what the chains hold: the root, the list, 2 layers, head, head.inner (None stops)
    assert len(got) == 6


def test_canary_children_read_before_their_parents_are_left_out(monkeypatch) -> None:
    monkeypatch.setattr(transaction, "_depth", lambda path: -path.count("."))  # planted
    model = _model()
    got = on_the_way(PathReader(model), _OWNER_PATHS)
    assert sorted(map(id, got)) != _chains(model, _OWNER_PATHS)


def test_a_transaction_rolls_back_every_owner_on_the_way() -> None:
    model = _model()
    tx = ModelTransaction(model, ["layers.1", "head.inner"], [])
    model.layers[1].added = 1
    model.head.inner.register_buffer("b", None)
    model.layers.extra = nn.Linear(1, 1)
    model.other = 2
    tx.rollback()
    assert not hasattr(model.layers[1], "added") and "b" not in model.head.inner._buffers
    assert "extra" not in model.layers._modules and not hasattr(model, "other")


@pytest.mark.parametrize("paths", [[], [""], ["layers"], ["nope"]])
def test_on_the_way_of_few_paths(paths: list[str]) -> None:
    model = _model()
    assert sorted(map(id, on_the_way(PathReader(model), paths))) == _chains(model, paths)


# ---- addresses in one sweep (runtime.entry.addresses_of) ------------------------------------

def test_addresses_of_is_address_of_each() -> None:
    tensors = [torch.ones(2), nn.Parameter(torch.ones(1)), torch.empty(2, device="meta"), 3.0,
               None, torch.ones(4)[1:]]
    assert addresses_of(tensors) == list(map(address_of, tensors))
    plain = [torch.ones(2), torch.ones(3)[1:]]
    assert addresses_of(plain) == [t.data_ptr() for t in plain]


def test_canary_the_sweep_without_its_type_check_reads_a_number(monkeypatch) -> None:
    from derivgraph.runtime import entry
    monkeypatch.setattr(entry, "_TENSOR_TYPES", frozenset({torch.Tensor, float}))  # planted
    with pytest.raises((TypeError, AttributeError)):
        addresses_of([torch.ones(1), 3.0])


# ---- the refill table's layout guard: one size list per distinct shape ---------------------

def test_guard_dims_are_each_shapes_own() -> None:
    shapes = [torch.Size([2]), torch.Size([3, 1]), torch.Size([2]), torch.Size([]),
              torch.Size([3, 1])]
    sizes, strides = _guard_dims(shapes)
    assert sizes == [list(s) for s in shapes]
    assert strides == [[None] * len(s) for s in shapes]
    assert sizes[0] is sizes[2] and strides[1] is strides[4]  # one list per distinct shape


def test_a_guard_built_from_shared_dims_refuses_another_shape() -> None:
    ours = [torch.zeros(2), torch.zeros(3, 1), torch.zeros(2)]
    layouts = Layouts([t.dtype for t in ours], [t.shape for t in ours], [t.numel() for t in ours])
    assert layouts.match(ours)
    fresh = [torch.ones(2), torch.ones(3, 1), torch.ones(2)]
    assert layouts.match(fresh)
    assert not layouts.match([torch.ones(2), torch.ones(3, 1), torch.ones(3)])
    assert not layouts.match([torch.ones(2), torch.ones(1, 3), torch.ones(2)])


@pytest.mark.skipif(engine._TensorGuards is None, reason="no TensorGuards in this torch")
def test_canary_the_guard_takes_its_sizes_from_the_dims_given() -> None:
    """Why the dims must be each target's own: a guard built with another shape's sizes
    passes tensors of that shape (the planted bug: dims of the wrong shape)."""
    wrong = engine._TensorGuards(torch.ones(2), dynamic_dims_sizes=[[3]],
                                 dynamic_dims_strides=[[None]])
    assert wrong.check(torch.ones(3)) and not wrong.check(torch.ones(2))
