"""Small AST helpers shared by the static-audit rules (names, literals, closures, drafts)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from derivgraph.audit.static.infer import attr_chain
from derivgraph.audit.static.walk import own_nodes, walk

__all__ = [
    "Draft", "const_str", "copy_expr", "free_names", "is_getattr", "is_placeholder", "kwarg",
    "literal_chains", "literal_strings", "not_tensor_branch", "owner_attr", "owner_base",
    "returns_placeholder",
    "short", "walk_no_lambda",
]


class Draft(ast.NodeTransformer):
    """Inline locals (one level), drop ``self.``/``layer.`` and ``torch.`` prefixes."""

    def __init__(self, defs: dict[str, ast.expr], receivers: set[str],
                 imports: dict[str, str]) -> None:
        self.defs = defs
        self.receivers = receivers
        self.modules = {k for k, v in imports.items() if v.split(".")[0] == "torch"}
        self.inlined = False

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.defs.get(node.id)
        if value is not None and not self.inlined:
            self.inlined = True
            out = self.visit(copy_expr(value))
            self.inlined = False
            return out
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        base = node.value
        if isinstance(base, ast.Name) and (base.id in self.receivers or base.id in self.modules):
            return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)
        if isinstance(base, ast.Attribute) and attr_chain(base) in ("torch.nn.functional",
                                                                    "nn.functional"):
            return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)
        node.value = self.visit(base)  # type: ignore[assignment]
        return node


def copy_expr(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def owner_attr(chain: str) -> str:
    return chain.rsplit(".", 1)[-1]


def owner_base(chain: str) -> str:
    return chain.rsplit(".", 1)[0] if "." in chain else chain


def is_getattr(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "getattr"


def const_str(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def literal_strings(node: ast.expr) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out = [const_str(e) for e in node.elts]
        if out and all(s is not None for s in out):
            return [s for s in out if s is not None]
    return []


def literal_chains(node: ast.expr) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List)):
        out = [attr_chain(e) for e in node.elts]
        if out and all(c is not None and "." in c for c in out):
            return [c for c in out if c is not None]
    return []


def kwarg(node: ast.Call, *names: str) -> ast.expr | None:
    for kw in node.keywords:
        if kw.arg in names:
            return kw.value
    return None


def free_names(node: ast.AST) -> set[str]:
    """Names a lambda or nested function reads but does not bind itself."""
    bound: set[str] = set()
    args = getattr(node, "args", None)
    if isinstance(args, ast.arguments):
        bound |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    used: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name):
            (bound if isinstance(sub.ctx, ast.Store) else used).add(sub.id)
    return used - bound


_FUNCTIONS = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)


def walk_no_lambda(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and the nodes under it outside nested functions and lambdas (classes entered),
    depth first (:func:`.walk.own_nodes`)."""
    return own_nodes(node, _FUNCTIONS, with_root=True)


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_placeholder(value: ast.expr | None) -> bool:
    """``torch.empty(0)``, ``x.new_empty(0)``, ``torch.zeros((0,))``, ``Parameter(torch.empty(0))``:
    a 0-element placeholder."""
    call = value
    if isinstance(call, ast.Call) and isinstance(call.func, (ast.Attribute, ast.Name)) and \
            (call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id) \
            == "Parameter" and call.args:
        call = call.args[0]
    if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Attribute, ast.Name))):
        return False
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
    if name not in ("empty", "zeros", "ones", "new_empty", "new_zeros", "tensor") or not call.args:
        return False
    first = call.args[0]
    if isinstance(first, (ast.Tuple, ast.List)):
        if name == "tensor":
            return isinstance(first, ast.List) and not first.elts
        return any(isinstance(e, ast.Constant) and e.value == 0 for e in first.elts)
    return name != "tensor" and isinstance(first, ast.Constant) and first.value == 0


def returns_placeholder(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every ``return`` of a function gives a 0-element placeholder (a helper such as
    vLLM's ``marlin_make_empty``); nested functions are not looked into."""
    returns = [n for n in walk_no_lambda(func) if isinstance(n, ast.Return)]
    return bool(returns) and all(is_placeholder(r.value) for r in returns)


_TENSOR_TYPE_NAMES = frozenset({"Tensor", "Parameter", "Buffer"})


def not_tensor_branch(test: ast.expr) -> tuple[str, bool] | None:
    """``(name, True)`` when the body of ``if <test>:`` runs only if local ``name`` is not a
    tensor (``not isinstance(x, torch.Tensor)``); ``(name, False)`` when the else branch does
    (``isinstance(x, torch.Tensor)``)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if negated else test  # type: ignore[attr-defined]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "isinstance" and len(call.args) == 2
            and isinstance(call.args[0], ast.Name)):
        return None
    kinds = call.args[1].elts if isinstance(call.args[1], ast.Tuple) else [call.args[1]]
    names = [k.attr if isinstance(k, ast.Attribute) else getattr(k, "id", "") for k in kinds]
    if not names or not all(n in _TENSOR_TYPE_NAMES for n in names):
        return None
    return call.args[0].id, negated
