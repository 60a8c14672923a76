"""Entry columns: a stamped template's allocated attribute bound for every layer at once.

On the scaling workload the compile keeps one :class:`EntryColumn` per allocated attribute of
the template (``inv``, ``prod``, ``strides``), then one :class:`AliasColumn` for the alias of
the layer's source (``scale_alias``), its slots in row order: each
column's ids, entries, owners and storages are asserted by value and identity against the
plan's entries and the model's layers, with the values computed by hand and the startup
addresses. A layer that already holds one of the names keeps that column on the generic path,
and the plan equals the plain one. Canary: a column whose owners are mis-ordered is refused
before anything is bound (the model keeps no derived attribute); with the proof planted away,
the same column binds layer 4's tensor at layer 3 (so the proof is what catches it).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from derivgraph import planner as planner_module
from derivgraph.compiler.stamp import stamping
from derivgraph.errors import SpecValidationError
from derivgraph.paths import Slot
from derivgraph.runtime import entry_columns as columns_module
from derivgraph.runtime.entry_columns import AliasColumn, EntryColumn
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp import _differences
from tests.compiler.test_stamp_reload import LAYERS, _expected, _model

_NAMES = ("inv", "prod", "strides")


def _compile_recording(monkeypatch: pytest.MonkeyPatch, model: Any = None,
                       plant: Any = None) -> tuple[Any, list[EntryColumn]]:
    """Compile (stamping on) and return the plan with the entry columns the compile made;
    ``plant(columns)`` may change them before they are used."""
    made: list[EntryColumn] = []
    build = columns_module.entry_columns

    def recording(*args: Any) -> list[EntryColumn]:
        found = build(*args)
        if plant is not None:
            plant(found)
        made.extend(found)
        return found

    monkeypatch.setattr(planner_module, "entry_columns", recording)
    with stamping(True):
        plan = compile_plan(_model() if model is None else model, [scaling_spec()])
    return plan, made


def test_one_column_per_allocated_attribute_its_slots_in_row_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, made = _compile_recording(monkeypatch)
    assert [(type(c), c.template, c.name) for c in made] == \
        [(EntryColumn, f"layers.0.{n}", n) for n in _NAMES] + \
        [(AliasColumn, "layers.0.scale_alias", "scale_alias")]
    layers, expected = plan.model.layers, _expected(plan.model)
    for column in made[:-1]:
        name = column.name
        assert column.ids == [f"layers.{i}.{name}" for i in range(1, LAYERS)]
        assert len(column) == LAYERS - 1
        for i, (node_id, entry, owner, storage) in enumerate(
                zip(column.ids, column.entries, column.owners, column.storages), start=1):
            assert entry is plan.entries[node_id] and entry.id == node_id
            assert owner is layers[i]
            assert storage is entry.storage is layers[i].__dict__[name]
            assert entry.startup_ptr == storage.data_ptr() != 0
            assert entry.startup_alias().data_ptr() == storage.data_ptr()
            assert entry.startup_alias() is not storage and not entry.adopted
            if name == "strides":
                assert torch.equal(storage, torch.full([8], 7, dtype=torch.int64))
            else:
                assert torch.equal(storage, expected[node_id])
        assert len({id(s) for s in column.storages}) == LAYERS - 1
    aliases = made[-1]
    assert aliases.ids == [f"layers.{i}.scale_alias" for i in range(1, LAYERS)]
    for i, (node_id, entry, owner, storage) in enumerate(
            zip(aliases.ids, aliases.entries, aliases.owners, aliases.storages), start=1):
        assert entry is plan.entries[node_id] and owner is layers[i]
        assert storage is entry.storage is layers[i].scale is layers[i].__dict__["scale_alias"]
        assert entry.slot is Slot.ATTRIBUTE and not entry.adopted
        assert entry.startup_ptr == layers[i].scale.data_ptr() != 0
        assert entry.startup_data is None  # an alias is not a held kind
    # the template's own entries are bound on the generic path
    assert layers[0].inv is plan.entries["layers.0.inv"].storage
    assert torch.equal(layers[0].inv, expected["layers.0.inv"])
    assert all(layers[i].scale_alias is layers[i].scale for i in range(LAYERS))


def test_the_alias_column_equals_the_plain_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every alias entry (slot, adoption, storage, startup address), the holders and the pass
    are the plain compile's."""
    with stamping(False):
        plain = compile_plan(_model(), [scaling_spec()])
    plan, made = _compile_recording(monkeypatch)
    assert isinstance(made[-1], AliasColumn)
    assert _differences(plain, plan) == []
    for node_id, entry in plain.entries.items():
        other = plan.entries[node_id]
        assert (other.slot, other.adopted, other.startup_data is None) == \
            (entry.slot, entry.adopted, entry.startup_data is None)
    layers = plan.model.layers
    assert [sorted(vars(layer)) for layer in layers] == \
        [sorted(vars(layer)) for layer in plain.model.layers]
    assert all(plan.entries[f"layers.{i}.scale_alias"].startup_ptr
               == layers[i].scale.data_ptr() for i in range(LAYERS))


def _alias_spec() -> Any:
    """The scaling spec with one more alias, of the derived ``inv`` (bound once ``inv`` has
    storage: never a column)."""
    from derivgraph import DerivedTensor

    spec = scaling_spec()
    return spec.model_copy(update={"derived": [
        *spec.derived, DerivedTensor(name="inv_alias", kind="alias", of="inv")]})


def test_an_alias_of_a_derived_tensor_is_bound_on_the_generic_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with stamping(False):
        plain = compile_plan(_model(), [_alias_spec()])
    made: list[EntryColumn] = []
    build = columns_module.entry_columns
    monkeypatch.setattr(planner_module, "entry_columns",
                        lambda *args: made.extend(build(*args)) or made)
    with stamping(True):
        plan = compile_plan(_model(), [_alias_spec()])
    assert [c.name for c in made if isinstance(c, AliasColumn)] == ["scale_alias"]
    assert all(plan.model.layers[i].inv_alias is plan.entries[f"layers.{i}.inv"].storage
               for i in range(LAYERS))
    assert _differences(plain, plan) == []


def test_a_layer_holding_the_alias_name_leaves_the_column(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Layer 4 already holds ``scale_alias`` (its own scale: adopted); the column is not kept
    and every alias entry is the plain compile's."""
    model, plain_model = _model(), _model()
    for m in (model, plain_model):
        m.layers[4].__dict__["scale_alias"] = m.layers[4].scale
    with stamping(False):
        plain = compile_plan(plain_model, [scaling_spec()])
    plan, made = _compile_recording(monkeypatch, model)
    assert not any(isinstance(c, AliasColumn) for c in made)
    assert plan.entries["layers.4.scale_alias"].adopted
    assert _differences(plain, plan) == []


def _replacing_spec() -> Any:
    """The scaling spec with ``inv`` declared ``replace: true`` (the engine may leave None)."""
    spec = scaling_spec()
    derived = [d.model_copy(update={"replace": True}) if d.name == "inv" else d
               for d in spec.derived]
    return spec.model_copy(update={"derived": derived})


def test_a_layer_holding_a_name_is_bound_on_the_generic_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Layer 4 holds ``inv = None`` (replaced, not adopted): the ``inv`` column is not kept
    (its bind is ``set_slot``'s, which pops the old value first); the plan equals the plain
    one."""
    spec = _replacing_spec()
    model, plain_model = _model(), _model()
    model.layers[4].inv = plain_model.layers[4].inv = None
    with stamping(False):
        plain = compile_plan(plain_model, [spec])
    made: list[EntryColumn] = []
    build = columns_module.entry_columns
    monkeypatch.setattr(planner_module, "entry_columns",
                        lambda *args: made.extend(build(*args)) or made)
    with stamping(True):
        plan = compile_plan(model, [spec])
    assert plan.graph.stamped == LAYERS - 1  # layer 4 is stamped; its column is not kept
    assert [(c.name, len(c)) for c in made] == [("prod", LAYERS - 1), ("strides", LAYERS - 1),
                                                ("scale_alias", LAYERS - 1)]
    assert model.layers[4].inv is plan.entries["layers.4.inv"].storage
    assert torch.equal(model.layers[4].inv, 1.0 / model.layers[4].scale.detach())
    assert _differences(plain, plan) == []


def _swap_owners(found: list[EntryColumn]) -> None:
    """A planted bug: the first column's owners of rows 2 and 3 (layers 3 and 4) swapped."""
    owners = found[0].owners
    owners[2], owners[3] = owners[3], owners[2]


def test_canary_a_column_with_misordered_slots_is_refused_before_any_bind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    with pytest.raises(SpecValidationError, match="entry column of layers.0.inv holds another "
                       r"layer's owner at layers.3.inv \(row 2\)"):
        _compile_recording(monkeypatch, model, _swap_owners)
    for layer in model.layers:  # nothing bound (and the transaction put everything back)
        assert not {"inv", "prod", "strides", "scale_alias"} & set(vars(layer))


def test_canary_without_the_proof_the_misordered_column_binds_the_wrong_layer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the owner proof removed. The mis-ordered column then binds layer 4's
    tensor at layer 3: what the proof above refuses."""
    model = _model()
    def bind_unchecked(self: EntryColumn, owners: Any, last: Any = None,
                       paths: Any = None) -> None:
        for owner, storage in zip(self.owners, self.storages):
            owner.__dict__[self.name] = storage

    monkeypatch.setattr(EntryColumn, "bind", bind_unchecked)
    plan, _ = _compile_recording(monkeypatch, model, _swap_owners)
    assert model.layers[3].inv is plan.entries["layers.4.inv"].storage
    assert model.layers[3].inv is not plan.entries["layers.3.inv"].storage
