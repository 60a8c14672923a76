"""Fold rules of the static audit: in-place writes into a loaded parameter whose value depends
on the parameter itself (``p.mul_(c)``, ``p *= c``, ``p.copy_(f(p))``, ``torch.mul(p, c,
out=p)``): a rerun applies them twice.

A mixin of :class:`.rules.FunctionAudit`, like :class:`.calls.CallRules`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from derivgraph.audit.static.ast import kwarg, short, walk_no_lambda
from derivgraph.audit.static.infer import TensorInference, attr_chain, call_name
from derivgraph.audit.static.scope import ModuleScope, Reached
from derivgraph.audit.static.sites import CategoryId
from derivgraph.audit.static.values import LOADED_NAMES, shape_free_chains
from derivgraph.audit.static.vocab import looks_like_tensor_attr
from derivgraph.spec.kinds import TensorKind

__all__ = ["FoldRules", "restored_argument", "restores_values"]

_FOLD_METHODS = frozenset("""
mul_ div_ add_ sub_ pow_ neg_ reciprocal_ clamp_ clamp_min_ clamp_max_ exp_ log_ sqrt_ rsqrt_
abs_ addcmul_ addcdiv_ square_ sign_ mul div add sub
""".split())  # the out-of-place ones count only with out=
_FOLD_TORCH = frozenset({"mul", "div", "add", "sub", "pow", "clamp", "neg", "reciprocal"})
_SAME_VALUES = frozenset({"contiguous", "clone", "detach"})
"""Methods whose result has the receiver's values, shape and dtype."""


class FoldRules:
    """Folds into loaded parameters, and the idempotent ``copy_`` refills that are not folds."""

    if TYPE_CHECKING:
        inf: TensorInference
        imports: dict[str, str]
        holders: dict[str, list[str]]
        scope: ModuleScope
        reached: Reached

        def _emit(self, stmt: ast.stmt, attr: str, owner: str, category: CategoryId, reason: str,
                  value: ast.expr, kind: TensorKind, alias_of: str | None = None,
                  line: int | None = None, col: int | None = None,
                  persistent: bool = True, view_of_kept: bool = False) -> None: ...

        def _targets(self, chain: str) -> list[tuple[str, str]]: ...

        def _container_call(self, call: ast.Call, stmt: ast.stmt) -> None: ...

    def _folds(self, stmt: ast.stmt) -> None:
        """In-place writes into a loaded parameter whose value depends on itself."""
        if isinstance(stmt, ast.AugAssign):
            target = stmt.target.value if isinstance(stmt.target, ast.Subscript) else stmt.target
            chain = attr_chain(target)
            if chain and not isinstance(stmt.op, (ast.BitOr, ast.BitAnd)):
                self._fold_site(stmt, chain, f"`{short(stmt)}`", stmt.value)
            return
        if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
            return
        call = stmt.value
        self._container_call(call, stmt)
        f = call.func
        out = kwarg(call, "out")
        if out is not None:
            name = call_name(f, self.imports) or ""
            first = call.args[0] if call.args else None
            if (name.startswith("torch.") and name[6:] in _FOLD_TORCH and first is not None
                    and attr_chain(first) is not None and attr_chain(first) == attr_chain(out)):
                self._fold_site(stmt, attr_chain(out) or "", f"`{short(call)}`", call)
            return
        if not isinstance(f, ast.Attribute):
            return
        chain = attr_chain(f.value)
        if chain is None:
            return
        if f.attr in _FOLD_METHODS and f.attr.endswith("_"):
            self._fold_site(stmt, chain, f"`{short(call)}`", call)
        elif f.attr == "copy_" and call.args:
            base = chain.removesuffix(".data")
            used = shape_free_chains(call.args[0])
            held = self.holders.get(base, [])
            if (base in used or any(h in used for h in held)) and not self._restores(
                    call.args[0], {base, *held}):
                self._fold_site(stmt, chain, f"`{short(call)}` reads its own target", call)

    def _restores(self, value: ast.expr, targets: set[str]) -> bool:
        """Whether ``value`` has the values of one of ``targets`` (so ``t.copy_(value)`` is
        idempotent): the target itself through ``contiguous``/``clone``/``detach``, a padded
        copy with the pad sliced away, or a same-file helper that returns its argument so."""
        if restores_values(value, targets):
            return True
        helper = self._helper(value) if isinstance(value, ast.Call) else None
        if helper is None:
            return False
        index = restored_argument(*helper)
        args = value.args  # type: ignore[attr-defined]
        return index is not None and index < len(args) and self._restores(args[index], targets)

    def _helper(self, call: ast.Call) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef,
                                                 bool] | None:
        """The same-file function or method (of the class's lineage) a call runs, and whether
        it binds ``self``."""
        f = call.func
        if isinstance(f, ast.Name) and f.id in self.scope.functions:
            return self.scope.functions[f.id], False
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id in ("self", "cls") and self.reached.cls):
            for cls in sorted(self.scope.lineage(self.reached.cls)):
                info = self.scope.classes.get(cls)
                if info is not None and f.attr in info.methods:
                    return info.methods[f.attr], True
        return None

    def _fold_site(self, stmt: ast.stmt, chain: str, what: str, value: ast.expr) -> None:
        for owner, attr in self._targets(chain):
            if owner == "<local>":
                continue  # a local's own tensor, not a loaded parameter
            path = f"{owner}.{attr}"
            if path in self.inf.stored or owner.split(".")[0] in self.imports:
                continue  # built by this code: not a loaded parameter
            if not (attr in LOADED_NAMES or looks_like_tensor_attr(attr)):
                continue
            self._emit(stmt, attr, owner, CategoryId.FOLD,
                       f"{what} folds into loaded `{path}` in place: a rerun applies it twice",
                       value, TensorKind.FOLD)


def restores_values(value: ast.expr, targets: set[str]) -> bool:
    """``t``, ``t.data``, ``t.contiguous()``/``.clone()``/``.detach()`` of such, or
    ``pad(t, ...)[<slices>]`` (the pad sliced away again) for a ``t`` in ``targets``."""
    chain = attr_chain(value)
    if chain is not None:
        return chain.removesuffix(".data") in targets
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr in _SAME_VALUES and not value.args:
        return restores_values(value.func.value, targets)
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call):
        pad = value.value
        name = pad.func.attr if isinstance(pad.func, ast.Attribute) else getattr(
            pad.func, "id", "")
        parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
        return (name == "pad" and bool(pad.args) and restores_values(pad.args[0], targets)
                and all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant)
                                                     and p.value is ...) for p in parts))
    return False


def restored_argument(func: ast.FunctionDef | ast.AsyncFunctionDef,
                       method: bool) -> int | None:
    """The positional argument (``self`` not counted) whose values every ``return`` of a
    helper gives back unchanged (through :func:`restores_values`, also after rebinding the
    parameter to such a value), or None."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if method and params:
        params = params[1:]
    returns = [n for n in walk_no_lambda(func) if isinstance(n, ast.Return)]
    for index, name in enumerate(params):
        rebinds = [n for n in walk_no_lambda(func) if isinstance(n, (ast.Assign, ast.AugAssign,
                                                                     ast.AnnAssign))
                   and any(isinstance(t, ast.Name) and t.id == name for t in (
                       n.targets if isinstance(n, ast.Assign) else [n.target]))]
        if returns and all(r.value is not None and restores_values(r.value, {name})
                           for r in returns) and all(
                isinstance(b, ast.Assign) and len(b.targets) == 1
                and restores_values(b.value, {name}) for b in rebinds):
            return index
    return None
