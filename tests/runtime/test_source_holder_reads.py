"""The sources read with their holders (``accessors.read_paths``) and ``Holders.bind`` taking
those holders.

The compile's startup record reads every source path once: its owner (``PathReader.owners``),
the dict holding it (``holder_dicts``) and the object, read from that dict where a registry
sweep found it (the module's first registry holding the name, ``step_into``'s order), else by
``PathReader.get``. ``Holders.bind`` takes the holder dicts from that read where its own walk
finds every source's owner to be the very object read (nothing written in between), else it
reads them. Oracles: ``PathReader.get`` for the objects, ``holder_dicts`` of the walk's owners
for the holders, a bind without the reads for the bound sources.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.runtime.holders as holders_module
from derivgraph import compile_plan
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.accessors import holder_dicts, read_paths
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


class _Slotted:
    __slots__ = ("w",)

    def __init__(self) -> None:
        self.w = torch.ones(1)


class _WithProperty(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.ones(2), requires_grad=False)

    @property
    def view(self) -> torch.Tensor:
        return self.p[:1]


def _odd_model() -> nn.Module:
    """Every kind of place a path reads: each registry, the instance dict, a name held in two
    registries' places, a dict item, a list item, slots, a property, missing owners and names,
    a dunder and an empty last name."""
    root = nn.Module()
    root.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(3))
    for i, layer in enumerate(root.layers):
        layer.register_buffer("buf", torch.full((2,), float(i)))
        layer.plain = torch.zeros(i + 1)  # a plain tensor: the instance dict
    root.layers[1].__dict__["weight"] = torch.ones(5)  # shadowed: _parameters is read first
    root.table = {"x": torch.ones(1)}  # type: ignore[assignment]
    root.items = [torch.ones(2), torch.zeros(2)]  # type: ignore[assignment]
    root.slotted = _Slotted()  # type: ignore[assignment]
    root.prop = _WithProperty()
    return root


_PATHS = ["layers.0.weight", "layers.1.weight", "layers.2.weight", "layers.0.bias",
          "layers.1.bias", "layers.2.bias", "layers.0.buf", "layers.1.buf", "layers.2.buf",
          "layers.0.plain", "layers.1.plain", "layers.2.plain", "layers.1", "table.x",
          "items.1", "slotted.w", "prop.view", "prop.p", "nowhere.w", "layers.0.nothing",
          "layers.0.__dict__", "layers.0.", "layers.9.weight"]


@pytest.mark.parametrize("paths", [_PATHS, [p for p in _PATHS if not p.endswith(".")]],
                         ids=["an empty name", "every name"])
def test_each_path_reads_what_the_reader_reads_and_holder_dicts_finds(paths: list[str]) -> None:
    model = _odd_model()
    objects, reads = read_paths(PathReader(model), list(paths))
    fresh = PathReader(model)
    for path, obj in zip(paths, objects):
        if path == "prop.view":  # a new view on each read: read by the property
            assert obj.shape == (1,) and obj.data_ptr() == model.prop.p.data_ptr()
            continue
        assert obj is fresh.get(path), path
    assert reads.paths == paths
    assert reads.owner_paths == [p.rpartition(".")[0] for p in paths]
    assert reads.names == [p.rpartition(".")[2] for p in paths]
    assert all(map(lambda a, b: a is b, reads.owners, fresh.owners(reads.owner_paths)))
    expected = holder_dicts(reads.owners, reads.names)
    assert len(reads.where) == len(expected)
    for got, want in zip(reads.where, expected):
        assert (got is None) == (want is None)
        assert got is want  # the holder dict itself (its key: the row's name)


def test_a_column_of_module_rows_reads_the_first_registry_holding_the_name() -> None:
    model = _odd_model()
    paths = ["layers.0.weight", "layers.1.weight", "layers.2.weight"]
    objects, reads = read_paths(PathReader(model), paths)
    assert all(o is layer._parameters["weight"] for o, layer in zip(objects, model.layers))
    assert all(w is layer._parameters for w, layer
               in zip(reads.where, model.layers))


def _bound(plan: Any) -> list[tuple[str, Any, Any, int]]:
    return plan.holders._sources.rows()


def _same(a: list[tuple[str, Any, Any, int]], b: list[tuple[str, Any, Any, int]]) -> bool:
    return len(a) == len(b) and all(
        pa == pb and ta is tb and xa == xb and (wa is None) == (wb is None)
        and (wa is None or (wa[0] is wb[0] and wa[1] == wb[1]))
        for (pa, wa, ta, xa), (pb, wb, tb, xb) in zip(a, b))


@pytest.mark.parametrize("stamp", [True, False])
def test_the_compile_binds_the_holders_a_fresh_bind_reads(stamp: bool,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    asked: list[int] = []
    real = holders_module.holder_dicts

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(holders_module, "holder_dicts", counted)
    torch.manual_seed(0)
    with stamping(stamp):
        plan = compile_plan(scaling_model(6), [scaling_spec()])
    assert asked == []  # the startup record's holders taken
    compiled = _bound(plan)
    plan.bind_tensors()  # read again: the oracle
    assert asked == [len(compiled)]
    assert _same(compiled, _bound(plan))
    assert plan.moved() == []


def test_an_owner_swapped_after_the_read_is_read_again() -> None:
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(4), [scaling_spec()])
    model = plan.model
    paths = list(plan.tensors.sources)
    objects, reads = read_paths(PathReader(model), paths)
    old = model.layers[2]
    new = type(old)()  # another owner, holding other tensors under the same names
    model.layers[2] = new
    sources = dict(zip(paths, map(PathReader(model).get, paths)))
    plan.holders.bind(sources, (), None, reads)
    got = plan.holders._sources.rows()
    for (path, where, tensor, _ptr), obj in zip(got, sources.values()):
        assert tensor is obj
        assert where is not None and where[0][where[1]] is obj, path
    assert any(where[0] is new._parameters for _p, where, *_ in got)
    assert not any(where[0] is old._parameters for _p, where, *_ in got)


def test_reads_of_other_paths_are_not_taken() -> None:
    torch.manual_seed(0)
    with stamping(True):
        plan = compile_plan(scaling_model(4), [scaling_spec()])
    model = plan.model
    paths = list(plan.tensors.sources)
    # the same owners, the names read in another order: another path at each row
    other = [p.rpartition(".")[0] + "." + ("weight" if p.endswith("scale") else "scale")
             for p in paths]
    _objects, reads = read_paths(PathReader(model), other)
    sources = dict(zip(paths, map(PathReader(model).get, paths)))
    plan.holders.bind(sources, (), None, reads)
    for (path, where, tensor, _ptr), obj in zip(plan.holders._sources.rows(),
                                                   sources.values()):
        assert tensor is obj and where is not None and where[0][where[1]] is obj, path
