"""back46: the compile's per-tensor work after ``build_graph`` read from what is already known
gives exactly what the per-tensor code gave."""

from __future__ import annotations

from typing import Any

from torch import nn

from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction


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


_OWNERS = ["layers.0", "layers.1", "layers.2", "head.inner"]


def _recorded(tx: ModelTransaction) -> list[tuple[int, list[str]]]:
    return [(id(live), sorted(saved)) for live, saved in tx._dicts]


def test_a_transaction_takes_a_warm_reader_and_records_the_same_dicts() -> None:
    model = _model()
    warm = PathReader(model)
    warm.owners(_OWNERS)  # as adoption's reader: every owner walked once
    assert _recorded(ModelTransaction(model, _OWNERS, [], warm)) == \
        _recorded(ModelTransaction(model, _OWNERS, []))


def test_a_transaction_given_another_models_reader_reads_its_own_model() -> None:
    model, other = _model(), _model()
    stray = PathReader(other)
    stray.owners(_OWNERS)
    tx = ModelTransaction(model, _OWNERS, [], stray)
    assert _recorded(tx) == _recorded(ModelTransaction(model, _OWNERS, []))
    model.layers[1].added = 1
    tx.rollback()
    assert not hasattr(model.layers[1], "added")


def test_canary_a_transaction_goes_by_its_readers_owners() -> None:
    # a reader whose cache lies (another object at layers.1): the transaction records that
    # object, so a rollback misses the real owner -- the reader's owners are what is read
    model = _model()
    lying = PathReader(model)
    lying.owners(_OWNERS)
    lying._owners["layers.1"] = _Leaf()
    tx = ModelTransaction(model, _OWNERS, [], lying)
    model.layers[1].added = 1
    tx.rollback()
    assert hasattr(model.layers[1], "added")
