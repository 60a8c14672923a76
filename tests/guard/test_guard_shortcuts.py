"""The watch's shortcuts hide no change: a rebuilt object checked by its template, a slot still
holding its startup tensor, the sweeps by address, and the engine's tensors let go. Each
shortcut has a canary: the same change with the shortcut's check planted away goes unseen."""

from __future__ import annotations

import weakref

import pytest
import torch

from derivgraph.guard import Change, Guard
from derivgraph.guard.watch import Template, Watch
from tests.guard.test_guard import Kernel, Layer, _startup


class Holder:
    """A plain object the engine rebuilds: one guarded tensor, one dict of plain values."""

    def __init__(self, w: torch.Tensor, cfg: dict | None = None):
        self.w = w * 2
        self.cfg = {"n": 3} if cfg is None else cfg
        self.tag = None


def _holder_guard() -> tuple[Layer, Guard]:
    layer = Layer()
    layer.holder = Holder(layer.weight)
    guard, _ = _startup(layer)
    return layer, guard


def _new(report) -> set[tuple[str, Change]]:
    return {(c.path, c.change) for c in report.recapture}


def _blind_atoms(monkeypatch) -> None:
    """Planted bug: templates forget the values that held no tensor at the snapshot."""
    build = Watch._template
    monkeypatch.setattr(Watch, "_template", lambda self, node: build(self, node)._replace(
        atoms=(), atom_types=()))


def _blind_others(monkeypatch) -> None:
    """Planted bug: templates forget the other values off every chain."""
    build = Watch._template
    monkeypatch.setattr(Watch, "_template", lambda self, node: build(self, node)._replace(
        others=()))


def test_rebuilt_object_that_gains_a_tensor_attribute_is_reported():
    layer = Layer()
    guard, _ = _startup(layer)
    layer.post_load()
    layer.kernel.extra = torch.ones(2)  # keys differ from the template: walked whole
    assert ("kernel.extra", Change.NEW) in _new(guard.restore(layer))


def _atom_now_a_list(layer: Layer) -> None:
    layer.holder = Holder(layer.weight)
    layer.holder.tag = [torch.zeros(3)]  # was None: another class now


def _tensor_in_nested_dict(layer: Layer) -> None:
    layer.holder = Holder(layer.weight, cfg={"n": 3, "t": torch.ones(2)})


@pytest.mark.parametrize(("change", "path", "plant"), [
    (_atom_now_a_list, "holder.tag[0]", _blind_atoms),
    (_tensor_in_nested_dict, "holder.cfg['t']", _blind_others)], ids=["atom", "nested"])
def test_new_tensor_in_a_rebuilt_object_is_reported_and_the_canary_misses_it(
        change, path, plant, monkeypatch):
    layer, guard = _holder_guard()
    change(layer)
    assert (path, Change.NEW) in _new(guard.restore(layer))
    plant(monkeypatch)  # canary: the template's check planted away, the same change unseen
    layer, guard = _holder_guard()
    change(layer)
    assert (path, Change.NEW) not in _new(guard.restore(layer))


def test_rebuilt_object_still_holding_its_startup_tensors_is_kept_and_storage_checked():
    layer = Layer()
    guard, kept = _startup(layer)
    same = Kernel.__new__(Kernel)
    same.__dict__.update(layer.kernel.__dict__)  # a new object, the startup tensors in it
    layer.kernel = same
    assert guard.restore(layer).restored == []
    with torch.no_grad():
        same.workspace.data = same.workspace.clone() + 1  # the slot's tensor, other storage
    report = guard.restore(layer)
    assert [(c.path, c.change) for c in report.restored] == [
        ("kernel.workspace", Change.STORAGE)]
    assert same.workspace.data_ptr() == kept["attribute"].data_ptr()


def test_dict_replaced_by_an_equal_looking_one_is_restored():
    layer = Layer()
    guard, kept = _startup(layer)
    layer.kernel.table = {k: v.clone() for k, v in layer.kernel.table.items()}  # equal values
    report = guard.restore(layer)
    assert sorted(c.path for c in report.restored) == ["kernel.table['perm']",
                                                       "kernel.table[3]"]
    assert layer.kernel.table["perm"] is kept["dict"] and layer.kernel.table[3] is kept["dict-int"]


class Lists:
    """Lists of unequal lengths made in the reverse order of their names, next to a longer
    ``__dict__``: the sweep by address visits the containers in another order than the watch's."""

    def __init__(self) -> None:
        d = [torch.ones(1), torch.ones(2)]
        c = [torch.ones(1), torch.ones(2), torch.ones(3)]
        b: list[torch.Tensor] = []
        a = [torch.ones(4)]
        self.a, self.b, self.c, self.d = a, b, c, d
        self.n1, self.n2, self.n3 = 1, 2, 3


def test_sweep_by_address_finds_every_item_of_every_list():
    holder = Lists()
    guard = Guard()
    guard.snapshot(holder)
    for name in "acd":
        items = getattr(holder, name)
        for i, startup in enumerate(list(items)):
            items[i] = startup.clone() * 5
            report = guard.restore(holder)
            assert [(c.path, c.change) for c in report.restored] == [
                (f"{name}[{i}]", Change.REBOUND)]
            assert items[i] is startup and float(startup[0]) == 5.0


def test_engine_tensors_are_let_go_by_the_restore():
    layer = Layer()
    guard, kept = _startup(layer)
    layer.kernel.workspace = layer.kernel.workspace.clone()
    engine = weakref.ref(layer.kernel.workspace)
    assert guard.restore(layer).restored
    assert layer.kernel.workspace is kept["attribute"]
    assert engine() is None  # neither the guard nor its report keeps the engine's tensor


def test_templates_are_built_for_plain_objects_only():
    layer, guard = _holder_guard()
    kinds = {type(n.obj).__name__: n.template for n in guard.watch.nodes.values()}
    assert isinstance(kinds["Holder"], Template) and kinds["Layer"] is None
    holder = kinds["Holder"]
    assert [p for _, p, _, _ in holder.edges] == [".w"]
    assert [p for _, p, _ in holder.others] == [".cfg"] and holder.atom_types == (type(None),)
