"""The static audit's rules: which statements in post-load code store derived state.

Each rule is a *category*. A site is one statement that matches a rule; :mod:`.scan` decides
whether a spec declares it. In-place writes into existing storage (``x.copy_(y)``,
``x.fill_(v)``, ``x[...] = y``) and assignments to locals are not sites: they keep every address
a captured graph holds. The exception is a *fold*: an in-place write into a loaded parameter
whose value depends on the parameter itself (``p.mul_(c)``, ``p *= c``, ``p.copy_(f(p))``,
``torch.mul(p, c, out=p)``): a rerun applies it twice.

Beyond post-load code, a guarded first assignment built from weights (``if self._x is None:
self._x = torch.cat(...)``) in any method is a *lazy cache* (:func:`audit_lazy_caches`).

:class:`FunctionAudit` walks a function in order and tracks what its locals hold; the rules
themselves are mixins by category: attribute stores and containers (:mod:`.stores`), folds
(:mod:`.folds`) and call sites such as ``register_buffer`` (:mod:`.calls`).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping

from derivgraph.audit.static.ast import (
    Draft,
    const_str,
    copy_expr,
    free_names,
    is_getattr,
    is_placeholder,
    literal_chains,
    literal_strings,
    not_tensor_branch,
    owner_attr,
    owner_base,
    returns_placeholder,
    short,
)
from derivgraph.audit.static.calls import CallRules
from derivgraph.audit.static.folds import FoldRules
from derivgraph.audit.static.forwarded import forward_reason, forwarded_stores
from derivgraph.audit.static.handoff import HandoffRules
from derivgraph.audit.static.infer import TensorInference, TensorInfo, attr_chain, call_name
from derivgraph.audit.static.load_roots import (
    allocation_line,
    copied_from_module,
    derives_from_module,
    filled_local_source,
    local_definitions,
)
from derivgraph.audit.static.property_chains import lineage_chains
from derivgraph.audit.static.scope import FuncNode, ModuleScope, Reached
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.audit.static.stores import StoreRules
from derivgraph.audit.static.values import is_allocation, is_construction
from derivgraph.audit.static.vocab import (
    Returned,
    ReturnsTensor,
    annotation_holds_tensors,
    annotation_is_tensor,
    looks_like_tensor_attr,
)
from derivgraph.audit.static.walk import walk
from derivgraph.spec.kinds import TensorKind

__all__ = ["FunctionAudit", "audit_function", "audit_lazy_caches", "nested_first", "returns_tensor"]


def audit_function(reached: Reached, imports: dict[str, str],
                   returns_tensor: ReturnsTensor, scope: ModuleScope,
                   scalar_functions: frozenset[str] = frozenset(),
                   containers: frozenset[str] = frozenset(),
                   placeholders: frozenset[str] = frozenset(),
                   property_chains: Mapping[str, str] | None = None) -> list[RawSite]:
    """Every site in one reached function (and the functions nested in it).
    ``property_chains``: ``"Class.prop" -> "obj.field"`` (``TreeIndex.property_chains``)."""
    return FunctionAudit(reached, imports, returns_tensor, scope, scalar_functions,
                         containers, placeholders, property_chains).run()


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
            out += [s for s in audit.run() if s.category is CategoryId.LAZY_CACHE]
    return out


def _has_lazy_guard(func: ast.AST) -> bool:
    return any(isinstance(n, ast.If) and (_guarded_chain(n.test) or _early_return_chain(n))
               for n in walk(func))


def _early_return_chain(stmt: ast.stmt) -> str | None:
    """``self._x`` for ``if self._x is not None: ... return`` (also as an operand of an ``or``):
    the statements after it run only while ``self._x`` is None (a lazy cache with an early
    return)."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and stmt.body
            and isinstance(stmt.body[-1], ast.Return)):
        return None
    # ``if self._x is not None or not enabled(): return``: past it, every operand was false
    tests = stmt.test.values if isinstance(stmt.test, ast.BoolOp) \
        and isinstance(stmt.test.op, ast.Or) else [stmt.test]
    for test in tests:
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.IsNot)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            chain = attr_chain(test.left)
            if chain and "." in chain:
                return chain
    return None


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


def returns_tensor(reached: Reached, imports: dict[str, str], module_returns: ReturnsTensor,
                   scope: ModuleScope) -> bool:
    """Whether a function without a return annotation returns a tensor (by its ``return``s)."""
    audit = FunctionAudit(reached, imports, module_returns, scope)
    audit.run()
    return audit.returns_tensor


def nested_first(nested: set[str], module_returns: ReturnsTensor) -> ReturnsTensor:
    """Whether a call returns a tensor: a call of one of the function's ``nested`` functions
    known to return one (the set grows as the audit walks), else ``module_returns``.

    It holds no reference to the audit: were it a bound method of the audit handed to the
    audit's own inference, each audit would be a reference cycle holding the file's parsed
    trees, which only the cyclic collector could free (:func:`.scan.young_collections_only`
    collects after each file: freed by reference counting, they cost it nothing)."""
    def returns(call: ast.Call) -> Returned:
        if isinstance(call.func, ast.Name) and call.func.id in nested:
            return True
        return module_returns(call)
    return returns


class FunctionAudit(CallRules, FoldRules, StoreRules, HandoffRules):
    """Walks one function in order, tracking what its locals hold, and emits its sites."""

    def __init__(self, reached: Reached, imports: dict[str, str], returns_tensor: ReturnsTensor,
                 scope: ModuleScope, scalar_functions: frozenset[str] = frozenset(),
                 containers: frozenset[str] = frozenset(),
                 placeholders: frozenset[str] = frozenset(),
                 property_chains: Mapping[str, str] | None = None) -> None:
        self.reached = reached
        self.scope = scope
        self.scalar_functions = scalar_functions
        self.containers = containers
        self.placeholders = placeholders  # qualified helpers returning a 0-element tensor
        self.lineage = tuple(sorted(scope.lineage(reached.cls))) if reached.cls else ()
        self.guards: list[str] = []  # chains of enclosing `if <chain> is None:` guards
        self._load_locals: dict[str, list[ast.expr]] | None = None  # (.load_roots), lazily
        self._copies: bool | None = None  # whether the function refills with copy_ (lazy)
        self.nested_defs: dict[str, ast.AST] = {}  # nested functions by name
        self.index = scope.function_index(reached.func)
        self.imports = imports
        self.module_returns_tensor = returns_tensor
        self.tensor_nested: set[str] = set()  # nested functions that return tensors
        self._returns_tensor = nested_first(self.tensor_nested, returns_tensor)
        self.inf = TensorInference(imports, self._returns_tensor, scope.method_names(),
                                   view_helpers=scope.view_helpers())
        self.returns_tensor = False  # whether a `return` of this function gives a tensor
        classes = set(reached.root_classes)
        if reached.cls:
            classes |= scope.lineage(reached.cls)
        self.classes = tuple(sorted(classes))
        # properties of the lineage that return another object's field: prop -> "obj.field"
        self.property_chains = lineage_chains(property_chains or {}, self.lineage)
        self.sites: list[RawSite] = []
        self.defs: dict[str, ast.expr] = {}  # last single-target definition of each local
        self.history: dict[str, list[ast.expr]] = {}  # every tensor definition of each local
        self.loop_strings: dict[str, list[str]] = {}
        self.holders: dict[str, list[str]] = {}  # local -> the attributes it may be (x = layer.w)
        self.stored_locals: dict[str, str] = {}  # fresh local -> the first attribute storing it
        # locals bound to a call the audit cannot read (``packed = api.pack_weight(w)``): judged
        # where the local is stored, as the call would be (``_helper_info``)
        self.call_locals: dict[str, ast.Call] = {}
        # locals that may hold a host scalar taken from a weight (``k = layer.k_scale.item()``);
        # a constant in another branch (``k = 1.0``) does not clear it
        self.scalar_locals: dict[str, str] = {}
        self.closures: dict[str, list[str]] = {}  # nested function -> captured tensor locals
        # local containers filled with tensors read from weights (``tables[k] = f(layer.s)``)
        self.filled: dict[str, TensorInfo] = {}
        self.tensor_containers: set[str] = set()  # locals annotated ``dict[str, torch.Tensor]``
        self.copy_calls: dict[int, str] = {}  # id of a helper call returning copies -> source
        self.params: set[str] = set()
        self.shadowed: set[str] = set()  # constant parameters rebound or shadowed here
        # locals whose storage tensors were `.set_()` onto -> the indices of those sites
        self.backing: dict[str, list[int]] = {}

    # ---- driver --------------------------------------------------------------------------------

    def run(self) -> list[RawSite]:
        func = self.reached.func
        self._bind_params(func.args)
        self._start_handoffs(func.args)
        self._block(func.body)
        self._name_set_storage()
        for stmt, attr, value, inner in forwarded_stores(func, self.index.calls):
            self._emit(stmt, attr, "self", CategoryId.ALIAS,
                       forward_reason(short(value, 60), inner), value, TensorKind.ATTRIBUTE)
            self.sites[-1] = dataclasses.replace(self.sites[-1], forwards=inner)
        if self.reached.model_load_only:
            self._load_fills(func)
        return self.sites

    def _load_fills(self, func: FuncNode) -> None:
        """``self.x.copy_(<derived from a module's tensors>)`` in a model-loading step: the
        buffer ``self.x`` (allocated elsewhere in the class, reported at that store) holds a
        copy made once, which no reload refreshes (:mod:`.load_roots`)."""
        if self._load_locals is None:
            self._load_locals = local_definitions(func)
        for node in walk(func):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "copy_" and node.args):
                continue
            chain = attr_chain(node.func.value) or ""
            owner, _, attr = chain.rpartition(".")
            if owner != "self" or not attr:
                continue
            line = allocation_line(self.scope.text, attr)
            source = copied_from_module(node.args[0], self._load_locals, self.imports)
            if line is None or source is None:
                continue
            # the allocation's own store, when this step makes it, is this copy's site
            self.sites = [s for s in self.sites if (s.line, s.attr) != (line, attr)]
            self._emit(node, attr, owner, CategoryId.TENSOR_ATTR,
                       f"allocated once, filled by `{short(node, 60)}` when the model loads",
                       node.args[0], TensorKind.ATTRIBUTE, line=line, col=0, derives=source)

    def _name_set_storage(self) -> None:
        """A ``.set_()`` onto a local that is then stored (``self._fused = fused``) names that
        attribute as what it swaps into, so a spec declaring the fused tensor declares it."""
        for local, indices in self.backing.items():
            if (path := self.stored_locals.get(local)) is not None:
                for i in indices:
                    self.sites[i] = dataclasses.replace(self.sites[i], alias_of=path)

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
        pushed = 0
        for stmt in body:
            self._stmt(stmt)
            chain = _early_return_chain(stmt)
            if chain:  # the rest of the block runs only while the cache is empty
                self.guards.append(chain)
                pushed += 1
        if pushed:
            del self.guards[-pushed:]

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._nested_function(stmt)
            return
        if isinstance(stmt, ast.ClassDef):
            return
        self._calls(stmt)
        if self._lazy_update(stmt):
            return
        self._folds(stmt)
        if isinstance(stmt, ast.Return) and self.inf.infer(stmt.value) is not None:
            self.returns_tensor = True
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self._assign(target, stmt.value, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign(stmt.target, stmt.value, stmt)
            if isinstance(stmt.target, ast.Name) and annotation_holds_tensors(stmt.annotation):
                self.tensor_containers.add(stmt.target.id)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._for(stmt)
        elif isinstance(stmt, ast.If):
            live = self._decide(stmt.test)
            if live is not None:  # a guard on a parameter every caller binds to a constant
                self._block(stmt.body if live else stmt.orelse)
                return
            narrowed = not_tensor_branch(stmt.test)
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

    def _lazy_update(self, stmt: ast.stmt) -> bool:
        """``self._x *= <from weights>`` behind ``if self._x is None:`` (a weight-free start,
        ``self._x = 1.0``, then a factor from the weights): a lazy cache."""
        if not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.target, ast.Attribute):
            return False
        chain = attr_chain(stmt.target)
        if chain not in self.guards or not self._from_weights(stmt.value):
            return False
        owner = attr_chain(stmt.target.value) or ""
        self._emit(stmt, stmt.target.attr, owner, CategoryId.LAZY_CACHE,
                   f"built once behind `if {chain} is None`: a weight-free start, then "
                   f"`{short(stmt)}`", stmt.value, TensorKind.SCALAR)
        return True

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
        """A local holding a tensor, or a handle a library call made from weights (a oneDNN
        handler of ``ops.create_onednn_mm(w.t(), 32)`` keeps its own prepacked copy)."""
        info = self.inf.locals.get(name)
        if info is not None:
            return not info.param
        call = self.call_locals.get(name)
        return call is not None and self._weight_handle(call) is not None

    # ---- assignments and locals --------------------------------------------------------------

    def _assign(self, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                # ``self.k, self.v = k, v`` behind a guard on ``self.k``: both are built once
                chains = [c for t in target.elts if (c := attr_chain(t)) and "." in c]
                shared = [c for c in chains if c not in self.guards] \
                    if any(c in self.guards for c in chains) else []
                self.guards += shared
                for t, v in zip(target.elts, value.elts):
                    self._assign(t, v, stmt)
                if shared:
                    del self.guards[-len(shared):]
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
        self.filled.pop(name, None)
        self.tensor_containers.discard(name)
        if not isinstance(value, ast.Constant):
            scalar = self._scalar_reason(value)
            if scalar and self._from_weights(value):
                self.scalar_locals[name] = scalar
            elif not scalar:  # another host scalar (another branch) keeps what it may hold
                self.scalar_locals.pop(name, None)
        holders = self._holders_of(value)
        if holders:
            self.holders[name] = holders
        else:
            self.holders.pop(name, None)
        info = self.inf.infer(value)
        if isinstance(value, ast.Call) and is_getattr(value):
            info = info or self._getattr_info(value)
        self.stored_locals.pop(name, None)
        if info is None and isinstance(value, ast.Call):
            self.call_locals[name] = value
        else:
            self.call_locals.pop(name, None)
        if info is not None:
            self.inf.locals[name] = info
            self.defs[name] = value
            self.history.setdefault(name, []).append(value)
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

    # ---- guards --------------------------------------------------------------------------------

    def _guard_targets(self, test: ast.expr) -> list[str]:
        """The attribute chains an ``if <x> is None:`` guard stands for (locals resolved)."""
        chain = _guarded_chain(test)
        if chain is None and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) \
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
                and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value is None:
            return list(self.holders.get(test.left.id, []))
        return [chain] if chain else []

    # ---- output --------------------------------------------------------------------------------

    def _emit(self, stmt: ast.stmt, attr: str, owner: str, category: CategoryId, reason: str,
              value: ast.expr, kind: TensorKind, alias_of: str | None = None,
              line: int | None = None, col: int | None = None, persistent: bool = True,
              view_of_kept: bool = False, refilled: bool = False,
              derives: str | None = None) -> None:
        load_derived = False
        if self.reached.model_load_only:  # the weight-derivation filter (.load_roots)
            if self._load_locals is None:
                self._load_locals = local_definitions(self.reached.func)
            source = derives or derives_from_module(value, self._load_locals, self.imports) \
                or filled_local_source(value, self.reached.func, self._load_locals, self.imports)
            load_derived, derives = source is not None, source
        self.sites.append(RawSite(
            line=line or stmt.lineno, col=col if col is not None else stmt.col_offset,
            cls=self.reached.cls, function=self.reached.qualname, attr=attr, owner=owner,
            category=category, reason=reason, expr=short(value, 120), kind=kind,
            via=self.reached.via, classes=self.classes, formula=self._formula(value, owner),
            alias_of=alias_of, lineage=self.lineage, persistent=persistent,
            empty=is_placeholder(value) or self._returns_placeholder(value),
            view_of_kept=view_of_kept, refilled=refilled,
            weight_free=self._weight_free(value), allocation=is_allocation(value),
            constructed=is_construction(value),
            initial_load_only=self.reached.initial_load_only,
            from_weights=self._from_weights(value), derives=derives,
            model_load_only=self.reached.model_load_only, load_derived=load_derived,
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
