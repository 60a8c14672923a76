"""The sources' startup record by column (``Plan.source_ptrs``: a ``SourcePtrs``).

The record (path -> (object id, address) of what the compile read at every source and folded
path) is held as parallel lists, no tuple per path. The oracle is the dict it replaced,
``dict(zip(paths, zip(ids, ptrs)))``, and the rule its readers apply per path
(``record.get(path) == (id(object), address)``): every Mapping answer, the proven sources of
``Holders._startup_sources`` and what ``moved`` finds are the same. Canaries: the address
compare dropped from the sweep (a moved address counts as proven), the items read out of row
order, and a repeated path kept twice (not the dict's one key).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.addresses import address_of
from derivgraph.compiler.stamp import stamping
from derivgraph.paths import get_path
from derivgraph.runtime.source_ptrs import SourcePtrs, recorded_same
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan(layers: int = 8, stamp: bool = True) -> Any:
    torch.manual_seed(0)
    with stamping(stamp):
        return compile_plan(scaling_model(layers), [scaling_spec()])


def _reference(plan: Any) -> dict[str, tuple[int, int]]:
    """The record as the dict rule makes it, from the model as it is now."""
    paths = [*plan.graph.sources(), *plan.folds.entries]
    return {p: (id(get_path(plan.model, p)), address_of(get_path(plan.model, p)))
            for p in paths}


@pytest.mark.parametrize("stamp", [True, False], ids=["stamped", "plain"])
def test_the_record_answers_as_the_dict_it_replaced(stamp: bool) -> None:
    plan = _plan(stamp=stamp)
    record, want = plan.source_ptrs, _reference(plan)
    assert type(record) is SourcePtrs and len(record) == len(want) == 16
    assert record == want and want == record
    assert list(record) == list(want) and list(record.keys()) == list(want.keys())
    assert list(record.values()) == list(want.values())
    assert list(record.items()) == list(want.items())
    for path, value in want.items():
        assert record[path] == value and record.get(path) == value and path in record
    assert "layers.0.nope" not in record and record.get("layers.0.nope", 7) == 7
    with pytest.raises(KeyError):
        record["layers.0.nope"]


def test_the_compile_and_its_runs_make_no_path_index() -> None:
    """No lookup by path in the compile, a refill, a run or the moved check: the lists are
    read in order (the index, a dict of every path, is made on a lookup by path only)."""
    plan = _plan()
    record = plan.source_ptrs
    assert record._rows is None
    plan.refill()
    plan.run()
    assert plan.moved() == []
    assert plan.source_ptrs is record and record._rows is None
    assert record["layers.3.scale"] == _reference(plan)["layers.3.scale"]
    assert record._rows is not None  # the first lookup by path made it


def test_recorded_same_is_the_per_path_rule() -> None:
    objs = [torch.ones(2), torch.zeros(3), torch.ones(1), torch.zeros(1)]
    paths = ["a.w", "b.w", "c.w", "d.w"]
    ptrs = [address_of(t) for t in objs]
    record = SourcePtrs.record(list(paths), objs, list(ptrs))
    other = torch.ones(2)
    cases = {
        "the very objects": (paths, objs, ptrs),
        "another object": (paths, [objs[0], other, *objs[2:]], ptrs),
        "another address": (paths, objs, [ptrs[0], ptrs[1], ptrs[2] + 4, ptrs[3]]),
        "a prefix": (paths[:2], objs[:2], ptrs[:2]),
        "out of order": (paths[::-1], objs[::-1], ptrs[::-1]),
        "a path not recorded": (["a.w", "x.w"], objs[:2], ptrs[:2]),
    }
    for name, (p, o, q) in cases.items():
        rule = [record.get(path) == (id(obj), ptr) for path, obj, ptr in zip(p, o, q)]
        assert recorded_same(record, list(p), o, q) == rule, name
        assert recorded_same(dict(record.items()), list(p), o, q) == rule, name
    fresh = SourcePtrs.record(list(paths), objs, list(ptrs))
    assert recorded_same(fresh, paths, objs, ptrs) == [True] * 4
    assert recorded_same(fresh, paths, objs, [ptrs[0], ptrs[1], ptrs[2] + 4, ptrs[3]]) \
        == [True, True, False, True]
    assert fresh._rows is None  # the prefix sweeps read the lists only


def test_a_repeated_path_is_the_dict_s_one_key() -> None:
    """A folded path that is also a source path: the dict's record (its first place, the last
    value), not two keys."""
    objs = [torch.ones(2), torch.zeros(3), torch.ones(4)]
    paths = ["a.w", "b.w", "a.w"]
    ptrs = [address_of(t) for t in objs]
    record = SourcePtrs.record(paths, objs, ptrs, tail=1)
    want = dict(zip(paths, zip(map(id, objs), ptrs)))
    assert list(record.items()) == list(want.items()) and len(record) == 2
    assert record["a.w"] == (id(objs[2]), ptrs[2])
    distinct = SourcePtrs.record(["a.w", "b.w", "c.w"], objs, ptrs, tail=1)
    assert list(distinct) == ["a.w", "b.w", "c.w"]


def test_the_proven_sources_and_moved_follow_the_record() -> None:
    """``_startup_sources`` proves the bound sources the record names with their very object
    at their address (the sweep), the same set the per-path rule gives; a record in another
    order (no prefix: the per-path branch) gives the same; a source replaced is found by
    ``moved`` on both."""
    plan = _plan()
    holders = plan.holders
    record = plan.source_ptrs
    proven, rest = holders._startup_sources(record)
    rule = frozenset(src for src, _w, t, ptr in holders._sources.rows()
                     if record.get(src) == (id(t), ptr))
    assert proven == rule and len(proven) == len(plan.tensors.sources) and rest == []
    order = list(record.items())
    random.Random(3).shuffle(order)
    shuffled = SourcePtrs([p for p, _ in order], [v[0] for _, v in order],
                          [v[1] for _, v in order])
    assert holders._startup_sources(shuffled) == (proven, [])
    replaced = [record.paths[0], "layers.3.scale"]  # the record's first row among them
    for path in replaced:
        owner, _, name = path.rpartition(".")
        module = get_path(plan.model, owner)
        setattr(module, name, nn.Parameter(getattr(module, name).detach().clone(),
                                           requires_grad=False))
    for rec in (record, shuffled):
        found = [p for p in holders.moved(rec) if p in rec]
        assert sorted(found) == sorted(replaced)


def test_an_address_the_record_does_not_hold_is_not_proven() -> None:
    """The record of one source at another address: that source is not proven (checked one
    by one) and ``moved`` names it."""
    plan = _plan()
    holders, record = plan.holders, plan.source_ptrs
    row = record.paths.index("layers.2.weight")
    ptrs = list(record.ptrs)
    ptrs[row] += 8
    other = SourcePtrs(record.paths, record.ids, ptrs)
    proven, rest = holders._startup_sources(other)
    assert "layers.2.weight" not in proven and rest == ["layers.2.weight"]
    assert holders.moved(other) == ["layers.2.weight"]
