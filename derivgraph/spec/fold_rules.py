"""The model-free rules of a fold formula (torch-free: ``derivgraph validate`` uses them).

A fold formula reads only its own source (by the declaration's ``name``) and ``config`` values,
combined with ops that transform a tensor (never a creation op). See
:mod:`derivgraph.compiler.fold`.
"""

from __future__ import annotations

from collections.abc import Iterable

from derivgraph.errors import Rule, SpecIssue
from derivgraph.spec.expr import Call, Const, Expr, Name, dtype_names, op_signature
from derivgraph.spec.kinds import OpKind
from derivgraph.spec.model import DerivedTensor

__all__ = ["declaration_issues", "formula_problem"]


def formula_problem(expr: Expr, own: str, config: Iterable[str]) -> str | None:
    """Why ``expr`` is not a valid fold formula over ``own`` and ``config`` names, or None."""
    names = set(config)
    if isinstance(expr, Const):
        return None
    if isinstance(expr, Name):
        if expr.id == own or expr.id in names or expr.id in dtype_names():
            return None
        return (f"{expr.id!r} is neither the folded tensor {own!r} nor a `config` value "
                f"({', '.join(sorted(names)) or 'none declared'})")
    if isinstance(expr, Call):
        sig = op_signature(expr.op)
        if sig is not None and sig.kind == OpKind.CREATE:
            return f"{expr.op}(...) creates a tensor; a fold transforms its source"
        for part in (*expr.args, *(v for _, v in expr.kwargs)):
            problem = formula_problem(part, own, names)
            if problem:
                return problem
        return None
    return "a fold formula may only combine its source and config values with ops"


def declaration_issues(decl: DerivedTensor, expr: Expr, node: str) -> list[SpecIssue]:
    """Model-independent problems of a fold declaration (for ``derivgraph validate``)."""
    problem = formula_problem(expr, decl.name, decl.config)
    if problem is None:
        return []
    return [SpecIssue(Rule.FOLD_DECLARATION, f"fold formula {decl.formula!r}: {problem}",
                      f"write the fold over {decl.name!r} and `config` names",
                      decl.location, node)]
