"""lower44: the lowering half's per-column shortcuts give exactly what the per-tensor code gave."""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn

from derivgraph.compiler import transaction
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction, on_the_way


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


class _Storages:
    """The one :class:`~derivgraph.compiler.lower.LowerContext` method ``out_tensors`` reads."""

    def __init__(self, storages: dict[str, Any]) -> None:
        self.storages = storages

    def storage_of(self, node_id: str) -> Any:
        return self.storages[node_id]


def test_out_tensors_is_out_tensor_of_each_step() -> None:
    import torch

    from derivgraph.compiler.lower import Action, Step, out_tensor, out_tensors

    ctx = _Storages({"a": torch.arange(6.0), "b": torch.arange(4.0)})
    plain = [Step("x", Action.OUT, "neg", target="a"), Step("y", Action.OUT, "neg", target="b")]
    got = out_tensors(ctx, plain)  # type: ignore[arg-type]
    assert [t is ctx.storages[n] for t, n in zip(got, "ab")] == [True, True]
    viewed = [plain[0], Step("y", Action.OUT, "neg", target="a", out_shape=(2, 3))]
    got = out_tensors(ctx, viewed)  # type: ignore[arg-type]
    assert got[0] is ctx.storages["a"]
    assert tuple(got[1].shape) == (2, 3) and got[1].data_ptr() == ctx.storages["a"].data_ptr()
    assert [tuple(t.shape) for t in got] == [
        tuple(out_tensor(ctx, s).shape) for s in viewed]  # type: ignore[arg-type]
