"""Formula parsing: ``ast`` in, a small expression tree out. Nothing is ever evaluated here.

Supported: numbers, strings, lists/tuples, names and dotted attribute paths
(``self_attn.qkv_proj.weight``), ``x.shape``/``x.dtype``, indexing and slicing, ``+ - * / // **``
and unary ``-``, calls of registered ops (``reciprocal(x)``, ``full([E], K, dtype=int64)``),
method-style calls of registered ops (``x.contiguous()``), and one-generator list
comprehensions over ``each("pattern")`` (``[w[q:q + 2*kv] for w in each("layers.*.w")]``).
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from derivgraph.errors import FormulaError, Rule
from derivgraph.limits import (
    LIMITS,
    LimitError,
    ast_depth,
    check_constant,
    check_formula_text,
    fold_constant,
)
from derivgraph.spec.kinds import OpKind
from derivgraph.spec.model import unsafe_name

__all__ = [
    "Attr", "Call", "Comp", "Const", "Expr", "FormulaError", "Index", "ListExpr", "Name",
    "Slice", "parse_formula",
]


class Expr:
    """Base of the expression tree (frozen dataclasses, hashable, comparable)."""


@dataclass(frozen=True)
class Const(Expr):
    """A literal: number, string, bool or None."""

    value: Any


@dataclass(frozen=True)
class Name(Expr):
    """A bare name: a source, param, derived tensor, dtype or comprehension variable."""

    id: str


@dataclass(frozen=True)
class Attr(Expr):
    """``base.attr``: one hop of an attribute path."""

    base: Expr
    attr: str


@dataclass(frozen=True)
class Slice(Expr):
    """``lower:upper:step`` inside an index."""

    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(frozen=True)
class Index(Expr):
    """``base[i, ...]``: integers, slices or tensors."""

    base: Expr
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class ListExpr(Expr):
    """A list or tuple literal."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Call(Expr):
    """A call of a registered op; operators and method calls become calls too."""

    op: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...] = ()


@dataclass(frozen=True)
class Comp(Expr):
    """``[element for var in each(pattern)]``."""

    element: Expr
    var: str
    pattern: str


_BINOPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Pow: "pow",
}

# Names a formula may use besides ops; resolved by the binder.
EACH = "each"


def _fail(rule: Rule, message: str, fix: str) -> FormulaError:
    return FormulaError(rule, message, fix)


class _Converter:
    def __init__(self, text: str):
        self.text = text

    def convert(self, node: ast.AST) -> Expr:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            seg = ast.get_source_segment(self.text, node) or type(node).__name__
            raise _fail(
                Rule.SYNTAX, f"unsupported syntax {seg!r} ({type(node).__name__})",
                "formulas allow arithmetic, indexing/slicing, attribute paths, op calls and "
                "[x for v in each('pattern')]; move other logic into a registered op",
            )
        return method(node)

    def _Constant(self, node: ast.Constant) -> Expr:
        if not isinstance(node.value, (int, float, str, bool, type(None))):
            raise _fail(Rule.SYNTAX, f"unsupported constant {node.value!r}",
                        "use numbers, strings, True/False or None")
        return Const(_bounded(node.value))

    def _Name(self, node: ast.Name) -> Expr:
        _check_name(node.id)
        return Name(node.id)

    def _Attribute(self, node: ast.Attribute) -> Expr:
        _check_name(node.attr)
        return Attr(self.convert(node.value), node.attr)

    def _Subscript(self, node: ast.Subscript) -> Expr:
        sl = node.slice
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        return Index(self.convert(node.value), tuple(self.convert(i) for i in items))

    def _Slice(self, node: ast.Slice) -> Expr:
        def opt(n: ast.AST | None) -> Expr | None:
            return None if n is None else self.convert(n)

        return Slice(opt(node.lower), opt(node.upper), opt(node.step))

    def _List(self, node: ast.List) -> Expr:
        return ListExpr(tuple(self.convert(e) for e in node.elts))

    _Tuple = _List

    def _BinOp(self, node: ast.BinOp) -> Expr:
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _fail(Rule.SYNTAX,
                        f"operator {type(node.op).__name__} is not supported",
                        "use + - * / // ** or an op such as maximum(a, b)")
        left, right = self.convert(node.left), self.convert(node.right)
        if isinstance(left, Const) and isinstance(right, Const):
            try:
                return Const(fold_constant(op, left.value, right.value))
            except LimitError as exc:
                raise _fail(exc.rule, exc.message, exc.fix) from None
            except ZeroDivisionError:
                raise _fail(Rule.INFERENCE, f"{_clip(self.text)} divides by zero",
                            "fix the constants") from None
            except (ArithmeticError, TypeError, ValueError):
                pass  # not a resource problem: the resolver reports it with its context
        return Call(op, (left, right))

    def _UnaryOp(self, node: ast.UnaryOp) -> Expr:
        if isinstance(node.op, ast.USub):
            inner = self.convert(node.operand)
            if isinstance(inner, Const) and isinstance(inner.value, (int, float)):
                return Const(-inner.value)
            return Call("neg", (inner,))
        if isinstance(node.op, ast.UAdd):
            return self.convert(node.operand)
        raise _fail(Rule.SYNTAX, f"unary {type(node.op).__name__} is not supported",
                    "only unary minus is allowed")

    def _Call(self, node: ast.Call) -> Expr:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise _fail(Rule.SYNTAX, "*args and **kwargs are not supported",
                        "pass arguments explicitly")
        args = [self.convert(a) for a in node.args]
        kwargs = tuple((k.arg, self.convert(k.value)) for k in node.keywords if k.arg)
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
            args.insert(0, self.convert(func.value))
        else:
            raise _fail(Rule.SYNTAX, "only named ops can be called",
                        "call a registered op by name, e.g. reciprocal(x)")
        if name == EACH:
            raise _fail(Rule.SYNTAX, "each(...) may only appear as the iterable of a "
                        "list comprehension", "write [x for x in each('layers.*.weight')]")
        _check_op(name, len(args), [k for k, _ in kwargs])
        return Call(name, tuple(args), kwargs)

    def _ListComp(self, node: ast.ListComp) -> Expr:
        if len(node.generators) != 1:
            raise _fail(Rule.SYNTAX, "only one `for` per comprehension",
                        "nest a second comprehension in an op call instead")
        gen = node.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
            raise _fail(Rule.SYNTAX, "comprehensions take one name and no `if`",
                        "write [f(x) for x in each('pattern')]")
        it = gen.iter
        ok = (
            isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == EACH
            and len(it.args) == 1 and not it.keywords and isinstance(it.args[0], ast.Constant)
            and isinstance(it.args[0].value, str)
        )
        if not ok:
            raise _fail(Rule.SYNTAX, "a comprehension must iterate over each('pattern')",
                        "write [x for x in each('layers.*.self_attn.qkv_proj.weight')]")
        _check_name(gen.target.id)
        pattern = _bounded(it.args[0].value)
        return Comp(self.convert(node.elt), gen.target.id, pattern)


def _bounded(value: Any) -> Any:
    try:
        return check_constant(value)
    except LimitError as exc:
        raise _fail(exc.rule, exc.message, exc.fix) from None


def _check_name(name: str) -> None:
    why = unsafe_name(name)
    if why is not None and name not in dtype_names():  # `float` is a dtype, not Module.float
        raise _fail(Rule.UNSAFE_NAME, f"a formula may not read {name!r}: {why}",
                    "read tensors, params and config numbers by their plain attribute paths")


# ---- op signatures (torch-free for built-in ops) ------------------------------------------------

CATALOGUE_PATH = Path(__file__).with_name("schema") / "ops.json"


@dataclass(frozen=True)
class OpSignature:
    """What a formula may pass to an op: positional arity, keywords, and its kind."""

    name: str
    min_args: int
    max_args: int | None
    keywords: tuple[str, ...]
    kind: OpKind

    def signature(self) -> str:
        """``name(N arg(s), kw=, ...)``: the call shape an arity error suggests."""
        extra = "" if self.max_args == self.min_args else ", ..."
        kws = "".join(f", {k}=" for k in self.keywords)
        return f"{self.name}({self.min_args} arg(s){extra}{kws})"


def signature_of(name: str, fn: Any, kind: OpKind | str) -> OpSignature:
    """The formula-level signature of a registered op's function."""
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    keywords = tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                     and p.name != "device")
    return OpSignature(name, sum(1 for p in positional if p.default is p.empty),
                       None if varargs else len(positional), keywords, OpKind(kind))


#: Modules whose ops are built in (registered when ``derivgraph.ops`` loads); their signatures
#: are committed in ``schema/ops.json``.
BUILTIN_OP_MODULES = frozenset(
    {"derivgraph.ops.builtin", "derivgraph.ops.collectives", "derivgraph.ops.layout",
     "derivgraph.ops.index"})


def registry_catalogue() -> dict[str, Any]:
    """The op catalogue computed from the live registry (imports torch); ``schema/ops.json``
    is this, committed."""
    from derivgraph.ops import DTYPES, OPS  # lazy: torch-free validate

    return {
        "dtypes": sorted(DTYPES),
        "ops": {n: {"min_args": s.min_args, "max_args": s.max_args,
                    "keywords": list(s.keywords), "kind": s.kind,
                    "signature": OPS[n].signature(), "out": OPS[n].out is not None,
                    "doc": OPS[n].doc}
                for n, s in sorted((n, signature_of(n, op.fn, op.kind)) for n, op in OPS.items()
                                   if getattr(op.fn, "__module__", "") in BUILTIN_OP_MODULES)},
    }


def op_catalogue() -> dict[str, Any]:
    """Every built-in op (signature text, kind, ``out=`` variant, doc) without torch: what
    ``derivgraph ops`` lists."""
    return dict(_builtin_catalogue()["ops"])


@cache
def _builtin_catalogue() -> dict[str, Any]:
    return json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))


def _registry_loaded() -> bool:
    return "derivgraph.ops.registry" in sys.modules


def op_signature(name: str) -> OpSignature | None:
    """The signature of op ``name``: from the live registry once it is loaded (torch, plugin
    ops), else from the built-in catalogue ``schema/ops.json`` (no torch)."""
    if not _registry_loaded():
        # no torch yet, so no op registered beyond the built-ins (a plugin registering ops
        # imports derivgraph.ops.registry, which loads the registry)
        entry = _builtin_catalogue()["ops"].get(name)
        if entry is None:
            return None
        return OpSignature(name, entry["min_args"], entry["max_args"],
                           tuple(entry["keywords"]), OpKind(entry["kind"]))
    from derivgraph.ops import OPS  # lazy: torch-free validate

    op = OPS.get(name)
    return None if op is None else signature_of(name, op.fn, op.kind)


def op_names() -> list[str]:
    """Names of every op a formula may call (torch-free)."""
    if _registry_loaded():
        from derivgraph.ops import OPS  # lazy: torch-free validate

        return sorted(OPS)
    return sorted(_builtin_catalogue()["ops"])


def dtype_names() -> frozenset[str]:
    """Names formulas and ``dtype:`` may use (torch-free)."""
    if _registry_loaded():
        from derivgraph.ops import DTYPES  # lazy: torch-free validate

        return frozenset(DTYPES)
    return frozenset(_builtin_catalogue()["dtypes"])


def _check_op(name: str, nargs: int, keywords: list[str]) -> None:
    op = op_signature(name)
    if op is None:
        close = sorted(n for n in op_names() if n[:3] == name[:3])
        hint = f" (similar: {', '.join(close)})" if close else ""
        raise _fail(Rule.UNKNOWN_OP, f"unknown function {name!r}{hint}",
                    "use a built-in op (`derivgraph ops` lists them) or register one with "
                    "derivgraph.register_op")
    if nargs < op.min_args or (op.max_args is not None and nargs > op.max_args):
        want = f"{op.min_args}" if op.max_args == op.min_args else f"{op.min_args}..{op.max_args}"
        raise _fail(Rule.ARITY, f"{name} takes {want} positional argument(s), got {nargs}",
                    f"call it as {_call_hint(name, op)}")
    bad = [k for k in keywords if k not in op.keywords]
    if bad:
        raise _fail(Rule.ARITY, f"{name} has no keyword(s) {', '.join(bad)}",
                    f"call it as {_call_hint(name, op)}")


def _call_hint(name: str, op: OpSignature) -> str:
    if _registry_loaded():
        from derivgraph.ops import OPS  # lazy: torch-free validate

        if name in OPS:
            return OPS[name].signature()
    return op.signature()


def parse_formula(text: str) -> Expr:
    """Parse a formula into an :class:`Expr`; raise :class:`FormulaError` on anything else.

    Length and nesting are bounded before ``ast.parse`` and the tree depth right after it
    (:mod:`derivgraph.limits`), so no input can exhaust the recursion limit or the memory.
    """
    if not isinstance(text, str):
        raise _fail(Rule.SCHEMA, f"a formula must be a string, not {type(text).__name__}",
                    "quote the formula")
    try:
        check_formula_text(text)
        tree = ast.parse(text.strip(), mode="eval")
        depth = ast_depth(tree, LIMITS.max_ast_depth)
        if depth > LIMITS.max_ast_depth:
            raise LimitError(f"the formula is more than {LIMITS.max_ast_depth} levels deep",
                             "split it into several derived tensors")
    except LimitError as exc:
        raise _fail(exc.rule, exc.message, exc.fix) from None
    except SyntaxError as exc:
        raise _fail(Rule.SYNTAX, f"invalid formula {_clip(text)}: {exc.msg}",
                    "write a Python-style expression, e.g. 'reciprocal(a1_scale)'") from None
    except (RecursionError, MemoryError):
        raise _fail(Rule.RESOURCE_LIMIT, "the formula is too deeply nested to parse",
                    "flatten the expression") from None
    return _Converter(text).convert(tree.body)


def _clip(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
