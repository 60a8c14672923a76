"""Holder accessors and owner hops read a column at a time, equal to the per-entry reference.

:func:`~derivgraph.compiler.owners.registries_holding` reads one name on many modules in one
sweep per registry; :func:`~derivgraph.runtime.accessors.holders_of` and
:func:`~derivgraph.runtime.accessors.holder_dicts` use it for every name whose owners it
proves, :class:`~derivgraph.runtime.accessors.HopTable` resolves a layer list's layers in one
sweep, and the compile binds the sources it read for the startup record. Each rule is
checked against the per-entry path it replaces, on cases where a wrong shortcut would differ.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan
from derivgraph.compiler import owners as owners_module
from derivgraph.compiler.owners import path_prefixes, registries_holding
from derivgraph.compiler.stamp import stamping
from derivgraph.paths import MISSING, holder_dict
from derivgraph.runtime import storage
from derivgraph.runtime.accessors import (
    NO_DICT,
    HopTable,
    _store_binds,
    holder_dicts,
    holder_of,
    holders_of,
)
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.runtime.test_refill_batched import SPEC, _stack


def _module_with(**held: str) -> nn.Module:
    """A module holding each name in the registry named by its value."""
    module = nn.Module()
    for name, where in held.items():
        value = torch.zeros(1)
        if where == "parameter":
            module.register_parameter(name, nn.Parameter(value, requires_grad=False))
        elif where == "buffer":
            module.register_buffer(name, value)
        elif where == "module":
            module.add_module(name, nn.Identity())
        else:
            module.__dict__[name] = value
    return module


def test_registries_holding_reads_the_first_registry_a_hop_reads() -> None:
    params = [_module_with(x="parameter") for _ in range(3)]
    for module in params:
        module.__dict__["x"] = torch.ones(1)  # shadowed: a hop reads the parameter first
    k, dicts = registries_holding(params, "x")
    assert k == 1 and all(d is m._parameters for d, m in zip(dicts, params))
    attrs = [_module_with(x="dict") for _ in range(2)]
    k, dicts = registries_holding(attrs, "x")
    assert k == 3 and all(d is m.__dict__ for d, m in zip(dicts, attrs))
    assert registries_holding([_module_with(x="module")], "x")[0] == 0
    assert registries_holding([_module_with(x="buffer")], "x")[0] == 2


@pytest.mark.parametrize("owners", [
    [_module_with(x="parameter"), _module_with(x="dict")],  # two registries
    [_module_with(x="dict"), _module_with()],  # held nowhere on one
    [_module_with(x="dict"), MISSING],  # a missing owner
    [_module_with(x="dict"), type("Plain", (), {"x": 1})()],  # no module
    [],
])
def test_registries_holding_refuses_what_it_cannot_read_in_one_sweep(owners: list[Any]) -> None:
    assert registries_holding(owners, "x") is None


def test_registries_holding_refuses_a_dunder() -> None:
    module = _module_with()
    module.__dict__["__weird__"] = 1
    assert registries_holding([module], "__weird__") is None


def test_holder_dicts_equal_holder_dict_one_by_one() -> None:
    plain = type("Plain", (), {})()
    plain.w = torch.zeros(1)
    owners = [_module_with(w="parameter"), _module_with(w="parameter"), _module_with(w="dict"),
              MISSING, plain, {"w": 1}, _module_with(v="buffer"), _module_with(v="buffer")]
    names = ["w"] * 6 + ["v", "v"]
    got = holder_dicts(owners, names)
    want = [holder_dict(o, n) if o is not MISSING else None for o, n in zip(owners, names)]
    # each row's holder dict (the key in it is the row's name), None where holder_dict has none
    assert [None if g is None else (id(g), n) for g, n in zip(got, names, strict=True)] == \
        [None if w is None else (id(w[0]), w[1]) for w in want]
    assert got[0] is owners[0]._parameters and got[3] is None and got[6] is owners[6]._buffers


def _reference(owners: dict[str, Any], root: Any, entries: list[Any]) -> tuple[list, list, list]:
    where = [holder_of(owners, root, e) for e in entries]
    return ([d for _o, d, _k in where], [k for *_, k in where],
            [_store_binds(e, o, d) for e, (o, d, _k) in zip(entries, where)])


def _plans() -> list[Any]:
    with stamping(True):
        stamped = compile_plan(scaling_model(6), [scaling_spec()])  # attribute, alias columns
    adopted = compile_plan(_stack(0), [SPEC])  # a parameter, a buffer (one by one), attributes
    return [stamped, adopted]


@pytest.mark.parametrize("index", [0, 1])
def test_holders_of_equals_the_per_entry_accessors(index: int) -> None:
    plan = _plans()[index]
    entries = list(plan.holders.table.entries)
    objects = plan.holders.hops.objects
    got, want = holders_of(objects, plan.model, entries), _reference(objects, plan.model, entries)
    assert [id(d) for d in got[0]] == [id(d) for d in want[0]]
    # whether a dict store binds each holder: one byte per row (1/0), no list of bools
    assert got[1] == want[1] and type(got[2]) is bytearray
    assert list(map(bool, got[2])) == want[2] and all(b in (0, 1) for b in got[2])
    assert type(plan.holders.table.fast) is bytearray
    assert list(map(bool, plan.holders.table.fast)) == want[2]


def test_holders_of_reads_an_owner_holding_the_name_elsewhere_one_by_one() -> None:
    """Canary: one layer also holds ``inv`` as a parameter (read before its ``__dict__``): its
    holder is that registry, and a dict store would not bind it (fast False), while its
    siblings' would."""
    plan = _plans()[0]
    entries = [e for e in plan.holders.table.entries if e.node.decl.name == "inv"]
    layer = plan.model.layers[2]
    layer._parameters["inv"] = nn.Parameter(torch.zeros(8), requires_grad=False)
    objects = plan.holders.hops.objects
    dicts, _keys, fast = holders_of(objects, plan.model, entries)
    want = _reference(objects, plan.model, entries)
    assert [id(d) for d in dicts] == [id(d) for d in want[0]]
    assert dicts[2] is layer._parameters and list(map(bool, fast)) == want[2]
    assert fast == bytearray([1, 1, 0, 1, 1, 1])
    for other in plan.model.layers:  # every layer: one sweep, no dict store binds them
        other._parameters["inv"] = nn.Parameter(torch.zeros(8), requires_grad=False)
    dicts, _keys, fast = holders_of(objects, plan.model, entries)
    assert all(d is m._parameters for d, m in zip(dicts, plan.model.layers))
    assert fast == bytes(6) and [False] * 6 == _reference(objects, plan.model, entries)[2]


def test_holders_of_reads_a_missing_owner_one_by_one() -> None:
    plan = _plans()[0]
    entries = list(plan.holders.table.entries)
    objects = dict(plan.holders.hops.objects)
    del objects["layers.1"]  # an owner the walk did not find
    dicts, _keys, fast = holders_of(objects, plan.model, entries)
    want = _reference(objects, plan.model, entries)
    assert [id(d) for d in dicts] == [id(d) for d in want[0]] \
        and list(map(bool, fast)) == want[2]
    assert sum(d is NO_DICT for d in dicts) == 4  # layer 1's four tensors


def test_holders_of_reads_the_root_path_as_the_root() -> None:
    """Canary: an owner mapping whose root path holds another module (a decoy holding the
    name too) is not read for entries at the root: the root is."""
    from types import SimpleNamespace

    from derivgraph.paths import Slot

    root, decoy = _module_with(x="dict"), _module_with(x="dict")
    entries = [SimpleNamespace(slot=Slot.ATTRIBUTE, owner_path="", node=SimpleNamespace(
        owner_path="", decl=SimpleNamespace(name="x", persistent=True))) for _ in range(2)]
    dicts, keys, fast = holders_of({"": decoy}, root, entries)
    assert len(dicts) == 2 and all(d is root.__dict__ for d in dicts)
    assert (keys, fast) == (["x", "x"], bytearray([1, 1]))


@pytest.mark.parametrize("paths", [
    ["a.b.c", "", "x", ".y", "a.b", "a..b"],
    [],
    ["layers.0", "layers.1", "layers"],
])
def test_path_prefixes_are_every_split_prefix(paths: list[str]) -> None:
    want = set()
    for path in paths:
        parts = path.split(".") if path else []
        want.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    assert path_prefixes(paths) == want


class _Plain:
    """An owner that is no module (its hops read its ``__dict__``)."""

    def __init__(self, **kw: Any):
        self.__dict__.update(kw)


def _hop_model() -> nn.Module:
    model = nn.Module()
    model.layers = nn.ModuleList(_module_with(w="parameter") for _ in range(4))
    model.layers[1].kernel = _Plain(inner=_Plain(t=torch.zeros(1)))
    model.others = nn.ModuleList(_module_with(w="dict") for _ in range(2))
    model.table = {"k": _Plain()}  # a dict hop: not a module parent
    return model


def _fields(table: HopTable) -> tuple[Any, ...]:
    return (table.prefixes, table.parts, table.parents, table.children, table.keys, table.slow,
            [id(d) for d in table.dicts], [id(e) for e in table.expected],
            [(k, id(v)) for k, v in table.objects.items()])


@pytest.mark.parametrize("paths", [
    ["layers.0", "layers.1", "layers.2", "layers.3"],
    ["layers", "layers.0", "layers.3", "layers.1.kernel", "layers.1.kernel.inner",
     "layers.9", "layers.2", "table", "table.k", "gone.x", "layers.1"],
    ["layers.1.kernel.inner", "layers.0", "layers.1", "layers.1.kernel", "layers.2"],
    ["layers", "others", "layers.0", "others.0", "layers.1", "others.1"],  # interleaved
    ["layers", "others", "layers.0", "others.9", "layers.9", "others.0"],  # missing ones
])
def test_hop_table_runs_equal_the_hops_one_by_one(paths: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The run of hops from owners already walked (one sweep for a layer list's layers)
    against the same hops added one at a time; a missing layer (``layers.9``) and
    non-module parents take the one-by-one path inside a run."""
    model = _hop_model()
    got = _fields(HopTable(model, paths))

    def one_by_one(self: HopTable, run: list[tuple[str, str, str]]) -> None:
        for hop in run:
            self._add(*hop)

    monkeypatch.setattr(HopTable, "_add_run", one_by_one)
    assert got == _fields(HopTable(model, paths))


def test_a_layer_lists_layers_are_one_sweep() -> None:
    model = _hop_model()
    table = HopTable(model, [f"layers.{i}" for i in range(4)])
    assert table.dicts[1:] == [model.layers._modules] * 4  # the "layers" hop is the first
    assert all(table.objects[f"layers.{i}"] is model.layers[i] for i in range(4))
    assert table.slow == []


def test_the_compile_binds_the_sources_it_read_for_the_startup_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile reads every source once: the bound sources are the objects its startup
    record read (the binding reads no path of its own), and a later re-bind reads afresh."""

    class NoReads(owners_module.PathReader):
        def get(self, path: str) -> Any:
            raise AssertionError(f"read {path} again")

    monkeypatch.setattr(storage, "PathReader", NoReads)
    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    assert plan.tensors.sources["layers.2.scale"] is model.layers[2].scale
    assert plan.source_ptrs["layers.2.scale"] == (id(model.layers[2].scale),
                                                  model.layers[2].scale.data_ptr())
    with pytest.raises(AssertionError, match="read layers.0.scale again"):
        plan.bind_tensors()

