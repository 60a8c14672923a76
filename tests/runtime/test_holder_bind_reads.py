"""``Holders.bind`` reads what the compile read once:

* ``recorded_ptrs`` takes the startup record's addresses in order where the record starts
  with the bound sources' paths (its first keys are they), else looks each path up; either
  way the answer is the per-path rule's (the object ids checked, None where one differs).
* the walk's entry owner paths are handed to ``holders_of`` (through ``refresh``) where the
  table holds every entry, so a held column's rows' owner paths are sliced from them, not
  read again; the table is the one the registries give (``holders_of`` of every entry, read
  one by one), with and without a derived scalar (which leaves the walk's paths unused).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors, holders
from derivgraph.runtime.holders import recorded_ptrs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _reference(paths: list[str], objects: list[Any],
               recorded: dict[str, tuple[int, int]]) -> list[int] | None:
    got = [recorded.get(p) for p in paths]
    if None in got or [id(o) for o in objects] != [g[0] for g in got]:  # type: ignore[index]
        return None
    return [g[1] for g in got]  # type: ignore[index]


def _record(paths: list[str], objects: list[Any]) -> dict[str, tuple[int, int]]:
    return {p: (id(o), 1000 + i) for i, (p, o) in enumerate(zip(paths, objects))}


def _cases() -> dict[str, tuple[list[str], list[Any], dict[str, tuple[int, int]]]]:
    objects = [torch.zeros(2) for _ in range(6)]
    paths = [f"layers.{i}.scale" for i in range(6)]
    record = _record(paths, objects)
    shuffled = list(record.items())
    random.Random(0).shuffle(shuffled)
    swapped = dict(record)
    swapped[paths[2]], swapped[paths[3]] = record[paths[3]], record[paths[2]]
    other = torch.zeros(2)
    return {
        "in order": (paths, objects, record),
        "then more paths (the folds)": (paths[:4], objects[:4], record),
        "shuffled": (paths, objects, dict(shuffled)),
        "another path first": (paths[1:], objects[1:], record),
        "two values swapped": (paths, objects, swapped),
        "an object replaced": (paths, objects[:5] + [other], record),
        "a path missing": (paths, objects, {p: record[p] for p in paths[:5]}),
        "fewer keys than paths": (paths, objects, {p: record[p] for p in paths[:3]}),
        "nothing": ([], [], {}),
    }


@pytest.mark.parametrize("case", sorted(_cases()))
def test_recorded_addresses_are_the_per_path_rules(case: str) -> None:
    paths, objects, recorded = _cases()[case]
    assert recorded_ptrs(paths, objects, recorded) == _reference(paths, objects, recorded)


def test_the_compile_takes_the_sources_addresses_from_the_startup_record() -> None:
    with stamping(True):
        plan = compile_plan(scaling_model(6), [scaling_spec()])
    assert list(plan.source_ptrs)[:len(plan.tensors.sources)] == list(plan.tensors.sources)
    for path, _where, tensor, ptr in plan.holders._sources.rows():
        assert plan.source_ptrs[path] == (id(tensor), ptr) and ptr == tensor.data_ptr()


def _scalar_spec() -> Spec:
    return Spec(name="peak", target=Target(module_class=["ScalingLayer"]),
                derived=[DerivedTensor(name="peak", kind="scalar", formula="amax(scale)")])


@pytest.mark.parametrize("with_scalar", [False, True], ids=["columns only", "a scalar too"])
def test_the_table_is_the_registries_with_the_walks_paths(monkeypatch: pytest.MonkeyPatch,
                                                           with_scalar: bool) -> None:
    handed: list[bool] = []
    real = accessors.holders_of

    def spy(*args: Any) -> Any:
        handed.append(len(args) > 5 and args[5] is not None)
        return real(*args)

    monkeypatch.setattr(holders, "holders_of", spy)
    specs = [scaling_spec(), _scalar_spec()] if with_scalar else [scaling_spec()]
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(6), specs)
    assert handed == [not with_scalar]  # the walk's paths are handed where every entry is held
    table, objects = plan.holders.table, plan.holders.hops.objects
    dicts, keys, fast = real(objects, plan.model, table.entries)  # every owner's registries
    assert [id(d) for d in table.dicts] == [id(d) for d in dicts]
    assert (table.keys, table.fast) == (keys, fast)
    assert len(table.entries) == 4 * 6  # the scalars are left out
    assert plan.moved() == []
