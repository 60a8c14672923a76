"""Audit one source file: parse it, find its post-load code, collect the sites in it."""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from derivgraph.audit.static.classwide import audit_class_wide
from derivgraph.audit.static.handoff import dataclass_sites, handoff_roots
from derivgraph.audit.static.index import TreeIndex
from derivgraph.audit.static.infer import call_name, import_map
from derivgraph.audit.static.lazy_resets import lazy_reset_sites
from derivgraph.audit.static.rules import FunctionAudit, audit_lazy_caches, returns_tensor
from derivgraph.audit.static.scope import (
    LAZY_GUARD_RE,
    ROOT_ASSIGN_RE,
    FuncNode,
    ModuleScope,
    Reached,
    is_constructor_root,
    is_rebuilt_lineage,
)
from derivgraph.audit.static.segments import BlockParses, parse_relevant
from derivgraph.audit.static.sites import Handed, RawSite
from derivgraph.audit.static.staging import has_staging_copy
from derivgraph.audit.static.vocab import (
    NON_TENSOR_METHODS,
    STRONG_METHODS,
    WEAK_METHODS,
    Returned,
    annotation_shape,
)
from derivgraph.audit.static.walk import walk

__all__ = ["ExternalRoot", "ModuleContext", "audit_module", "audit_source", "parse_for_audit"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModuleContext:
    """What the audit of one file knows about the whole scanned tree."""

    ancestors: Mapping[str, frozenset[str]]  # class short name -> itself and its ancestors
    tensor_functions: Mapping[str, str]  # qualified function name -> return annotation text
    tree: TreeIndex = field(default_factory=TreeIndex)  # the tree-wide index (other files)
    scalar_functions: frozenset[str] = frozenset()  # qualified functions returning a float
    containers: frozenset[str] = frozenset()  # dataclasses with tensor fields, and functions
    # (qualified) annotated to return one
    placeholders: frozenset[str] = frozenset()  # qualified functions returning a 0-element tensor
    # the scanned files (indices) with a staging copy (:func:`.staging.has_staging_copy`);
    # None: not known, each audit tests its own text
    staging_files: frozenset[int] | None = None

    def family(self, cls: str) -> frozenset[str]:
        """``cls``, its ancestors and its subclasses (short names)."""
        return self.ancestors.get(cls, frozenset({cls})) | self.tree.subclasses.get(cls, set())


@dataclass(frozen=True)
class ExternalRoot:
    """A function of another file (or not yet reached in this one) that post-load code calls."""

    file: int  # index into the scanned files
    cls: str | None
    func: str
    via: tuple[str, ...]
    root_classes: frozenset[str]
    initial_load_only: bool = False  # reached only from the model-level initial-load hook
    model_load_only: bool = False  # reached only from a model-loading method (scope)
    handed: tuple[Handed, ...] = ()  # parameters callers bind to new tensors (:mod:`.handoff`)


def parse_for_audit(text: str, filename: str, context: ModuleContext,
                    segmented: bool = True, extra: Sequence[ExternalRoot] = (),
                    staging: bool | None = None,
                    parses: BlockParses | None = None) -> ModuleScope:
    """The file's scope: only its relevant blocks (:mod:`.segments`) when segmented.
    With ``extra``, only those functions (and what they call) are the file's post-load code.
    ``staging``: whether the text holds a staging copy, when the caller knows (else tested).
    ``parses``: blocks parsed before, reused where the same piece is parsed again."""
    staging = not extra and (has_staging_copy(text) if staging is None else staging)
    if segmented:
        def is_rebuilt(name: str) -> bool:
            return is_rebuilt_lineage(context.ancestors.get(name, frozenset({name})))

        try:
            scope = parse_relevant(text, filename, context.ancestors, is_rebuilt,
                                   extra=[(e.cls, e.func) for e in extra], own_roots=not extra,
                                   seeds=(lambda scope: _seeds(scope, extra)) if extra else None,
                                   has_staging=staging, parses=parses)
            scope.text = text
            return scope
        except SyntaxError as exc:  # a cut inside a string: the whole file decides
            logger.debug("%s: block parse failed (%s); parsing the whole file", filename, exc.msg)
    scope = ModuleScope(ast.parse(text, filename=filename), context.ancestors)
    scope.text = text
    scope.has_assigned_roots = not extra and bool(ROOT_ASSIGN_RE.search(text))
    scope.has_staging_roots = staging
    return scope


def _lineage(context: ModuleContext, cls: str, bases: Sequence[str]) -> frozenset[str]:
    names = set(context.ancestors.get(cls, frozenset({cls})))
    for base in bases:
        names |= context.ancestors.get(base, frozenset({base}))
    return frozenset(names)


def _seeds(scope: ModuleScope, extra: Sequence[ExternalRoot]) -> list[Reached]:
    out: dict[tuple[str | None, str], Reached] = {}
    for e in extra:
        func = scope.find(e.cls, e.func)
        if func is None:
            continue
        q = f"{e.cls}.{e.func}" if e.cls else e.func
        first = out.get((e.cls, e.func))
        if first is not None:  # one function, several callers: every handed parameter counts
            out[(e.cls, e.func)] = replace(first, handed=(*first.handed, *e.handed),
                                           model_load_only=first.model_load_only
                                           and e.model_load_only)
            continue
        out[(e.cls, e.func)] = Reached(func, e.cls, q, (*e.via, q), e.root_classes,
                                       initial_load_only=e.initial_load_only,
                                       model_load_only=e.model_load_only, handed=e.handed)
    return list(out.values())


def audit_source(text: str, filename: str, module_name: str, is_package: bool,
                 context: ModuleContext, segmented: bool = True) -> list[RawSite]:
    """Every site in one file's post-load code, sorted by line. Raises SyntaxError."""
    return audit_module(text, filename, module_name, is_package, context, segmented)[0]


def audit_module(text: str, filename: str, module_name: str, is_package: bool,
                 context: ModuleContext, segmented: bool = True,
                 extra: Sequence[ExternalRoot] = (), file_index: int = -1,
                 parses: BlockParses | None = None,
                 ) -> tuple[list[RawSite], list[ExternalRoot], list[tuple[str | None, str]]]:
    """The sites of one file's post-load code (sorted by line), the calls it makes into
    other files, and the ``(class, function)`` pairs reached from a post-load method (not only
    from a rebuilt object's constructor). With ``extra``, the post-load code is what those
    functions reach (the second round of a tree-wide scan). ``parses``: the blocks parsed
    by earlier audits (:class:`.segments.BlockParses`), reused and grown. Raises SyntaxError."""
    known = context.staging_files
    scope = parse_for_audit(text, filename, context, segmented, extra,
                            None if known is None or file_index < 0 else file_index in known,
                            parses)
    imports = import_map(scope.tree, module_name, is_package)
    returns = _Returns(scope, imports, module_name, context)
    sites: dict[tuple[int, int, str, str], RawSite] = {}
    reached = scope.roots_reach if scope.roots_reach is not None else \
        scope.reached(_seeds(scope, extra) if extra else None)
    handoffs: list[ExternalRoot] = []
    for item in reached:
        audit = FunctionAudit(item, imports, returns.bound(item.cls), scope,
                              context.scalar_functions, context.containers,
                              context.placeholders, context.tree.property_chains)
        for site in audit.handed_sites(audit.run()):
            sites.setdefault((site.line, site.col, site.attr, site.category), site)
        if audit.handoffs and context.tree.modules and not item.model_load_only:
            roots = item.root_classes or (scope.lineage(item.cls) if item.cls else frozenset())
            handoffs += [ExternalRoot(file, cls, func, item.via, frozenset(roots),
                                      item.initial_load_only, item.model_load_only, handed)
                         for file, cls, func, handed in handoff_roots(
                             audit.handoffs, context.tree, context.ancestors,
                             context.containers, file_index, filename)]
    for e in extra:  # a dataclass's generated constructor keeps what it is handed
        if e.handed and e.cls and scope.find(e.cls, e.func) is None:
            for site in dataclass_sites(scope, e.cls, e.via, e.handed, e.root_classes):
                sites.setdefault((site.line, site.col, site.attr, site.category), site)
    if not extra and LAZY_GUARD_RE.search(text):
        done = {id(r.func) for r in reached}
        for site in audit_lazy_caches(scope, imports, returns.bound, done):
            sites.setdefault((site.line, site.col, site.attr, site.category), site)
    for site in lazy_reset_sites(text, filename, reached, scope.lineage):
        sites.setdefault((site.line, site.col, site.attr, site.category), site)
    if not extra:
        for site in audit_class_wide(text, filename, lambda cls, bases: _lineage(context, cls,
                                                                                 bases)):
            sites.setdefault((site.line, site.col, site.attr, site.category), site)
    externals = list(_externals(scope, reached, imports, context, file_index)) + handoffs \
        if context.tree.modules else []
    staging = {id(func) for func, _ in scope.staging_roots()}  # they fill, never read
    post_load = [(r.cls, r.func.name) for r in reached
                 if (not r.model_load_only or id(r.func) in staging)
                 and not is_constructor_root(r.via[0], context.ancestors)]
    return sorted(sites.values(), key=lambda s: (s.line, s.col, s.attr)), externals, post_load


_NOT_HELPERS = NON_TENSOR_METHODS | STRONG_METHODS | WEAK_METHODS | frozenset({
    "forward", "__call__", "apply", "get", "update", "append", "extend", "items", "keys",
    "values", "pop", "copy_", "fill_", "zero_", "add_", "mul_", "format", "join", "split",
    "replace", "startswith", "endswith", "register_buffer", "register_parameter",
    "named_parameters", "named_buffers", "parameters", "modules", "named_modules", "children",
    "state_dict", "eval", "train", "setdefault", "index", "count", "sort", "strip", "lower",
    "upper", "__init__",
})
_MAX_OWNERS = 2  # layer.m() on an unknown receiver: followed when at most this many classes have m
_MAX_OVERRIDES = 6


def _getattr_locals(func: FuncNode) -> dict[str, str]:
    """Locals bound to a method looked up by name: ``fold = getattr(module, "fold_x", None)``."""
    out: dict[str, str] = {}
    for node in walk(func):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "getattr"
                and len(node.value.args) >= 2 and isinstance(node.value.args[1], ast.Constant)
                and isinstance(node.value.args[1].value, str)):
            out[node.targets[0].id] = node.value.args[1].value
    return out


def _names_getattr(node: ast.AST) -> bool:
    """Whether ``getattr`` is part of a name or a string under ``node`` (what
    ``"getattr" in ast.dump(node)`` tells, without building the dump)."""
    for sub in walk(node):
        for value in vars(sub).values():
            if (isinstance(value, str) and "getattr" in value) or (
                    isinstance(value, bytes) and b"getattr" in value):
                return True
    return False


def _isinstance_map(calls: Sequence[ast.Call]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for call in calls:
        if (isinstance(call.func, ast.Name) and call.func.id == "isinstance"
                and len(call.args) == 2 and isinstance(call.args[0], ast.Name)):
            kinds = call.args[1].elts if isinstance(call.args[1], ast.Tuple) else [call.args[1]]
            for k in kinds:
                name = k.attr if isinstance(k, ast.Attribute) else (
                    k.id if isinstance(k, ast.Name) else None)
                if name:
                    out.setdefault(call.args[0].id, []).append(name)
    return out


def _externals(scope: ModuleScope, reached: Sequence[Reached], imports: dict[str, str],
               context: ModuleContext, this_file: int) -> Iterator[ExternalRoot]:
    """Calls of reached code that resolve, through the tree index, to functions the same-file
    reach did not follow (other files; or classes of this file reached only by name)."""
    tree = context.tree
    done = {(r.cls, r.func.name) for r in reached}
    seen: set[tuple[int, str | None, str]] = set()
    for r in reached:
        if r.model_load_only:
            continue  # a model-loading step's derivations are judged where it stores them
        calls = scope.function_index(r.func).calls
        narrowed = _isinstance_map(calls)
        looked_up = _getattr_locals(r.func) if _names_getattr(r.func.args) or any(
            isinstance(c.func, ast.Name) and c.func.id == "getattr" for c in calls) else {}
        roots = r.root_classes or (scope.lineage(r.cls) if r.cls else frozenset())
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id in looked_up:
                # fold = getattr(module, "m", None); fold(): the method m on an unknown receiver
                call = ast.Call(func=ast.Attribute(value=ast.Name(id="<obj>", ctx=ast.Load()),
                                                   attr=looked_up[call.func.id], ctx=ast.Load()),
                                args=call.args, keywords=call.keywords)
            for file, cls, name in _targets(call, r, scope, imports, tree, narrowed,
                                            context.ancestors):
                if (file == this_file and (cls, name) in done) or (file, cls, name) in seen:
                    continue
                seen.add((file, cls, name))
                q = f"{cls}.{name}" if cls else name
                if q not in r.via:
                    yield ExternalRoot(file, cls, name, r.via, frozenset(roots),
                                       r.initial_load_only, r.model_load_only)


def _targets(call: ast.Call, r: Reached, scope: ModuleScope, imports: dict[str, str],
             tree: TreeIndex, narrowed: dict[str, list[str]],
             ancestors: Mapping[str, frozenset[str]]) -> Iterator[tuple[int, str | None, str]]:
    f = call.func
    if isinstance(f, ast.Name):
        if f.id in scope.functions or f.id in scope.classes:
            return
        qualified = imports.get(f.id)
        if qualified and qualified in tree.functions:
            yield tree.functions[qualified], None, qualified.rsplit(".", 1)[-1]
        return
    if not isinstance(f, ast.Attribute):
        return
    recv, meth = f.value, f.attr
    if isinstance(recv, ast.Name) and recv.id in imports:
        qualified = f"{imports[recv.id]}.{meth}"
        if qualified in tree.functions:
            yield tree.functions[qualified], None, meth
        return
    if meth in _NOT_HELPERS or meth.startswith("__"):
        return
    classes: list[str] = []
    if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and r.cls:
        local = any(meth in scope.classes[c].methods for c in scope.lineage(r.cls)
                    if c in scope.classes)
        if not local:
            for entry in tree.resolve_method(r.cls, meth, ancestors):
                yield entry.file, entry.name, meth
        for entry in tree.overrides(r.cls, meth, _MAX_OVERRIDES):
            yield entry.file, entry.name, meth
        return
    if (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name)
            and recv.func.id == "super" and r.cls):
        for base in sorted(ancestors.get(r.cls, frozenset()) - {r.cls}):
            found = [e for e in tree.entries(base) if meth in e.methods]
            if found and not any(meth in scope.classes[c].methods for c in scope.classes
                                 if c != r.cls and c in scope.lineage(r.cls)):
                for entry in found:
                    yield entry.file, entry.name, meth
                break
        return
    if (isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name)
            and recv.value.id == "self" and r.cls):
        for owner in ancestors.get(r.cls, frozenset({r.cls})) | {r.cls}:
            classes += sorted(tree.attr_types.get((owner, recv.attr), ()))
    if isinstance(recv, ast.Attribute) and not any(
            next(tree.resolve_method(c, meth, ancestors), None) is not None for c in classes):
        classes = _known_owners(meth, scope, imports, tree)
    elif isinstance(recv, ast.Name) and recv.id not in ("self", "cls"):
        classes = [c for c in narrowed.get(recv.id, [])
                   if next(tree.resolve_method(c, meth, ancestors), None) is not None]
        owners = tree.method_owners.get(meth, set())
        if not classes and 0 < len(owners) <= _MAX_OWNERS:
            classes = sorted(owners)
    for cls in classes:
        for entry in tree.resolve_method(cls, meth, ancestors):
            yield entry.file, entry.name, meth


def _known_owners(meth: str, scope: ModuleScope, imports: Mapping[str, str],
                  tree: TreeIndex) -> list[str]:
    """The classes defining ``meth`` that this file defines or imports by name: the receiver
    of ``self.a.m()`` / ``layer.a.m()`` when the attribute's recorded class lacks ``m`` (a
    factory's product, a ``__class__`` swap) or no class is recorded (``layer.a``)."""
    known = set(scope.classes) | {q.rsplit(".", 1)[-1] for q in imports.values()}
    return sorted(tree.method_owners.get(meth, set()) & known)


class _Returns:
    """Decides whether a call returns a tensor: same-file functions first, then the index."""

    def __init__(self, scope: ModuleScope, imports: dict[str, str], module_name: str,
                 context: ModuleContext) -> None:
        self.scope = scope
        self.imports = imports
        self.module_name = module_name
        self.index = context.tensor_functions
        self.memo: dict[int, Returned] = {}

    def bound(self, cls: str | None) -> Callable[[ast.Call], Returned]:
        """The decision for calls made inside a method of ``cls`` (or a plain function)."""
        return lambda call: self.check(call, cls)

    def check(self, call: ast.Call, cls: str | None) -> Returned:
        f = call.func
        if isinstance(f, ast.Name) and f.id in self.scope.functions:
            return self._local(self.scope.functions[f.id], None)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            recv = f.value.id
            start = recv if recv in self.scope.classes else (cls if recv in ("self", "cls")
                                                            else None)
            if start is not None:
                for owner in self._family(start):
                    method = self.scope.classes[owner].methods.get(f.attr)
                    if method is not None:
                        return self._local(method, owner)
                return False
        name = call_name(f, self.imports)
        annotation = self.index.get(name) if name else None
        return _annotation_text_shape(annotation) if annotation else False

    def _family(self, cls: str) -> list[str]:
        rest = sorted(self.scope.lineage(cls) - {cls})
        return [c for c in [cls, *rest] if c in self.scope.classes]

    def _local(self, func: FuncNode, cls: str | None) -> Returned:
        key = id(func)
        if key in self.memo:
            return self.memo[key]
        if func.returns is not None:
            self.memo[key] = annotation_shape(func.returns)
            return self.memo[key]
        self.memo[key] = False  # recursion guard
        q = f"{cls}.{func.name}" if cls else func.name
        result = returns_tensor(Reached(func, cls, q, (q,), frozenset()), self.imports,
                                self.bound(cls), self.scope)
        self.memo[key] = result
        return result


@functools.lru_cache(maxsize=4096)
def _annotation_text_shape(text: str) -> Returned:
    try:
        return annotation_shape(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError:
        return False
