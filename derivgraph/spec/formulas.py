"""What a formula shows without a model: :func:`formula_problems`.

Run by :func:`derivgraph.spec.check.check_specs` on every formula (so ``validate`` and
``compile_plan`` both apply it): each() nesting and the bytes of literal-shaped creations
(DG016), dtypes a call names and fill values the dtype cannot hold, negative arange counts and
unknown reductions (DG013), and unknown collective groups (DG040). Torch-free.
"""

from __future__ import annotations

from derivgraph.errors import LimitError, Rule
from derivgraph.limits import LIMITS, check_bytes, check_numel
from derivgraph.spec.expr import (
    Attr,
    Call,
    Comp,
    Const,
    Expr,
    Index,
    ListExpr,
    Name,
    Slice,
    op_signature,
)
from derivgraph.spec.kinds import GroupName, ReduceOp

__all__ = ["Problem", "formula_problems"]

_CREATE_OPS = ("full", "ones", "zeros")
_ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "int16": 2,
             "float16": 2, "bfloat16": 2, "int32": 4, "float32": 4, "float": 4, "int64": 8,
             "float64": 8}
_INT_RANGE = {"bool": (0, 1), "uint8": (0, 255), "int8": (-128, 127), "int16": (-2**15, 2**15 - 1),
              "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}
_DEFAULT_DTYPE = {"full": "float32", "ones": "float32", "zeros": "float32", "arange": "int64"}
_GROUPS = frozenset(g.value for g in GroupName)
_REDUCTIONS = frozenset(r.value for r in ReduceOp)

Problem = tuple[Rule, str, str]


def _arg(call: Call, name: str) -> Expr | None:
    """The argument ``name`` of a call, passed by position or keyword (None when absent)."""
    for key, value in call.kwargs:
        if key == name:
            return value
    sig = op_signature(call.op)
    if sig is not None and name in sig.keywords:
        at = sig.keywords.index(name)
        if at < len(call.args):
            return call.args[at]
    return None


def _dtype_name(call: Call, dtypes: frozenset[str]) -> tuple[str | None, Problem | None]:
    """The dtype a call names (its default when none), or the problem with it."""
    arg = _arg(call, "dtype")
    if arg is None:
        return _DEFAULT_DTYPE.get(call.op), None
    name = arg.value if isinstance(arg, Const) else arg.id if isinstance(arg, Name) else None
    if isinstance(arg, Const) and not isinstance(name, str) or \
            isinstance(name, str) and name not in dtypes and isinstance(arg, Const):
        return None, (Rule.INFERENCE, f"{call.op}(...) names the unknown dtype {name!r}",
                      f"use one of {', '.join(sorted(dtypes))}")
    return (name if name in dtypes else None), None


def _fill_problem(call: Call, dtype: str | None) -> Problem | None:
    """A constant fill value the dtype cannot hold (inf or NaN into an integer, 2.5 into bool)."""
    value = _arg(call, "value")
    if call.op != "full" or dtype not in _INT_RANGE or not isinstance(value, Const) or \
            not isinstance(value.value, (int, float)):
        return None
    number = value.value
    low, high = _INT_RANGE[dtype]
    finite = number == number and abs(number) != float("inf")
    if finite and low <= number <= high and (dtype != "bool" or number in (0, 1)):
        return None
    return (Rule.INFERENCE, f"full(...) fills {dtype} with {number!r}, which {dtype} cannot hold",
            f"fill with a value in {low}..{high}" + (" (0 or 1)" if dtype == "bool" else ""))


def _literal_numel(call: Call) -> int | None:
    """Elements of a creation op whose shape is written as literals (``full([E, K], 1.0)``)."""
    first = call.args[0] if call.args else None
    if call.op in _CREATE_OPS and isinstance(first, ListExpr) and all(
            isinstance(i, Const) and type(i.value) is int for i in first.items):
        numel = 1
        for i in first.items:
            numel *= max(i.value, 0)
        return numel
    if call.op == "arange" and isinstance(first, Const) and type(first.value) is int:
        return first.value
    return None


def _each_depth(expr: Expr) -> int:
    """How deeply each() comprehensions nest in ``expr``."""
    deepest, stack = 0, [(expr, 0)]
    while stack:
        e, depth = stack.pop()
        if isinstance(e, Comp):
            depth += 1
            deepest = max(deepest, depth)
        stack.extend((child, depth) for child in _children(e))
    return deepest


def _children(e: Expr) -> list[Expr]:
    if isinstance(e, Call):
        return [*e.args, *(v for _, v in e.kwargs)]
    if isinstance(e, (Index, Attr)):
        return [e.base, *(e.index if isinstance(e, Index) else ())]
    if isinstance(e, ListExpr):
        return list(e.items)
    if isinstance(e, Slice):
        return [p for p in (e.lower, e.upper, e.step) if p is not None]
    if isinstance(e, Comp):
        return [e.element]
    return []


def formula_problems(expr: Expr, node: str, dtypes: frozenset[str]) -> tuple[list[Problem], int]:
    """Problems a formula shows without a model, and the bytes its literal-shaped creations
    allocate: nesting of each(), bytes of literal shapes (DG016), unknown dtypes, fills the
    dtype cannot hold, negative arange counts (DG013) and unknown collective groups (DG040)."""
    problems: list[Problem] = []
    if _each_depth(expr) > LIMITS.max_each_nesting:
        problems.append((Rule.RESOURCE_LIMIT, f"each() comprehensions nest {_each_depth(expr)} "
                         f"deep (limit {LIMITS.max_each_nesting})",
                         "gather once per derived tensor; combine the results in another"))
        return problems, 0
    total, stack = 0, [expr]
    while stack:
        e = stack.pop()
        stack.extend(_children(e))
        if not isinstance(e, Call):
            continue
        dtype, problem = _dtype_name(e, dtypes)
        problem = problem or _fill_problem(e, dtype)
        if problem:
            problems.append(problem)
        reduce = _arg(e, "op") if e.op == "all_reduce" else None
        if isinstance(reduce, Const) and reduce.value not in _REDUCTIONS:
            problems.append((Rule.INFERENCE, f"unknown reduction {reduce.value!r}; use one of "
                             f"{', '.join(sorted(_REDUCTIONS))}", "name a supported reduction"))
        group = _arg(e, "group")
        if isinstance(group, Const) and group.value not in _GROUPS:
            problems.append((Rule.COLLECTIVE_GROUP, f"{e.op}(...) names the unknown group "
                             f"{group.value!r}", f"use one of {', '.join(sorted(_GROUPS))}"))
        numel = _literal_numel(e)
        if numel is None:
            continue
        if e.op == "arange" and numel < 0:
            problems.append((Rule.INFERENCE, f"arange({numel}) has a negative count",
                             "arange counts 0..n-1: give it n >= 0"))
            continue
        try:
            check_numel([numel], node)
            total += check_bytes([numel], _ITEMSIZE.get(dtype or "float32", 8), node)
        except LimitError as exc:
            problems.append((exc.rule, exc.message, exc.fix))
    return problems, total
