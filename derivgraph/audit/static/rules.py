"""The static audit's rules: which statements in post-load code store derived state.

Each rule is a *category*. A site is one statement that matches a rule; :mod:`.scan` decides
whether a spec declares it. In-place writes into existing storage (``x.copy_(y)``,
``x.fill_(v)``, ``x[...] = y``) and assignments to locals are not sites: they keep every address
a captured graph holds. The exception is a *fold*: an in-place write into a loaded parameter
whose value depends on the parameter itself (``p.mul_(c)``, ``p *= c``, ``p.copy_(f(p))``,
``torch.mul(p, c, out=p)``): a rerun applies it twice.

Beyond post-load code, any method with a guarded first assignment (``if self._x is None:
self._x = torch.cat(...)``) built from weights is a *lazy cache* (:func:`audit_lazy_caches`).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable

from derivgraph.audit.static.ast import (
    Draft,
    const_str,
    copy_expr,
    free_names,
    is_getattr,
    is_placeholder,
    kwarg,
    literal_chains,
    literal_strings,
    owner_attr,
    owner_base,
    returns_placeholder,
    short,
    walk_no_lambda,
)
from derivgraph.audit.static.calls import CallRules
from derivgraph.audit.static.infer import TensorInference, TensorInfo, attr_chain, call_name
from derivgraph.audit.static.scope import ModuleScope, Reached
from derivgraph.audit.static.sites import RawSite
from derivgraph.audit.static.vocab import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    SCALAR_BUILTINS,
    SCALAR_METHODS,
    Returned,
    ReturnsTensor,
    annotation_is_tensor,
    looks_like_tensor_attr,
)

__all__ = ["FunctionAudit", "audit_function", "audit_lazy_caches", "returns_tensor"]

_FOLD_METHODS = frozenset("""
mul_ div_ add_ sub_ pow_ neg_ reciprocal_ clamp_ clamp_min_ clamp_max_ exp_ log_ sqrt_ rsqrt_
abs_ addcmul_ addcdiv_ square_ sign_ mul div add sub
""".split())  # the out-of-place ones count only with out=
_FOLD_TORCH = frozenset({"mul", "div", "add", "sub", "pow", "clamp", "neg", "reciprocal"})
_LOADED_NAMES = frozenset({"weight", "bias"})
_WEIGHT_WORD = ("weight", "bias", "scale", "proj", "norm", "embed", "qkv", "w1", "w2", "w13")
_WEIGHT_FREE = re.compile(r"(?:^|_)(?:cos|sin|rotary|rope|freqs|inv_freq|positions?|token_ids|"
                          r"physical_to|global_to|logical_to|expert_ids|expert_map|ptrs?|"
                          r"ranges|flags|indices|ids)(?:_|$)")
"""Names of values that never come from weights: rotary tables, routing maps, pointer tables."""


def audit_function(reached: Reached, imports: dict[str, str],
                   returns_tensor: ReturnsTensor, scope: ModuleScope,
                   scalar_functions: frozenset[str] = frozenset(),
                   containers: frozenset[str] = frozenset(),
                   placeholders: frozenset[str] = frozenset()) -> list[RawSite]:
    """Every site in one reached function (and the functions nested in it)."""
    return FunctionAudit(reached, imports, returns_tensor, scope, scalar_functions,
                         containers, placeholders).run()


def audit_lazy_caches(scope: ModuleScope, imports: dict[str, str],
                      returns_for: Callable[[str | None], ReturnsTensor],
                      done: set[int]) -> list[RawSite]:
    """Lazy caches in methods that are not post-load code: a guarded first assignment
    (``if self._x is None: self._x = <tensor built from weights>``)."""
    out: list[RawSite] = []
    for cls, info in scope.classes.items():
        for name, func in info.methods.items():
            if id(func) in done or not _has_lazy_guard(func):
                continue
            q = f"{cls}.{name}"
            reached = Reached(func, cls, q, (q,), scope.lineage(cls))
            audit = FunctionAudit(reached, imports, returns_for(cls), scope)
            out += [s for s in audit.run() if s.category == "lazy-cache"]
    return out


def _weight_named(name: str) -> bool:
    """A name that can hold weight values: tensor-like (``w13_weight_scale``) or with a weight
    word in it, unless it names weight-free data (``cos_sin_cache``, ``expert_map``)."""
    weighty = any(w in name for w in _WEIGHT_WORD)
    if _WEIGHT_FREE.search(name) and not weighty:
        return False
    return weighty or looks_like_tensor_attr(name)


def _has_lazy_guard(func: ast.AST) -> bool:
    return any(isinstance(n, ast.If) and _guarded_chain(n.test) for n in ast.walk(func))


def _guarded_chain(test: ast.expr) -> str | None:
    """``self._x`` for ``self._x is None``, ``not hasattr(self, "_x")`` or
    ``getattr(self, "_x", None) is None`` (also as the first operand of an ``or``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return _guarded_chain(test.values[0])
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        left = test.left
        if isinstance(left, ast.Call) and is_getattr(left) and len(left.args) == 3:
            owner, name = attr_chain(left.args[0]), const_str(left.args[1])
            return f"{owner}.{name}" if owner and name else None
        chain = attr_chain(left)
        return chain if chain and "." in chain else None
    if (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Call) and isinstance(test.operand.func, ast.Name)
            and test.operand.func.id == "hasattr" and len(test.operand.args) == 2):
        owner, name = attr_chain(test.operand.args[0]), const_str(test.operand.args[1])
        return f"{owner}.{name}" if owner and name else None
    return None


_TENSOR_TYPE_NAMES = frozenset({"Tensor", "Parameter", "Buffer"})


def _not_tensor_branch(test: ast.expr) -> tuple[str, bool] | None:
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


def returns_tensor(reached: Reached, imports: dict[str, str], module_returns: ReturnsTensor,
                   scope: ModuleScope) -> bool:
    """Whether a function without a return annotation returns a tensor (by its ``return``s)."""
    audit = FunctionAudit(reached, imports, module_returns, scope)
    audit.run()
    return audit.returns_tensor


class FunctionAudit(CallRules):
    """Walks one function in order, tracking what its locals hold, and emits its sites."""

    def __init__(self, reached: Reached, imports: dict[str, str], returns_tensor: ReturnsTensor,
                 scope: ModuleScope, scalar_functions: frozenset[str] = frozenset(),
                 containers: frozenset[str] = frozenset(),
                 placeholders: frozenset[str] = frozenset()) -> None:
        self.reached = reached
        self.scope = scope
        self.scalar_functions = scalar_functions
        self.containers = containers
        self.placeholders = placeholders  # qualified helpers returning a 0-element tensor
        self.lineage = tuple(sorted(scope.lineage(reached.cls))) if reached.cls else ()
        self.guards: list[str] = []  # chains of enclosing `if <chain> is None:` guards
        self._copies: bool | None = None  # whether the function refills with copy_ (lazy)
        self.nested_defs: dict[str, ast.AST] = {}  # nested functions by name
        self.index = scope.function_index(reached.func)
        self.imports = imports
        self.module_returns_tensor = returns_tensor
        self.inf = TensorInference(imports, self._returns_tensor, scope.method_names())
        self.tensor_nested: set[str] = set()  # nested functions that return tensors
        self.returns_tensor = False  # whether a `return` of this function gives a tensor
        classes = set(reached.root_classes)
        if reached.cls:
            classes |= scope.lineage(reached.cls)
        self.classes = tuple(sorted(classes))
        self.sites: list[RawSite] = []
        self.defs: dict[str, ast.expr] = {}  # last single-target definition of each local
        self.loop_strings: dict[str, list[str]] = {}
        self.holders: dict[str, list[str]] = {}  # local -> the attributes it may be (x = layer.w)
        self.stored_locals: dict[str, str] = {}  # fresh local -> the first attribute storing it
        self.closures: dict[str, list[str]] = {}  # nested function -> captured tensor locals
        self.params: set[str] = set()
        self.shadowed: set[str] = set()  # constant parameters rebound or shadowed here
        # locals whose storage tensors were `.set_()` onto -> the indices of those sites
        self.backing: dict[str, list[int]] = {}

    # ---- driver --------------------------------------------------------------------------------

    def run(self) -> list[RawSite]:
        func = self.reached.func
        self._bind_params(func.args)
        self._block(func.body)
        self._name_set_storage()
        return self.sites

    def _name_set_storage(self) -> None:
        """A ``.set_()`` onto a local that is then stored (``self._fused = fused``) names that
        attribute as what it swaps into, so a spec declaring the fused tensor declares it."""
        for local, indices in self.backing.items():
            path = self.stored_locals.get(local)
            if path is None:
                continue
            for i in indices:
                self.sites[i] = dataclasses.replace(self.sites[i], alias_of=path)

    def _returns_tensor(self, call: ast.Call) -> Returned:
        if isinstance(call.func, ast.Name) and call.func.id in self.tensor_nested:
            return True
        return self.module_returns_tensor(call)

    def _bind_params(self, args: ast.arguments) -> None:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            self.params.add(arg.arg)
            self.inf.locals.pop(arg.arg, None)
            self.holders.pop(arg.arg, None)
            self.defs.pop(arg.arg, None)
            if annotation_is_tensor(arg.annotation):
                self.inf.locals[arg.arg] = TensorInfo(why=f"tensor argument {arg.arg}",
                                                      fresh=False, param=True)

    def _block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._nested_function(stmt)
            return
        if isinstance(stmt, ast.ClassDef):
            return
        self._calls(stmt)
        self._folds(stmt)
        if isinstance(stmt, ast.Return) and self.inf.infer(stmt.value) is not None:
            self.returns_tensor = True
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self._assign(target, stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign(stmt.target, stmt.value, stmt)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._for(stmt)
        elif isinstance(stmt, ast.If):
            live = self._decide(stmt.test)
            if live is not None:  # a guard on a parameter every caller binds to a constant
                self._block(stmt.body if live else stmt.orelse)
                return
            narrowed = _not_tensor_branch(stmt.test)
            if narrowed is not None and narrowed[0] in self.inf.locals:
                name, in_body = narrowed
                for block, not_tensor in ((stmt.body, in_body), (stmt.orelse, not in_body)):
                    if not_tensor:
                        self._block_without(block, name)
                    else:
                        self._block(block)
                return
            guarded = self._guard_targets(stmt.test)
            if guarded:
                self.guards += guarded
                self._block(stmt.body)
                del self.guards[-len(guarded):]
                self._block(stmt.orelse)
                return
        for part in ("body", "orelse", "finalbody"):
            block = getattr(stmt, part, None)
            if isinstance(block, list) and not isinstance(stmt, (ast.For, ast.AsyncFor)):
                self._block(block)
        for handler in getattr(stmt, "handlers", []) or []:
            self._block(handler.body)
        for case in getattr(stmt, "cases", []) or []:
            self._block(case.body)

    def _block_without(self, body: list[ast.stmt], name: str) -> None:
        """A branch where ``isinstance(name, torch.Tensor)`` is false: ``name`` is no tensor
        there (what the branch rebinds it to counts afterwards)."""
        saved = self.inf.locals.pop(name, None)
        self._block(body)
        if saved is not None and name not in self.inf.locals:
            self.inf.locals[name] = saved

    def _decide(self, test: ast.expr) -> bool | None:
        """The value of ``if p:``, ``if not p:`` or ``if p is None:`` for a constant parameter."""
        consts = {k: v for k, v in self.reached.consts.items() if k not in self.shadowed}
        negate = False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negate = test.operand, True
        if isinstance(test, ast.Name) and test.id in consts:
            return bool(consts[test.id]) != negate
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and test.left.id in consts and len(test.ops) == 1
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            is_none = consts[test.left.id] is None
            if isinstance(test.ops[0], ast.Is):
                return is_none != negate
            if isinstance(test.ops[0], ast.IsNot):
                return (not is_none) != negate
        return None

    def _for(self, stmt: ast.For | ast.AsyncFor) -> None:
        names = [stmt.target.id] if isinstance(stmt.target, ast.Name) else []
        strings = literal_strings(stmt.iter)
        if names and strings:
            self.loop_strings[names[0]] = strings
        chains = literal_chains(stmt.iter)
        if names and chains:
            self.holders[names[0]] = chains
        it = self.inf.infer(stmt.iter)
        if it is not None and isinstance(stmt.target, ast.Name):
            self.inf.locals[stmt.target.id] = TensorInfo(why="element of a tensor container",
                                                         fresh=it.fresh)
        self._block(stmt.body)
        self._block(stmt.orelse)
        for name in names:
            self.loop_strings.pop(name, None)
            self.holders.pop(name, None)

    def _nested_function(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.nested_defs[func.name] = func
        captured = sorted(n for n in free_names(func) if self._captures_tensor(n))
        if captured:
            self.closures[func.name] = captured
        saved = (self.inf, dict(self.defs), dict(self.holders), self.returns_tensor,
                 set(self.shadowed))
        self.returns_tensor = False
        self.inf = self.inf.fork()
        self._bind_params(func.args)
        args = func.args
        self.shadowed |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        self._block(func.body)
        if self.returns_tensor or annotation_is_tensor(func.returns):
            self.tensor_nested.add(func.name)
        self.inf, self.defs, self.holders, self.returns_tensor, self.shadowed = saved

    def _captures_tensor(self, name: str) -> bool:
        info = self.inf.locals.get(name)
        return info is not None and not info.param

    # ---- assignments ---------------------------------------------------------------------------

    def _assign(self, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._assign(t, v, stmt)
                return
            info = self.inf.infer(value)
            shape = self._returns_tensor(value) if isinstance(value, ast.Call) else False
            for i, t in enumerate(target.elts):
                part = info
                if isinstance(shape, tuple) and len(shape) == len(target.elts) and not shape[i]:
                    part = None  # the annotation says this element is not a tensor
                t = t.value if isinstance(t, ast.Starred) else t
                self._assign_unpacked(t, value, part, stmt)
            return
        if isinstance(target, ast.Name):
            self._assign_local(target.id, value)
        elif isinstance(target, ast.Attribute):
            self._store(target, value, stmt)
        elif isinstance(target, ast.Subscript):
            self._container_item(target, value, stmt)

    # ---- containers -------------------------------------------------------------------------

    def _container_item(self, target: ast.Subscript, value: ast.expr, stmt: ast.stmt) -> None:
        """``self.cache[k] = tensor``: a tensor put into a container held on an object."""
        chain = attr_chain(target.value)
        if chain is None or "." not in chain or chain.split(".")[0] in self.imports:
            return
        attr = owner_attr(chain)
        if looks_like_tensor_attr(attr) or chain in self.inf.stored or attr in _LOADED_NAMES \
                or attr == "data":
            return  # an in-place write into a tensor
        info = self.inf.infer(value)
        if info is None or info.param:
            return
        if not info.fresh and info.source and info.source.split("[")[0] == chain:
            return  # the container's own entry, re-wrapped over the same storage
        self._emit(stmt, attr, owner_base(chain), "container",
                   f"puts {'a new tensor' if info.fresh else 'a reference'} into "
                   f"`{chain}[...]` ({info.why})", value,
                   "attribute" if info.fresh else "alias")

    def _container_call(self, call: ast.Call, stmt: ast.stmt) -> None:
        """``self.tensors.append(t)`` / ``.extend`` / ``.insert``."""
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr in ("append", "extend", "insert")):
            return
        chain = attr_chain(f.value)
        if chain is None or "." not in chain or chain.split(".")[0] in self.imports:
            return
        value = call.args[-1] if call.args else None
        info = self.inf.infer(value)
        if info is None or info.param or value is None:
            return
        self._emit(stmt, owner_attr(chain), owner_base(chain), "container",
                   f"`{chain}.{f.attr}(...)` adds {'a new tensor' if info.fresh else 'a reference'}"
                   f" ({info.why})", value, "attribute" if info.fresh else "alias")

    # ---- folds -----------------------------------------------------------------------------

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
            used = _shape_free_chains(call.args[0])
            held = self.holders.get(base, [])
            if (base in used or any(h in used for h in held)) and not self._restores(
                    call.args[0], {base, *held}):
                self._fold_site(stmt, chain, f"`{short(call)}` reads its own target", call)

    def _restores(self, value: ast.expr, targets: set[str]) -> bool:
        """Whether ``value`` has the values of one of ``targets`` (so ``t.copy_(value)`` is
        idempotent): the target itself through ``contiguous``/``clone``/``detach``, a padded
        copy with the pad sliced away, or a same-file helper that returns its argument so."""
        if _restores_values(value, targets):
            return True
        helper = self._helper(value) if isinstance(value, ast.Call) else None
        if helper is None:
            return False
        index = _restored_argument(*helper)
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
            if not (attr in _LOADED_NAMES or looks_like_tensor_attr(attr)):
                continue
            self._emit(stmt, attr, owner, "fold",
                       f"{what} folds into loaded `{path}` in place: a rerun applies it twice",
                       value, "fold")
    def _assign_unpacked(self, target: ast.expr, value: ast.expr, info: TensorInfo | None,
                         stmt: ast.stmt) -> None:
        part = TensorInfo(why=f"unpacked from {info.why}", fresh=info.fresh) if info else None
        if isinstance(target, ast.Name):
            if part:
                self.inf.locals[target.id] = part
            else:
                self.inf.locals.pop(target.id, None)
            self.defs.pop(target.id, None)
        elif isinstance(target, ast.Attribute) and part:
            self._emit_store(target, value, part, stmt, unpacked=True)

    def _assign_local(self, name: str, value: ast.expr) -> None:
        self.shadowed.add(name)
        holders = self._holders_of(value)
        if holders:
            self.holders[name] = holders
        else:
            self.holders.pop(name, None)
        info = self.inf.infer(value)
        if isinstance(value, ast.Call) and is_getattr(value):
            info = info or self._getattr_info(value)
        self.stored_locals.pop(name, None)
        if info is not None:
            self.inf.locals[name] = info
            self.defs[name] = value
        elif not (isinstance(value, ast.Constant) and value.value is None):
            self.inf.locals.pop(name, None)
            self.defs.pop(name, None)

    def _holders_of(self, value: ast.expr) -> list[str]:
        """The attributes a local is bound to: ``layer.w`` or ``getattr(layer, name)``."""
        if isinstance(value, ast.Attribute) and value.attr != "data":
            chain = attr_chain(value)
            return [chain] if chain else []
        if isinstance(value, ast.Call) and is_getattr(value) and len(value.args) >= 2:
            owner = attr_chain(value.args[0])
            return [f"{owner}.{n}" for n in self._names(value.args[1])] if owner else []
        return []

    def _targets(self, chain: str) -> list[tuple[str, str]]:
        """(owner, attr) pairs a dotted receiver stands for; locals resolve to what they hold."""
        chain = chain.removesuffix(".data")
        if "." in chain:
            return [(owner_base(chain), owner_attr(chain))]
        held = self.holders.get(chain)
        if held:
            return [(owner_base(c), owner_attr(c)) for c in held]
        return [("<local>", chain)]

    def _getattr_info(self, call: ast.Call) -> TensorInfo | None:
        name = const_str(call.args[1]) if len(call.args) >= 2 else None
        owner = attr_chain(call.args[0]) if call.args else None
        if name and owner and looks_like_tensor_attr(name):
            return TensorInfo(why=f"reference to {owner}.{name}", fresh=False,
                              source=f"{owner}.{name}")
        return None

    def _store(self, target: ast.Attribute, value: ast.expr, stmt: ast.stmt) -> None:
        owner = attr_chain(target.value)
        if owner is None or owner.split(".")[0] in self.imports:
            return
        if target.attr == "data":
            if _dtype_view_of(value, owner, self.imports):
                return  # x.data = x.data.view(torch.<dtype>): the same storage, reinterpreted
            for base, attr in self._targets(owner):
                self._emit(stmt, attr, base, "data-rebind",
                           f"`{owner}.data` is rebound to {short(value)}", value, "parameter")
            return
        self._classify_store(target, owner, target.attr, value, stmt)

    def _classify_store(self, target: ast.expr | None, owner: str, attr: str, value: ast.expr,
                        stmt: ast.stmt) -> None:
        if isinstance(value, ast.Constant):
            return
        scalar = self._scalar_reason(value)
        if scalar:
            if f"{owner}.{attr}" in self.guards:  # a host scalar taken once, on first use
                self._emit(stmt, attr, owner, "lazy-cache",
                           f"built once behind `if {owner}.{attr} is None`: {scalar}", value,
                           "scalar")
                return
            self._emit(stmt, attr, owner, "host-scalar", scalar, value, "scalar")
            return
        captured = self._captured_reason(value)
        if captured:
            self._emit(stmt, attr, owner, "captured-tensor", captured, value, "attribute")
            return
        info = self.inf.infer(value)
        if info is None and isinstance(value, ast.Call) and is_getattr(value):
            info = self._getattr_info(value)
        if info is None and isinstance(value, (ast.Dict, ast.DictComp)):
            info = self._dict_info(value)
        if info is None and isinstance(value, ast.Call):
            info = self._dataclass_info(value)
        if info is None:
            return
        self._emit_store(target, value, info, stmt, owner=owner, attr=attr)

    def _dict_info(self, value: ast.Dict | ast.DictComp) -> TensorInfo | None:
        if isinstance(value, ast.DictComp):
            scope = self.inf.fork()
            for gen in value.generators:
                if scope.infer(gen.iter) and isinstance(gen.target, ast.Name):
                    scope.locals[gen.target.id] = TensorInfo(why="element", fresh=False)
            inner = scope.infer(value.value)
            infos = [inner] if inner else []
        else:
            infos = [i for i in (self.inf.infer(v) for v in value.values if v is not None) if i]
        if not infos:
            return None
        return TensorInfo(why=f"a container of tensors ({short(value, 40)})",
                          fresh=any(i.fresh for i in infos))

    def _dataclass_info(self, call: ast.Call) -> TensorInfo | None:
        """A dataclass of the tree with tensor fields, built from tensors."""
        name = call.func.attr if isinstance(call.func, ast.Attribute) else (
            call.func.id if isinstance(call.func, ast.Name) else None)
        qualified = call_name(call.func, self.imports)
        local = self.scope.functions.get(name or "") if isinstance(call.func, ast.Name) else None
        returns = set(re.findall(r"\w+", ast.unparse(local.returns))) \
            if local is not None and local.returns is not None else set()
        if name not in self.containers and qualified not in self.containers and \
                not returns & self.containers:
            return None
        infos = [i for i in (self.inf.infer(a) for a in [*call.args,
                                                          *(k.value for k in call.keywords)])
                 if i and not i.param]
        if not infos:
            return None
        return TensorInfo(why=f"a container of tensors ({name}(...))",
                          fresh=any(i.fresh for i in infos))

    def _emit_store(self, target: ast.expr | None, value: ast.expr, info: TensorInfo,
                    stmt: ast.stmt, unpacked: bool = False, owner: str | None = None,
                    attr: str | None = None) -> None:
        if owner is None and isinstance(target, ast.Attribute):
            owner = attr_chain(target.value)
        if owner is None or attr is None and not isinstance(target, ast.Attribute):
            return
        attr = attr or target.attr  # type: ignore[union-attr]
        path = f"{owner}.{attr}"
        self.inf.stored.add(path)
        if info.param:
            return  # a tensor handed in by the caller: the caller's allocation is the site
        if not info.fresh and info.why.startswith("a container") and info.source is None:
            self._emit(stmt, attr, owner, "container", f"stores {info.why} (references)", value,
                       "alias")
            return
        if not info.fresh:
            source = info.source or self._source_of(value)
            if source is None or source == path:
                return
            if owner_base(source) == owner:
                # a second name for a tensor the object holds (or just stored): the object
                # keeps or rebuilds both together, and the first store is the site
                return
            self._emit(stmt, attr, owner, "alias", f"stores a reference to `{source}`", value,
                       "alias", alias_of=source)
            return
        if isinstance(value, ast.Name) and value.id in self.stored_locals:
            first = self.stored_locals[value.id]
            self._emit(stmt, attr, owner, "alias",
                       f"the same tensor object as `{first}` (both hold local {value.id})", value,
                       "alias", alias_of=first)
            return
        if isinstance(value, ast.Name):
            self.stored_locals[value.id] = path
        backs_kept = isinstance(value, ast.Name) and value.id in self.backing
        kind = "parameter" if info.parameter else ("view" if info.view else "attribute")
        what = "a new Parameter" if info.parameter else ("a view" if info.view else "a new tensor")
        why = f"stores {what}: {info.why}"
        if unpacked:
            why += f", unpacked into {path}"
        if info.parameter:
            why += "; replaces the registered Parameter object (and drops its weight_loader)"
        category = "tensor-attr"
        if path in self.guards:
            if self._copies is None:
                self._copies = _calls_copy(self.reached.func)
            if self._copies:
                return  # built once, then refilled with copy_ (the keep-the-object pattern)
            if not self._from_weights(value):
                return  # a lazily made workspace or constant: no weight values to go stale
            category = "lazy-cache"
            why = f"built once behind `if {path} is None`: {why}"
        elif _is_container(value) or info.why.startswith(("a container", "a list")):
            category = "container"
        if backs_kept:
            why += " (tensors kept by the layer were `.set_()` into it: it shares their storage)"
        self._emit(stmt, attr, owner, category, why, value, kind,
                   view_of_kept=(info.view and info.of_kept) or backs_kept)

    def _source_of(self, value: ast.expr) -> str | None:
        if isinstance(value, ast.Name):
            info = self.inf.locals.get(value.id)
            return info.source if info else None
        return attr_chain(value)

    # ---- value shapes --------------------------------------------------------------------------

    def _scalar_reason(self, value: ast.expr) -> str | None:
        for node in walk_no_lambda(value):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in SCALAR_METHODS and not node.args:
                return f"a Python scalar from `{short(node)}`"
            if (isinstance(f, ast.Name) and f.id in SCALAR_BUILTINS and len(node.args) == 1
                    and self.inf.infer(node.args[0]) is not None):
                return f"a Python scalar from `{short(node)}` of a tensor"
            if self._scalar_helper(node):
                return f"a Python scalar returned by `{short(node)}` from a tensor"
        return None

    def _scalar_helper(self, call: ast.Call) -> bool:
        """A helper annotated ``-> float``/``-> int`` (in this file or any scanned one) that is
        handed a tensor."""
        name = call_name(call.func, self.imports)
        local = self.scope.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        annotated = (local is not None and local.returns is not None
                     and ast.unparse(local.returns) in ("float", "int")) or (
            name is not None and name in self.scalar_functions)
        if not annotated:
            return False
        args = [*call.args, *(k.value for k in call.keywords)]
        return any(self.inf.infer(a) is not None for a in args)

    def _guard_targets(self, test: ast.expr) -> list[str]:
        """The attribute chains an ``if <x> is None:`` guard stands for (locals resolved)."""
        chain = _guarded_chain(test)
        if chain is None and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) \
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
                and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value is None:
            return list(self.holders.get(test.left.id, []))
        return [chain] if chain else []

    def _weight_free(self, value: ast.expr) -> bool:
        """Whether a value reads only names of weight-free data (rotary caches, routing maps,
        pointer tables) and nothing named like a weight, directly or through earlier locals."""
        names: list[str] = []
        nodes = [value]
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and n.id in self.defs:
                nodes.append(self.defs[n.id])
        for node in nodes:
            names += [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node)
                      if isinstance(n, (ast.Attribute, ast.Name))]
        names = [n for n in names if n not in ("self", "layer", "torch")]
        return any(_WEIGHT_FREE.search(n) for n in names) and not any(
            _weight_named(n) for n in names)

    def _from_weights(self, value: ast.expr) -> bool:
        """Whether a value reads weights: an attribute named like a weight, directly or through a
        local defined earlier."""
        if _is_allocation(value) or (_is_container(value) and all(
                _is_allocation(e) for e in getattr(value, "elts", [None]))):
            return False  # zeros/empty/full take only shapes, dtypes and devices from weights
        names: list[str] = []
        nodes = [value]
        for n in ast.walk(value):
            if isinstance(n, ast.Name) and n.id in self.defs:
                nodes.append(self.defs[n.id])
            elif isinstance(n, ast.Name) and n.id in self.nested_defs:
                nodes.append(self.nested_defs[n.id])  # a nested helper: what it reads
        for node in nodes:
            names += [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                      and (attr_chain(n) or ".").split(".")[0] not in self.imports]
        return any(looks_like_tensor_attr(a) or any(w in a for w in _WEIGHT_WORD) for a in names)

    def _captured_reason(self, value: ast.expr) -> str | None:
        if isinstance(value, ast.Call):
            name = call_name(value.func, self.imports)
            if name in ("functools.partial", "partial"):
                captured = [a for a in [*value.args[1:], *(k.value for k in value.keywords)]
                            if self.inf.infer(a) is not None]
                if captured:
                    names = ", ".join(short(a, 30) for a in captured)
                    return f"functools.partial captures tensor(s) {names}"
            return None
        if isinstance(value, ast.Lambda):
            captured = sorted(n for n in free_names(value) if self._captures_tensor(n))
            if captured:
                return f"a lambda captures tensor local(s) {', '.join(captured)}"
        if isinstance(value, ast.Name) and value.id in self.closures:
            return (f"nested function {value.id}() captures tensor local(s) "
                    f"{', '.join(self.closures[value.id])}")
        return None

    # ---- output --------------------------------------------------------------------------------

    def _emit(self, stmt: ast.stmt, attr: str, owner: str, category: str, reason: str,
              value: ast.expr, kind: str, alias_of: str | None = None,
              line: int | None = None, col: int | None = None, persistent: bool = True,
              view_of_kept: bool = False) -> None:
        self.sites.append(RawSite(
            line=line or stmt.lineno, col=col if col is not None else stmt.col_offset,
            cls=self.reached.cls, function=self.reached.qualname, attr=attr, owner=owner,
            category=category, reason=reason, expr=short(value, 120), kind=kind,
            via=self.reached.via, classes=self.classes, formula=self._formula(value, owner),
            alias_of=alias_of, lineage=self.lineage, persistent=persistent,
            empty=is_placeholder(value) or self._returns_placeholder(value),
            view_of_kept=view_of_kept,
            weight_free=self._weight_free(value), allocation=_is_allocation(value),
            constructed=_is_construction(value),
            initial_load_only=self.reached.initial_load_only,
            from_weights=self._from_weights(value),
        ))

    def _returns_placeholder(self, value: ast.expr) -> bool:
        """A call of a helper that returns a 0-element placeholder: a function of this file
        whose every ``return`` is one, or one the tree-wide index found
        (:meth:`.index.TreeIndex.placeholder_functions`)."""
        if not isinstance(value, ast.Call):
            return False
        if isinstance(value.func, ast.Name) and value.func.id in self.scope.functions:
            return returns_placeholder(self.scope.functions[value.func.id])
        name = call_name(value.func, self.imports)
        return name is not None and name in self.placeholders

    def _formula(self, value: ast.expr, owner: str) -> str | None:
        """The stored expression with locals inlined once and receivers dropped: a draft."""
        receivers = {owner.split(".")[0], "layer", "self"}
        tree = Draft(self.defs, receivers, self.imports).visit(copy_expr(value))
        text = " ".join(ast.unparse(tree).split())
        return text if len(text) <= 160 else None


_ALLOCATIONS = frozenset({"zeros", "empty", "ones", "full", "arange", "new_zeros", "new_empty",
                          "new_ones", "new_full", "zeros_like", "empty_like", "ones_like",
                          "full_like", "empty_strided", "tensor"})


def _is_construction(value: ast.expr) -> bool:
    """``torch.tensor(...)``/``torch.as_tensor(...)`` or an allocation: always new storage."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    return name in _ALLOCATIONS or name == "as_tensor"


def _is_allocation(value: ast.expr) -> bool:
    """A fresh allocation whose values do not come from any tensor argument."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    return name in _ALLOCATIONS and name != "tensor" or (
        name == "tensor" and all(isinstance(a, ast.Constant) for a in value.args))


def _shape_free_chains(node: ast.expr) -> set[str]:
    """Dotted names an expression reads as tensors (not only for .shape/.dtype/.size())."""
    skip: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in NON_TENSOR_ATTRS:
            skip.update(id(m) for m in ast.walk(n.value))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in NON_TENSOR_METHODS):
            skip.update(id(m) for m in ast.walk(n.func.value))
    return {c.removesuffix(".data") for n in ast.walk(node) if id(n) not in skip
            and isinstance(n, (ast.Attribute, ast.Name)) and (c := attr_chain(n))}


def _is_container(value: ast.expr) -> bool:
    return isinstance(value, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.DictComp))


_SAME_VALUES = frozenset({"contiguous", "clone", "detach"})
"""Methods whose result has the receiver's values, shape and dtype."""


def _restores_values(value: ast.expr, targets: set[str]) -> bool:
    """``t``, ``t.data``, ``t.contiguous()``/``.clone()``/``.detach()`` of such, or
    ``pad(t, ...)[<slices>]`` (the pad sliced away again) for a ``t`` in ``targets``."""
    chain = attr_chain(value)
    if chain is not None:
        return chain.removesuffix(".data") in targets
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr in _SAME_VALUES and not value.args:
        return _restores_values(value.func.value, targets)
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call):
        pad = value.value
        name = pad.func.attr if isinstance(pad.func, ast.Attribute) else getattr(
            pad.func, "id", "")
        parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
        return (name == "pad" and bool(pad.args) and _restores_values(pad.args[0], targets)
                and all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant)
                                                     and p.value is ...) for p in parts))
    return False


def _restored_argument(func: ast.FunctionDef | ast.AsyncFunctionDef,
                       method: bool) -> int | None:
    """The positional argument (``self`` not counted) whose values every ``return`` of a
    helper gives back unchanged (through :func:`_restores_values`, also after rebinding the
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
        if returns and all(r.value is not None and _restores_values(r.value, {name})
                           for r in returns) and all(
                isinstance(b, ast.Assign) and len(b.targets) == 1
                and _restores_values(b.value, {name}) for b in rebinds):
            return index
    return None


def _calls_copy(func: ast.AST) -> bool:
    """Whether a function refills something with ``.copy_(...)`` (keep-the-object pattern)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "copy_" for n in ast.walk(func))


def _dtype_view_of(value: ast.expr, chain: str, imports: dict[str, str]) -> bool:
    """``<chain>[.data].view(torch.<dtype>)``: a reinterpretation that keeps the storage."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr == "view" and len(value.args) == 1 and not value.keywords):
        return False
    receiver = attr_chain(value.func.value)
    dtype = call_name(value.args[0], imports) or ""
    return receiver in (chain, f"{chain}.data") and dtype.startswith("torch.")
