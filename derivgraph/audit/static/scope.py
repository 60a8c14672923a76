"""Which code of a module runs after weights load: the static audit's scope rule.

**Roots** (post-load code):

* every function or method named ``process_weights_after_loading``, ``load_weights`` or
  ``post_load_weights``;
* ``__init__`` of *rebuilt-object classes*: classes whose own name or any ancestor's name
  contains one of :data:`REBUILT_CLASS_TOKENS` (``Experts``, ``Kernel``, ``MoE``,
  ``QuantConfig``, ``QuantDesc``, ``PrepareAndFinalize``, ``Prepared``), unless the lineage has
  an ``nn.Module`` (:data:`MODULE_CLASS_NAMES`) or a name ending in ``Method``, ``Impl`` or
  ``Config`` (:data:`ONCE_BUILT_SUFFIXES`). Post-load code rebuilds experts, kernels,
  prepare/finalize objects and MoE quant configs (``make_*_moe_kernel`` builds new ones on every
  reload), so their constructors run again; modules, quant methods, attention impls and
  quantization configs are built once with the model, so their constructors are out of scope;
* ``__init__`` of any class of the same file that reached post-load code instantiates by name;
* functions assigned over a post-load method (``qm.process_weights_after_loading = wrapped``);
* *staging-copy* methods (:mod:`.staging`): a method that copies a local parameter's ``.data``
  into the object's state (a CPU-offload staging copy), judged like a model-loading root.

A call whose every caller binds a parameter to the same constant records it in
:attr:`Reached.consts`, so the rules can read ``if register_buffer:`` as decided.

**Reach** (this module: within one file; calls into other files are resolved through the
tree-wide index by :mod:`.module` and audited in later rounds by :mod:`.scan`): from
each root, calls resolved *within the same file* are followed transitively:
``self.m(...)``/``cls.m(...)`` to ``m`` of the enclosing class, its same-file ancestors and
same-file subclasses (overrides), ``super().m(...)`` to same-file ancestors, ``C.m(...)`` to a
same-file class ``C``, and ``f(...)`` to a module-level function. Nested functions are read with
the function that defines them.

Class ancestry is by short name (``mk.FusedMoEExpertsModular`` -> ``FusedMoEExpertsModular``),
transitively through every class of the scanned tree, so a spec written for a base class matches
its subclasses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from derivgraph.audit.static.index import class_statements
from derivgraph.audit.static.infer import view_helpers
from derivgraph.audit.static.staging import is_staging_method, refreshed_per_step
from derivgraph.audit.static.walk import NODE_FIELDS, fields_of, walk

if TYPE_CHECKING:
    from derivgraph.audit.static.sites import Handed

__all__ = [
    "is_constructor_root",
    "is_initial_load_root",
    "MODULE_CLASS_NAMES",
    "ONCE_BUILT_SUFFIXES",
    "REBUILT_CLASS_TOKENS",
    "LAZY_GUARD_RE",
    "ROOT_ASSIGN_RE",
    "ROOT_DEF_RE",
    "ROOT_FUNCTIONS",
    "MODEL_LOAD_ROOTS",
    "POST_LOAD_ROOTS",
    "FunctionIndex",
    "ModuleScope",
    "Reached",
    "ancestors_index",
    "base_short_name",
    "is_rebuilt_lineage",
    "regex_classes",
]

POST_LOAD_ROOTS = frozenset({"process_weights_after_loading", "load_weights", "post_load_weights"})
MODEL_LOAD_ROOTS = frozenset({"load_model", "load_draft_model"})
"""Methods that load a model an object holds (a drafter, a proposer) and derive state from it
once: roots whose sites count only when their value derives from the loaded module's tensors
(:attr:`Reached.model_load_only`)."""
ROOT_FUNCTIONS = POST_LOAD_ROOTS | MODEL_LOAD_ROOTS
REBUILT_CLASS_TOKENS = ("Experts", "Kernel", "MoE", "QuantConfig", "QuantDesc",
                        "PrepareAndFinalize", "Prepared")
ONCE_BUILT_SUFFIXES = ("Method", "MethodBase", "Impl", "ImplBase", "Config")
MODULE_CLASS_NAMES = frozenset({"Module", "CustomOp", "PluggableLayer", "ModuleList",
                                "ModuleDict", "Sequential"})

ROOT_DEF_RE = re.compile(r"def\s+(?:" + "|".join(sorted(ROOT_FUNCTIONS)) + r")\b")
"""Text test for a root definition (used before parsing)."""
ROOT_ASSIGN_RE = re.compile(r"\.(?:" + "|".join(sorted(ROOT_FUNCTIONS)) + r")\s*=[^=]")
"""Text test for a function assigned over a post-load method (``qm.process_weights_after_loading
= wrapped``): the assigned function is a root."""
LAZY_GUARD_RE = re.compile(
    r"if\s+(?:self\.(\w+)\s+is\s+None|not\s+hasattr\(\s*self\s*,\s*['\"](\w+)['\"]\s*\)"
    r"|getattr\(\s*self\s*,\s*['\"](\w+)['\"]\s*,\s*None\s*\)\s+is\s+None)\s*:[ \t]*\n"
    r"(?:[^\n]*\n){0,8}?\s+self\.(?:\1|\2|\3)\s*(?::[^=\n]*)?=[^=]"
    r"|if\s+self\.(\w+)\s+is\s+not\s+None\s*:[ \t]*\n\s+return\s+self\.\4\b"
    r"|if\s*\(?\s*self\.\w+\s+is\s+not\s+None\s+or\b")
"""Text test for a lazily built cache (``if self._x is None:``, or an early
``if self._x is not None: return self._x``, or ``if self._x is not None or ...: return``, that
test first), in any method."""
_TOKEN_RE = re.compile("|".join(REBUILT_CLASS_TOKENS))

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


def base_short_name(node: ast.expr) -> str | None:
    """``mk.FusedMoEExperts`` -> ``FusedMoEExperts``; ``Generic[T]`` -> ``Generic``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def regex_classes(text: str) -> Iterator[tuple[str, list[str]]]:
    """(class name, base short names) for every class statement, without parsing the file
    (:func:`.index.class_statements`)."""
    return class_statements(text)


def ancestors_index(bases: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:
    """Class short name -> itself and every ancestor short name, transitively."""
    out: dict[str, frozenset[str]] = {}

    def walk(name: str, stack: set[str]) -> frozenset[str]:
        if name in out:
            return out[name]
        seen = {name}
        for base in bases.get(name, ()):
            if base not in stack:
                seen |= walk(base, stack | {base})
        result = frozenset(seen)
        out[name] = result
        return result

    for name in bases:
        walk(name, {name})
    return out


def is_rebuilt_lineage(lineage: frozenset[str]) -> bool:
    """Whether a class with this lineage is a rebuilt object: a token matches, and it is neither
    a module nor a once-built quant method, attention impl or quantization config."""
    if lineage & MODULE_CLASS_NAMES:
        return False
    if any(name.endswith(ONCE_BUILT_SUFFIXES) and "QuantConfig" not in name for name in lineage):
        return False
    return any(_TOKEN_RE.search(name) for name in lineage)


@dataclass(frozen=True)
class Reached:
    """A function in scope: where it is, which class holds it, and how it was reached."""

    func: FuncNode
    cls: str | None
    qualname: str
    via: tuple[str, ...]  # root first, then each call on the way
    root_classes: frozenset[str]
    consts: Mapping[str, object] = field(default_factory=dict)
    """Parameters every reaching call binds to the same constant (``register_buffer=False``),
    so ``if register_buffer:`` reads as dead code. Empty for roots."""
    initial_load_only: bool = False
    """Reached from a module's argument-less ``process_weights_after_loading(self)``: the
    model-level post-load step, which vLLM 0.33 runs at initial load only (never on a reload)."""
    model_load_only: bool = False
    """Reached only from a model-loading method of an object that holds a model
    (:data:`MODEL_LOAD_ROOTS`, a method) or from a staging-copy method (:mod:`.staging`): it
    runs once, when that model loads, never on a reload."""
    handed: tuple[Handed, ...] = ()
    """Parameters callers in post-load code bind to new tensors derived from weights
    (:class:`.sites.Handed`; seeds only)."""


def is_constructor_root(qualname: str, ancestors: Mapping[str, frozenset[str]]) -> bool:
    """Whether a root (``Reached.via[0]``) is a rebuilt-object constructor (``C.__init__``),
    which is post-load code only if post-load code builds ``C``."""
    cls, _, name = qualname.rpartition(".")
    return name == "__init__" and bool(cls) and "." not in cls and is_rebuilt_lineage(
        ancestors.get(cls, frozenset({cls})))


def is_initial_load_root(func: FuncNode, lineage: frozenset[str]) -> bool:
    """A module's ``process_weights_after_loading(self)`` with no other argument: the model-level
    hook ``model_loader/utils.py`` calls once after the initial load. Layers' hooks take the
    dtype (``layer.process_weights_after_loading(dtype)``) and quant methods' hooks the layer;
    both rerun on a layerwise reload. Likewise a module-level
    ``process_weights_after_loading(model, ...)``: the loader's driver over the whole model,
    which the initial load calls once (a reload reruns each layer's own hook instead)."""
    args = func.args
    if func.name != "process_weights_after_loading":
        return False
    if not lineage:  # the loader's module-level driver, handed the whole model
        return bool(args.args) and args.args[0].arg == "model"
    return (bool(lineage & MODULE_CLASS_NAMES)
            and len(args.args) == 1 and not args.vararg and not args.kwonlyargs)


_SITE_ATTRS = frozenset({"register_buffer", "register_parameter", "set_", "replace_parameter"})
_SITE_NAMES = frozenset({"setattr", "replace_parameter"})


@dataclass
class FunctionIndex:
    """The calls in one function, gathered by one walk.

    ``calls``: every call (for reach); ``site_calls``: calls that can be sites (``setattr``,
    ``register_*``, ``replace_parameter``, ``set_``), outside lambdas, keyed by ``id`` of the
    innermost statement that holds them, in source order.
    """

    calls: list[ast.Call]
    site_calls: dict[int, list[ast.Call]]

    @classmethod
    def of(cls, func: FuncNode) -> FunctionIndex:
        calls: list[ast.Call] = []
        sites: dict[int, list[ast.Call]] = {}
        stack: list[tuple[ast.AST, ast.AST, bool]] = [(func, func, False)]
        pop, push = stack.pop, stack.append
        stmt_type, lambda_type, call_type = ast.stmt, ast.Lambda, ast.Call
        # :func:`.walk.children` inlined (a call per node was a third of the walk)
        node_fields, node_type = NODE_FIELDS, ast.AST
        while stack:
            node, stmt, in_lambda = pop()
            if isinstance(node, stmt_type):
                stmt = node
            elif isinstance(node, lambda_type):
                in_lambda = True
            elif isinstance(node, call_type):
                calls.append(node)
                f = node.func
                if not in_lambda and ((isinstance(f, ast.Attribute) and f.attr in _SITE_ATTRS)
                                      or (isinstance(f, ast.Name) and f.id in _SITE_NAMES)):
                    sites.setdefault(id(stmt), []).append(node)
            kind = type(node)
            names = node_fields.get(kind)
            for name in names if names is not None else fields_of(kind):
                value = getattr(node, name, None)
                if type(value) is list:
                    for child in value:
                        if isinstance(child, node_type):
                            push((child, stmt, in_lambda))
                elif isinstance(value, node_type):
                    push((value, stmt, in_lambda))
        for found in sites.values():
            found.sort(key=lambda c: (c.lineno, c.col_offset))
        return cls(calls, sites)


@dataclass
class _ClassInfo:
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, FuncNode] = field(default_factory=dict)


class ModuleScope:
    """The classes and functions of one parsed module and the post-load functions in it."""

    def __init__(self, tree: ast.Module, ancestors: Mapping[str, frozenset[str]],
                 cache: dict[FuncNode, FunctionIndex] | None = None) -> None:
        self.tree = tree
        self.ancestors = ancestors
        self._index = cache if cache is not None else {}
        self._methods: frozenset[str] | None = None
        self._view_helpers: frozenset[str] | None = None
        self._assigned: list[tuple[FuncNode, str | None, str]] | None = None
        self.has_assigned_roots = True  # callers that read the text can rule them out cheaply
        self.has_staging_roots = True  # likewise (.staging.has_staging_copy)
        self.classes: dict[str, _ClassInfo] = {}
        self.functions: dict[str, FuncNode] = {}
        self.text = ""  # the file's source, for text checks of code a segmented parse left out
        # ``reached(seeds)`` for the seeds the scope was parsed for, when the parse computed it
        # (:func:`.segments.parse_relevant`): the audit reuses it instead of walking again
        self.roots_reach: list[Reached] | None = None
        self._collect(tree.body)

    def _collect(self, body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, node)
                # a class factory (``def as_seq_cls_model(cls): class M(cls): ...``): its
                # classes are classes of the module
                self._collect([n for n in node.body if isinstance(n, ast.ClassDef)])
            elif isinstance(node, ast.ClassDef):
                bases = [b for b in (base_short_name(x) for x in node.bases) if b]
                info = _ClassInfo(node, bases)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        info.methods[item.name] = item
                self.classes.setdefault(node.name, info)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(node, part, None) or []
                    for sub in block:
                        self._collect(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])

    def method_names(self) -> frozenset[str]:
        """Names of every method of every class in the module."""
        if self._methods is None:
            self._methods = frozenset(m for info in self.classes.values() for m in info.methods)
        return self._methods

    def view_helpers(self) -> frozenset[str]:
        """Module functions that return their first argument or a view of it
        (:func:`.infer.view_helpers`)."""
        if self._view_helpers is None:
            self._view_helpers = view_helpers(self.functions)
        return self._view_helpers

    def function_index(self, func: FuncNode) -> FunctionIndex:
        """The calls of a function (computed once per function node)."""
        found = self._index.get(func)  # keyed by the node: ids of freed nodes get reused
        if found is None:
            found = self._index[func] = FunctionIndex.of(func)
        return found

    # ---- class relations -----------------------------------------------------------------------

    def lineage(self, cls: str) -> frozenset[str]:
        """The class and its ancestors (short names, from the whole scanned tree)."""
        own = self.classes.get(cls)
        names = set(self.ancestors.get(cls, frozenset({cls})))
        if own:
            for base in own.bases:
                names |= self.ancestors.get(base, frozenset({base}))
        return frozenset(names)

    def is_rebuilt_class(self, cls: str) -> bool:
        """The ``__init__`` rule: a non-module class whose lineage names a rebuilt object."""
        return is_rebuilt_lineage(self.lineage(cls))

    def _same_file_family(self, cls: str) -> list[str]:
        """The class, its same-file ancestors (nearest first), then same-file subclasses."""
        out = [cls]
        for name in self.lineage(cls):
            if name != cls and name in self.classes:
                out.append(name)
        for name in self.classes:
            if name not in out and cls in self.lineage(name):
                out.append(name)
        return out

    # ---- reach ---------------------------------------------------------------------------------

    def roots(self) -> list[tuple[FuncNode, str | None]]:
        """Post-load entry points of this module, in source order."""
        found: list[tuple[FuncNode, str | None]] = []
        for name, func in self.functions.items():
            if name in POST_LOAD_ROOTS:
                found.append((func, None))
        for cls, info in self.classes.items():
            for name, func in info.methods.items():
                if name in ROOT_FUNCTIONS or (name == "__init__" and self.is_rebuilt_class(cls)):
                    found.append((func, cls))
        return sorted(found, key=lambda fc: fc[0].lineno)

    def staging_roots(self) -> list[tuple[FuncNode, str]]:
        """Methods that copy a local parameter's ``.data`` into the object's state and are no
        other root (:mod:`.staging`): run once, judged like model-loading roots."""
        if not self.has_staging_roots:
            return []
        return [(func, cls) for cls, info in self.classes.items()
                for name, func in info.methods.items()
                if name not in ROOT_FUNCTIONS and is_staging_method(func)
                and not refreshed_per_step(name, info.methods)]

    def assigned_roots(self) -> list[tuple[FuncNode, str | None, str]]:
        """Functions assigned over a post-load method anywhere in the module
        (``qm.process_weights_after_loading = wrapped``): (function, class, where)."""
        if self._assigned is not None:
            return self._assigned
        found: list[tuple[FuncNode, str | None, str]] = []
        self._assigned = found
        if not self.has_assigned_roots:
            return found
        holders: list[tuple[FuncNode, str | None]] = [(f, None) for f in self.functions.values()]
        holders += [(f, c) for c, info in self.classes.items() for f in info.methods.values()]
        for holder, cls in holders:
            nested = {n.name: n for n in walk(holder)
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not holder}
            for node in walk(holder):
                if not isinstance(node, ast.Assign):
                    continue
                if not any(isinstance(t, ast.Attribute) and t.attr in ROOT_FUNCTIONS
                           for t in node.targets):
                    continue
                value = node.value
                if isinstance(value, ast.Name):
                    target = nested.get(value.id) or self.functions.get(value.id)
                    if target is not None:
                        found.append((target, cls, holder.name))
        return found

    def seeds(self) -> list[Reached]:
        """The module's roots as :class:`Reached` entries (post-load methods, rebuilt-object
        constructors and functions assigned over post-load methods)."""
        out = []
        for func, cls in self.roots():
            q = f"{cls}.{func.name}" if cls else func.name
            lineage = self.lineage(cls) if cls else frozenset()
            out.append(Reached(func, cls, q, (q,), lineage,
                               initial_load_only=is_initial_load_root(func, lineage),
                               model_load_only=func.name in MODEL_LOAD_ROOTS))
        for func, cls in self.staging_roots():
            q = f"{cls}.{func.name}"
            out.append(Reached(func, cls, q, (q,), self.lineage(cls), model_load_only=True))
        for func, cls, where in self.assigned_roots():
            q = f"{cls}.{where}.<locals>.{func.name}" if cls else f"{where}.<locals>.{func.name}"
            out.append(Reached(func, None, q, (q,), frozenset()))
        return out

    def find(self, cls: str | None, name: str) -> FuncNode | None:
        """A module-level function (``cls`` None) or a method of a class of this module."""
        if cls is None:
            return self.functions.get(name)
        info = self.classes.get(cls)
        return info.methods.get(name) if info else None

    def reached(self, seeds: list[Reached] | None = None) -> list[Reached]:
        """Every function post-load code reaches in this module, each once, in visit order.

        ``seeds`` replace the module's own roots (calls followed in from other files)."""
        out: dict[int, Reached] = {}
        bindings: dict[int, list[dict[str, object]]] = {}
        queue: list[Reached] = list(self.seeds() if seeds is None else seeds)
        roots = [(r.func, r.cls) for r in queue]
        while queue:
            item = queue.pop(0)
            if id(item.func) in out:
                if not item.initial_load_only and out[id(item.func)].initial_load_only:
                    out[id(item.func)] = replace(out[id(item.func)], initial_load_only=False)
                if not item.model_load_only and out[id(item.func)].model_load_only:
                    out[id(item.func)] = replace(out[id(item.func)], model_load_only=False)
                continue
            out[id(item.func)] = item
            for callee, cls, call, method in self._callees(item.func, item.cls):
                bindings.setdefault(id(callee), []).append(_constants(callee, call, method))
                if id(callee) in out:
                    continue
                q = f"{cls}.{callee.name}" if cls else callee.name
                queue.append(Reached(callee, cls, q, (*item.via, q), item.root_classes,
                                     initial_load_only=item.initial_load_only,
                                     model_load_only=item.model_load_only))
        root_ids = {id(func) for func, _ in roots}
        result = []
        for key, item in out.items():
            if key not in root_ids and bindings.get(key):
                item = replace(item, consts=_agreed(bindings[key]))
            result.append(item)
        return result

    def _callees(self, func: FuncNode,
                 cls: str | None) -> Iterator[tuple[FuncNode, str | None, ast.Call, bool]]:
        """(callee, its class, the call, whether the call binds ``self`` implicitly)."""
        for node in self.function_index(func).calls:
            f = node.func
            if isinstance(f, ast.Name):
                if f.id in self.functions:
                    yield self.functions[f.id], None, node, False
                elif f.id in self.classes:
                    init = self.classes[f.id].methods.get("__init__")
                    if init is not None:
                        yield init, f.id, node, True
            elif isinstance(f, ast.Attribute):
                for callee, owner in self._attr_callees(f, cls):
                    yield callee, owner, node, True

    def _attr_callees(self, f: ast.Attribute, cls: str | None) -> Iterator[tuple[FuncNode, str]]:
        recv = f.value
        if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and cls:
            family = self._same_file_family(cls)
        elif (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name)
              and recv.func.id == "super" and cls):
            family = [c for c in self._same_file_family(cls)[1:] if c in self.lineage(cls)]
        elif isinstance(recv, ast.Name) and recv.id in self.classes:
            family = self._same_file_family(recv.id)
        else:
            return
        for name in family:
            info = self.classes.get(name)
            if info and f.attr in info.methods:
                yield info.methods[f.attr], name


_UNKNOWN = object()


def _const(node: ast.expr | None) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, str, type(None))):
        return node.value
    return _UNKNOWN


def _constants(func: FuncNode, call: ast.Call, method: bool) -> dict[str, object]:
    """Parameters of ``func`` that ``call`` binds to constants (defaults included)."""
    args = func.args
    params = [a.arg for a in [*args.posonlyargs, *args.args]]
    if method and params and params[0] in ("self", "cls"):
        params = params[1:]
    values: dict[str, object] = {}
    for name, default in zip(params[len(params) - len(args.defaults):], args.defaults):
        values[name] = _const(default)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        values[arg.arg] = _const(default)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return {}
    for name, value in zip(params, call.args):
        values[name] = _const(value)
    for kw in call.keywords:
        values[str(kw.arg)] = _const(kw.value)
    return {k: v for k, v in values.items() if v is not _UNKNOWN}


def _agreed(bindings: list[dict[str, object]]) -> dict[str, object]:
    first, *rest = bindings
    return {k: v for k, v in first.items()
            if all(k in b and b[k] == v and type(b[k]) is type(v) for b in rest)}
