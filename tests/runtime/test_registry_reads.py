"""The reads of a list of owners shared by several keys (``owners.RegistryReads``).

``registries_holding(owners, key)`` reads, whatever the key, whether every owner is a module,
their ``__dict__`` s and their registries; ``holder_dicts`` asks it once per source name, and
the names of one stamped table have the very same owners. A ``RegistryReads`` passed along
keeps those reads for the next key over the same owners (identity, row by row) and reads again
for any other list. Every answer equals the rule read row by row and the fresh call's (the
registry index and each row's dict, by identity), over modules holding the key as a
submodule, parameter, buffer or plain attribute, mixed places, non-modules and a changed
list. Canaries: reads kept for another list of owners; every registry answered from the
first one's reads.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler import owners as owners_module
from derivgraph.compiler.owners import RegistryReads, registries_holding
from derivgraph.runtime.accessors import holder_dicts


def _layer(i: int) -> nn.Module:
    layer = nn.Module()
    layer.sub = nn.Linear(2, 2)
    layer.w = nn.Parameter(torch.full([2], float(i)))
    layer.register_buffer("b", torch.zeros(1))
    layer.plain = torch.ones(1)
    return layer


def _same(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is want
    return got[0] == want[0] and len(got[1]) == len(want[1]) \
        and all(a is b for a, b in zip(got[1], want[1]))


def _reference(owners: list[Any], key: str) -> Any:
    """The rule row by row: the first of ``_modules``, ``_parameters``, ``_buffers`` and
    ``__dict__`` holding ``key``, the same one for every owner, every owner a module."""
    if not owners or (key.startswith("__") and key.endswith("__")) \
            or not all(isinstance(o, nn.Module) for o in owners):
        return None
    places = []
    for owner in owners:
        d = owner.__dict__
        where = next(((k, d[r]) for k, r in enumerate(("_modules", "_parameters", "_buffers"))
                      if key in d[r]), (3, d) if key in d else (None, None))
        places.append(where)
    ks = {k for k, _ in places}
    return (ks.pop(), [d for _, d in places]) if len(ks) == 1 and None not in ks else None


KEYS = ["sub", "w", "b", "plain", "absent", "__dict__", "w", "sub"]


def test_every_key_answers_as_the_fresh_call() -> None:
    layers = [_layer(i) for i in range(5)]
    mixed = layers[:2] + [_layer(9)]
    mixed[2].w = nn.Parameter(torch.zeros(2))  # still a parameter
    mixed[2].__dict__["_parameters"].pop("w")
    mixed[2].__dict__["w"] = torch.zeros(2)  # now a plain attribute on one row
    lists: list[list[Any]] = [layers, layers, list(layers), mixed, [object(), layers[0]],
                              layers[1:], layers]
    reads = RegistryReads()
    for owners in lists:
        for key in KEYS:
            want = _reference(owners, key)
            assert _same(registries_holding(owners, key, reads), want), (key, owners)
            assert _same(registries_holding(owners, key), want), (key, owners)


def test_the_same_owners_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    layers = [_layer(i) for i in range(4)]
    read: list[int] = []
    plain = owners_module._DICT

    def counted(obj: Any) -> Any:
        read.append(1)
        return plain(obj)

    monkeypatch.setattr(owners_module, "_DICT", counted)
    reads = RegistryReads()
    for key in ("w", "b", "sub"):
        registries_holding(layers, key, reads)
    assert len(read) == len(layers)  # one __dict__ read per owner for three keys
    registries_holding(list(reversed(layers)), "w", reads)  # other owners: read again
    assert len(read) == 2 * len(layers)


def test_holder_dicts_of_two_names_on_the_same_owners() -> None:
    layers = [_layer(i) for i in range(6)]
    owners = layers + layers
    names = ["w"] * 6 + ["b"] * 6
    got = holder_dicts(owners, names)
    assert not any(type(d) is tuple for d in got)  # a column of dicts: no per-row pair
    for d, owner, name in zip(got, owners, names, strict=True):
        assert d is (owner._parameters if name == "w" else owner._buffers)
