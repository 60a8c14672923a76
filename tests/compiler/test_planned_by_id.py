"""``adoption.PlannedById`` answers every lookup as ``dict(zip(ids, planned))`` does, and
builds that dict only for a lookup it cannot answer from the few rows it keeps (a stamped
compile's entry columns never need it)."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph.adoption import PlannedById

_IDS = [f"n{i}" for i in range(12)]
_PLANNED: list[Any] = [(f"entry {i}", f"extra {i}") for i in _IDS]
_DERIVED = dict.fromkeys([*_IDS, "d.not_planned"])
_FEW = [0, 5, 11]
_KEYS = [*_IDS, "d.not_planned", "source.x", "", "n", "n5 "]


def _fresh() -> PlannedById:
    return PlannedById(_IDS, _PLANNED, _FEW, _DERIVED)


@pytest.mark.parametrize("key", _KEYS)
def test_each_lookup_is_the_dict_s(key: str) -> None:
    rule = dict(zip(_IDS, _PLANNED))
    for by_id in (_fresh(), _built()):
        assert by_id.get(key) == rule.get(key)
        assert by_id.get(key, "default") == rule.get(key, "default")
        assert (key in by_id) is (key in rule)
        if key in rule:
            assert by_id[key] is rule[key]
        else:
            with pytest.raises(KeyError):
                by_id[key]


def _built() -> PlannedById:
    by_id = _fresh()
    assert len(by_id) == len(_IDS)
    return by_id


def test_iteration_and_length_are_the_dict_s() -> None:
    by_id = _fresh()
    assert list(by_id) == _IDS and len(by_id) == 12
    assert list(by_id.items()) == list(zip(_IDS, _PLANNED))


def test_the_few_rows_and_non_derived_keys_build_nothing() -> None:
    by_id = _fresh()
    assert by_id.get("n5") is _PLANNED[5] and by_id.get("source.x") is None
    assert "n11" in by_id and "source.x" not in by_id
    assert by_id._all is None
    assert by_id.get("n3") is _PLANNED[3] and by_id._all is not None  # another row: built


def test_a_stamped_compile_never_builds_the_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    from derivgraph import adoption
    from derivgraph.compiler.stamp import stamping
    from derivgraph.planner import compile_plan
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    built: list[int] = []
    real = adoption.PlannedById._dict
    monkeypatch.setattr(adoption.PlannedById, "_dict",
                        lambda self: built.append(1) or real(self))
    with stamping(True):
        plan = compile_plan(scaling_model(6), [scaling_spec()])
    assert len(plan.entries.columns) == 4 and built == []
