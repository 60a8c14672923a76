"""A moved dict's items proven by their raw entry words (:mod:`derivgraph.dict_slots`): only the
items whose words changed are read by key, and every change the item rule finds is still found.

Every test here runs with the proofs on (the ``tags`` run of tests/guard/conftest.py); the other
runs (no proofs, no tags) must give the same verdicts, which the sweep-level tests assert."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import dict_slots
from derivgraph.dict_slots import MAX_PROVES, DictSlots
from derivgraph.guard import sweep as sweep_module
from derivgraph.guard.sweep import Sweep
from derivgraph.guard.template import ATOM


@pytest.fixture
def read_by_key(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many items each read by key (the item rule) was handed, in order."""
    calls: list[int] = []
    real = sweep_module._differing

    def spy(dicts: list[Any], keys: list[Any], values: list[Any]) -> list[int]:
        calls.append(len(keys))
        return real(dicts, keys, values)

    monkeypatch.setattr(sweep_module, "_differing", spy)
    return calls


def _sweep(n: int = 6, width: int = 12) -> tuple[Sweep, list[dict[str, Any]]]:
    """``n`` dicts of ``width`` items; item ``i0`` holds an int (an atom's template)."""
    dicts = []
    sweep = Sweep()
    for _ in range(n):
        d: dict[str, Any] = {"i0": 7, **{f"o{j}": object() for j in range(1, width)}}
        dicts.append(d)
        sweep.add(d, [(k, v, ATOM if k == "i0" else None) for k, v in d.items()])
    sweep.seal()
    return sweep, dicts


def _touch(dicts: list[dict[str, Any]]) -> None:
    """Every dict's tag moved, every item as it was (the common reload)."""
    for d in dicts:
        kept = d["o1"]
        d["o1"] = object()
        d["o1"] = kept


def _index(sweep: Sweep, d: dict[str, Any]) -> int:
    return next(i for i, c in enumerate(sweep.live) if c is d)


def _proofs_on() -> None:
    if not dict_slots.AVAILABLE:
        pytest.skip("no raw-word proofs in this run (or none proven on this interpreter)")


def test_the_self_test_proves_the_layout_on_cpython_3_11() -> None:
    import sys
    assert dict_slots._available() == (sys.implementation.name == "cpython"
                                         and sys.version_info[:2] == (3, 11))


def test_a_moved_dict_holding_its_items_reads_none_by_key(version_tags, read_by_key) -> None:
    _proofs_on()
    sweep, dicts = _sweep()
    _touch(dicts)
    assert sweep.dirty() == (set(), [])
    assert read_by_key == []  # the raw words proved all 72 items: none read by key


@pytest.mark.parametrize("change", ["tensor over an int", "rebound", "deleted", "renamed",
                                    "popped and re-added under another key"])
def test_a_changed_item_is_found_and_only_it_is_read_by_key(change: str, version_tags,
                                                            read_by_key) -> None:
    """Each change is found, in the proof run and the others alike; with the proofs on, only
    the item whose words changed is read by key."""
    sweep, dicts = _sweep()
    _touch(dicts)
    assert sweep.dirty() == (set(), [])  # the proof made
    read_by_key.clear()
    d = dicts[2]
    if change == "tensor over an int":
        d["i0"] = torch.zeros(2)  # an atom's template does not clear a tensor
    elif change == "rebound":
        d["o3"] = object()
    elif change == "deleted":
        del d["o3"]
    elif change == "renamed":
        d["o99"] = d.pop("o3")
    else:  # the last entry emptied and refilled: a new key over its words, the same value
        value = d.pop("o11")
        d["zz"] = value
    _touch(dicts)
    assert sweep.dirty() == ({_index(sweep, d)}, [])
    if dict_slots.AVAILABLE:
        assert read_by_key == [1]


def test_a_new_key_is_a_resize_the_watch_decides(version_tags) -> None:
    sweep, dicts = _sweep()
    _touch(dicts)
    dicts[4]["new"] = object()
    assert sweep.dirty() == (set(), [_index(sweep, dicts[4])])


@pytest.mark.parametrize("how", ["grown", "cleared and refilled"])
def test_a_replaced_table_is_read_where_it_is_now(how: str, version_tags,
                                                  read_by_key) -> None:
    """A dict whose table was replaced (a resize, a clear and refill): its items are proven
    again where they are now; one rebound with it is still found."""
    sweep, dicts = _sweep()
    _touch(dicts)
    assert sweep.dirty() == (set(), [])
    d = dicts[1]
    if how == "grown":
        d.update({f"n{j}": j for j in range(64)})  # resized
        for j in range(64):
            del d[f"n{j}"]
    else:
        items = dict(d)
        d.clear()
        d.update(items)
    _touch(dicts)
    assert sweep.dirty() == (set(), [])
    d["o5"] = object()
    _touch(dicts)
    if how == "grown":
        d.update({f"m{j}": j for j in range(256)})  # resized again, with the rebound item
        for j in range(256):
            del d[f"m{j}"]
    read_by_key.clear()
    assert sweep.dirty()[0] == {_index(sweep, d)}
    if dict_slots.AVAILABLE:
        assert read_by_key == [1]


def test_a_table_replaced_on_every_sweep_is_read_by_key_for_good(version_tags,
                                                                 read_by_key) -> None:
    """An engine rebuilding a dict's table on every reload: after :data:`MAX_PROVES` proofs its
    items are read by key (no proof made again), and a change is still found."""
    sweep, dicts = _sweep(n=3, width=4)
    d = dicts[0]
    for _ in range(MAX_PROVES + 2):
        items = dict(d)
        d.clear()
        d.update(items)
        assert sweep.dirty() == (set(), [])
    if dict_slots.AVAILABLE:
        assert read_by_key[-1] == 4  # that dict's four items, by key
    d["o2"] = object()
    assert sweep.dirty()[0] == {_index(sweep, d)}


def test_items_the_words_cannot_prove_are_always_suspects() -> None:
    """Non-``str`` keys (a general table) and a key absent when the proof was made are left
    to the item rule every time."""
    if not dict_slots.AVAILABLE:
        pytest.skip("no raw-word proofs on this interpreter")
    general = {1: object(), "a": object()}
    plain = {"a": object(), "b": object()}
    gone = object()
    slots = DictSlots([general, general, plain, plain, plain], [1, "a", "a", "b", "c"],
                      [general[1], general["a"], plain["a"], plain["b"], gone])
    assert slots.suspects() == [0, 1, 4]
    plain["c"] = gone
    assert slots.suspects() == [0, 1, 4]  # proven only where it was when the proof was made
    plain["b"] = object()
    assert slots.suspects() == [0, 1, 3, 4]


def test_no_proof_where_the_interpreter_is_not_proven(monkeypatch) -> None:
    monkeypatch.setattr(dict_slots, "AVAILABLE", False)
    assert dict_slots.dict_slots([{"a": 1}], ["a"], [1]) is None


def test_a_reload_changing_the_same_items_again_and_then_another(version_tags,
                                                                 read_by_key) -> None:
    """The engine replaces the same item on every reload (vLLM's ``cpu_linear``): the words the
    last read found changed are the only ones changed again, and a further item changed with
    them is still found."""
    sweep, dicts = _sweep()
    for _ in range(3):
        dicts[1]["o4"] = object()
        _touch(dicts)
        assert sweep.dirty()[0] == {_index(sweep, dicts[1])}
    dicts[1]["o4"] = object()
    dicts[3]["o7"] = object()
    _touch(dicts)
    assert sweep.dirty()[0] == {_index(sweep, dicts[1]), _index(sweep, dicts[3])}
    if dict_slots.AVAILABLE:
        assert read_by_key[-4:] == [1, 1, 1, 2]


class _Lying(dict):  # type: ignore[type-arg]
    """A dict whose ``len`` is not its table's count of items."""

    def __len__(self) -> int:
        return 0


def test_the_lengths_are_read_with_the_heads() -> None:
    """Each sized dict's length (an item's dict, and one with no item proven) is checked in
    every :meth:`DictSlots.suspects`, through a table replaced and a proof given up."""
    _proofs_on()
    d = {"a": object(), "b": object()}
    empty: dict[str, Any] = {}
    slots = DictSlots([d, d], ["a", "b"], [d["a"], d["b"]], [d, empty], [2, 0])
    assert slots.suspects() == [] and not slots.resized
    d["c"] = 1
    assert slots.suspects() == [] and slots.resized
    del d["c"]
    assert slots.suspects() == [] and not slots.resized
    empty["x"] = 1
    assert slots.suspects() == [] and slots.resized
    del empty["x"]
    d.update({f"n{j}": j for j in range(64)})  # d's table replaced, d's length changed
    assert slots.suspects() == [] and slots.resized
    for j in range(64):
        del d[f"n{j}"]
    assert slots.suspects() == [] and not slots.resized


def test_a_length_checked_while_the_tables_keep_moving(monkeypatch) -> None:
    """No proof (tables replaced on every read again): the lengths are still answered."""
    _proofs_on()
    d = {"a": object()}
    slots = DictSlots([d], ["a"], [d["a"]], [d], [1])
    monkeypatch.setattr(DictSlots, "_reprove", lambda self, tables: None)
    d.update({f"n{j}": j for j in range(64)})  # the table replaced, never proven again
    assert slots.suspects() is None and slots.resized
    for j in range(64):
        del d[f"n{j}"]
    assert slots.suspects() is None and not slots.resized


def test_a_dict_overriding_len_is_sized_by_len() -> None:
    """Canary: its table's count (2) is not what ``len`` answers (0); read as words, it would
    be found resized."""
    _proofs_on()
    lying = _Lying(a=object(), b=object())
    slots = DictSlots([lying], ["a"], [lying["a"]], [lying], [0])
    assert slots.suspects() == [] and not slots.resized
    lying["c"] = 1
    assert slots.suspects() == [] and not slots.resized  # len() still 0
    slots = DictSlots([lying], ["a"], [lying["a"]], [lying], [3])
    assert slots.suspects() == [] and slots.resized


def test_resizes_found_by_the_words_are_the_sweep_s(version_tags) -> None:
    """The sweep's lengths come from the proof's read: the two dicts grown are found, the
    others (moved, at their length) are not."""
    sweep, dicts = _sweep()
    _touch(dicts)
    dicts[2]["new"] = object()
    dicts[4]["new"] = object()
    dirty, resized = sweep.dirty()
    assert dirty == set() and sorted(resized) == sorted(_index(sweep, dicts[i]) for i in (2, 4))
