"""``ModuleOwners`` (the owners' classes, ``__dict__`` s and registries read once for several
names: a stamped table's columns) answers, name by name, what the per-call reference of
:func:`derivgraph.paths.absent_on_modules` answers, one object asked many names included; and
adoption takes the same columns with one reading shared by a table's columns."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.paths import MODULE_REGISTRIES, ModuleOwners, _absent_on_class, absent_on_modules


def _reference(objs: Sequence[Any], part: str) -> bool:
    """The per-call rule as it read before the owners' reads were shared."""
    if not part or part.isdigit():
        return False
    classes = set(map(type, objs))
    if not all(issubclass(c, nn.Module) and _absent_on_class(c, part) for c in classes) \
            or any(o.__class__ is not type(o) for o in objs):
        return False
    dicts = [o.__dict__ for o in objs]
    if any(map(operator.contains, dicts, repeat(part))):
        return False
    return not any(any(map(operator.contains, map(registry, dicts), repeat(part)))
                   for registry in MODULE_REGISTRIES)


class Layer(nn.Module):
    kind = "class attribute"

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(2), requires_grad=False)
        self.register_buffer("stat", torch.zeros(1))
        self.inner = nn.Linear(2, 2)
        self.note = 3


class Other(Layer):
    @property
    def shown(self) -> int:
        return 1


class Disguised(Layer):
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return Other


class Plain:
    def __init__(self) -> None:
        self.scale = 1


PARTS = ["scale", "stat", "inner", "note", "kind", "shown", "missing", "inv", "prod", "0", "",
         "forward", "training"]
GROUPS = {
    "layers": lambda: [Layer() for _ in range(5)],
    "mixed classes": lambda: [Layer(), Other(), Layer()],
    "one holds it": lambda: [Layer(), Layer(), _with(Layer(), "inv")],
    "disguised": lambda: [Layer(), Disguised()],
    "not modules": lambda: [Layer(), Plain()],
    "empty": lambda: [],
    "the last holds it as a parameter": lambda: [Layer(), _held(Layer(), "_parameters", "inv")],
    "the first holds it as a buffer": lambda: [_held(Layer(), "_buffers", "inv"), Layer()],
    "one holds it as a submodule": lambda: [Layer(), _held(Layer(), "_modules", "inv"), Layer()],
    "each holds a different name": lambda: [_held(Layer(), "_buffers", "inv"),
                                            _held(Layer(), "_buffers", "prod")],
    "a key that is not a str": lambda: _odd_first(),
}


def _with(layer: Layer, name: str) -> Layer:
    setattr(layer, name, torch.ones(1))
    return layer


def _held(layer: Layer, registry: str, name: str) -> Layer:
    """``layer`` holding ``name`` in one registry (a parameter, a buffer or a submodule)."""
    if registry == "_parameters":
        layer.register_parameter(name, nn.Parameter(torch.ones(1), requires_grad=False))
    elif registry == "_buffers":
        layer.register_buffer(name, torch.ones(1))
    else:
        layer.add_module(name, nn.Identity())
    return layer


#: a ``str`` object equal to ``"inv"`` that is not the interned literal
_SPECIAL = "".join(["in", "v"])


class _Odd(str):
    """A registry key equal only to the one object :data:`_SPECIAL` (``==`` not the
    strings'): where it is kept in a union of keys, that union cannot answer for the sweep."""

    def __eq__(self, other: object) -> bool:
        return other is _SPECIAL

    __hash__ = str.__hash__


def _odd_first() -> list[Layer]:
    """The first layer's parameters hold an :class:`_Odd` key ``"inv"``, the second's the
    plain string ``"inv"`` (a union of keys keeps only the first of the two)."""
    first, second = Layer(), Layer()
    first._parameters[_Odd("inv")] = None
    second._parameters[_SPECIAL] = None
    return [first, second]


@pytest.mark.parametrize("group", list(GROUPS))
def test_shared_reads_answer_as_the_reference(group: str) -> None:
    objs = GROUPS[group]()
    owners = ModuleOwners(objs)
    for part in PARTS * 2:  # each name asked twice of the one reading
        want = _reference(objs, part)
        assert owners.absent(part) is want, part
        assert absent_on_modules(objs, part) is want, part


def _two_stacks(held: bool) -> nn.Module:
    """Two stacks of scaling layers; the second's layers hold ``inv`` already when ``held``
    (adopted one by one, never taken as an allocated column)."""
    from derivgraph.tools.bench_scaling import scaling_model

    model = scaling_model(10)
    model.others = scaling_model(10).layers
    if held:
        for layer in model.others:
            layer.inv = 1.0 / layer.scale.detach()  # the engine's value: adopted
    return model


@pytest.mark.parametrize("held", [False, True])
def test_adoption_shares_a_table_owners_reading(monkeypatch: pytest.MonkeyPatch,
                                                held: bool) -> None:
    import derivgraph.adoption_columns as adoption_columns
    from derivgraph import compile_plan
    from derivgraph.compiler.stamp import stamping
    from derivgraph.tools.bench_scaling import scaling_spec

    made: list[int] = []
    real = adoption_columns.ModuleOwners

    def counted(objs: Sequence[Any]) -> ModuleOwners:
        made.append(len(objs))
        return real(objs)

    monkeypatch.setattr(adoption_columns, "ModuleOwners", counted)
    model = _two_stacks(held)
    kept = [layer.inv for layer in model.others] if held else []
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    monkeypatch.undo()
    with stamping(False):
        plain = compile_plan(_two_stacks(held), [scaling_spec()])
    assert list(plan.entries) == list(plain.entries)
    for key, entry in plan.entries.items():
        assert entry.adopted == plain.entries[key].adopted, key
        assert entry.slot == plain.entries[key].slot, key
    if held:
        assert all(layer.inv is t for layer, t in zip(model.others, kept))
        assert all(plan.entries[f"others.{i}.inv"].adopted for i in range(10))
    # one reading per run of columns over the same owners, not one per column: each table's
    # allocated columns, then each alias column (the last reading was the other table's)
    assert made == [9, 9, 9, 9]


def test_one_table_one_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scaling workload's four columns (three allocated, one alias) over one table's
    owners: one reading, shared by allocated_rows and alias_rows."""
    import derivgraph.adoption_columns as adoption_columns
    from derivgraph import compile_plan
    from derivgraph.compiler.stamp import stamping
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    made: list[int] = []
    real = adoption_columns.ModuleOwners
    monkeypatch.setattr(adoption_columns, "ModuleOwners",
                        lambda objs: made.append(len(objs)) or real(objs))
    with stamping(True):
        plan = compile_plan(scaling_model(12), [scaling_spec()])
    assert made == [11] and len(plan.entries.columns) == 4


def test_a_name_that_is_not_a_str_is_swept() -> None:
    """A name of a ``str`` subclass (its own ``==``) is asked of every registry, not of the
    union of their keys: the union keeps the first of two equal strings only."""
    layers = [_held(Layer(), "_parameters", "inv"), Layer()]
    layers[1]._parameters[_SPECIAL] = None
    owners = ModuleOwners(layers)
    assert owners.absent(_Odd("inv")) is _reference(layers, _Odd("inv")) is False
    assert owners.absent("inv") is _reference(layers, "inv") is False


def test_plain_registries_are_asked_through_their_keys() -> None:
    """Plain modules' registries (every key a ``str``) are read once into one union of keys
    each; a registry with a key of another type has none (it is swept per name)."""
    owners = ModuleOwners([_held(Layer(), "_buffers", "inv"), Layer(), Layer()])
    assert owners.absent("missing")
    assert owners._registries == [{"inner"}, {"scale"}, {"stat", "inv"}]
    odd = ModuleOwners(_odd_first())
    assert not odd.absent("inv")
    assert [keys is None for keys in odd._registries] == [False, True]
