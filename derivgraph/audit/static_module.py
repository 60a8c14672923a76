"""Audit one source file: parse it, find its post-load code, collect the sites in it."""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .static_infer import call_name, import_map
from .static_rules import audit_function, returns_tensor
from .static_scope import FuncNode, ModuleScope, Reached, is_rebuilt_lineage
from .static_segments import parse_relevant
from .static_sites import RawSite
from .static_vocab import Returned, annotation_shape

__all__ = ["ModuleContext", "audit_source", "parse_for_audit"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModuleContext:
    """What the audit of one file knows about the whole scanned tree."""

    ancestors: Mapping[str, frozenset[str]]  # class short name -> itself and its ancestors
    tensor_functions: Mapping[str, str]  # qualified function name -> return annotation text


def parse_for_audit(text: str, filename: str, context: ModuleContext,
                    segmented: bool = True) -> ModuleScope:
    """The file's scope: only its relevant blocks (:mod:`.static_segments`) when segmented."""
    if segmented:
        def is_rebuilt(name: str) -> bool:
            return is_rebuilt_lineage(context.ancestors.get(name, frozenset({name})))

        try:
            return parse_relevant(text, filename, context.ancestors, is_rebuilt)
        except SyntaxError as exc:  # a cut inside a string: the whole file decides
            logger.debug("%s: block parse failed (%s); parsing the whole file", filename, exc.msg)
    return ModuleScope(ast.parse(text, filename=filename), context.ancestors)


def audit_source(text: str, filename: str, module_name: str, is_package: bool,
                 context: ModuleContext, segmented: bool = True) -> list[RawSite]:
    """Every site in one file's post-load code, sorted by line. Raises SyntaxError."""
    scope = parse_for_audit(text, filename, context, segmented)
    imports = import_map(scope.tree, module_name, is_package)
    returns = _Returns(scope, imports, module_name, context.tensor_functions)
    sites: dict[tuple[int, int, str, str], RawSite] = {}
    for reached in scope.reached():
        for site in audit_function(reached, imports, returns.bound(reached.cls), scope):
            sites.setdefault((site.line, site.col, site.attr, site.category), site)
    return sorted(sites.values(), key=lambda s: (s.line, s.col, s.attr))


class _Returns:
    """Decides whether a call returns a tensor: same-file functions first, then the index."""

    def __init__(self, scope: ModuleScope, imports: dict[str, str], module_name: str,
                 index: Mapping[str, str]) -> None:
        self.scope = scope
        self.imports = imports
        self.module_name = module_name
        self.index = index
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
