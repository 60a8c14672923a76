"""DG063 spec-dropped: a spec dropped for an error that names no rule is reported under DG063.

docs/spec-language.md documents the code; nothing raised or asserted it before. The error is
planted: the bad spec's compile raises a ``DerivgraphError`` with no ``rule`` and no issues
(as a registered op's own failure could), so only probing each spec alone can blame it.
"""

from __future__ import annotations

import logging

import derivgraph.planner as planner
from derivgraph.errors import DerivgraphError, Rule
from derivgraph.isolation import compile_isolated
from tests.guard.test_isolation import Mixed, _specs


class Opaque(DerivgraphError):
    """An error with no rule of its own."""


def test_a_drop_with_no_rule_of_its_own_is_dg063(monkeypatch, caplog) -> None:
    real = planner.compile_plan

    def compile_plan(model, specs, **options):
        if any(s.name == "bad-inverse" for s in specs):
            raise Opaque("the op failed")
        return real(model, specs, **options)

    monkeypatch.setattr(planner, "compile_plan", compile_plan)
    with caplog.at_level(logging.ERROR, logger="vllm.derivgraph"):
        plan, dropped = compile_isolated(Mixed(), _specs())
    assert [(d.spec, d.rule, d.message) for d in dropped] == [
        ("bad-inverse", Rule.SPEC_DROPPED, "the op failed")]
    assert "DG063 spec-dropped" in caplog.text and "BadLayer" in caplog.text
    assert sorted(plan.declared()) == [f"layers.{i}.kernel.strides" for i in range(3)]
