"""What the compile keeps of its readers' per-row lists (refsC84, issue 20.4: every per-row
list a plan keeps is walked by the collector's first young collection after the compile).

- The layer proof's kept values live in the context's address memo, under a
  :class:`~derivgraph.compiler.lower_layers.KeptValues` key that the layer holds: they go
  with the memo when the compile ends (the memo's ids tuples and address lists with them);
  while the memo holds, they are the bound values, value by value.
- The memo's addresses of an entry column are the column's own ``ptrs`` (the book's noted
  list), not a copy.
- An alias column's storages are the very list its rows (``ColumnRows``) were made holding.
Canaries: each "very list" assertion goes red with the copy made again; the values are
checked against the model read independently, and the plan refills to eager's values."""

from __future__ import annotations

import gc
from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.compiler import lower_layers
from derivgraph.compiler.graph import HeldDerived
from derivgraph.compiler.lower_layers import KeptValues
from derivgraph.runtime.entry import ColumnRows
from derivgraph.runtime.entry_columns import AliasColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.scaling_refill import assert_refill_matches_eager

LAYERS = 12


def _held(plan: Any) -> list[Any]:
    return [c for c in plan.entries.columns if type(c.nodes) is HeldDerived]


def test_the_kept_values_go_with_the_memo_at_the_compiles_end(monkeypatch) -> None:
    seen: list[tuple[Any, dict[Any, Any], dict[int, list[Any]]]] = []
    real = lower_layers.provable_layers

    def spy(ctx: Any, kept: Any = None) -> Any:
        out = real(ctx, kept)
        memo = lower_layers._memo(ctx)
        for key in (kept or {}).values():
            seen.append((key, memo, memo[key]))
        return out

    monkeypatch.setattr(lower_layers, "provable_layers", spy)
    import derivgraph.compiler.lower as lower
    monkeypatch.setattr(lower, "provable_layers", spy)
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    plan = compile_plan(model, [scaling_spec()])
    assert len(seen) == 1  # the one proven stamped table
    key, memo, values = seen[0]
    assert type(key) is KeptValues and not hasattr(key, "__dict__")
    # during the compile the memo held them: the rows' storages of the allocated columns
    held = {c.ids[0].rsplit(".", 1)[1]: c for c in _held(plan)}
    stored = [v for v in values.values() if v and v[0] is held["inv"].storages[0]]
    assert len(stored) == 1 and all(map(lambda a, b: a is b, stored[0], held["inv"].storages))
    seen.clear()
    del values, stored
    # after the compile: the context's memo is a new, empty one, and no dict anywhere still
    # holds a kept key (the old memo, with its per-row lists, is gone)
    assert not plan.tensors.address_memo and plan.tensors.address_memo is not memo
    del memo
    gc.collect()
    assert not [d for d in gc.get_objects() if type(d) is dict and key in d]
    # the plan works: a source changed in place, a refill gives eager's values
    assert_refill_matches_eager(model, plan, LAYERS, 1.25, strides=False, alias=True)


def test_the_memos_addresses_are_the_columns_own_lists(monkeypatch) -> None:
    got: list[Any] = []
    real = lower_layers.column_addresses

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        got.append(out)
        return out

    monkeypatch.setattr(lower_layers, "column_addresses", spy)
    from derivgraph.compiler import schedule_layers
    monkeypatch.setattr(schedule_layers, "column_addresses", spy)
    torch.manual_seed(0)
    plan = compile_plan(scaling_model(LAYERS), [scaling_spec()])
    allocated = [c for c in _held(plan) if type(c) is not AliasColumn]
    assert len(allocated) == 3
    for column in allocated:
        # real values: each row's storage's address, read one by one
        assert column.ptrs == [s.untyped_storage().data_ptr() for s in column.storages]
        # the answer the lowering read is the column's very list, not a copy
        assert any(a is column.ptrs for a in got), column.name


def test_an_alias_columns_storages_are_its_rows_list() -> None:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    plan = compile_plan(model, [scaling_spec()])
    (alias,) = [c for c in _held(plan) if type(c) is AliasColumn]
    rows = alias.entries
    assert type(rows) is ColumnRows
    # real values: each row's storage is its layer's scale, read from the model
    assert len(alias.storages) == LAYERS - 1
    assert all(s is model.layers[i + 1].scale for i, s in enumerate(alias.storages))
    # the very list the rows were made holding (read only by both)
    assert alias.storages is rows.storages
    assert [rows[i].storage for i in range(len(rows))] == list(alias.storages)
