"""The sources' addresses the holders' checks start from (``holders.recorded_ptrs``).

A compile's startup record (``Plan.source_ptrs``: path -> (object id, address)) read every
source once; ``Holders.bind`` takes those addresses where the record names each source's very
object (the caller holds the recorded objects: ids are unique among live objects) and reads
them otherwise. The addresses it keeps are the ones a fresh read gives, and the checks they
feed pass on the compiled plan and fail once a source moves. Canary: the id check dropped takes
a recorded address of another object.
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph import compile_plan
from derivgraph.addresses import address_of, data_ptrs
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.holders import recorded_ptrs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _plan(layers: int = 6, stamp: bool = True) -> Any:
    torch.manual_seed(0)
    with stamping(stamp):
        return compile_plan(scaling_model(layers), [scaling_spec()])


def _record(objs: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {p: (id(t), address_of(t)) for p, t in objs.items()}


def test_recorded_addresses_are_taken_for_the_very_objects() -> None:
    objs = {"a.w": torch.ones(3), "b.w": torch.zeros(2), "c.w": torch.empty(0, device="meta")}
    got = recorded_ptrs(list(objs), list(objs.values()), _record(objs))
    assert got == data_ptrs(list(objs.values()))


def test_another_object_or_a_missing_path_is_read_instead() -> None:
    objs = {"a.w": torch.ones(3), "b.w": torch.zeros(2)}
    recorded = _record(objs)
    other = dict(objs, **{"b.w": torch.zeros(2)})  # the same path holds another tensor
    assert recorded_ptrs(list(other), list(other.values()), recorded) is None
    more = dict(objs, **{"c.w": torch.ones(1)})  # a path the record does not name
    assert recorded_ptrs(list(more), list(more.values()), recorded) is None


def test_the_compile_keeps_the_addresses_a_fresh_read_gives() -> None:
    for stamp in (True, False):
        plan = _plan(stamp=stamp)
        kept = plan.holders._sources
        assert kept.paths == list(plan.tensors.sources)
        assert kept.ptrs == data_ptrs(list(plan.tensors.sources.values()))
        assert plan.moved() == []


def test_a_record_of_other_objects_is_not_taken() -> None:
    plan = _plan()
    sources = plan.tensors.sources
    clones = {p: t.clone() for p, t in sources.items()}  # alive, other storage
    plan.holders.bind(sources, (), _record(clones))
    assert plan.holders._sources.ptrs == data_ptrs(list(sources.values()))
    assert plan.moved() == []


def test_a_source_moved_after_the_compile_is_reported() -> None:
    plan = _plan()
    path, tensor = next(iter(plan.tensors.sources.items()))
    with torch.no_grad():
        tensor.set_(torch.zeros_like(tensor))
    assert path in plan.moved()


def test_the_compile_takes_the_record(monkeypatch: Any) -> None:
    import derivgraph.runtime.holders as holders
    read: list[int] = []

    def counted(values: Any) -> list[int]:
        read.append(len(values))
        return data_ptrs(values)

    monkeypatch.setattr(holders, "data_ptrs", counted)
    plan = _plan()
    assert read == []  # the sources' addresses came from the startup record
    plan.bind_tensors()  # no record named: read
    assert read == [len(plan.tensors.sources)]
