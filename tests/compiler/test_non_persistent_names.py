"""Whether a column's owners hold its name among their non-persistent buffer names
(``entry_columns._non_persistent``, read by ``_from_adoption`` and ``_fresh_on_modules``):
where no owner holds any such name (one sweep of the sets' truth) the answer is no; else the
per-owner rule. Asserted against the per-owner rule for owners holding none, another name,
the name (first, middle, last), and for no owners. Canaries: the sweep's answer taken where
some owner holds names; the rule skipped.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph.runtime import entry_columns
from derivgraph.runtime.entry_columns import _fresh_on_modules, _non_persistent


def _owners(n: int, held: dict[int, list[str]]) -> list[nn.Module]:
    out = []
    for i in range(n):
        module = nn.Module()
        for name in held.get(i, []):
            module.register_buffer(name, torch.zeros(1), persistent=False)
            del module._buffers[name]  # the name stays in the non-persistent set only
        out.append(module)
    return out


CASES = {
    "none": {},
    "another": {2: ["other"]},
    "first": {0: ["inv"]},
    "middle": {3: ["inv", "other"]},
    "last": {5: ["inv"]},
    "several": {1: ["x"], 4: ["inv"]},
}


def _rule(owners: list[nn.Module], name: str) -> bool:
    return any(name in o._non_persistent_buffers_set for o in owners)


@pytest.mark.parametrize("case", list(CASES))
def test_the_answer_is_the_per_owner_rule_s(case: str) -> None:
    owners = _owners(6, CASES[case])
    for name in ("inv", "other", "x", "missing"):
        assert _non_persistent(owners, name) == _rule(owners, name)
        assert _fresh_on_modules(owners, name) == (not _rule(owners, name))
    assert _non_persistent([], "inv") is False


def test_owners_without_any_such_name_are_swept_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep answers alone where no owner holds any non-persistent name: a per-owner
    membership read would raise here."""
    class Strict(set[str]):
        def __contains__(self, item: object) -> bool:
            raise AssertionError("a per-owner read")

    owners = _owners(4, {})
    for o in owners:
        o._non_persistent_buffers_set = Strict()
    assert _non_persistent(owners, "inv") is False
    owners[2]._non_persistent_buffers_set = {"inv"}
    with pytest.raises(AssertionError, match="per-owner"):
        _non_persistent(owners, "inv")  # some owner holds names: the rule reads each
    assert entry_columns._NON_PERSISTENT(owners[2]) == {"inv"}


@pytest.mark.parametrize("case", list(CASES))
def test_the_answer_with_the_last_sweep_is_the_rule_s(case: str) -> None:
    """With ``swept`` (the owners a call found holding no such name): the same answers for
    the same owners (a copy of the list), other owners, and owners holding names."""
    clean = _owners(6, {})
    owners = _owners(6, CASES[case])
    for name in ("inv", "other", "missing"):
        swept: list = []
        assert _non_persistent(clean, name, swept) is False and swept == clean
        assert _non_persistent(list(clean), name, swept) is False
        assert _non_persistent(owners, name, swept) == _rule(owners, name)
        assert _non_persistent(list(owners), name, swept) == _rule(owners, name)
        assert _non_persistent(owners[:3], name, swept) == _rule(owners[:3], name)
        assert _non_persistent(clean[:5], name, swept) is False


def test_the_same_owners_are_not_swept_again() -> None:
    """The owners of the last sweep, one by one: answered by one identity sweep (an
    attribute read would raise); other objects are swept."""
    class Unread(nn.Module):
        def __getattribute__(self, name: str) -> object:
            if name == "_non_persistent_buffers_set":
                raise AssertionError("swept again")
            return super().__getattribute__(name)

    owners = _owners(3, {})
    swept: list = []
    assert _non_persistent(owners, "inv", swept) is False
    for o in owners:
        o.__class__ = Unread
    assert _non_persistent(list(owners), "inv", swept) is False
    with pytest.raises(AssertionError, match="swept again"):
        _non_persistent(owners[:2], "inv", swept)
