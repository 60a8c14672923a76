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
