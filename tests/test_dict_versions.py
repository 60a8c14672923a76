"""The version-tag watch sees every mutation of a watched dict; its self-test is a real proof."""

from __future__ import annotations

import gc

import pytest
import torch

from derivgraph import dict_versions
from derivgraph.dict_versions import DictVersions, watch_dicts

needs_tags = pytest.mark.skipif(not dict_versions.AVAILABLE,
                                reason="no PEP 509 version tags on this interpreter")


@needs_tags
def test_module_dicts_report_exactly_the_mutated_one() -> None:
    layer = torch.nn.Linear(3, 2)
    watched = [layer.__dict__, layer._parameters, layer._buffers, layer._modules]
    versions = watch_dicts(watched)
    assert versions is not None and versions.changed() == [] and versions.unchanged()
    layer.weight = torch.nn.Parameter(torch.zeros(2, 3))
    assert versions.changed() == [1] and not versions.unchanged()
    versions.rebase()
    layer.register_buffer("scale", torch.ones(1))
    layer.flag = True
    assert versions.changed() == [0, 2]
    versions.rebase()
    layer.weight.data = torch.ones(2, 3)  # storage swap: not a dict mutation (swept elsewhere)
    assert versions.changed() == []


@needs_tags
def test_many_scattered_dicts_are_read_in_one_gather() -> None:
    dicts = [{"k": i} for i in range(2000)]
    gc.collect()
    versions = DictVersions(dicts[::-1])  # any order, any spread of addresses
    dicts[7]["k"] = object()
    del dicts[1500]["k"]
    assert versions.changed() == [2000 - 1 - 1500, 2000 - 1 - 7]


@needs_tags
def test_reassigning_the_same_object_is_no_change() -> None:
    value = object()
    d = {"a": value}
    versions = DictVersions([d])
    d["a"] = value
    assert versions.changed() == []


@needs_tags
def test_the_snapshot_bytes_follow_every_rebase_and_adopt() -> None:
    """The nothing-moved check compares bytes: after changed(), adopt() and rebase() a later
    mutation is still reported (and only it), and an adopted read is the snapshot."""
    a, b = {"k": 1}, {"k": 2}
    versions = DictVersions([a, b])
    a["k"] = 3
    assert versions.changed() == [0] and not versions.unchanged()
    versions.adopt()  # the read above becomes the snapshot
    assert versions.changed() == [] and versions.unchanged()
    b["k"] = 4
    assert versions.changed() == [1]
    versions.rebase()
    assert versions.unchanged() and versions.changed() == []
    a["j"] = 5
    assert versions.changed() == [0] and not versions.unchanged()


def test_canary_stale_snapshot_bytes_hide_a_mutation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a rebase that keeps stale snapshot bytes answers wrongly (here "moved" right
    after the rebase), which the test above catches."""
    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    d = {"k": 1}
    versions = DictVersions([d])
    d["k"] = 2
    real_rebase = DictVersions.rebase

    def rebase_without_bytes(self: DictVersions) -> None:
        keep = self._bytes
        real_rebase(self)
        self._bytes = keep  # the planted bug: the bytes stay those of the first snapshot

    monkeypatch.setattr(DictVersions, "rebase", rebase_without_bytes)
    versions.rebase()
    assert not versions.unchanged()  # red: nothing moved since the rebase, the check says moved
    monkeypatch.undo()
    versions.rebase()
    assert versions.unchanged()


def test_self_test_rejects_a_wrong_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: reading ``ma_used`` (offset 16) instead of the tag misses a same-size replace."""
    monkeypatch.setattr(dict_versions, "_TAG_OFFSET", 16)
    assert dict_versions._self_test() is False


def test_without_proof_callers_get_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dict_versions, "AVAILABLE", False)
    assert watch_dicts([{}]) is None


def test_empty_watch_is_unchanged() -> None:
    versions = DictVersions([])
    assert versions.changed() == [] and versions.unchanged() and len(versions) == 0


def _reload(dicts: list[dict[str, object]], which: list[int]) -> None:
    """An engine's reload: a new value stored into each of ``which``."""
    for i in which:
        dicts[i]["k"] = object()


@needs_tags
@pytest.mark.parametrize("settle", ["adopt", "rebase"])
def test_the_same_dicts_moved_again_and_then_others(settle: str) -> None:
    """An engine's reloads moving the same dicts every time, then fewer of them, more, or
    others in their place: each reload's moved dicts are reported exactly, after an adopted
    or a re-based snapshot alike (a guard for any shortcut keyed on the last reload's
    positions)."""
    dicts: list[dict[str, object]] = [{"k": i} for i in range(12)]
    versions = DictVersions(dicts)

    def check(which: list[int]) -> None:
        _reload(dicts, which)
        assert versions.changed() == which
        getattr(versions, settle)()
        assert versions.changed() == []

    for which in ([1, 4, 9], [1, 4, 9], [1, 4, 9],  # the same dicts every time
                  [1, 9],                           # one of them not moved
                  [1, 9], [1, 3, 9],                # one more
                  [1, 3, 9], [1, 3, 10],            # another in place of one
                  [1, 3, 10], [0, 1, 3, 10, 11], [], [2], [2]):
        check(which)
    _reload(dicts, [2])
    assert versions.changed() == [2]
    _reload(dicts, [5])  # not settled: both moved since the snapshot
    assert versions.changed() == [2, 5]
    assert versions.changed() == [2, 5]


@needs_tags
def test_a_moved_again_read_does_not_touch_the_snapshot() -> None:
    """The read adopted after a reload is the one made (nothing the check puts into it for
    its compare is left there), so the next reload of the same dicts is still reported."""
    dicts: list[dict[str, object]] = [{"k": i} for i in range(4)]
    versions = DictVersions(dicts)
    for _ in range(3):
        _reload(dicts, [0, 2])
        assert versions.changed() == [0, 2]
        versions.adopt()
        assert versions.unchanged() and versions.changed() == []
