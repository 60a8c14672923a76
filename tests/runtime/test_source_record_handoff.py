"""The compile's startup record hands the sources' addresses and holder dicts to the holders'
binding (``Holders.bind``):

* the addresses the record took of the objects it read (``PathReads.ptrs``) are taken where
  every bound source is the very object read there (one identity sweep); else the record is
  looked up by path (``recorded_ptrs``, the rule), else the addresses are read;
* the source check's columns (holder dicts, keys, the address check) are made at the bind
  from the columns it has, as ``sources_intact`` makes them from the bound sources; not where
  a source is held outside a dict (the check then fails, as before).
"""

from __future__ import annotations

import operator
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import holders
from derivgraph.runtime.accessors import PathReads, read_paths
from derivgraph.runtime.holders import Holders, _read_ptrs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan() -> Any:
    torch.manual_seed(0)
    with stamping(True):
        return compile_plan(scaling_model(6), [scaling_spec()])


def _reads(objects: list[Any], ptrs: list[int] | None) -> PathReads:
    paths = [f"p{i}" for i in range(len(objects))]
    return PathReads(paths, [""] * len(paths), paths, [None] * len(paths), [None] * len(paths),
                     objects, ptrs)


def test_the_compile_takes_the_records_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """No lookup of the record by path: the addresses are the record's, in order."""
    def refuse(*_args: Any) -> None:
        raise AssertionError("the record looked up by path")

    monkeypatch.setattr(holders, "recorded_ptrs", refuse)
    plan = _plan()
    sources = plan.holders._sources.rows()
    assert len(sources) == len(plan.tensors.sources) == 12
    for path, _where, tensor, ptr in sources:
        assert tensor is plan.tensors.sources[path]
        assert ptr == tensor.data_ptr() and plan.source_ptrs[path] == (id(tensor), ptr)
    assert plan.moved() == []


def _cases() -> dict[str, tuple[list[Any], PathReads | None, list[int] | None]]:
    objects = [torch.zeros(2) for _ in range(4)]
    ptrs = [10, 11, 12, 13, 14]
    more = [*objects, torch.zeros(2)]  # the folds' paths after the sources'
    return {
        "every object, then more": (objects, _reads(more, ptrs), ptrs[:4]),
        "the same length": (objects, _reads(objects, ptrs[:4]), ptrs[:4]),
        "no reads": (objects, None, None),
        "no addresses recorded": (objects, _reads(more, None), None),
        "another object bound": (objects[:3] + [torch.zeros(2)], _reads(more, ptrs), None),
        "fewer objects read": (objects, _reads(objects[:3], ptrs), None),
        "fewer addresses recorded": (objects, _reads(more, ptrs[:3]), None),
        "nothing bound": ([], _reads(more, ptrs), []),
    }


@pytest.mark.parametrize("case", sorted(_cases()))
def test_the_records_addresses_are_taken_only_for_the_objects_read(case: str) -> None:
    objects, reads, want = _cases()[case]
    assert _read_ptrs(reads, objects) == want


def test_a_source_not_read_there_takes_its_own_address() -> None:
    """A bind whose reads recorded other objects (their addresses wrong for these) takes the
    bound sources' own addresses: the record by path names other objects too, so they are
    read."""
    plan = _plan()
    sources = dict(plan.tensors.sources)
    paths = list(sources)
    first = paths[0]
    _objects, reads = read_paths(PathReader(plan.model), paths)
    other = torch.zeros(8)
    wrong = reads._replace(objects=[other, *reads.objects[1:]], ptrs=[1] * len(paths))
    recorded = {p: (id(t) if p != first else id(other), 1) for p, t in sources.items()}
    plan.holders.bind(sources, (), recorded, wrong)
    assert plan.holders._sources.ptrs == [t.data_ptr() for t in sources.values()]
    # the same reads with every object the bound one: the record's addresses are taken
    right = reads._replace(ptrs=list(range(100, 100 + len(paths))))
    plan.holders.bind(sources, (), recorded, right)
    assert plan.holders._sources.ptrs == right.ptrs
    # without a record (a bind that recorded nothing), the reads' addresses are not taken
    plan.holders.bind(sources, (), None, right)
    assert plan.holders._sources.ptrs == [t.data_ptr() for t in sources.values()]


def _columns(checks: Any) -> tuple[list[int], list[str], list[int], list[int], Any, bool]:
    dicts, keys, at = checks
    return [id(d) for d in dicts], keys, [id(t) for t in at.tensors], at.ptrs, at.words, \
        at._taken


def test_the_source_check_is_made_at_the_bind_as_sources_intact_makes_it() -> None:
    plan = _plan()
    held = plan.holders
    held.bind(plan.tensors.sources)
    made = held._source_checks
    assert made is not None
    assert _columns(made) == ([id(w[0]) for _p, w, _t, _a in held._sources.rows()],
                              [w[1] for _p, w, _t, _a in held._sources.rows()],
                              [id(t) for *_, t, _a in held._sources.rows()],
                              [a for *_, a in held._sources.rows()], None, False)
    held._source_checks = None  # the lazy rule: what sources_intact makes of the bound sources
    assert held.sources_intact()
    lazy = held._source_checks
    assert lazy is not None
    held.bind(plan.tensors.sources)
    assert held.sources_intact()
    assert _columns(held._source_checks)[:4] == _columns(lazy)[:4]
    # the check still sees a source re-pointed
    layer = plan.model.layers[2]
    layer.scale.data = layer.scale.data.clone()
    assert not held.sources_intact()


class _Owner(nn.Module):
    """A source held behind a property: no dict holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Module()
        self.inner.w = nn.Parameter(torch.ones(3), requires_grad=False)
        self.plain = nn.Parameter(torch.ones(3), requires_grad=False)

    @property
    def w(self) -> torch.Tensor:
        return self.inner.w


@pytest.mark.parametrize("first", [False, True], ids=["held last", "held first"])
def test_a_source_outside_a_dict_leaves_the_check_unmade(first: bool) -> None:
    model = nn.Module()
    model.o = _Owner()
    sources = {"o.plain": model.o.plain, "o.w": model.o.w}
    if first:
        sources = dict(reversed(list(sources.items())))
    held = Holders(model, {})
    held.bind(sources)
    assert [w is None for _p, w, _t, _a in held._sources.rows()] == [p == "o.w" for p in sources]
    assert held._source_checks is None
    assert not held.sources_intact()  # as before: a source outside a dict fails the check
    assert operator.is_(held._source_checks, None)
