"""back46: the compile's per-tensor work after ``build_graph`` read from what is already known
gives exactly what the per-tensor code gave."""

from __future__ import annotations

from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction
from tests.compiler.test_lower44 import _Leaf, _model

_OWNERS = ["layers.0", "layers.1", "layers.2", "head.inner"]


def _by_id(columns: list) -> dict:
    """The taken columns' rows by id: each row's (entry, extra)."""
    return {i: row for c in columns for i, row in zip(c.ids, zip(c.entries, c.extras))}


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


class _EqualsAll:
    """A node whose ``==`` says True to anything (None included): ``in`` would call it."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def test_holds_none_is_by_identity() -> None:
    from derivgraph.adoption_columns import _holds_none

    assert _holds_none([_EqualsAll(), None]) and not _holds_none([_EqualsAll()])
    assert not _holds_none([]) and _holds_none([None])


def test_a_column_with_a_row_not_derived_is_left_to_the_per_tensor_path() -> None:
    from derivgraph import adoption
    from derivgraph.adoption_columns import alias_rows, allocated_rows
    from derivgraph.compiler.stamp import stamping
    from derivgraph.planner import _prepare
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    model = scaling_model(5)
    with stamping(True):
        plan, values, _, _ = _prepare(model, [scaling_spec()], False, True)
    graph = plan.graph
    whole = _by_id(allocated_rows(graph, values, PathReader(model), adoption._slot))
    aliases = _by_id(alias_rows(graph, values, PathReader(model), adoption.AliasOf))
    assert "layers.3.inv" in whole and "layers.3.scale_alias" in aliases
    for gone in ("layers.3.inv", "layers.3.scale_alias"):  # one row's node not derived
        graph.derived[gone], node = None, graph.derived[gone]  # type: ignore[assignment]
        try:
            rows = _by_id(allocated_rows(graph, values, PathReader(model), adoption._slot))
            rows.update(_by_id(alias_rows(graph, values, PathReader(model), adoption.AliasOf)))
        finally:
            graph.derived[gone] = node
        column = gone.rpartition(".")[2]
        assert not any(k.endswith("." + column) for k in rows)  # the whole column left out
        assert len(rows) == len(whole) + len(aliases) - 4


def test_a_bound_key_equals_no_other_binding_key() -> None:
    import typing

    from derivgraph.compiler import codegen

    kinds = typing.get_args(codegen.BindingKey)
    assert codegen.Bound in kinds
    # Bound is a named tuple (made and hashed in C); every other key is a dataclass, so no
    # other key compares equal to it (a tuple equals only a tuple)
    assert [k for k in kinds if issubclass(k, tuple)] == [codegen.Bound]
    names = {codegen.Bound("a"): "b", codegen.Stage("a"): "s", codegen.Helper("a"): "h",
             codegen.OutView("a", ()): "o", codegen.TensorList((codegen.Bound("a"),)): "l"}
    assert len(names) == 5 and names[codegen.Bound("a")] == "b"
    assert codegen.Bound("a").ref == "a" and codegen.Bound("a") != codegen.Bound("b")
    assert codegen.TensorList((codegen.Bound("a"),)) == codegen.TensorList((codegen.Bound("a"),))


def test_bound_keys_are_bound_made_one_by_one() -> None:
    from derivgraph.compiler import codegen

    refs = ["a", "b.c", "a"]
    got = codegen._bound_keys(refs)
    assert got == tuple(map(codegen.Bound, refs)) and codegen._bound_keys([]) == ()
    assert all(type(k) is codegen.Bound for k in got) and [k.ref for k in got] == refs
