"""A refill table's constant flags (prepare83): whether any target is a constant is one
membership sweep that stops at the first (``set.isdisjoint``), and each target's flag
(:attr:`RefillTable.is_constant`) is made where first read (a partly rebuilt read's
``_part``). The oracle: ``[t in constants for t in ids]`` and ``any`` of it, on a compiled
plan with its constants, with none, and with constants that are no target; and a partly
rebuilt read that takes a constant reports it (``Taken.constants``). Canaries: a planted
"any constant" answered by the set alone (not by the targets), and flags read from an
empty set, go red."""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import compile_plan
from derivgraph.runtime import engine
from derivgraph.runtime.engine import RefillTable
from derivgraph.tools.bench_scaling import scaling_spec
from tests.compiler.test_stamp_reload import _model


def _tables(constants: Any) -> tuple[Any, RefillTable, set[str]]:
    plan = compile_plan(_model({}), [scaling_spec()])
    wanted = set(plan.constant_entries) if constants is None else set(constants)
    table = RefillTable(plan.holders.table, plan._refill_targets(), wanted, set(plan._opaque()))
    return plan, table, wanted


@pytest.mark.parametrize("constants", [None, (), ("no.such.target", "nor.this")],
                         ids=["the-plans", "none", "no-target"])
def test_the_flags_are_the_membership_of_each_target(constants: Any) -> None:
    plan, table, wanted = _tables(constants)
    assert table._is_constant is None  # not made by the constructor
    flags = [t in wanted for t in table.ids]
    assert table._constants is any(flags)
    assert table.is_constant == flags and table.is_constant is table.is_constant
    if constants is None:
        assert any(flags) and not all(flags)


def test_a_partly_rebuilt_read_reports_its_constants() -> None:
    plan, table, wanted = _tables(None)
    fresh = [s.clone() for s in table.storages]
    for only in (True, False):  # the constants alone rebuilt, then the rest alone
        picked = [f if (t in wanted) is only else s
                  for t, f, s in zip(table.ids, fresh, table.storages)]
        current = list(plan.holders.table.storages)
        for i, value in zip(table.index, picked):
            current[i] = value
        taken = table.take(current)
        assert taken is not None and taken.constants is only


def test_canary_any_constant_by_the_set_alone_is_caught(monkeypatch: pytest.MonkeyPatch) \
        -> None:
    real = RefillTable.__init__

    def planted(self: RefillTable, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        self._constants = bool(self._constant_ids)  # not by the targets

    monkeypatch.setattr(RefillTable, "__init__", planted)
    with pytest.raises(AssertionError):
        test_the_flags_are_the_membership_of_each_target(("no.such.target", "nor.this"))


def test_canary_flags_from_an_empty_set_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RefillTable, "is_constant", property(
        lambda self: [False] * len(self.ids)))
    assert engine.RefillTable.is_constant is not None
    with pytest.raises(AssertionError):
        test_the_flags_are_the_membership_of_each_target(None)
