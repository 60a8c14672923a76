"""The dicts whose version tag moved are proven by one read of their swept items by key when each
holds its snapshot items again, in any key order (the common reload: the engine re-registers,
the plan re-points), and a
settle after a restore that stored nothing takes the tags the sweep read (no second gather).
Each rule has a canary: planted away, a change goes unseen.

Every test here runs with the tags and with them forced off (tests/guard/conftest.py): the
verdicts must be the same."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from derivgraph.dict_versions import DictVersions
from derivgraph.guard.sweep import Sweep


@pytest.fixture
def tags_on(version_tags: bool) -> None:
    if not version_tags:
        pytest.skip("no version tags in this run (or none proven on this interpreter)")


def _sweep(n: int = 8) -> tuple[Sweep, list[dict[str, Any]]]:
    dicts = [{"w": object(), "x": object()} for _ in range(n)]
    sweep = Sweep()
    for d in dicts:
        sweep.add(d, [(k, v, None) for k, v in d.items()])
    sweep.seal()
    return sweep, dicts


def _reregistered(dicts: list[dict[str, Any]]) -> None:
    """Each dict's slot stored anew and re-pointed: the tag moves, the items are the same."""
    for d in dicts:
        kept = d["w"]
        d["w"] = object()
        d["w"] = kept


def _index(sweep: Sweep, d: dict[str, Any]) -> int:
    return next(i for i, c in enumerate(sweep.live) if c is d)


def test_moved_dicts_holding_their_snapshot_items_again_are_unchanged() -> None:
    sweep, dicts = _sweep()
    _reregistered(dicts[:6])
    assert sweep.dirty() == (set(), [])


@pytest.mark.parametrize("change", ["value", "renamed", "added", "removed"])
def test_one_changed_dict_among_the_moved_ones_is_dirty(change: str) -> None:
    sweep, dicts = _sweep()
    _reregistered(dicts[:6])
    d = dicts[3]
    if change == "value":
        d["x"] = object()
    elif change == "renamed":
        d["y"] = d.pop("x")  # the same value under another key
    elif change == "added":
        d["z"] = object()
    else:
        del d["x"]
    dirty, resized = sweep.dirty()
    i = _index(sweep, d)
    if change == "added":  # grown only: the watch decides whether it may be re-based
        assert dirty == set() and resized == [i]
    else:
        assert dirty == {i}


def test_canary_columns_read_by_position_miss_the_renamed_key(monkeypatch, tags_on) -> None:
    """Planted: each accessor reads the key now at its snapshot position (not its own key). A
    key renamed with its value kept reads the same value: the change goes unseen."""
    real = Sweep._gather

    def by_position(self: Sweep, order: tuple[int, ...]) -> Any:
        gather = real(self, order)
        now = [list(d)[list(self.keys[self.acc_container[b]]).index(k)]
               for b, d, k in zip(gather.acc, gather.acc_dicts, gather.acc_keys)]
        return dataclasses.replace(gather, acc_keys=now)

    monkeypatch.setattr(Sweep, "_gather", by_position)
    sweep, dicts = _sweep()
    _reregistered(dicts[:6])
    dicts[3]["y"] = dicts[3].pop("x")
    assert sweep.dirty() == (set(), [])


def test_the_columns_name_each_changed_item_among_many_moved_dicts(tags_on) -> None:
    """Several dicts holding their snapshot keys, a few values replaced: exactly those items
    (accessor, value now) are found in the one read of every moved dict's swept items."""
    sweep, dicts = _sweep()
    _reregistered(dicts)
    new = {1: object(), 6: object()}
    dicts[1]["x"], dicts[6]["w"] = new[1], new[6]
    resized, wrong, now = sweep._compare(set(range(len(dicts))))
    assert resized == []
    found = {(sweep.acc_dicts[b] is dicts[1] and sweep.acc_keys[b] == "x")
             or (sweep.acc_dicts[b] is dicts[6] and sweep.acc_keys[b] == "w") for b in wrong}
    assert found == {True} and len(wrong) == 2 and {id(v) for v in now} == {id(v) for v in
                                                                           new.values()}
    assert sweep.dirty()[0] == {_index(sweep, dicts[1]), _index(sweep, dicts[6])}


def test_a_changed_item_no_accessor_sweeps_is_no_change(tags_on) -> None:
    """A key the sweep does not watch (a module's bookkeeping) changing is no change, as in the
    diff by accessors."""
    d = {"w": object(), "_hooks": object()}
    sweep = Sweep()
    sweep.add(d, [("w", d["w"], None)])
    sweep.seal()
    d["_hooks"] = object()
    assert sweep.dirty() == (set(), [])
    d["w"] = object()
    assert sweep.dirty()[0] == {0}


@pytest.mark.parametrize("change", ["reordered", "renamed"])
def test_keys_out_of_their_snapshot_order_are_read_by_key(change: str, tags_on) -> None:
    """The same values under reordered or renamed keys: every swept item is read by its key
    (a renamed key is a change; a reorder is not)."""
    sweep, dicts = _sweep()
    d = dicts[2]
    x = d.pop("x")
    if change == "reordered":
        w = d.pop("w")
        d["x"], d["w"] = x, w
    else:
        d["y"] = x
    dirty, resized = sweep.dirty()
    assert dirty == (set() if change == "reordered" else {_index(sweep, d)}) and resized == []


def test_canary_columns_naming_the_wrong_accessor_miss_the_change(monkeypatch, tags_on):
    """Planted: the columns' accessor indices reversed. The changed item is named as an
    unchanged one, whose template (an atom's) clears the new atom: the change goes unseen
    (correctly named, the changed item has no template: dirty)."""
    from derivgraph.guard.template import ATOM

    d = {"w": 1, "x": object()}
    sweep = Sweep()
    sweep.add(d, [("w", 1, ATOM), ("x", d["x"], None)])
    sweep.seal()
    real = Sweep._gather
    d["x"] = 5
    assert sweep.dirty()[0] == {0}
    sweep.settle()
    d["x"] = 6
    monkeypatch.setattr(Sweep, "_gather", lambda self, order: dataclasses.replace(
        real(self, order), acc=real(self, order).acc[::-1]))
    assert sweep.dirty() == (set(), [])


def test_an_unwritten_settle_keeps_a_store_made_after_the_sweep_visible() -> None:
    """``settle(unwritten=True)`` takes the tags as the sweep read them: a store that came
    after the sweep (none should, but one would not be hidden) is found by the next sweep."""
    sweep, dicts = _sweep()
    _reregistered(dicts[:2])
    assert sweep.dirty() == (set(), [])
    dicts[5]["x"] = object()  # after the sweep, before the settle
    sweep.settle(unwritten=True)
    assert sweep.dirty()[0] == {_index(sweep, dicts[5])}


def test_canary_an_unwritten_settle_that_reads_the_tags_again_hides_the_store(monkeypatch,
                                                                             tags_on) -> None:
    monkeypatch.setattr(DictVersions, "adopt", DictVersions.rebase)  # planted: a fresh read
    sweep, dicts = _sweep()
    _reregistered(dicts[:2])
    assert sweep.dirty() == (set(), [])
    dicts[5]["x"] = object()
    sweep.settle(unwritten=True)
    assert sweep.dirty() == (set(), [])  # the planted bug: the change goes unseen


def test_the_tags_name_exactly_the_mutated_dicts_and_adopt_takes_the_last_read(tags_on):
    dicts: list[dict[str, Any]] = [{"k": i} for i in range(40)]
    versions = DictVersions(dicts)
    assert versions.changed() == [] and versions.unchanged()
    dicts[3]["k"] = -1
    dicts[31]["new"] = 0
    assert versions.changed() == [3, 31] and not versions.unchanged()
    dicts[7]["k"] = -1  # after the read: adopting that read keeps it visible
    versions.adopt()
    assert versions.changed() == [7]
    versions.rebase()
    assert versions.changed() == []


def _reordered(d: dict[str, Any]) -> None:
    """The same items, the keys in another order (vLLM's reload re-registers a layer's
    ``weight`` after its ``bias``): the one pass cannot map positions to keys."""
    for k in list(d)[:-1]:
        d[k] = d.pop(k)


@pytest.mark.parametrize("change", ["none", "value", "renamed", "removed", "added"])
def test_reordered_dicts_are_read_by_key_on_every_sweep(change: str) -> None:
    """Reordered dicts leave the one pass on every sweep: the columns built for that set of
    dicts on the first one answer the later ones too, reading the values held now."""
    sweep, dicts = _sweep()
    for d in dicts[:5]:
        _reordered(d)
    for _ in range(3):  # the columns are built once, then reused
        assert sweep.dirty() == (set(), [])
        sweep.settle()
        _reregistered(dicts[:5])
    d = dicts[2]
    if change == "value":
        d["x"] = object()
    elif change == "renamed":
        d["y"] = d.pop("x")
    elif change == "removed":
        del d["w"]
    elif change == "added":
        d["z"] = object()
    dirty, resized = sweep.dirty()
    i = _index(sweep, d)
    expected = {"none": (set(), []), "added": (set(), [i])}.get(change, ({i}, []))
    assert (dirty, resized) == expected


def _grown_then_changed(sweep: Sweep, dicts: list[dict[str, Any]]) -> tuple[set[int], int]:
    from derivgraph.guard.template import ATOM

    d = dicts[1]
    _reordered(d)
    assert sweep.dirty() == (set(), [])  # the columns for {d} are built
    sweep.settle()
    d["flag"] = True
    i = _index(sweep, d)
    assert sweep.dirty() == (set(), [i])
    sweep.grow(i, [("flag", True, ATOM)])  # re-based: the watch proved the new flag harmless
    sweep.settle()
    d["flag"] = object()  # no atom: it may hold a tensor
    return sweep.dirty()[0], i


def test_a_grown_dict_is_read_with_its_new_item() -> None:
    sweep, dicts = _sweep()
    dirty, i = _grown_then_changed(sweep, dicts)
    assert dirty == {i}


def test_canary_columns_kept_past_a_grow_miss_the_grown_item(monkeypatch, tags_on) -> None:
    """Planted: :meth:`Sweep.grow` keeps the columns built before it. They lack the new item's
    accessor (and hold the old length): the changed new item goes unseen."""
    real = Sweep.grow

    def grow_keeping_columns(self: Sweep, index: int, items: Any) -> None:
        kept = dict(self.gathers)
        real(self, index, items)
        self.gathers.update(kept)

    monkeypatch.setattr(Sweep, "grow", grow_keeping_columns)
    sweep, dicts = _sweep()
    dirty, _ = _grown_then_changed(sweep, dicts)
    assert dirty == set()


def test_a_change_in_order_and_one_reordered_among_the_same_moved_dicts_are_both_found():
    """Moved dicts in their snapshot key order and reordered ones in one sweep: each part
    names its own changed item (the one pass, and the read by key)."""
    sweep, dicts = _sweep()
    for d in dicts[:5]:
        _reordered(d)
    _reregistered(dicts[5:])
    assert sweep.dirty() == (set(), [])
    sweep.settle()
    new = {1: object(), 6: object()}
    dicts[1]["x"], dicts[6]["w"] = new[1], new[6]
    dirty, resized = sweep.dirty()
    assert dirty == {_index(sweep, dicts[1]), _index(sweep, dicts[6])} and resized == []
